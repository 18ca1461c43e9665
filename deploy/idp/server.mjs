// A real OpenID Provider for the sign-in tests (tests/oidc_provider.py starts it): panva's
// oidc-provider, an OpenID Certified implementation, with what a company's provider has
// and the library leaves to its user — a login form checking fixed accounts, consent
// granted by the company (no consent screen), and RP-initiated logout without a question.
//
//   node deploy/idp/server.mjs CONFIG.json
//
// CONFIG: {"port": 0, "clients": [{client_id, client_secret?, redirect_uris,
//   post_logout_redirect_uris}], "accounts": [{"login", "password", "sub", "claims":
//   {"name", "tenant_id", "app_code", "perms"}}], "idTokenSeconds": 3600}
// It prints one line, "ready http://127.0.0.1:PORT", when it listens; the issuer is that
// address. Loopback only. Not for production: keys are made at start and held in memory.
import http from "node:http";
import { readFileSync } from "node:fs";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import Provider, { errors } from "oidc-provider";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const accounts = new Map(config.accounts.map((a) => [a.sub, a]));

const escape = (text) =>
  String(text).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The login form, in the provider's own words (English and Chinese side by side). */
function loginPage(uid, clientId, problem = "") {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,"><title>Test company sign-in</title></head><body>
<main><h1>Test company sign-in · 公司登录</h1>
<p>Sign in to continue to ${escape(clientId)} · 登录以继续</p>
${problem ? `<p id="problem" role="alert">${escape(problem)}</p>` : ""}
<form method="post" action="/interaction/${escape(uid)}/login" autocomplete="off">
<label for="login">Username · 用户名</label> <input id="login" name="login" required autofocus>
<label for="password">Password · 密码</label> <input id="password" name="password" type="password" required>
<button id="submit" type="submit">Sign in · 登录</button>
</form>
<form method="post" action="/interaction/${escape(uid)}/abort">
<button id="abort" type="submit">Do not sign in · 不登录</button>
</form></main></body></html>`;
}

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: randomBytes(8).toString("hex"), use: "sig", alg: "RS256" };

async function start() {
  const server = http.createServer();
  await new Promise((resolve) => server.listen(config.port || 0, "127.0.0.1", resolve));
  const issuer = `http://127.0.0.1:${server.address().port}`;

  const provider = new Provider(issuer, {
    clients: config.clients.map((c) => ({
      grant_types: ["authorization_code"],
      response_types: ["code"],
      token_endpoint_auth_method: c.client_secret ? "client_secret_basic" : "none",
      ...c,
    })),
    jwks: { keys: [jwk] },
    cookies: { keys: [randomBytes(32).toString("hex")] },
    claims: {
      openid: ["sub"],
      profile: ["name"],
      export_center: ["tenant_id", "app_code", "perms"],
    },
    // The identity claims go into the ID token itself, which the service keeps as its
    // session (its scopes ask for them).
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    ttl: {
      IdToken: config.idTokenSeconds || 3600,
      AccessToken: config.idTokenSeconds || 3600,
      Session: 3600,
      Interaction: 600,
      Grant: 3600,
    },
    features: {
      devInteractions: { enabled: false },
      rpInitiatedLogout: {
        enabled: true,
        // No question: the page's Sign out is the person's answer already.
        logoutSource: async (ctx, form) => {
          ctx.body = `<!doctype html><html><head><link rel="icon" href="data:,"><title>Signing out</title></head><body>
${form}<noscript><button form="op.logoutForm" type="submit" name="logout" value="yes">Sign out</button></noscript>
<script>var f=document.getElementById('op.logoutForm');var i=document.createElement('input');
i.type='hidden';i.name='logout';i.value='yes';f.appendChild(i);f.submit();</script></body></html>`;
        },
      },
    },
    findAccount: async (ctx, sub) => {
      const account = accounts.get(sub);
      if (!account) return undefined;
      return { accountId: sub, claims: async () => ({ sub, ...account.claims }) };
    },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    renderError: async (ctx, out) => {
      ctx.type = "html";
      ctx.body = `<!doctype html><html><head><link rel="icon" href="data:,"><title>Sign-in error</title></head><body>
<h1>Sign-in error</h1><pre id="error">${escape(JSON.stringify(out))}</pre></body></html>`;
    },
  });
  const callback = provider.callback();

  async function form(req) {
    let body = "";
    for await (const chunk of req) body += chunk;
    return new URLSearchParams(body);
  }

  async function interaction(req, res, action) {
    const details = await provider.interactionDetails(req, res);
    const { uid, prompt, params, session } = details;
    if (action === "/abort") {
      const result = { error: "access_denied", error_description: "the person chose not to sign in" };
      return provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
    }
    if (action === "/login") {
      const fields = await form(req);
      const account = config.accounts.find(
        (a) => a.login === fields.get("login") && a.password === fields.get("password"),
      );
      if (!account) {
        res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
        return res.end(loginPage(uid, params.client_id, "Wrong username or password · 用户名或密码错误"));
      }
      return provider.interactionFinished(req, res, { login: { accountId: account.sub } }, {
        mergeWithLastSubmission: false,
      });
    }
    if (prompt.name === "login") {
      res.writeHead(200, { "Content-Type": "text/html; charset=utf-8" });
      return res.end(loginPage(uid, params.client_id));
    }
    // Consent: the company has granted this client what it asks for.
    const grant = details.grantId
      ? await provider.Grant.find(details.grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const missing = prompt.details;
    if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
    if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
    if (missing.missingResourceScopes) {
      for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes)) {
        grant.addResourceScope(indicator, scopes.join(" "));
      }
    }
    const grantId = await grant.save();
    return provider.interactionFinished(req, res, { consent: { grantId } }, {
      mergeWithLastSubmission: true,
    });
  }

  server.on("request", async (req, res) => {
    const match = /^\/interaction\/([^/?]+)(\/login|\/abort)?(\?|$)/.exec(req.url);
    if (!match) return callback(req, res);
    try {
      await interaction(req, res, match[2]);
    } catch (error) {
      const expired = error instanceof errors.SessionNotFound;
      res.writeHead(expired ? 400 : 500, { "Content-Type": "text/plain; charset=utf-8" });
      res.end(expired ? "this sign-in has expired; start again" : String(error));
    }
  });
  console.log(`ready ${issuer}`);
}

start().catch((error) => {
  console.error(error);
  process.exit(1);
});

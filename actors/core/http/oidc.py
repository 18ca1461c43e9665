"""Signing in on the page through the company's OpenID Provider: the decisions of the
authorization code flow with PKCE. Pure; the protocol's messages are Authlib's and the
routes are ``web/sign_in.py``'s.

How a sign-in goes (docs/operations.md, "Company sign-in for the download center"):

1. ``GET /auth/login?next=<path>`` makes a fresh ``state``, ``nonce`` and PKCE verifier,
   keeps them with the path to come back to in a signed, HttpOnly cookie that lives
   :data:`LOGIN_SECONDS` (:class:`LoginState`), and sends the browser to the provider.
2. The provider signs the person in and sends the browser back to ``/auth/callback`` with
   a code and the ``state``. :func:`callback_problem` decides whether that answer belongs
   to the sign-in this browser started: the provider did not refuse, the cookie is there
   and the ``state`` is the cookie's (a forged or replayed callback is refused here).
3. The code is exchanged, with the verifier, for an ID token. Its signature, issuer and
   expiry are checked like any token's (``web/identity.py``), then
   :func:`id_token_problem` checks what is particular to this sign-in: the ``nonce`` is
   the cookie's and the token was issued to this client.
4. The ID token becomes the page's session cookie, and the browser goes back to the
   path it left (:func:`return_path`: this origin's paths only).

A problem is a :class:`SignInProblem`: the page says it in the person's language.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: How long a started sign-in may take at the provider, seconds (the login cookie's life).
LOGIN_SECONDS = 600
#: Longest path kept to come back to, characters.
MAX_RETURN_PATH = 2000


class SignInProblem(StrEnum):
    """Why a sign-in did not finish; the page's catalogue words each one
    (``web/static/i18n.js``, ``signInProblem``)."""

    #: The provider refused or the person chose not to sign in (``error`` in the answer).
    REFUSED = "refused"
    #: No sign-in was started in this browser, or it took longer than LOGIN_SECONDS.
    NOT_STARTED = "not-started"
    #: The answer's ``state`` is not the one this browser's sign-in sent: forged.
    STATE = "state"
    #: The provider would not exchange the code (already used, expired, or not ours).
    CODE = "code"
    #: The ID token is not valid for this sign-in (nonce, audience, signature, claims).
    TOKEN = "token"
    #: The provider cannot be reached or answered nonsense.
    UNREACHABLE = "unreachable"


@dataclass(frozen=True, slots=True)
class LoginState:
    """What a started sign-in keeps in its cookie until the provider answers.

    Attributes:
        state: the CSRF value of this sign-in (OAuth 2.0 ``state``).
        nonce: the replay guard the ID token must carry (OpenID Connect ``nonce``).
        verifier: the PKCE code verifier (RFC 7636), sent with the code.
        return_to: the page path to come back to (:func:`return_path` of the request's).
    """

    state: str
    nonce: str
    verifier: str
    return_to: str

    def to_json(self) -> dict[str, str]:
        """The cookie's payload (it is signed, not encrypted: nothing here is a secret
        from the browser that started the sign-in)."""
        return {"s": self.state, "n": self.nonce, "v": self.verifier, "r": self.return_to}

    @classmethod
    def from_json(cls, data: Any) -> LoginState | None:
        """The state of a payload :meth:`to_json` wrote; ``None`` for anything else."""
        if not isinstance(data, dict):
            return None
        fields = [data.get(k) for k in ("s", "n", "v", "r")]
        if not all(isinstance(f, str) and f for f in fields):
            return None
        state, nonce, verifier, return_to = fields
        return cls(str(state), str(nonce), str(verifier), return_path(str(return_to)))


def return_path(wanted: str | None) -> str:
    """The path a sign-in comes back to: ``wanted`` when it is a path of this origin,
    else ``/`` (never another site: ``//evil.example`` and ``/\\evil.example`` are
    addresses of other hosts to a browser, so they are refused too).

    Args:
        wanted: the ``next`` the page asked for (path and query), or ``None``.
    """
    if (
        not wanted
        or len(wanted) > MAX_RETURN_PATH
        or not wanted.startswith("/")
        or wanted.startswith(("//", "/\\"))
        or any(ord(c) < 0x20 or c == "\\" for c in wanted)
    ):
        return "/"
    return wanted


def callback_problem(query: Mapping[str, str], saved: LoginState | None) -> SignInProblem | None:
    """Whether the provider's answer ``query`` may be exchanged for a session.

    Args:
        query: the callback's query parameters (``code``, ``state``, or ``error``).
        saved: the sign-in this browser started (its cookie), ``None`` without one or when
            its signature or age is not valid.

    Returns:
        ``None`` when the code may be exchanged, else why not (the provider's refusal
        first: it is the answer the person caused).
    """
    if query.get("error"):
        return SignInProblem.REFUSED
    if saved is None:
        return SignInProblem.NOT_STARTED
    if query.get("state") != saved.state:
        return SignInProblem.STATE
    if not query.get("code"):
        return SignInProblem.CODE
    return None


def id_token_problem(claims: Mapping[str, Any], nonce: str, client_id: str) -> str | None:
    """What is wrong with a verified ID token's ``claims`` for this sign-in, in words for
    the log; ``None`` when nothing (OpenID Connect Core 1.0, 3.1.3.7, items 3-5 and 11).

    Args:
        claims: the token's claims, its signature, issuer and expiry already checked.
        nonce: the nonce this sign-in sent.
        client_id: this service's client id.
    """
    audience = claims.get("aud")
    audiences = [audience] if isinstance(audience, str) else audience
    if not isinstance(audiences, list) or client_id not in audiences:
        return f"the ID token was not issued to this client ({client_id})"
    if len(audiences) > 1 and claims.get("azp") != client_id:
        return "the ID token names several audiences but not this client as its azp"
    if claims.get("nonce") != nonce:
        return "the ID token's nonce is not this sign-in's (a replayed token)"
    return None


__all__ = [
    "LOGIN_SECONDS",
    "LoginState",
    "SignInProblem",
    "callback_problem",
    "id_token_problem",
    "return_path",
]

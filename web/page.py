"""The download center page: one static HTML page and its script, over the public API.

The page holds no state of its own on the server: its script (ES modules, no build step)
calls the same ``/api/platform/v1/…`` routes as any client. The user pastes a bearer token
into its sign-in form once; ``POST /api/platform/v1/session`` turns it into an HttpOnly,
SameSite=Strict session cookie, so the script never keeps the token, and it is never put
in a URL (it stays out of access logs, history and ``Referer`` headers). State-changing
calls carry ``X-CSRF-Token`` from the readable ``export_center_csrf`` cookie.

Every answer carries a strict Content-Security-Policy (scripts and styles from this origin
only, no inline script, no framing): text that came from users or Providers (task names,
failure messages) is written with ``textContent``, and the policy is the second line of
defence should that ever slip.
"""

from __future__ import annotations

from pathlib import Path

from quart import Blueprint, Response, abort, jsonify, send_file

from actors.core.messages import LANGUAGES, catalogue_json

STATIC = Path(__file__).resolve().parent / "static"
#: Same-origin scripts, styles, images and API calls; nothing inline, no plugins, no framing.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
#: Media types without a charset: Quart adds "; charset=utf-8" to every text/* type itself
#: (a charset here would be sent twice).
_CONTENT_TYPES = {
    ".js": "text/javascript",
    ".css": "text/css",
}
_SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-cache",
}

page = Blueprint("page", __name__)


async def _static(name: str, content_type: str) -> Response:
    response = await send_file(STATIC / name, mimetype=content_type)
    response.headers.update(_SECURITY_HEADERS)
    return response


@page.get("/")
async def download_center() -> Response:
    """``GET /``: the download center page (HTML)."""
    return await _static("download-center.html", "text/html")


#: Files served under ``/static/``: the page's script modules and styles, by name. A
#: fixed list read once, so no request path ever reaches the file system.
ASSETS = {
    path.name: _CONTENT_TYPES[path.suffix]
    for path in sorted(STATIC.iterdir())
    if path.suffix in _CONTENT_TYPES
}


@page.get("/static/<name>")
async def asset(name: str) -> Response:
    """``GET /static/<name>``: one of the page's scripts or its styles; 404 otherwise.

    Raises:
        werkzeug NotFound (HTTP 404, answered with the envelope) for any other name.
    """
    content_type = ASSETS.get(name)
    if content_type is None:
        abort(404)
    return await _static(name, content_type)


@page.get("/i18n/<language>.json")
async def catalogue(language: str) -> Response:
    """``GET /i18n/<language>.json``: the service's plain-words catalogue in one language
    (``en``, ``zh-CN``; ``actors/core/messages.py``) — failures, history events, data
    warnings and refusals, as the page shows them. Public: it holds no data. 404 for
    another language.
    """
    if language not in LANGUAGES:
        abort(404)
    response = jsonify(catalogue_json(language))
    response.headers.update(_SECURITY_HEADERS)
    return response

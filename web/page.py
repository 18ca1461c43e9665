"""The download center page: one static HTML page and its script, over the public API.

The page holds no state on the server: it calls the same ``/api/platform/v1/files/…``
routes as any client, with the user's bearer token, which the user pastes into its
sign-in form and the page keeps in the tab's ``sessionStorage`` (never in a URL, so it
stays out of access logs, history and ``Referer`` headers).

Every answer carries a strict Content-Security-Policy (scripts and styles from this origin
only, no inline script, no framing): text that came from users or Providers (task names,
failure messages) is written with ``textContent``, and the policy is the second line of
defence should that ever slip.
"""

from __future__ import annotations

from pathlib import Path

from quart import Blueprint, Response, send_file

STATIC = Path(__file__).resolve().parent / "static"
#: Same-origin scripts, styles, images and API calls; nothing inline, no plugins, no framing.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
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
    return await _static("download-center.html", "text/html; charset=utf-8")


@page.get("/static/download-center.js")
async def script() -> Response:
    """The page's script."""
    return await _static("download-center.js", "text/javascript; charset=utf-8")


@page.get("/static/download-center.css")
async def stylesheet() -> Response:
    """The page's styles."""
    return await _static("download-center.css", "text/css; charset=utf-8")

"""The access log (web/access_log.py) over real HTTP: one line per request, request ids
adopted or drawn and echoed, and nothing secret in the log — no token, no cookie, no
credential in a query, no parameter value, no control character from outside. Issue 12
item 1: "An access log (method, path, status, duration, requestId, user) that never contains
tokens … Parameters masked … control characters in any text that came from outside
escaped"."""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx
import trio

from actors.core.tracing import MASK, is_trace_id
from actors.runtime import Runtime
from tests.helpers import API, client_for
from tests.servers import json_log

SECRETS = ("qsecret-1", "qsecret-2", "cookie-secret-3", "csrf-secret-4", "13912345678")


async def logged(lines: Callable[[], list[dict]], count: int) -> list[dict]:
    """The access lines once there are ``count`` of them (a bounded condition wait: each
    is written just after its response is over)."""
    with trio.fail_after(10):
        while len(access := [r for r in lines() if r["logger"] == "web.access_log"]) < count:
            await trio.sleep(0.01)
    return access


async def test_no_token_cookie_query_secret_or_parameter_value_reaches_the_log(
    service: Runtime,
) -> None:
    with json_log("DEBUG") as lines:
        async with client_for(service) as client:
            token = client.headers["Authorization"].removeprefix("Bearer ")
            cookies = {
                "export_center_session": "cookie-secret-3",
                "export_center_csrf": "csrf-secret-4",
            }
            listed = await client.get(
                API,
                params={"status": "PENDING", "token": "qsecret-1", "access_token": "qsecret-2"},
                headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())},
            )
            assert listed.status_code == 200
            created = await client.post(
                API,
                json={
                    "exportType": "CUSTOMER_LIST",
                    "parameters": {"rowCount": 5, "phone": "13912345678"},
                },
            )
            assert created.json()["code"] == "200", created.json()
            refused = await client.get(API, headers={"Authorization": "Bearer not.a.jwt"})
            assert refused.status_code == 401
        await logged(lines, 3)
        text = "\n".join(json.dumps(r, ensure_ascii=False) for r in lines())
    assert token not in text and "not.a.jwt" not in text
    for secret in SECRETS:
        assert secret not in text, secret
    access = [r for r in lines() if r["logger"] == "web.access_log"]
    list_line = next(r for r in access if r["path"].startswith(API + "?"))
    assert list_line["path"] == f"{API}?status=PENDING&token={MASK}&access_token={MASK}"
    assert list_line["userId"] == "1001" and list_line["method"] == "GET"
    assert isinstance(list_line["durationMs"], float) and list_line["status"] == 200
    unauthenticated = next(r for r in access if r["status"] == 401)
    assert "userId" not in unauthenticated
    [create] = [r for r in lines() if r["logger"] == "web.api" and "created" in r["message"]]
    assert create["parameters"] == {"phone": "***string", "rowCount": "***number"}


async def test_a_credential_under_any_name_or_in_the_path_never_reaches_the_log(
    service: Runtime,
) -> None:
    """Issue 24 item 5: masking went by parameter name, so ``?jwt=<token>`` was logged in
    full. Anything shaped like a credential is masked, whatever it is called."""
    secret = "Zx9" + "kQ2mW7pL" * 5  # token_urlsafe-like: mixed case and digits
    with json_log("DEBUG") as lines:
        async with client_for(service) as client:
            token = client.headers["Authorization"].removeprefix("Bearer ")
            for params in ({"jwt": token}, {"q": token}, {"filter": secret}):
                assert (await client.get(API, params=params)).status_code == 200
            await client.get(f"{API}/{token}")
        access = await logged(lines, 4)
        text = "\n".join(json.dumps(r, ensure_ascii=False) for r in lines())
    assert token not in text and secret not in text
    paths = [r["path"] for r in access]
    assert f"{API}?jwt={MASK}" in paths and f"{API}?q={MASK}" in paths
    assert f"{API}?filter={MASK}" in paths and f"{API}/{MASK}" in paths


async def test_request_ids_are_adopted_when_sane_else_drawn_and_always_echoed(
    service: Runtime,
) -> None:
    with json_log("INFO") as lines:
        async with httpx.AsyncClient(base_url=service.base_url, timeout=10) as client:
            sane = await client.get(API, headers={"X-Request-Id": "lb-7f3a.42"})
            forged = await client.get(
                API, headers={"X-Request-Id": "x y\t" + "y" * 80, "traceparent": "junk"}
            )
        access = await logged(lines, 2)
    assert sane.headers["x-request-id"] == "lb-7f3a.42"
    drawn = forged.headers["x-request-id"]
    assert drawn != "lb-7f3a.42" and len(drawn) == 32 and drawn.isalnum()
    by_id = {r["requestId"]: r for r in access}
    assert by_id["lb-7f3a.42"]["status"] == 401 and by_id[drawn]["status"] == 401
    assert is_trace_id(by_id[drawn]["traceId"])  # a junk traceparent: a new trace id


async def test_outside_text_in_the_path_is_escaped_and_probes_are_quiet(
    service: Runtime,
) -> None:
    with json_log("INFO") as lines:
        async with client_for(service) as client:
            await client.get("/healthz")
            await client.get("/metrics")
            await client.get("/internal/exports/v1/CUSTOMER_LIST/batches")  # demo Provider
            await client.get(API + "/12%0A2026-12-01%20CRITICAL%20forged\u202e")
        access = await logged(lines, 1)
    [line] = access  # /healthz, /metrics and /internal/… are DEBUG lines
    assert line["path"] == API + "/12\\n2026-12-01 CRITICAL forged\\u202e"
    assert line["status"] == 200  # a refused id answers the envelope with HTTP 200


async def test_a_client_that_disconnects_mid_request_is_logged_as_such_not_as_a_500(
    service: Runtime,
) -> None:
    """Issue 35 item 8: a create whose body never fully arrives (the client closed the
    connection) is no fault of the service: its line says ``disconnected`` with status
    499 (nothing was answered), never 500, and no ERROR line is written."""
    host, port = service.base_url.removeprefix("http://").rsplit(":", 1)
    async with client_for(service) as client:
        authorization = client.headers["Authorization"]
    with json_log("INFO") as lines:
        stream = await trio.open_tcp_stream(host, int(port))
        await stream.send_all(
            f"POST {API} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Authorization: {authorization}\r\n"
            'Content-Length: 500\r\nX-Request-Id: gone-1\r\n\r\n{"exportType"'.encode()
        )
        await trio.testing.wait_all_tasks_blocked(0.05)  # the server waits for the rest
        await stream.aclose()
        [line] = [r for r in await logged(lines, 1) if r["requestId"] == "gone-1"]
    assert line["status"] == 499 and line["disconnected"] is True, line
    assert [r for r in lines() if r["level"] in ("error", "critical")] == []

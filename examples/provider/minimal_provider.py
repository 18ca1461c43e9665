"""A minimal Provider of ORDER_LIST (docs/provider-guide.md), run as `INTERNAL_SERVICE_TOKEN=t
python3 examples/provider/minimal_provider.py 18092`. A WSGI app: the standard library serves
it with nothing to install; a production WSGI server (gunicorn, uWSGI) serves `app` as is."""

import hashlib
import hmac
import json
import os
import sys
from typing import Any
from wsgiref.simple_server import make_server

PATH = "/internal/exports/v1/ORDER_LIST/batches"
TOKEN = os.environ.get("INTERNAL_SERVICE_TOKEN", "")  # Export Center's; unset refuses all
SECRET = os.urandom(32)  # signs snapshot tokens; a restart invalidates them (answered "409")
COLUMNS = [{"key": "orderId", "title": "Order", "type": "INTEGER", "width": 14},
           {"key": "amount", "title": "Amount", "type": "DECIMAL"},
           {"key": "paid", "title": "Paid", "type": "BOOLEAN"},
           {"key": "placedAt", "title": "Placed at", "type": "DATETIME", "width": 20}]  # fmt: skip
SCHEMA_HASH = "sha256:" + hashlib.sha256(json.dumps(COLUMNS, sort_keys=True).encode()).hexdigest()


def orders(tenant_id: int) -> list[dict[str, Any]]:  # SELECT … WHERE tenant_id = ? ORDER BY id
    return [{"orderId": tenant_id * 1000 + i, "amount": f"{i * 7 % 500}.{i % 100:02d}",
             "paid": i % 3 != 0, "placedAt": f"2024-03-{i % 28 + 1:02d}T08:{i % 60:02d}:00+08:00"}
            for i in range(1, 251)]  # fmt: skip


def refuse(code: str, message: str) -> dict[str, Any]:
    return {"code": code, "message": message, "data": None}


def answer(body: Any) -> dict[str, Any]:  # the envelope for one body; HTTP 200 either way
    if not isinstance(body, dict):
        return refuse("400", "request body must be a JSON object")
    if bad := [n for n in ("tenantId", "requestedBy") if not str(body.get(n)).isdecimal()]:
        return refuse("400", f"{bad[0]} must be a string of digits, got {body.get(bad[0])!r}")
    if body.get("appCode") not in ("PLATFORM", "MERCHANT"):
        return refuse("400", "appCode must be PLATFORM or MERCHANT")
    limit, cursor, sent = body.get("limit"), body.get("cursor"), str(body.get("snapshotToken"))
    if type(limit) is not int or not 1 <= limit <= 1000:
        return refuse("400", "limit must be an integer in 1..1000")
    rows = orders(int(body["tenantId"]))  # always scoped by the tenant
    scope = f"{body['tenantId']}|{body['appCode']}|".encode()  # a token binds its tenant
    end = str(len(rows)) if cursor is None else sent.partition(".")[0]  # the snapshot: rows now
    token = f"{end}.{hmac.new(SECRET, scope + end.encode(), 'sha256').hexdigest()}"
    if cursor is not None and not hmac.compare_digest(sent.encode(), token.encode()):
        return refuse("409", "snapshot token invalid or expired")
    if not (str(cursor or 0).isdecimal() and len(str(cursor)) < 10):
        return refuse("400", "cursor must be null or the nextCursor of the previous batch")
    stop = min(int(cursor or 0) + limit, int(end))
    data = {"schemaVersion": 1, "schemaHash": SCHEMA_HASH, "snapshotToken": token,
            "rows": rows[int(cursor or 0) : stop], "nextCursor": str(stop),
            "hasMore": stop < int(end), "totalRows": int(end)}  # fmt: skip
    data |= {"columns": COLUMNS} if cursor is None else {}  # later batches may omit them
    return {"code": "200", "message": "success", "data": data}


def app(environ: dict[str, Any], start_response: Any) -> list[bytes]:  # route, token, answer
    size = int(environ.get("CONTENT_LENGTH") or 0)
    given = environ.get("HTTP_X_INTERNAL_SERVICE_TOKEN", "").encode()
    if environ["PATH_INFO"] != PATH:
        status, envelope = "404 Not Found", refuse("404", f"no route {environ['PATH_INFO']}")
    elif not TOKEN or not hmac.compare_digest(given, TOKEN.encode()):
        status, envelope = "401 Unauthorized", refuse("401", "invalid internal service token")
    else:
        try:
            status, envelope = "200 OK", answer(json.loads(environ["wsgi.input"].read(size)))
        except ValueError:
            status, envelope = "200 OK", refuse("400", "request body is not JSON")
    start_response(status, [("Content-Type", "application/json")])  # wsgiref adds the length
    return [json.dumps(envelope, ensure_ascii=False).encode()]


if __name__ == "__main__":
    with make_server("127.0.0.1", int((sys.argv[1:] or ["18092"])[0]), app) as server:
        print(f"minimal Provider listening on http://127.0.0.1:{server.server_port}", flush=True)
        server.serve_forever()

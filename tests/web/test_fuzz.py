"""Property-based fuzzing of the HTTP API against the real server (hypothesis).

Generated request bodies, JSON-shaped create bodies, query strings, task ids and
``Authorization`` headers (including tokens signed with the server's own secret but with
hostile claims) go over real HTTP to the service (SQLite, consumer off so nothing runs).
Every response must:

* have a status below 500;
* carry the JSON envelope ``{"code", "message", "data"}`` whose ``code`` is below 500
  and equals the HTTP status unless that is 200 (business outcomes answer 200 with the
  outcome in the envelope);
* leave no ERROR record and no traceback in the log.

The seed is fixed (:data:`SEED`) and the example database is off, so a run is repeatable
and writes nothing. ``EXPORT_CENTER_FUZZ_EXAMPLES`` sets the total number of generated
requests (default 10,000, split over the five tests by :data:`SHARE`); each test checks it
sent its whole share and prints a ``fuzz:`` line with its count, the seed and the time.
The properties run inside plain tests (:func:`fuzz`), so they pass or fail in any order.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_from_bytes

import httpx
import jwt
import pytest
import trio
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from actors.core.principal import AppCode
from actors.runtime import Runtime, serve
from tests.helpers import API, make_settings
from web.auth import issue_token

#: the request count is a setting (``EXPORT_CENTER_FUZZ_EXAMPLES``): more than the default
#: per-test timeout of pyproject.toml allows for
pytestmark = pytest.mark.timeout(1800)

SEED = 20261202
TOTAL = int(os.environ.get("EXPORT_CENTER_FUZZ_EXAMPLES", "10000"))
SHARE = {"bodies": 0.25, "create": 0.25, "queries": 0.15, "ids": 0.15, "headers": 0.20}
COUNTS: dict[str, int] = {}


def examples(kind: str) -> int:
    return max(1, round(TOTAL * SHARE[kind]))


def fuzz_settings(kind: str) -> Any:
    return settings(
        max_examples=examples(kind),
        database=None,  # repeatable and nothing written to the work tree
        deadline=None,  # a shared 2-core machine: latency is not the property
        suppress_health_check=[HealthCheck.too_slow],
    )


@dataclass
class Server:
    """The service running in a thread of its own (its own trio loop), for the module.

    The properties are plain (sync) tests: hypothesis replays and shrinks a failing example
    after the test body returned, which needs a server that outlives one test call."""

    rt: Runtime
    token: trio.lowlevel.TrioToken


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    cfg = make_settings(
        tmp_path_factory.mktemp("fuzz"), consumer_enabled=False, publisher_poll_ms=200
    )
    started: queue.Queue[Server | BaseException] = queue.Queue()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            rt: Runtime = await nursery.start(
                lambda task_status: serve(
                    cfg, install_signal_handlers=False, task_status=task_status
                )
            )
            started.put(Server(rt, trio.lowlevel.current_trio_token()))

    def run() -> None:
        try:
            trio.run(main)
        except BaseException as exc:  # reported to the fixture, not lost in the thread
            started.put(exc)

    thread = threading.Thread(target=run, name="fuzz-server", daemon=True)
    thread.start()
    result = started.get(timeout=60)
    if isinstance(result, BaseException):
        raise result
    yield result
    trio.from_thread.run_sync(result.rt.request_stop, trio_token=result.token)
    thread.join(timeout=30)


@pytest.fixture(scope="module")
def http(server: Server) -> Iterator[httpx.Client]:
    token = issue_token(
        server.rt.jwt_secret,
        user_id=7,
        tenant_id=0,
        app_code=AppCode.PLATFORM,
        perms=["platform:customer:export", "platform:download:all"],
    )
    with httpx.Client(
        base_url=server.rt.base_url, timeout=30, headers={"Authorization": f"Bearer {token}"}
    ) as client:
        yield client


class LogWatch(logging.Handler):
    """Every record of ERROR or above, or with a traceback, is a finding."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.findings: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR or record.exc_info or "Traceback" in str(record.msg):
            self.findings.append(f"{record.name} {record.levelname}: {record.getMessage()}")


@pytest.fixture(scope="module")
def log_watch() -> Any:
    watch = LogWatch()
    root = logging.getLogger()
    root.addHandler(watch)
    yield watch
    root.removeHandler(watch)


def check(kind: str, response: httpx.Response, watch: LogWatch, sent: str) -> None:
    COUNTS[kind] = COUNTS.get(kind, 0) + 1
    status = response.status_code
    assert status < 500, f"{sent}\n-> {status} {response.text[:500]}"
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"{sent}\n-> {status}, not JSON: {response.text[:500]!r}") from None
    assert isinstance(body, dict) and set(body) == {"code", "message", "data"}, (sent, body)
    code = body["code"]
    # business outcomes answer HTTP 200 with the outcome in the envelope (README, API)
    assert isinstance(code, str) and code.isdigit() and int(code) < 500, (sent, body)
    assert status == 200 or code == str(status), (sent, status, body)
    assert isinstance(body["message"], str) and body["message"], (sent, body)
    assert not watch.findings, f"{sent}\n-> log: {watch.findings}"


# -- strategies ---------------------------------------------------------------------------

surrogates = st.integers(0xD800, 0xDFFF).map(chr)
any_char = st.one_of(st.characters(), surrogates)
hostile_text = st.text(any_char, max_size=40)
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    hostile_text,
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile_text, inner, max_size=4)
    ),
    max_leaves=12,
)


def nested(depth: int, opener: str) -> str:
    if opener == "[":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


raw_bodies = st.one_of(
    st.binary(max_size=300),
    st.text(any_char, max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.builds(nested, st.integers(1, 5000), st.sampled_from(["[", "{"])).map(str.encode),
    json_values.map(lambda v: json.dumps(v).encode()),  # lone surrogates as \\udXXX escapes
    st.sampled_from(
        [b"", b"null", b"NaN", b'{"a": Infinity}', b"\xef\xbb\xbf{}", b'{"a":1e999999}']
    ),
)

create_bodies = st.fixed_dictionaries(
    {},
    optional={
        "exportType": st.one_of(st.just("CUSTOMER_LIST"), json_values),
        "taskName": st.one_of(hostile_text, json_values),
        "format": st.one_of(st.just("XLSX"), json_values),
        "parameters": st.one_of(
            st.dictionaries(
                st.sampled_from(["rowCount", "status", "keyword"]) | hostile_text,
                json_values,
                max_size=5,
            ),
            json_values,
        ),
    },
)

url_bytes = st.binary(max_size=60).map(lambda b: quote_from_bytes(b, safe=""))
query_keys = st.one_of(
    st.sampled_from(["status", "page", "pageSize", "exportType", "all"]), url_bytes
)
query_values = st.one_of(
    st.sampled_from(["1", "0", "-1", "1" * 5000, "PENDING", "FAILED", "１２", "1_0", " 3 "]),
    url_bytes,
    st.integers().map(str),
)
queries = st.lists(st.tuples(query_keys, query_values), max_size=5).map(
    lambda pairs: "&".join(f"{k}={v}" for k, v in pairs)
)

task_ids = st.one_of(
    st.integers().map(str),
    st.integers(min_value=2**63 - 5, max_value=2**70).map(str),
    url_bytes.filter(bool),
    st.sampled_from(["0", "-0", "1e3", "0x10", "١٢", "9" * 5000, "%00", "%2F..%2F", "null"]),
)
paths = st.sampled_from(["", "/download", "/retry"])

claim_values = st.one_of(
    json_values,
    st.floats(),  # includes inf and nan: what a forged or foreign token may carry
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from(["PLATFORM", "1", "0", "9" * 30]),
)
claims = st.fixed_dictionaries(
    {},
    optional={
        "sub": claim_values,
        "tenant_id": claim_values,
        "app_code": claim_values,
        "perms": st.one_of(st.lists(hostile_text, max_size=3), claim_values),
        "exp": st.one_of(st.just(4_000_000_000), claim_values),
        "iat": claim_values,
        "nbf": claim_values,
    },
)
# what HTTP lets a client send as a header value (visible ASCII, obs-text, inner SP/TAB)
header_safe = st.binary(max_size=120).map(
    lambda b: bytes(c for c in b if c == 9 or 0x20 <= c != 0x7F).strip(b" \t")
)


def signed(secret: str, payload: dict[str, Any]) -> str:
    # PyJWT refuses to encode nan/inf or surrogates; sign the JSON text ourselves then.
    try:
        return jwt.encode(payload, secret, algorithm="HS256")
    except (TypeError, ValueError, OverflowError):
        text = json.dumps(payload, allow_nan=True)
        return jwt.api_jws.encode(text.encode("utf-8", "surrogatepass"), secret, "HS256")


# -- the properties -----------------------------------------------------------------------


def fuzz(kind: str, prop: Callable[[], None], capsys: pytest.CaptureFixture[str]) -> None:
    """Run property ``prop`` and check it sent its whole share of requests.

    Hypothesis runs the property ``examples(kind)`` times (fewer only if it exhausted a
    strategy, which none of these can); a property that stopped sending (a strategy that
    filters everything out, a ``check`` that returns early) fails here instead of passing
    on a handful of requests. Prints a ``fuzz:`` line with the count, seed and time."""
    before, t0 = COUNTS.get(kind, 0), time.monotonic()
    prop()
    sent = COUNTS.get(kind, 0) - before
    with capsys.disabled():
        print(f"\nfuzz: {kind} {sent} requests, seed {SEED}, {time.monotonic() - t0:.0f} s")
    assert sent >= examples(kind), f"{kind}: {sent} requests sent, {examples(kind)} generated"


def test_any_create_body_gets_a_4xx_envelope(
    http: httpx.Client, log_watch: LogWatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @fuzz_settings("bodies")
    @seed(SEED)
    @given(body=raw_bodies, content_type=st.sampled_from([None, "application/json", "text/plain"]))
    def prop(body: bytes, content_type: str | None) -> None:
        headers = {"Content-Type": content_type} if content_type else {}
        response = http.post(API, content=body, headers=headers)
        check("bodies", response, log_watch, f"POST body {body[:200]!r}")

    fuzz("bodies", prop, capsys)


def test_any_json_create_body_gets_an_envelope(
    http: httpx.Client, log_watch: LogWatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @fuzz_settings("create")
    @seed(SEED)
    @given(body=create_bodies)
    def prop(body: dict[str, Any]) -> None:
        raw = json.dumps(body).encode()  # ensure_ascii: lone surrogates travel as \\udXXX
        response = http.post(API, content=raw, headers={"Content-Type": "application/json"})
        check("create", response, log_watch, f"POST {raw[:300]!r}")

    fuzz("create", prop, capsys)


def test_any_list_query_gets_an_envelope(
    http: httpx.Client, log_watch: LogWatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @fuzz_settings("queries")
    @seed(SEED)
    @given(query=queries)
    def prop(query: str) -> None:
        response = http.get(f"{API}?{query}")
        check("queries", response, log_watch, f"GET ?{query[:300]}")

    fuzz("queries", prop, capsys)


def test_any_task_id_gets_an_envelope(
    http: httpx.Client, log_watch: LogWatch, capsys: pytest.CaptureFixture[str]
) -> None:
    @fuzz_settings("ids")
    @seed(SEED)
    @given(task_id=task_ids, path=paths)
    def prop(task_id: str, path: str) -> None:
        url = f"{API}/{task_id}{path}"
        if path == "/retry":
            response = http.post(url)
        else:
            response = http.get(url)
        check("ids", response, log_watch, f"{url[:300]}")

    fuzz("ids", prop, capsys)


def test_any_authorization_header_gets_an_envelope(
    server: Server,
    http: httpx.Client,
    log_watch: LogWatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    @fuzz_settings("headers")
    @seed(SEED)
    @given(
        kind=st.sampled_from(["raw", "bearer", "claims"]),
        raw=header_safe,
        payload=claims,
    )
    def prop(kind: str, raw: bytes, payload: dict[str, Any]) -> None:
        if kind == "raw":
            value = raw
        elif kind == "bearer":
            value = (b"Bearer " + raw).strip()
        else:
            value = f"Bearer {signed(server.rt.jwt_secret, payload)}".encode()
        response = http.get(API, headers={"Authorization": value})
        check("headers", response, log_watch, f"Authorization: {value[:300]!r}")

    fuzz("headers", prop, capsys)

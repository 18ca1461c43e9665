"""The whole API fuzzed from its own ``/openapi.json`` with schemathesis, against the real
service (HTTP on a port, SQLite, the demo Provider, the export pipeline running).

Every operation gets generated requests, valid ones and ones that break the document
(wrong types, missing fields, out-of-range numbers, odd ids), sent with a valid token of
an administrator (``platform:download:all``, so ``requestedBy`` is exercised too). Each
answer must: not be a 5xx; have a status the document declares for the operation; have a
declared content type; match the declared schema (the envelope, camelCase, string ids);
carry the declared headers. Business refusals answer HTTP 200 with the envelope code, so
schemathesis' checks that expect an HTTP 4xx for invalid data do not apply.

``EXPORT_CENTER_SCHEMATHESIS_REQUESTS`` sets the number of requests (default 2,000),
spread over the operations; the figure actually sent is printed. Event streams are left
out (a request would only end at its timeout).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
import trio
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from actors.core.principal import DOWNLOAD_ALL_PERMISSION, AppCode
from tests.helpers import make_settings, running_service
from web.auth import issue_token

REQUESTS = int(os.environ.get("EXPORT_CENTER_SCHEMATHESIS_REQUESTS", "2000"))
SEED = 20261202
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    response_headers_conformance,
]


def streams(operation: dict[str, Any], path: str) -> bool:
    """An event stream never ends by itself: a request would wait for its timeout. Left
    to the tests of the stream (a path ending in ``/progress`` counts as one even before
    its route declares its media type)."""
    answers = operation.get("responses", {}).values()
    return path.endswith("/progress") or any(
        "text/event-stream" in answer.get("content", {}) for answer in answers
    )


def fuzz(base_url: str, token: str, total: int) -> dict[str, int]:
    """Send about ``total`` generated requests to the service at ``base_url``; raise on the
    first answer that fails a check (hypothesis shrinks it first).

    Returns:
        Requests sent per operation (``METHOD path``).
    """
    headers = {"Authorization": f"Bearer {token}"}
    document = requests.get(f"{base_url}/openapi.json", timeout=10).json()
    schema = schemathesis.openapi.from_dict(document)
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if not streams(document["paths"][op.path][op.method.lower()], op.path)
    ]
    assert len(operations) >= 8, [op.label for op in operations]
    # /healthz and /metrics take nothing to vary: one request each; the API's operations
    # share the budget, half valid and half invalid requests (an operation without
    # parameters still varies its credentials and headers).
    with_inputs = [op for op in operations if op.path.startswith("/api/")]
    per_run = max(1, (total - len(operations)) // (2 * len(with_inputs)))
    sent: dict[str, int] = {}
    with requests.Session() as session:

        def runner(operation: Any, mode: GenerationMode) -> Callable[[], None]:
            @seed(SEED)
            @settings(
                max_examples=per_run,
                deadline=None,
                database=None,
                phases=[Phase.explicit, Phase.generate, Phase.shrink],
                suppress_health_check=list(HealthCheck),
            )
            @given(case=operation.as_strategy(generation_mode=mode))
            def run(case: Any) -> None:
                response = case.call(
                    base_url=base_url, session=session, headers=headers, timeout=30
                )
                sent[operation.label] = sent.get(operation.label, 0) + 1
                case.validate_response(response, checks=CHECKS, headers=headers)

            return run  # type: ignore[no-any-return]

        for operation in operations:
            for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
                try:
                    runner(operation, mode)()
                except Unsatisfiable:
                    # nothing to break: an operation without parameters or body
                    assert mode == GenerationMode.NEGATIVE, operation.label
    return sent


@pytest.mark.timeout(1800)  # the request count is a setting (EXPORT_CENTER_SCHEMATHESIS_REQUESTS)
async def test_every_answer_matches_the_openapi_document(tmp_path: Path) -> None:
    config = make_settings(
        tmp_path, publisher_poll_ms=200, reconciler_poll_ms=500, consumer_concurrency=2
    )
    async with running_service(config) as rt:
        token = issue_token(
            rt.jwt_secret,
            user_id=1,
            tenant_id=0,
            app_code=AppCode.PLATFORM,
            perms=["platform:customer:export", DOWNLOAD_ALL_PERMISSION],
        )
        started = time.monotonic()
        sent = await trio.to_thread.run_sync(fuzz, rt.base_url, token, REQUESTS)
        seconds = time.monotonic() - started
    count = sum(sent.values())
    print(
        f"\nschemathesis: {count} requests over {len(sent)} operations, no failure, "
        f"seed {SEED}, {seconds:.0f} s: "
        + ", ".join(f"{label} {n}" for label, n in sorted(sent.items()))
    )
    assert count >= REQUESTS // 4, sent  # parameterless operations need few examples

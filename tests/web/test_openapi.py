"""``GET /openapi.json`` declares every route of the API with its models, the bearer
token scheme, and nothing that is not the contract; ``/docs`` has its own policy."""

from __future__ import annotations

import re

import pytest
from pydantic import BaseModel
from quart_schema import validate_request

from actors.core.limits import LIST_TOTAL_CAP
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API
from tests.servers import api_app
from web.api import api
from web.openapi import DOCS_CONTENT_SECURITY_POLICY, SWAGGER_UI_FILES, for_readers
from web.page import CONTENT_SECURITY_POLICY


async def test_every_api_route_is_declared_with_its_models(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    app = api_app(store, storage)[0]
    response = await app.test_client().get("/openapi.json")
    assert response.status_code == 200
    doc = await response.get_json()
    assert doc["openapi"].startswith("3.1")
    assert doc["components"]["securitySchemes"]["bearerAuth"] == {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "JWT",
    }
    assert doc["components"]["securitySchemes"]["sessionCookie"] == {
        "type": "apiKey",
        "in": "cookie",
        "name": "export_center_session",
    }
    assert doc["security"] == [{"bearerAuth": []}, {"sessionCookie": []}]
    routes = {
        (rule.rule, method.lower())
        for rule in app.url_map.iter_rules()
        if rule.endpoint.startswith(api.name + ".")
        for method in rule.methods or ()
        if method not in ("HEAD", "OPTIONS")
    }
    declared = {
        (path.replace("{task_id}", "<task_id>"), method)
        for path, item in doc["paths"].items()
        for method in item
    }
    assert routes <= declared
    for path, method in routes:
        operation = doc["paths"][path.replace("<task_id>", "{task_id}")][method]
        ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
        # The success envelope, or (where the route refuses anything) it or the error
        # envelope: refusals answer HTTP 200 with their code in the envelope.
        success = ok["anyOf"][0] if "anyOf" in ok else ok
        if "allOf" in success:  # the success is a file: JSON answers are refusals only
            success = success["allOf"][0]
        if "$ref" in success:
            success = doc["components"]["schemas"][success["$ref"].rsplit("/", 1)[1]]
        assert set(success["required"]) == {"code", "message", "data"}, path
        assert "401" in operation["responses"], path  # every route needs a credential
        assert "400" not in operation["responses"], path  # a bad request is HTTP 200
        assert operation["summary"], path
    create = doc["paths"][API]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"]["required"] == [
        "exportType"
    ]
    listing = {p["name"]: p for p in doc["paths"][API]["get"]["parameters"]}
    assert set(listing) == {
        "status",
        "exportType",
        "requestedFrom",
        "requestedTo",
        "requestedBy",
        "page",
        "pageSize",
    }
    assert listing["status"]["schema"]["type"] == "array"
    task = doc["components"]["schemas"]["Task"]
    for field in ("requestedBy", "tenantId", "appCode", "parameters", "warnings", "lastError"):
        assert field in task["required"], field
    assert task["properties"]["id"]["pattern"] == "^[0-9]{1,19}$"
    # the page and the demo Provider are not part of the contract
    assert all(
        p.startswith("/api/") or p in ("/healthz", "/healthz/details", "/metrics")
        for p in doc["paths"]
    )
    assert doc["paths"]["/healthz"]["get"]["security"] == []
    # the session, export types and progress routes are declared too
    assert doc["paths"]["/api/platform/v1/session"]["post"]["security"] == []
    types = doc["paths"]["/api/platform/v1/files/export-types"]["get"]["responses"]["200"]
    assert types["content"]["application/json"]["schema"]["title"] == "ExportTypesEnvelope"
    stream = doc["paths"]["/api/platform/v1/files/progress"]["get"]["responses"]["200"]
    # the stream, or the envelope of a refusal (429 at a cap)
    assert sorted(stream["content"]) == ["application/json", "text/event-stream"]
    assert stream["x-envelope-codes"] == {
        "200": "success",
        "429": stream["x-envelope-codes"]["429"],
    }


async def test_the_docs_page_and_its_files_come_from_this_origin_under_its_own_policy(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """Issue 24 item 4: no script from a CDN on the origin of the session cookie; every
    file the page names is served here, and nothing else under /docs/."""
    client = api_app(store, storage)[0].test_client()
    docs = await client.get("/docs")
    assert docs.status_code == 200
    assert docs.headers["Content-Security-Policy"] == DOCS_CONTENT_SECURITY_POLICY
    assert "http" not in DOCS_CONTENT_SECURITY_POLICY  # no other origin at all
    text = await docs.get_data(as_text=True)
    named = re.findall(r'(?:src|href)="(/[^"]+)"', text)
    assert set(named) == {
        "/openapi.json",
        "/docs/init.js",
        *(f"/docs/{n}" for n in SWAGGER_UI_FILES),
    }
    for path in named:
        answer = await client.get(path)
        assert answer.status_code == 200 and len(await answer.get_data()) > 0, path
    bundle = await client.get("/docs/swagger-ui-bundle.js")
    assert bundle.content_type.startswith("text/javascript")
    assert "SwaggerUIBundle" in await bundle.get_data(as_text=True)
    assert bundle.headers["Content-Security-Policy"] == DOCS_CONTENT_SECURITY_POLICY
    for other in ("/docs/swagger-editor.js", "/docs/..%2Fconfig.py", "/docs/LICENSE"):
        assert (await client.get(other)).status_code == 404, other
    page = await client.get("/")
    assert page.headers["Content-Security-Policy"] == CONTENT_SECURITY_POLICY


async def test_a_route_validated_by_quart_schema_refuses_in_the_envelope(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """A route that lets quart-schema validate its body (none of web/api.py does: the core
    checks them) still answers a bad one with the envelope, naming the field."""
    app = api_app(store, storage)[0]

    class Body(BaseModel):
        token: str

    @app.post("/validated")
    @validate_request(Body)
    async def validated(data: Body) -> dict[str, str]:
        return {"token": data.token}

    client = app.test_client()
    bad = await client.post("/validated", json={"token": 7})
    assert bad.status_code == 200
    body = await bad.get_json()
    assert body["code"] == "400" and body["data"] is None
    assert body["message"].startswith("token: "), body
    good = await client.post("/validated", json={"token": "t"})
    assert (await good.get_json()) == {"token": "t"}


async def test_the_document_reads_for_a_client_author(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    """Readable, unique operation ids for generated clients; no pointers into this
    repository's source or design sections; the download's real 206 and 416 answers; the
    list's cap as the code has it."""
    app = api_app(store, storage)[0]
    doc = await (await app.test_client().get("/openapi.json")).get_json()
    operations = [op for item in doc["paths"].values() for op in item.values()]
    ids = [op["operationId"] for op in operations]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", i) for i in ids), ids
    assert {"listTasks", "createTask", "getTask", "downloadTaskFile", "retryTask"} <= set(ids)
    for op in operations:
        text = f"{op.get('summary', '')} {op.get('description', '')}"
        assert not re.search(r"actors/|web/|\.py\b|§|README|``", text), (op["operationId"], text)
    download = doc["paths"][API + "/{task_id}/download"]["get"]["responses"]
    assert {"206", "416"} <= download.keys()
    assert f"{LIST_TOTAL_CAP:,}" in doc["paths"][API]["get"]["description"]


@pytest.mark.parametrize(
    ("text", "reader"),
    [
        ("as ``actors/core/access.py`` says", "as `actors/core/access.py` says"),
        ("For the owner (``actors/core/access.py``), or", "For the owner, or"),
        ("the design's rule (§5)", "the design's rule"),
        ("see §8.2 for it", "see for it"),
    ],
)
def test_docstrings_are_cleaned_for_readers(text: str, reader: str) -> None:
    assert for_readers(text) == reader

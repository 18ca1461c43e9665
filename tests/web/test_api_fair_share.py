"""The kept place of an export type over the API: a clear 429 envelope, nothing created."""

from __future__ import annotations

from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API
from tests.servers import api_app, headers


async def test_create_refused_for_the_kept_place_names_the_rule_and_creates_nothing(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    client = api_app(store, storage)[0].test_client()

    async def create(user: int, i: int) -> dict:
        response = await client.post(
            API,
            headers=headers(user),
            json={"exportType": "CUSTOMER_LIST", "parameters": {"i": i}},
        )
        assert response.status_code == 200
        return await response.get_json()

    for i in range(3):
        assert (await create(1, i))["code"] == "200"
    assert (await create(2, 0))["code"] == "200"
    refused = await create(2, 1)
    assert refused["code"] == "429" and refused["data"] is None
    assert "kept for users with no active CUSTOMER_LIST export" in refused["message"]
    listed = await (await client.get(API, headers=headers(2))).get_json()
    assert listed["data"]["total"] == "1"
    assert (await create(3, 0))["code"] == "200"  # the newcomer gets the place

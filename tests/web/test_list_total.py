"""The list's total is capped: counting a tenant's whole history would grow with it."""

from __future__ import annotations

from actors.core.limits import LIST_TOTAL_CAP
from actors.core.principal import DOWNLOAD_ALL_PERMISSION
from actors.storage.local import LocalDirectoryStorage
from db.store import ExportStore
from tests.helpers import API
from tests.history import FIRST_USER, HISTORY_USERS, load_history
from tests.servers import api_app, headers

#: More finished tasks than the cap, spread over HISTORY_USERS users of tenant 0.
HISTORY = LIST_TOTAL_CAP + 2 * HISTORY_USERS


async def test_the_total_stops_at_the_cap_and_says_so(
    store: ExportStore, storage: LocalDirectoryStorage
) -> None:
    await load_history(store.db, HISTORY, now_ms=int((await store.db_now()).timestamp() * 1000))
    client = api_app(store, storage)[0].test_client()

    async def page(user: int, *perms: str, **query: str) -> dict:
        response = await client.get(
            API, headers=headers(user, ("platform:customer:export", *perms)), query_string=query
        )
        assert response.status_code == 200
        return (await response.get_json())["data"]

    admin = await page(1, DOWNLOAD_ALL_PERMISSION)
    assert (admin["total"], admin["totalCapped"]) == (str(LIST_TOTAL_CAP), True)
    assert len(admin["items"]) == 20
    # Under the cap the total is exact: each history user has HISTORY / HISTORY_USERS tasks.
    user = await page(FIRST_USER)
    assert (user["total"], user["totalCapped"]) == (str(HISTORY // HISTORY_USERS), False)
    failed = await page(1, DOWNLOAD_ALL_PERMISSION, status="FAILED")
    assert (failed["total"], failed["totalCapped"]) == (str(HISTORY // 10), False)

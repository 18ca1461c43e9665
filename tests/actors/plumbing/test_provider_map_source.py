"""The Provider map file follows its source (actors/plumbing/provider_map_source.py): read at start,
reloaded when an export run starts and the file changed, a bad file rejected once with the
old map kept; and the Provider client sends each service's own token.

Nothing here waits on a clock: :meth:`ProviderMapSource.refresh` is what a run calls before
its first request, so each test changes the file, refreshes, and looks.
"""

from __future__ import annotations

import logging
import os
import pathlib
from typing import Any

import pytest
import trio

import actors.plumbing.provider_map_source as source_module
from actors.composition.registry import allowed_services
from actors.core.definitions import ExportDefinition
from actors.core.errors import ConfigError, ProviderMapError
from actors.core.principal import AppCode
from actors.core.provider.contract import SERVICE_TOKEN_HEADER
from actors.core.provider.provider_map import ProviderEndpoint
from actors.pipeline.provider.client import ProviderClient
from actors.plumbing.config_loading import load_settings
from actors.plumbing.provider_map_source import (
    ProviderMapSource,
    load_provider_map_file,
    open_provider_map,
)

ONE = "http://127.0.0.1:8001"
TWO = "http://127.0.0.1:8002"
#: A service the file did not name at start, pointing at a cloud metadata address.
EVIL = "  evil-service:\n    url: http://169.254.169.254\n"


def map_yaml(iam_url: str = ONE, *, token: str | None = "iam-token", extra: str = "") -> str:
    token_line = f"    token: {token}\n" if token is not None else ""
    return f"providers:\n  iam-service:\n    url: {iam_url}\n{token_line}{extra}"


def replace_file(path: pathlib.Path, text: str) -> None:
    """Write ``text`` atomically (temp file + rename), as deploy tools and Kubernetes do."""
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


@pytest.fixture
def map_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "providers.yaml"
    path.write_text(map_yaml(), encoding="utf-8")
    return path


class Failures:
    def __init__(self) -> None:
        self.errors: list[ProviderMapError] = []

    def __call__(self, err: ProviderMapError) -> None:
        self.errors.append(err)


def open_source(path: pathlib.Path, failures: Failures | None = None) -> ProviderMapSource:
    return ProviderMapSource.from_file(
        path, {}, default_token=True, on_reload_failed=failures or Failures()
    )


def count_loads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record each read of the map file (the arguments of each call), from now on."""
    loads: list[Any] = []
    real = source_module.load_provider_map_file

    def counting(*args: Any, **kwargs: Any) -> Any:
        loads.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(source_module, "load_provider_map_file", counting)
    return loads


def url_of(source: ProviderMapSource, service: str = "iam-service") -> str | None:
    endpoint = source.endpoint(service)
    return None if endpoint is None else endpoint.base_url


# --- start-up -------------------------------------------------------------------------------


def test_the_file_read_at_start_gives_addresses_tokens_and_the_allowlist(
    map_file: pathlib.Path,
) -> None:
    source = open_source(map_file)

    assert source.endpoint("iam-service") == ProviderEndpoint(ONE, "iam-token")
    assert source.endpoint("order-service") is None
    assert source.services == frozenset({"iam-service"})


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (None, "<file>"),  # missing
        ("providers: [", "<file>"),  # not YAML
        (map_yaml() + "  iam-service:\n    url: http://x\n", "<file>"),  # duplicate key
        (map_yaml("gopher://iam"), "providers.iam-service.url"),
    ],
)
def test_a_bad_file_at_start_is_an_error_naming_the_key(
    tmp_path: pathlib.Path, text: str | None, key: str
) -> None:
    path = tmp_path / "providers.yaml"
    if text is not None:
        path.write_text(text, encoding="utf-8")

    with pytest.raises(ProviderMapError) as caught:
        load_provider_map_file(path, services=None, default_token=True)

    assert caught.value.key == key


def test_settings_refuse_both_the_map_file_and_the_url_variable(map_file: pathlib.Path) -> None:
    with pytest.raises(ConfigError, match="FILE_EXPORT_PROVIDER_MAP and FILE_EXPORT_PROVIDER_URLS"):
        load_settings(provider_map=map_file, provider_urls={"iam-service": ONE})


def test_start_up_refuses_a_bad_map_file_naming_the_variable(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text(map_yaml(token=None), encoding="utf-8")
    settings = load_settings(provider_map=path, internal_service_token=None)

    with pytest.raises(ConfigError, match=r"FILE_EXPORT_PROVIDER_MAP .*iam-service\.token"):
        open_provider_map(settings)


def test_start_up_refuses_a_malformed_url_in_the_environment_map() -> None:
    settings = load_settings(provider_urls={"iam-service": "http://[::1"}, demo_provider=False)

    with pytest.raises(ConfigError, match=r"FILE_EXPORT_PROVIDER_URLS \(iam-service\)"):
        open_provider_map(settings)


def test_the_allowlist_is_the_file_s_services_plus_the_demo_provider(
    map_file: pathlib.Path,
) -> None:
    settings = load_settings(provider_map=map_file, demo_provider=True)

    assert allowed_services(settings) == frozenset({"iam-service", "demo-service"})


# --- reload at use --------------------------------------------------------------------------


async def test_a_moved_provider_is_used_after_the_next_refresh(map_file: pathlib.Path) -> None:
    source = open_source(map_file)

    replace_file(map_file, map_yaml(TWO, token="new-token"))
    assert url_of(source) == ONE  # nothing reads the file until a run starts
    await source.refresh()

    assert source.endpoint("iam-service") == ProviderEndpoint(TWO, "new-token")


async def test_a_file_rewritten_in_place_is_reloaded(map_file: pathlib.Path) -> None:
    source = open_source(map_file)

    with map_file.open("w", encoding="utf-8") as f:  # same inode, new size
        f.write(map_yaml("http://127.0.0.1:18002"))
    await source.refresh()

    assert url_of(source) == "http://127.0.0.1:18002"


async def test_an_unchanged_file_is_not_read_again(
    map_file: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = open_source(map_file)
    loads = count_loads(monkeypatch)
    for _ in range(5):
        await source.refresh()

    assert loads == []


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (map_yaml("ftp://iam"), "providers.iam-service.url"),
        ("providers: {", "<file>"),
        (map_yaml(extra=EVIL), "providers.evil-service"),  # adds a service
        ("providers: {}\n", "providers"),  # drops iam-service
    ],
)
async def test_a_bad_reload_keeps_the_old_map_with_one_error_and_one_count(
    map_file: pathlib.Path, caplog: pytest.LogCaptureFixture, text: str, key: str
) -> None:
    caplog.set_level(logging.INFO, logger="actors.plumbing.provider_map_source")
    failures = Failures()
    source = open_source(map_file, failures)
    before = source.current

    replace_file(map_file, text)
    for _ in range(3):  # several runs start: the rejected change is reported once
        await source.refresh()

    assert source.current is before and url_of(source) == ONE
    assert [err.key for err in failures.errors] == [key]
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1
    assert key in errors[0].getMessage() and "keeping the previous map" in errors[0].getMessage()
    assert source.services == frozenset({"iam-service"})


async def test_the_watcher_reports_a_bad_edit_without_waiting_for_an_export(
    map_file: pathlib.Path,
) -> None:
    """Between exports the watcher polls the file: a bad edit is rejected (one count, the
    old map kept) and a good one used, with no run starting in between."""
    failures = Failures()
    source = open_source(map_file, failures)
    async with trio.open_nursery() as n:
        n.start_soon(source.watch, 0.01)
        replace_file(map_file, map_yaml(extra=EVIL))
        with trio.fail_after(10):
            while not failures.errors:
                await trio.sleep(0.01)
        assert len(failures.errors) == 1 and url_of(source) == ONE
        replace_file(map_file, map_yaml(TWO))
        with trio.fail_after(10):
            while url_of(source) != TWO:
                await trio.sleep(0.01)
        n.cancel_scope.cancel()
    assert len(failures.errors) == 1


async def test_a_deleted_file_keeps_the_old_map_and_its_return_is_loaded(
    map_file: pathlib.Path,
) -> None:
    failures = Failures()
    source = open_source(map_file, failures)

    map_file.unlink()
    await source.refresh()
    assert url_of(source) == ONE
    replace_file(map_file, map_yaml(TWO))
    await source.refresh()

    assert [err.key for err in failures.errors] == ["<file>"]
    assert url_of(source) == TWO


async def test_a_fixed_file_after_a_rejected_one_is_loaded(map_file: pathlib.Path) -> None:
    failures = Failures()
    source = open_source(map_file, failures)

    replace_file(map_file, map_yaml("not a url"))
    await source.refresh()
    replace_file(map_file, map_yaml(TWO))
    await source.refresh()

    assert len(failures.errors) == 1
    assert url_of(source) == TWO


async def test_concurrent_refreshes_read_a_changed_file_once(
    map_file: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = open_source(map_file)
    loads = count_loads(monkeypatch)
    replace_file(map_file, map_yaml(TWO))
    async with trio.open_nursery() as nursery:
        for _ in range(4):  # four slots start a run at once
            nursery.start_soon(source.refresh)

    assert len(loads) == 1
    assert url_of(source) == TWO


async def test_without_a_map_file_the_static_map_is_read_live() -> None:
    static: dict[str, str] = {}
    source = ProviderMapSource(static)

    await source.refresh()  # nothing to read
    assert source.endpoint("demo-service") is None
    static["demo-service"] = ONE  # the runtime adds the demo Provider once bound

    assert source.endpoint("demo-service") == ProviderEndpoint(ONE, None)


# --- the request carries the service's token -------------------------------------------------


def definition(service: str) -> ExportDefinition:
    return ExportDefinition(
        export_type="CUSTOMER_LIST",
        provider_service=service,
        provider_path="/internal/exports/v1/CUSTOMER_LIST/batches",
        required_permission="platform:customer:export",
        app_scope=AppCode.PLATFORM,
    )


async def test_each_request_carries_its_service_s_token_or_the_default_and_the_current_url(
    tmp_path: pathlib.Path,
) -> None:
    path = tmp_path / "providers.yaml"
    path.write_text(map_yaml(extra=f"  order-service:\n    url: {TWO}\n"), encoding="utf-8")
    source = ProviderMapSource.from_file(path, {}, default_token=True)
    client = ProviderClient(source, "default-token")

    iam = client.fetch_spec(definition("iam-service"), b"{}", None)
    order = client.fetch_spec(definition("order-service"), b"{}", None)
    replace_file(
        path,
        map_yaml("http://127.0.0.1:8003", token="rotated") + f"  order-service:\n    url: {TWO}\n",
    )
    await client.refresh_endpoints()
    moved = client.fetch_spec(definition("iam-service"), b"{}", None)

    assert iam.url.startswith(ONE + "/internal/exports/v1/")
    assert dict(iam.headers)[SERVICE_TOKEN_HEADER] == "iam-token"
    assert dict(order.headers)[SERVICE_TOKEN_HEADER] == "default-token"
    assert moved.url.startswith("http://127.0.0.1:8003/")
    assert dict(moved.headers)[SERVICE_TOKEN_HEADER] == "rotated"


async def test_an_unforeseen_error_while_loading_is_a_rejected_reload_not_a_failed_run(
    map_file: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """refresh() runs at the start of every export: whatever loading the file raises (a
    YAML nesting deep enough for a RecursionError …) keeps the old map, never fails it."""
    failures = Failures()
    source = open_source(map_file, failures)

    def explode(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(source_module, "load_provider_map_file", explode)
    replace_file(map_file, map_yaml(TWO))
    await source.refresh()

    assert url_of(source) == ONE
    assert [(err.key, "RecursionError" in err.rule) for err in failures.errors] == [
        ("<file>", True)
    ]

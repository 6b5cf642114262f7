"""Pure pieces of the CLI: error wording, read-only URI rewriting, scan bookkeeping.

Fakes appear only here, to pin logic that real stores cannot make
deterministic (how many reads run at once, a session that vanishes between
listing and reading, a store that fails one read).
"""

from __future__ import annotations

import asyncio
import socket
import sqlite3
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.database_session_service import DatabaseSessionService
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from google.genai import types

from adk_pairing.adk import list_sessions_requires_user
from adk_pairing.cli._common import CliError, explain, human_age, parse_time, short
from adk_pairing.cli._scan_report import ScanResult
from adk_pairing.cli._store import OpenedStore, parse_options, read_only_target
from adk_pairing.cli._store_scan import Hooks, ReaderChoice, ScanOptions, scan_store

SECRET = "hunter2"


# -- messages ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (59.9, "59s"), (61, "1m 1s"), (3_600, "1h"), (93_784, "1d 2h"), (-5, "0s")],
)
def test_human_age_uses_two_largest_units(seconds: float, text: str) -> None:
    assert human_age(seconds) == text


def test_short_flattens_and_cuts_with_ellipsis() -> None:
    assert short("a\n b   c", 10) == "a b c"
    assert short("abcdefghij", 5) == "abcd…"


def _wrapped(inner: BaseException, outer: BaseException) -> BaseException:
    try:
        try:
            raise inner
        except BaseException as error:
            raise outer from error
    except BaseException as wrapped:
        return wrapped


def test_explain_finds_refused_connection_under_wrappers_and_masks_password() -> None:
    uri = f"postgresql+asyncpg://app:{SECRET}@db:5432/agents"
    error = _wrapped(ConnectionRefusedError(111, "Connect call failed"), RuntimeError("boom"))
    message = explain(error, uri)
    assert message.startswith("cannot connect to postgresql+asyncpg://app:***@db:5432/agents")
    assert SECRET not in message


def test_explain_names_unresolvable_hosts() -> None:
    message = explain(socket.gaierror(-2, "Name or service not known"), "redis://nohost:6379/0")
    assert "cannot resolve the host" in message


def test_explain_recognises_login_errors_by_driver_type_name() -> None:
    # asyncpg's class, recreated by name: explain() must not need asyncpg installed.
    invalid_role = type("InvalidAuthorizationSpecificationError", (Exception,), {})
    error = _wrapped(invalid_role('role "x" does not exist'), RuntimeError("(wrapped)"))
    assert "rejected the login" in explain(error, "postgresql+asyncpg://x@h/d")


def test_explain_turns_read_only_refusal_into_missing_tables_hint() -> None:
    error = sqlite3.OperationalError("attempt to write a readonly database")
    assert "has no ADK session tables" in explain(error, "sqlite+aiosqlite:///x.db")


def test_explain_masks_uris_inside_unknown_errors() -> None:
    error = KeyError(f"lost redis://:{SECRET}@cache:6379/0 midway")
    message = explain(error, None)
    assert SECRET not in message and "--debug" in message


# -- read-only targets ------------------------------------------------------


def test_postgres_target_forces_read_only_transactions_and_keeps_options() -> None:
    uri = f"pairing+postgresql+asyncpg://app:{SECRET}@db/agents"
    target, options, how = read_only_target(
        uri, {"pool_size": 3, "connect_args": {"server_settings": {"application_name": "x"}}}
    )
    assert target == f"postgresql+asyncpg://app:{SECRET}@db/agents"
    settings = options["connect_args"]["server_settings"]
    assert settings == {"application_name": "x", "default_transaction_read_only": "on"}
    assert options["pool_size"] == 3 and options["connect_args"]["timeout"] > 0
    assert "read-only" in how


def test_sqlite_target_opens_file_in_read_only_uri_mode(tmp_path: Any) -> None:
    path = tmp_path / "s.db"
    # DatabaseSessionService's layout, as far as the scheme check looks.
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE sessions (app_name TEXT, id TEXT, update_time DATETIME)")
    target, _, _ = read_only_target(f"sqlite+aiosqlite:///{path}?timeout=3", {})
    assert target == f"sqlite+aiosqlite:///file:{path}?mode=ro&uri=true&timeout=3"


def test_sqlite_target_requires_an_existing_file(tmp_path: Any) -> None:
    with pytest.raises(CliError, match="no SQLite database"):
        read_only_target(f"sqlite+aiosqlite:///{tmp_path / 'absent.db'}", {})


def test_parse_options_reads_json_values_and_falls_back_to_text() -> None:
    assert parse_options(["pool_size=4", "key_prefix=app:", "ssl=true"]) == {
        "pool_size": 4,
        "key_prefix": "app:",
        "ssl": True,
    }
    with pytest.raises(CliError, match="KEY=VALUE"):
        parse_options(["novalue"])


class _UserRequiredService(InMemorySessionService):
    """Shaped like google-adk-community's RedisSessionService.list_sessions."""

    async def list_sessions(self, *, app_name: str, user_id: str) -> ListSessionsResponse:  # type: ignore[override]
        return await super().list_sessions(app_name=app_name, user_id=user_id)


def test_services_whose_list_sessions_needs_a_user_are_detected() -> None:
    assert list_sessions_requires_user(_UserRequiredService())
    assert not list_sessions_requires_user(InMemorySessionService())
    assert not list_sessions_requires_user(DatabaseSessionService(db_url="sqlite+aiosqlite://"))


def test_community_redis_service_needs_a_user() -> None:
    community = pytest.importorskip("google.adk_community.sessions.redis_session_service")
    service = community.RedisSessionService(uri="redis://127.0.0.1:6379/0")
    assert list_sessions_requires_user(service)


async def test_scan_without_user_on_such_a_service_asks_for_user() -> None:
    store = OpenedStore(service=_UserRequiredService(), uri="custom://x", read_only="-")
    with pytest.raises(CliError, match="pass --user"):
        await scan_store(store, ScanOptions(apps=["a"]))


# -- scan bookkeeping -------------------------------------------------------


def _broken_events() -> list[Event]:
    call = types.Part(function_call=types.FunctionCall(id="c1", name="refund", args={}))
    return [
        Event(
            author="agent",
            invocation_id="i",
            timestamp=1.0,
            content=types.Content(role="model", parts=[call]),
        )
    ]


class _CountingService(BaseSessionService):
    """Lists `count` sessions; every read sleeps so overlapping reads can be counted."""

    def __init__(self, count: int, vanished: frozenset[str] = frozenset(), failing: str = ""):
        self.count = count
        self.vanished = vanished
        self.failing = failing
        self.slow = ""
        self.in_flight = 0
        self.peak = 0

    async def list_sessions(self, *, app_name: str, user_id: str | None = None) -> Any:
        return ListSessionsResponse(
            sessions=[
                Session(id=f"s{i}", app_name=app_name, user_id="u", last_update_time=0.0)
                for i in range(self.count)
            ]
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(5 if session_id == self.slow else 0.002)
            if session_id == self.failing:
                raise ConnectionResetError("connection reset by peer")
            if session_id in self.vanished:
                return None
            events = _broken_events() if session_id.endswith("0") else []
            return Session(id=session_id, app_name=app_name, user_id=user_id, events=events)
        finally:
            self.in_flight -= 1

    async def create_session(self, **kwargs: Any) -> Session:
        raise AssertionError("scan must not create sessions")

    async def delete_session(self, **kwargs: Any) -> None:
        raise AssertionError("scan must not delete sessions")

    async def append_event(self, session: Session, event: Event) -> Event:
        raise AssertionError("scan must not append events")


@pytest.mark.parametrize("concurrency", [1, 4, 16])
async def test_scan_never_has_more_reads_in_flight_than_concurrency(concurrency: int) -> None:
    service = _CountingService(60)
    store = OpenedStore(service=service, uri="fake://", read_only="-")
    result = await scan_store(store, ScanOptions(apps=["a"], concurrency=concurrency))
    assert service.peak == concurrency
    assert result.sessions_scanned == 60
    assert (result.sessions_with_missing, result.healthy_sessions) == (6, 54)


async def test_scan_counts_vanished_and_unreadable_sessions_apart() -> None:
    service = _CountingService(12, vanished=frozenset({"s3"}), failing="s5")
    store = OpenedStore(service=service, uri="fake://", read_only="-")
    done: list[int] = []
    result = await scan_store(
        store, ScanOptions(apps=["a"]), Hooks(on_session_done=lambda: done.append(1))
    )
    assert result.vanished_sessions == 1
    assert [u["session"] for u in result.unreadable] == ["s5"]
    assert "connection reset" in result.unreadable[0]["error"]
    assert result.sessions_scanned == 10
    assert len(done) == 12


async def test_an_unreadable_sessions_reason_never_shows_the_stores_password() -> None:
    # A driver may echo the password outside any URI (redis-py's port error
    # does); the reason is masked for the store's URI like every other line.
    password = "S3cret#Pw"

    class EchoingService(_CountingService):
        async def get_session(self, **kwargs: Any) -> Session | None:
            raise ValueError(f"Port could not be cast to integer value as '{password}'")

    store = OpenedStore(
        service=EchoingService(1), uri=f"redis://:{password}@127.0.0.1:1/0", read_only="-"
    )
    result = await scan_store(store, ScanOptions(apps=["a"]))
    assert len(result.unreadable) == 1
    assert password not in result.unreadable[0]["error"]
    assert "***" in result.unreadable[0]["error"]


def test_exit_code_follows_fail_on() -> None:
    result = ScanResult(
        store="x", apps=["a"], user=None, read_only="-", missing_calls=0, pending_calls=2
    )
    assert [result.exit_code(f) for f in ("never", "missing", "pending", "any")] == [0, 0, 1, 1]


async def test_a_session_over_the_timeout_is_reported_and_the_scan_goes_on() -> None:
    service = _CountingService(6)
    service.slow = "s2"
    store = OpenedStore(service=service, uri="fake://", read_only="-")
    result = await scan_store(store, ScanOptions(apps=["a"], timeout=0.5))
    assert [(u["session"], u["error"]) for u in result.unreadable] == [
        ("s2", "timed out after 0.5 s")
    ]
    assert result.sessions_scanned == 5


async def test_broken_sessions_are_handed_out_as_found_and_not_kept() -> None:
    store = OpenedStore(service=_CountingService(30), uri="fake://", read_only="-")
    streamed: list[list[Any]] = []
    result = await scan_store(store, ScanOptions(apps=["a"]), Hooks(on_broken=streamed.append))
    assert [found[0].session for found in streamed] == ["s0", "s10", "s20"]
    assert result.findings == [] and result.missing_calls == 3


async def test_several_apps_are_counted_apart() -> None:
    store = OpenedStore(service=_CountingService(10), uri="fake://", read_only="-")
    result = await scan_store(store, ScanOptions(apps=["a", "b", "a"]))
    assert result.apps == ["a", "b"]
    assert {app: c.sessions_with_missing for app, c in result.per_app.items()} == {"a": 1, "b": 1}
    assert result.sessions_scanned == 20


async def test_a_store_that_cannot_list_apps_asks_for_app_in_one_line() -> None:
    store = OpenedStore(service=InMemorySessionService(), uri="memory://", read_only="-")
    with pytest.raises(CliError, match=r"cannot list its apps.*--app APP") as caught:
        await scan_store(store, ScanOptions(apps=None))
    assert "\n" not in str(caught.value)
    with pytest.raises(CliError, match="--reader direct"):
        await scan_store(store, ScanOptions(apps=["a"], reader=ReaderChoice.DIRECT))


async def test_since_and_until_filter_listed_sessions_by_update_time() -> None:
    store = OpenedStore(service=_CountingService(4), uri="fake://", read_only="-")
    assert (await scan_store(store, ScanOptions(apps=["a"], since=1.0))).sessions_scanned == 0
    assert (await scan_store(store, ScanOptions(apps=["a"], until=0.0))).sessions_scanned == 4


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1700000000", 1_700_000_000.0),
        ("2023-11-14T22:13:20", 1_700_000_000.0),
        ("2023-11-15T00:13:20+02:00", 1_700_000_000.0),
        ("90m", 1_000_000.0 - 5_400),
        ("7d", 1_000_000.0 - 604_800),
    ],
)
def test_parse_time_reads_iso_epoch_and_ages(text: str, expected: float) -> None:
    assert parse_time(text, now=1_000_000.0) == expected


def test_parse_time_rejects_what_it_cannot_read() -> None:
    with pytest.raises(CliError, match="is not a time"):
        parse_time("yesterday")


def test_a_finding_names_the_irregular_shape_of_its_session() -> None:
    from adk_pairing.cli._scan_report import findings_of
    from tests.unit.events import call, model_event, user_text

    reused = [
        user_text(),
        model_event([call("call_1")]),
        user_text(),
        model_event([call("call_1")]),
    ]
    found = findings_of("app", "ada", "s1", reused, now=0.0)
    assert [f.shapes for f in found] == [["call_id_reused_while_open"]] * 2
    regular = findings_of("app", "ada", "s2", reused[:2], now=0.0)
    assert [f.shapes for f in regular] == [[]]


# -- help ---------------------------------------------------------------------


def test_help_names_arguments_as_written_and_fits_the_command_list() -> None:
    from typer.testing import CliRunner

    from adk_pairing.cli import app

    runner = CliRunner()
    top = runner.invoke(app, ["--help"], terminal_width=80).stdout
    commands = top.split("Commands:")[1].strip().splitlines()
    assert len(commands) == 3 and not any(line.endswith("...") for line in commands), top
    scan = runner.invoke(app, ["scan", "--help"], terminal_width=100).stdout
    show = runner.invoke(app, ["show", "--help"], terminal_width=100).stdout
    assert "Usage: adk-pairing scan [OPTIONS] URI | --merge FILE...\n" in scan, scan
    assert "Usage: adk-pairing show [OPTIONS] URI\n" in show, show
    for text in (scan, show):
        for typer_label in ("<list[str]>", "<int range>", "<str>", "{URI}", "]..."):
            assert typer_label not in text, (typer_label, text)
    assert "--concurrency N" in scan and "--limit N" in scan


def test_merge_refuses_a_partial_shard_report() -> None:
    from adk_pairing.cli._scan_report import merge_reports

    report = ScanResult(store="s", apps=["a"], user=None, read_only="r", shard="0/1").to_json()
    merge_reports([("whole.json", report)])  # the control: a whole shard merges
    with pytest.raises(CliError, match="partial scan"):
        merge_reports([("stopped.json", {**report, "partial": True})])

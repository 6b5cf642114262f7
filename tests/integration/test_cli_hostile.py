"""`scan` and `show` over what a model can put in a store, on ADK's real `DatabaseSessionService`.

A lone surrogate in a function name crashed both tools (a `UnicodeEncodeError`
at the console or at the final JSON print, exit 1, or "bad store URI" under
``--json-lines``); an escape sequence, BEL or a bidi override in a name
reached the terminal raw. Typer's `CliRunner` gives the commands a strict
UTF-8 stdout, as a UTF-8 console is, so an encoding failure shows here.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adk_pairing.adk import close_session_service
from adk_pairing.cli import app

from .support.hostile_store import StoredCall, StoredSession, raw_characters, write_store

runner = CliRunner()
SCRIPT = Path(sys.executable).with_name("adk-pairing")

SURROGATE = "t\ud800"
ESCAPES = "x\x1b[31mred\x07\u202eabc"
LONG_ID = "L" * 100_000

SESSIONS = [
    StoredSession("shop", "alice", "surrogate", (StoredCall("c-sur", SURROGATE),)),
    StoredSession("shop", "alice", "escapes", (StoredCall("c-esc", ESCAPES, {"a": ESCAPES}),)),
    StoredSession(
        "shop", "bob", "long", (StoredCall(LONG_ID, "refund"), StoredCall("ok", "f", answered=True))
    ),
]


#: Named: where the installed ADK has no ``sessions.schemas`` package, this layout is
#: read through get_session, which cannot list the store's apps.
APP = ["--app", "shop"]


@pytest.fixture(scope="module")
def hostile_uri(tmp_path_factory: pytest.TempPathFactory) -> str:
    return write_store(tmp_path_factory.mktemp("hostile") / "store.db", SESSIONS)


def _ok(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output and result.stderr == ""
    return result.stdout


def _missing_calls(findings: list[dict[str, object]]) -> set[tuple[object, object]]:
    return {(f["call_id"], f["name"]) for f in findings if f["status"] == "missing"}


EXPECTED = {(call.call_id, call.name) for s in SESSIONS for call in s.missing}


def test_scan_text_escapes_what_a_terminal_would_act_on_and_cuts_long_ids(hostile_uri: str) -> None:
    out = _ok(["scan", hostile_uri, *APP])
    assert raw_characters(out) == set()
    assert r"t\ud800" in out and r"x\x1b[31mred\x07\u202eabc" in out
    assert LONG_ID not in out and "L" * 30 + "…" in out
    assert "3 with missing calls (3 calls)" in out


def test_scan_json_and_json_lines_carry_every_string_whole(hostile_uri: str) -> None:
    report = json.loads(_ok(["scan", hostile_uri, *APP, "--json"]))
    assert _missing_calls(report["findings"]) == EXPECTED
    assert raw_characters(json.dumps(report, ensure_ascii=False)) != set()  # the control
    lines = [
        json.loads(line) for line in _ok(["scan", hostile_uri, *APP, "--json-lines"]).splitlines()
    ]
    streamed = [f for line in lines if line["type"] == "session" for f in line["findings"]]
    assert _missing_calls(streamed) == EXPECTED
    assert lines[-1]["type"] == "summary" and lines[-1]["missing_calls"] == 3


@pytest.mark.parametrize("session", ["surrogate", "escapes", "long"])
def test_show_prints_hostile_sessions_in_text_and_json(hostile_uri: str, session: str) -> None:
    stored = next(s for s in SESSIONS if s.session == session)
    args = ["show", hostile_uri, "--app", "shop", "--user", stored.user, "--session", session]
    text = _ok(args)
    assert raw_characters(text) == set()
    if session == "long":
        assert LONG_ID not in text.replace("\n", "") and "L" * 30 + "…" in text
    shown = json.loads(_ok([*args, "--json"]))
    assert {(c["call_id"], c["name"]) for c in shown["missing_calls"]} == {
        (call.call_id, call.name) for call in stored.missing
    }


def test_debug_logs_quote_store_strings_escaped_too(tmp_path: Path) -> None:
    """The library's warnings name the call; under --debug they reach the terminal.

    A session of its own: the view warns once per call in a process.
    """
    session = f"debug-{uuid.uuid4().hex}"
    stored = StoredSession("shop", "alice", session, (StoredCall("c-esc", ESCAPES),))
    uri = write_store(tmp_path / "store.db", [stored])
    args = ["show", uri, "--app", "shop", "--user", "alice", "--session", session]
    result = runner.invoke(app, [*args, "--debug"])
    assert result.exit_code == 0, result.output
    assert r"x\x1b[31mred" in result.stderr
    assert raw_characters(result.stderr) == set()


def test_the_totals_are_the_last_lines_of_the_scan(hostile_uri: str) -> None:
    """Before, they came first, then up to 50 rows and a footer scrolled them away."""
    lines = _ok(["scan", hostile_uri, *APP]).strip().splitlines()
    assert lines[-1].startswith("Scanned 3 sessions")
    assert lines.index(next(line for line in lines if line.startswith("user "))) < len(lines) - 1


def test_limit_0_prints_no_empty_table_header(hostile_uri: str) -> None:
    out = _ok(["scan", hostile_uri, *APP, "--limit", "0"])
    assert not any(line.startswith("user ") for line in out.splitlines())
    assert "3 calls not listed (--limit 0; --json lists them)" in out


@pytest.fixture(scope="module")
def web_store(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A SqliteSessionService file (adk web's), which every supported release reads directly."""
    from google.adk.sessions.sqlite_session_service import SqliteSessionService

    path = tmp_path_factory.mktemp("web") / "session.db"
    service = SqliteSessionService(db_path=str(path))

    async def create() -> None:
        try:
            await service.create_session(app_name="shop", user_id="alice", session_id="s")
        finally:
            await close_session_service(service)

    asyncio.run(create())
    return f"sqlite:///{path}"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--app", "nope", "--user", "u4"], "no app 'nope' in "),
        (["--app", "nope", "--user", "u4", "--session", "s"], "no app 'nope' in "),
        (["--app", "shop", "--user", "u4"], "user 'u4' has no session in app 'shop'"),
    ],
)
def test_show_refuses_an_unknown_app_or_user_as_scan_does(
    web_store: str, args: list[str], needle: str
) -> None:
    """Before, ``show --app nope`` listed "0 sessions of user u4 in app nope" and exited 0."""
    result = runner.invoke(app, ["show", web_store, *args])
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith("error: ") and "\n" not in line and needle in line
    assert "it holds 1 " in line


# -- a closed pipe: the reader went away, which is no finding ----------------------


@pytest.mark.version_independent
def test_a_closed_pipe_exits_141_quietly(hostile_uri: str) -> None:
    """`… | head` with the reader gone before the first write, so the write surely fails.

    Before, 1 (``--fail-on``'s "found") with nothing on stderr. The three
    commands run at once: each is mostly its start-up.
    """
    commands = {
        "scan": ["scan", hostile_uri, *APP],
        "scan --json": ["scan", hostile_uri, *APP, "--json"],
        "show": ["show", hostile_uri, "--app", "shop", "--user", "alice", "--session", "escapes"],
    }
    processes = {
        name: subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name, args in commands.items()
    }
    for process in processes.values():
        assert process.stdout is not None
        process.stdout.close()  # the only reader: a real pipe with nobody at its end
    for name, process in processes.items():
        _, stderr = process.communicate(timeout=120)
        assert (name, process.returncode, stderr) == (name, 141, b"")


@pytest.mark.version_independent
def test_jobs_workers_hand_hostile_strings_to_the_parent(hostile_uri: str) -> None:
    """A worker wrote its messages as UTF-8 JSON: a lone surrogate ended it in an error."""
    done = subprocess.run(
        [str(SCRIPT), "scan", hostile_uri, *APP, "--jobs", "2", "--json"],
        capture_output=True,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert _missing_calls(json.loads(done.stdout)["findings"]) == EXPECTED

"""A fuzz of the operator tools over hostile stores: any text a model emits, in `scan` and `show`.

Each example appends sessions to ADK's real `DatabaseSessionService` (SQLite),
with hypothesis's full text strategy (lone surrogates, control characters,
bidi and other format characters, unassigned code points) in function names,
call ids and arguments, and the same strategy without surrogates in app, user
and session ids: ADK's SQLite store cannot hold a surrogate in those columns
(the write fails with a `UnicodeEncodeError` before anything is stored), so
no tool can meet one there. Then ``scan`` (text, ``--json``,
``--json-lines``, and ``--reader get-session --json``, the get_session path)
and ``show`` (text and ``--json``) run in-process on a strict UTF-8 stdout
(typer's `CliRunner`), which is how a console write used to fail.

Required of every run: exit 0 with nothing on stderr (so no traceback), JSON
that parses and names every unanswered call with its exact strings, no
character a terminal acts on or hides in the text, and the direct reader's
counts equal to the get_session path's and to what was stored.

CI runs a bounded sample (on the newest google-adk only, as all of
tests/reliability: the printing is ours); a larger count is a measurement:
``RELIABILITY_CLI_FUZZ_EXAMPLES=500 pytest tests/reliability/test_cli_fuzz.py -s``.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from adk_pairing.cli import app
from tests.integration.support.hostile_store import (
    StoredCall,
    StoredSession,
    raw_characters,
    write_store,
)

EXAMPLES = int(os.environ.get("RELIABILITY_CLI_FUZZ_EXAMPLES", "10"))
SEED = int(os.environ.get("RELIABILITY_CLI_FUZZ_SEED", "37"))

runner = CliRunner()

#: Any text: every category, surrogates included.
any_text = st.text(st.characters(exclude_categories=()), max_size=16)
#: Ids ADK's SQLite store can hold: any text but surrogates, and not empty
#: (ADK makes up a session id for an empty one).
stored_id = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=12)


@st.composite
def hostile_sessions(draw: st.DrawFn) -> list[StoredSession]:
    keys = draw(
        st.lists(st.tuples(stored_id, stored_id, stored_id), min_size=1, max_size=2, unique=True)
    )
    sessions = []
    for app_name, user, session in keys:
        call_ids = draw(
            st.lists(
                st.text(st.characters(exclude_categories=()), min_size=1, max_size=16),
                min_size=1,
                max_size=3,
                unique=True,
            )
        )
        calls = tuple(
            StoredCall(
                call_id=call_id,
                name=draw(any_text),
                args=draw(st.dictionaries(any_text, any_text, max_size=2)),
                answered=draw(st.booleans()),
            )
            for call_id in call_ids
        )
        sessions.append(StoredSession(app_name, user, session, calls))
    return sessions


def _run(args: list[str]) -> str:
    result = runner.invoke(app, args)
    assert result.exit_code == 0, (args, result.output)
    assert result.stderr == "", (args, result.stderr)
    return result.stdout


def _calls(findings: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {
        (f["app"], f["user"], f["session"], f["call_id"], f["name"], f["status"]) for f in findings
    }


def check_tools(sessions: list[StoredSession], uri: str) -> int:
    """Runs every command over the store at `uri`; returns how many ran."""
    expected = {
        (s.app, s.user, s.session, call.call_id, call.name, "missing")
        for s in sessions
        for call in s.missing
    }
    broken = sum(1 for s in sessions if s.missing)
    text = _run(["scan", uri])
    assert raw_characters(text) == set(), text
    # The totals come last: the whole scan's, then one line per app when there are several.
    totals = [line for line in text.splitlines() if not line.startswith("  app ")]
    assert totals[-1].startswith(f"Scanned {len(sessions)} session"), text
    report = json.loads(_run(["scan", uri, "--json"]))
    assert _calls(report["findings"]) == expected
    assert (report["sessions_with_missing"], report["sessions_scanned"]) == (broken, len(sessions))
    lines = [json.loads(line) for line in _run(["scan", uri, "--json-lines"]).splitlines()]
    streamed = [f for line in lines if line["type"] == "session" for f in line["findings"]]
    assert _calls(streamed) == expected and lines[-1]["type"] == "summary"
    through_service = json.loads(_run(["scan", uri, "--reader", "get-session", "--json"]))
    assert _calls(through_service["findings"]) == expected
    for field in ("sessions_scanned", "missing_calls", "pending_calls", "unreadable_sessions"):
        assert through_service[field] == report[field] == lines[-1][field], field
    commands = 4
    for s in sessions:
        args = ["show", uri, "--app", s.app, "--user", s.user, "--session", s.session]
        shown = _run(args)
        assert raw_characters(shown) == set(), shown
        view = json.loads(_run([*args, "--json"]))
        assert {(c["call_id"], c["name"]) for c in view["missing_calls"]} == {
            (call.call_id, call.name) for call in s.missing
        }
        commands += 2
    return commands


def test_scan_and_show_print_any_stored_text(figures: Callable[[str], None]) -> None:
    counts = {"examples": 0, "sessions": 0, "calls": 0, "commands": 0}
    started = time.perf_counter()

    @seed(SEED)
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(sessions=hostile_sessions())
    def run(sessions: list[StoredSession]) -> None:
        with tempfile.TemporaryDirectory() as directory:
            uri = write_store(Path(directory) / "store.db", sessions)
            counts["commands"] += check_tools(sessions, uri)
        counts["examples"] += 1
        counts["sessions"] += len(sessions)
        counts["calls"] += sum(len(s.calls) for s in sessions)

    run()
    figures(
        f"{counts['examples']} hostile stores, {counts['sessions']} sessions, "
        f"{counts['calls']} calls, {counts['commands']} commands in "
        f"{time.perf_counter() - started:.1f} s (seed {SEED})"
    )

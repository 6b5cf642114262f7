"""``adk-pairing demo``: a real interrupted turn, what ADK does with it, and the repair.

Nothing is simulated. The demo

1. starts a child process that runs a real ADK `Runner` (scripted model, slow
   tool) on an embedded SQLite store and kills it with SIGKILL once the
   model's function call is stored and the tool is running;
2. runs the next user turn through the plain ``SqliteSessionService`` (on a
   copy of the store, so both runs start from the same history) and inspects
   the request ADK built for the model;
3. runs the same turn through `PairingSessionService` on the original store,
   checks the request against a provider's pairing rule (`RequestRule`), shows
   the synthetic result the model received, and proves that the rows stored
   before the turn are byte-for-byte unchanged and that nothing synthetic was
   written.

The demo needs nothing beyond adk-pairing's base dependencies, so it runs
right after ``pip install adk-pairing``. The store is ADK's
``SqliteSessionService``: the one ``adk web`` keeps local sessions in
(``.adk/session.db``) on every supported release, built on ``aiosqlite``, a
base dependency of google-adk; ``DatabaseSessionService`` would need SQLAlchemy
(``adk-pairing[postgres]``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.adk import __version__ as adk_version
from google.adk.runners import Runner
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService
from google.genai import types

from ..adk import (
    adk_drops_unanswered_calls,
    anthropic_converter_installed,
    close_session_service,
)
from ..core.placeholders import METADATA_KEY
from ..ledger import analyze
from ..rules.checks import violations_of
from ..rules.provider_rules import PROVIDER_RULES
from ..shells.service import PairingSessionService
from ._common import CliError
from ._demo_agent import (
    APP_NAME,
    CALL_ID,
    NEXT_MESSAGE,
    TOOL_NAME,
    TOOL_STARTED,
    USER_ID,
    ScriptedModel,
    build_agent,
    user_message,
)
from ._demo_store import copy_store, digest, event_rows, rows_containing

#: The warning an ADK that drops unanswered calls logs when it removes one from a request.
ADK_DROP_WARNING = "Dropping function calls with no matching function response"
#: Seconds to wait for the child to store the call and start the tool.
CHILD_TIMEOUT_SECONDS = 60.0
#: Strings that would betray a synthetic event written to the store.
STORE_MARKERS = (METADATA_KEY, "adk-pairing-")


@dataclass(frozen=True)
class RequestRule:
    """The provider rule the demo checks requests with (see `request_rule`), as it shows it."""

    #: Its name in `adk_pairing.rules.provider_rules.PROVIDER_RULES`.
    id: str
    #: "<provider>'s pairing rule", for the checks' names.
    name: str
    #: What the provider does with a request that breaks the rule.
    rejects: str
    #: Shown under the verdict when a stronger rule needs an extra; empty otherwise.
    note: str = ""

    def violations(self, contents: list[types.Content]) -> list[str]:
        return violations_of(self.id, contents)


def _shown(rule_id: str, note: str = "") -> RequestRule:
    provider = PROVIDER_RULES[rule_id].provider
    return RequestRule(rule_id, f"{provider}'s pairing rule", f"{provider} would reject", note)


ANTHROPIC_RULE = _shown("anthropic")
GEMINI_RULE = _shown(
    "gemini",
    note="Anthropic's rule (on ADK's Anthropic converter): pip install 'adk-pairing[anthropic]'",
)


def request_rule() -> RequestRule:
    """Anthropic's rule when ADK's Anthropic converter imports, else Gemini's.

    Anthropic's is checked on ADK's own converter, which needs the
    ``anthropic`` package (``adk-pairing[anthropic]``). Gemini receives ADK's
    contents as they are, so its rule needs no package beyond google-adk. Both
    refuse a call the very next turn does not answer, which is what the demo
    shows.
    """
    return ANTHROPIC_RULE if anthropic_converter_installed() else GEMINI_RULE


@dataclass
class Check:
    """One verified claim of the demo (`id` is stable, for scripts)."""

    id: str
    name: str
    passed: bool
    detail: str


@dataclass
class DemoReport:
    """Everything the demo observed; rendered as text or JSON."""

    adk_version: str
    store: str
    session_id: str
    rule: RequestRule = ANTHROPIC_RULE
    interrupted: dict[str, Any] = field(default_factory=dict)
    unwrapped: dict[str, Any] = field(default_factory=dict)
    paired: dict[str, Any] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(check.passed for check in self.checks)

    def check(self, check_id: str, name: str, passed: bool, detail: str) -> None:
        self.checks.append(Check(id=check_id, name=name, passed=bool(passed), detail=detail))

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "adk_version": self.adk_version,
            "store": self.store,
            "request_rule": self.rule.id,
            "app": APP_NAME,
            "user": USER_ID,
            "session_id": self.session_id,
            "interrupted": self.interrupted,
            "unwrapped": self.unwrapped,
            "paired": self.paired,
            "checks": [check.__dict__ for check in self.checks],
        }


class _Capture(logging.Handler):
    """Keeps the log records of one turn (ADK's and adk-pairing's warnings)."""

    def __init__(self) -> None:
        super().__init__(level=logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _captured_warnings(*logger_names: str) -> Any:
    handler = _Capture()
    loggers = [logging.getLogger(name) for name in logger_names]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)


def _store_uri(path: Path) -> str:
    """The URI `adk-pairing scan`/`show` read the demo's store by."""
    return f"sqlite:///{path}"


def _calls_in(contents: list[types.Content]) -> list[str]:
    return [
        part.function_call.id or ""
        for content in contents
        for part in content.parts or ()
        if part.function_call is not None
    ]


def _response_to(contents: list[types.Content], call_id: str) -> dict[str, Any] | None:
    for content in contents:
        for part in content.parts or ():
            response = part.function_response
            if response is not None and response.id == call_id:
                return dict(response.response or {})
    return None


def _outline(contents: list[types.Content]) -> str:
    """The request as a row of ``role kind`` items, e.g. ``user text · model call``."""
    items: list[str] = []
    for content in contents:
        kinds = []
        for part in content.parts or ():
            if part.function_call is not None:
                kinds.append(f"call {part.function_call.name}")
            elif part.function_response is not None:
                kinds.append(f"result {part.function_response.name}")
            elif part.text is not None:
                kinds.append("text")
        items.append(f"{content.role} " + "+".join(kinds or ["(empty)"]))
    return " · ".join(items)


async def _wait_for_call(
    service: BaseSessionService, session_id: str, child: asyncio.subprocess.Process
) -> int:
    """Polls the store until the model's call event is persisted; returns the event count."""
    deadline = time.monotonic() + CHILD_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if child.returncode is not None:
            raise CliError(
                f"the demo's child process exited early (code {child.returncode}) "
                "before storing the function call; run with --debug to see its output"
            )
        session = await service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=session_id
        )
        if session is not None and CALL_ID in _calls_in(
            [e.content for e in session.events if e.content]
        ):
            return len(session.events)
        await asyncio.sleep(0.05)
    raise CliError(f"the child process did not store the call within {CHILD_TIMEOUT_SECONDS:.0f} s")


async def interrupt_turn(
    db_path: Path, session_id: str, report: DemoReport, *, debug: bool = False
) -> None:
    """Step 1: a real turn, killed with SIGKILL while its tool runs.

    The child's stderr is discarded (or, with `debug`, passed through): a pipe
    nobody reads could fill up and stall the child.
    """
    service = SqliteSessionService(db_path=str(db_path))
    try:
        await service.create_session(app_name=APP_NAME, user_id=USER_ID, session_id=session_id)
        child = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "adk_pairing.cli._demo_child",
            str(db_path),
            session_id,
            stdout=asyncio.subprocess.PIPE,
            stderr=None if debug else asyncio.subprocess.DEVNULL,
        )
        try:
            events_when_seen = await _wait_for_call(service, session_id, child)
            assert child.stdout is not None
            try:
                line = await asyncio.wait_for(child.stdout.readline(), CHILD_TIMEOUT_SECONDS)
            except TimeoutError:
                line = b""
            tool_running = line.decode().strip() == TOOL_STARTED
            os.kill(child.pid, signal.SIGKILL)
            await child.wait()
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
        stored = await service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=session_id
        )
    finally:
        await close_session_service(service)
    assert stored is not None
    missing = analyze(stored.events).missing
    killed = child.returncode == -signal.SIGKILL
    report.interrupted = {
        "child_pid": child.pid,
        "child_returncode": child.returncode,
        "killed_by_sigkill": killed,
        "tool_was_running": tool_running,
        "events_when_call_seen": events_when_seen,
        "stored_events": len(stored.events),
        "missing_calls": [{"id": c.call_id, "name": c.name} for c in missing],
    }
    report.check(
        "turn_interrupted",
        "turn interrupted",
        killed and tool_running and any(c.call_id == CALL_ID for c in missing),
        f"child {child.pid} killed by SIGKILL while {TOOL_NAME} ran; "
        f"stored call {CALL_ID} has no result",
    )


async def next_turn(
    service: BaseSessionService, session_id: str
) -> tuple[list[types.Content], list[str], int]:
    """Runs the next user turn; returns the request contents, warnings, events yielded."""
    model = ScriptedModel(model="scripted-demo-model")
    runner = Runner(agent=build_agent(model), app_name=APP_NAME, session_service=service)
    events = 0
    with _captured_warnings("google_adk", "adk_pairing") as captured:
        async for _event in runner.run_async(
            user_id=USER_ID, session_id=session_id, new_message=user_message(NEXT_MESSAGE)
        ):
            events += 1
    if not model.requests:
        raise CliError("the scripted model received no request on the next turn")
    return model.requests[0], captured.messages, events


async def unwrapped_turn(db_copy: Path, session_id: str, report: DemoReport) -> None:
    """Step 2: the next turn through the plain service, as an unprotected app runs it."""
    service = SqliteSessionService(db_path=str(db_copy))
    try:
        stored = await service.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=session_id
        )
        assert stored is not None
        as_stored = report.rule.violations([e.content for e in stored.events if e.content])
        contents, warnings, _ = await next_turn(service, session_id)
    finally:
        await close_session_service(service)
    violations = report.rule.violations(contents)
    call_sent = CALL_ID in _calls_in(contents)
    drop_warning = next((w for w in warnings if ADK_DROP_WARNING in w), None)
    dropped = not call_sent and drop_warning is not None
    sent_unpaired = call_sent and bool(violations)
    # What this ADK is expected to do, by feature: a request builder with
    # drop_orphaned_function_calls drops the call; one without sends it as
    # stored. The check passes only when the observed behaviour is
    # the expected one, so the demo never describes another version's failure.
    expected = "dropped" if adk_drops_unanswered_calls() else "sent_unpaired"
    observed = "dropped" if dropped else ("sent_unpaired" if sent_unpaired else "unexpected")
    report.unwrapped = {
        "behaviour": observed,
        "expected_behaviour": expected,
        "call_in_request": call_sent,
        "adk_warning": drop_warning,
        "request_outline": _outline(contents),
        "request_violations": violations,
        "history_as_stored_violations": as_stored,
    }
    describe = {
        "dropped": "ADK dropped the unanswered call from the request",
        "sent_unpaired": f"ADK sent the unanswered call; the request breaks {report.rule.name}",
        "unexpected": "neither a violation nor a dropped call was observed",
    }
    report.check(
        "unprotected_turn_fails",
        "unprotected turn goes wrong",
        observed == expected,
        describe[observed]
        + ("" if observed == expected else f" (expected on this ADK: {describe[expected]})"),
    )


async def paired_turn(db_path: Path, session_id: str, report: DemoReport) -> None:
    """Step 3: the same turn through PairingSessionService, and the store checked after."""
    before = event_rows(db_path)
    inner = SqliteSessionService(db_path=str(db_path))
    paired = PairingSessionService(inner)
    try:
        contents, warnings, _ = await next_turn(paired, session_id)
        stored_after = await inner.get_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=session_id
        )
    finally:
        await close_session_service(paired)
    after = event_rows(db_path)
    violations = report.rule.violations(contents)
    call_sent = CALL_ID in _calls_in(contents)
    synthetic = _response_to(contents, CALL_ID)
    keys = sorted(before)
    unchanged = all(after.get(key) == digest for key, digest in before.items())
    new_rows = len(set(after) - set(before))
    marked_rows = rows_containing(db_path, STORE_MARKERS)
    assert stored_after is not None
    still_missing = any(c.call_id == CALL_ID for c in analyze(stored_after.events).missing)
    report.paired = {
        "call_in_request": call_sent,
        "request_outline": _outline(contents),
        "request_violations": violations,
        "synthetic_result": synthetic,
        "adk_pairing_warnings": [w for w in warnings if "Unanswered function call" in w],
        "rows_before": len(before),
        "rows_after": len(after),
        "new_rows": new_rows,
        "pre_existing_rows_sha256_before": digest(before, keys),
        "pre_existing_rows_sha256_after": digest(after, keys),
        "rows_with_marker": marked_rows,
        "store_still_shows_call_missing": still_missing,
    }
    report.check(
        "repaired_request_valid",
        f"repaired request passes {report.rule.name}",
        call_sent and not violations,
        f"call {CALL_ID} kept, {len(violations)} violations",
    )
    report.check(
        "synthetic_result_seen",
        "model saw a synthetic result",
        synthetic is not None and synthetic.get("status") == "missing",
        f"result for {CALL_ID}: status={None if synthetic is None else synthetic.get('status')}",
    )
    report.check(
        "stored_rows_unchanged",
        "stored rows byte-for-byte unchanged",
        unchanged and len(before) > 0,
        f"{len(before)} pre-existing rows identical; {new_rows} new rows for the new turn",
    )
    report.check(
        "nothing_synthetic_stored",
        "nothing synthetic stored",
        marked_rows == 0 and still_missing,
        f"{marked_rows} rows contain {METADATA_KEY!r}; the stored call is still unanswered",
    )


async def run_demo(db: Path | None, *, debug: bool = False) -> DemoReport:
    """Runs the three steps; raises `CliError` when the demo itself cannot run."""
    workdir = Path(tempfile.mkdtemp(prefix="adk-pairing-demo-"))
    try:
        if db is None:
            db_path = workdir / "demo.db"
        else:
            db_path = db.expanduser().resolve()
            if not db_path.parent.is_dir():
                raise CliError(f"--db {db}: directory {db_path.parent} does not exist")
        session_id = f"interrupted-{uuid.uuid4().hex[:8]}"
        report = DemoReport(
            adk_version=adk_version,
            store=_store_uri(db_path),
            session_id=session_id,
            rule=request_rule(),
        )
        await interrupt_turn(db_path, session_id, report, debug=debug)
        copy = workdir / "unwrapped-copy.db"
        copy_store(db_path, copy)
        await unwrapped_turn(copy, session_id, report)
        await paired_turn(db_path, session_id, report)
        report.paired["kept_store"] = db is not None
        return report
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

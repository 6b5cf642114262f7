"""Ten thousand seeded histories, well-formed and malformed, through the decorator.

Each history (see `histories`) is appended event by event through
`PairingSessionService` over ``InMemorySessionService``, with a full read at a
seeded point in between, so the last read resumes from the analysis cache at
every length. Then, for every history:

* nothing raised in ``create_session``, ``append_event`` or ``get_session``;
* one view per history (issue 13, item 3): the view kept current by the
  appends, a read resumed from the analysis cache, and a fresh read (a second
  decorator over the same store with no cache) are equal, event for event;
* never worse than the store (item 4): whenever the request ADK builds from
  the stored history passes Anthropic's rule, the one it builds from the view
  passes too.

Every failure is counted, by kind, over the whole run, and the counts are
printed before anything is asserted, with the traits of the failing
histories (rewinds with content, text and a call in one part...), which say
whose fix is missing.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable

from google.adk.events.event import Event
from google.adk.sessions import InMemorySessionService

from adk_pairing import PairingSessionService
from adk_pairing.analysis import has_rewind
from adk_pairing.checks import anthropic_pairing_violations
from tests.integration.support.scenario import event_signature
from tests.unit.test_properties import adk_request_contents

from .histories import HistoryGenerator, describe

HISTORIES = int(os.environ.get("RELIABILITY_FUZZ_HISTORIES", "10000"))
SEED = 1313
APP, USER, SESSION = "fuzz", "user", "s"


def _signatures(events: list[Event]) -> list[dict[str, object]]:
    return [event_signature(event) for event in events]


def _anthropic_valid(events: list[Event]) -> bool | None:
    """Whether ADK's request from `events` passes Anthropic's rule; None if ADK raised."""
    try:
        contents = adk_request_contents(events)
    except Exception:
        return None
    return not anthropic_pairing_violations(contents)


def _traits(events: list[Event]) -> str:
    """The unusual things in `events` that a failure may come from."""
    found: set[str] = set()
    for event in events:
        call_ids = [call.id for call in event.get_function_calls() if call.id]
        if len(call_ids) != len(set(call_ids)):
            found.add("a call id twice in one event")
        if has_rewind(event):
            found.add("rewind with content" if event.content else "rewind")
        parts = event.content.parts or () if event.content else ()
        if any(part.function_call and part.text for part in parts):
            found.add("text and call in one part")
    return ", ".join(sorted(found)) or "nothing unusual"


async def _check_history(events: list[Event], prime_at: int, failures: Counter[str]) -> str:
    """Runs one history through the decorator; returns what failed ("" when nothing)."""
    inner = InMemorySessionService()
    service = PairingSessionService(inner)
    key = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    try:
        view = await service.create_session(app_name=APP, user_id=USER, session_id=SESSION)
        for index, event in enumerate(events):
            await service.append_event(view, event)
            if index == prime_at:
                await service.get_session(**key)
        cached = await service.get_session(**key)
        fresh = await PairingSessionService(inner, analysis_cache_size=0).get_session(**key)
    except Exception as error:
        failures[f"raised {type(error).__name__}"] += 1
        return f"raised {error!r}"
    assert cached is not None and fresh is not None
    found: list[str] = []
    kept, resumed, read = (_signatures(v.events) for v in (view, cached, fresh))
    if kept != read:
        found.append("view kept by appends != fresh read")
    if resumed != read:
        found.append("read resumed from cache != fresh read")
    stored = inner.sessions[APP][USER][SESSION].events  # as stored, without a copy
    if _anthropic_valid(stored) and not _anthropic_valid(fresh.events):
        found.append("stored request valid, view's request invalid")
    for kind in found:
        failures[f"{kind} ({_traits(events)})"] += 1
    return "; ".join(found)


async def test_fuzzed_histories_never_raise_agree_on_one_view_and_never_break_a_request(
    figures: Callable[[str], None],
) -> None:
    generator = HistoryGenerator(SEED)
    failures: Counter[str] = Counter()
    examples: dict[str, list[Event]] = {}
    events_total = 0
    histories_failing = 0
    for _ in range(HISTORIES):
        events = generator.history()
        events_total += len(events)
        prime_at = generator.rng.randrange(len(events))
        failed = await _check_history(events, prime_at, failures)
        histories_failing += bool(failed)
        if failed and (failed not in examples or len(events) < len(examples[failed])):
            examples[failed] = events  # the shortest history of each failure
    figures(f"{HISTORIES} histories (seed {SEED}), {events_total} events")
    figures(f"histories failing: {histories_failing}")
    for kind, count in sorted(failures.items()):
        figures(f"failures: {count} x {kind}")
    for kind, events in examples.items():
        figures(f"shortest example of {kind}: {describe(events)}")
    assert not failures, dict(failures)

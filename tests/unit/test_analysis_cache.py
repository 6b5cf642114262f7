"""Resuming the analysis of a session from where its last read left off.

`PairingSessionService` remembers, per session, how far it analysed the
history and which calls were still open, so the next full read walks only the
events appended since. These tests hold that shortcut to one standard: every
read must equal a read by a service that walks the whole history every time
(``analysis_cache_size=0``), whoever appended the events and whatever the
history turned into meanwhile.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adk_pairing import PairingSessionService, is_synthetic
from adk_pairing.adk.builder import NEWEST_BUILDER
from adk_pairing.core import analysis_cache as analysis_cache_module
from adk_pairing.ledger import (
    PairingLedger,
    TrackedCall,
    analyze,
    build_ledger,
    held_open_call_ids,
)
from adk_pairing.ledger import pairing as ledger_pairing
from adk_pairing.shells import service as service_module

from .events import call, model_event, response, response_event, rewind_event, user_text
from .history_strategies import histories
from .test_properties import PlannedTurn, build_history, turn_lists
from .test_service_shell import APP, USER, fingerprint, fresh

fast = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def newest_builder(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests state the newest request builder's rules; older ones: test_builder_rules."""
    monkeypatch.setattr(ledger_pairing, "builder_traits", lambda: NEWEST_BUILDER)


def open_call_summary(ledger: PairingLedger) -> dict[int, list[tuple[int, str | None, str]]]:
    return {
        index: [(c.part_index, c.call_id, c.status.value) for c in ledger.open_calls[index]]
        for index in sorted(ledger.open_calls)
    }


@fast
@given(turn_lists, st.data())
def test_ledger_carried_forward_from_any_prefix_equals_a_full_walk(
    turns: list[PlannedTurn], data: st.DataObject
) -> None:
    events = build_history(turns)
    split = data.draw(st.integers(min_value=0, max_value=len(events)))
    carried = build_ledger(events[:split]).carry_forward()
    for index in range(split, len(events)):
        carried.observe(events[index], index)
    assert open_call_summary(carried) == open_call_summary(build_ledger(events))


def test_carried_forward_ledger_shares_no_state_with_its_source() -> None:
    source = build_ledger([model_event([call("a"), call("b")])])
    successor = source.carry_forward()
    successor.observe(response_event([response("a")]), 1)
    assert [c.call_id for c in source.open_calls[0]] == ["a", "b"]
    assert [c.call_id for c in successor.open_calls[0]] == ["b"]


def test_reused_id_answered_before_the_carry_does_not_reach_back_to_an_older_open_call() -> None:
    events = [
        model_event([call("call_1")]),  # never answered
        model_event([call("call_1")]),
        response_event([response("call_1")]),  # answers the newest call_1
    ]
    carried = build_ledger(events).carry_forward()
    carried.observe(response_event([response("call_1")]), 3)  # answers nothing
    assert open_call_summary(carried) == {0: [(0, "call_1", "missing")]}


async def _pair(
    cache_size: int = analysis_cache_module.DEFAULT_ANALYSIS_CACHE_SIZE,
) -> tuple[InMemorySessionService, PairingSessionService, PairingSessionService]:
    inner = InMemorySessionService()
    return (
        inner,
        PairingSessionService(inner, analysis_cache_size=cache_size),
        PairingSessionService(inner, analysis_cache_size=0),
    )


async def _append_stored(inner: InMemorySessionService, session_id: str, event: Event) -> None:
    """Appends as another process would: straight to the store, not through our view."""
    stored = await inner.get_session(app_name=APP, user_id=USER, session_id=session_id)
    await inner.append_event(stored, event)


async def _assert_reads_agree(
    cached: PairingSessionService, uncached: PairingSessionService, session_id: str, **kw: Any
) -> None:
    expected = fingerprint((await fresh(uncached, session_id, **kw)).events)
    assert fingerprint((await fresh(cached, session_id, **kw)).events) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turn_lists)
def test_cached_read_equals_a_full_walk_after_every_event_another_writer_appends(
    turns: list[PlannedTurn],
) -> None:
    async def scenario() -> int:
        inner, cached, uncached = await _pair()
        session = await inner.create_session(app_name=APP, user_id=USER)
        reads = 0
        for event in build_history(turns):
            await _append_stored(inner, session.id, event)
            await _assert_reads_agree(cached, uncached, session.id)
            reads += 1
        return reads

    assert asyncio.run(scenario()) > 0


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turn_lists)
def test_appends_through_a_cached_view_leave_later_reads_equal_to_a_full_walk(
    turns: list[PlannedTurn],
) -> None:
    async def scenario() -> int:
        _, cached, uncached = await _pair()
        view = await cached.create_session(app_name=APP, user_id=USER)
        reads = 0
        for event in build_history(turns):
            await cached.append_event(view, event)
            expected = fingerprint((await fresh(uncached, view.id)).events)
            assert fingerprint(view.events) == expected
            # A read now resumes from what the previous read remembered, while
            # the earlier view's ledger has moved on with the appends.
            view = await fresh(cached, view.id)
            assert fingerprint(view.events) == expected
            reads += 1
        return reads

    assert asyncio.run(scenario()) > 0


async def test_warm_read_walks_only_the_events_appended_since(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inner, cached, _ = await _pair()
    session = await inner.create_session(app_name=APP, user_id=USER)
    for turn in range(25):
        await _append_stored(inner, session.id, user_text(f"turn {turn}"))
        await _append_stored(inner, session.id, model_event([call(f"c{turn}")]))
    await fresh(cached, session.id)

    observed: list[int] = []
    original = PairingLedger.walk

    def counting(self: PairingLedger, events: Any, start: int, *args: Any, **kw: Any) -> Any:
        observed.extend(range(start, start + len(events)))
        return original(self, events, start, *args, **kw)

    monkeypatch.setattr(PairingLedger, "walk", counting)
    await fresh(cached, session.id)
    assert observed == []
    await _append_stored(inner, session.id, response_event([response("c24")]))
    await _append_stored(inner, session.id, user_text("next"))
    view = await fresh(cached, session.id)
    assert observed == [50, 51]
    assert sum(is_synthetic(e) for e in view.events) == 24


async def test_rewind_appended_by_another_writer_is_honoured_on_the_next_read() -> None:
    inner, cached, uncached = await _pair()
    session = await inner.create_session(app_name=APP, user_id=USER)
    for event in [
        model_event([call("c1")], invocation_id="inv-1"),
        response_event([response("c1")], invocation_id="inv-2"),
    ]:
        await _append_stored(inner, session.id, event)
    assert not any(is_synthetic(e) for e in (await fresh(cached, session.id)).events)
    await _append_stored(inner, session.id, rewind_event("inv-2"))
    view = await fresh(cached, session.id)
    assert any(is_synthetic(e) for e in view.events)
    await _assert_reads_agree(cached, uncached, session.id)


async def _recreate(inner: InMemorySessionService, session_id: str, events: list[Event]) -> None:
    """Another process deletes the session and stores a different history under its id."""
    await inner.delete_session(app_name=APP, user_id=USER, session_id=session_id)
    await inner.create_session(app_name=APP, user_id=USER, session_id=session_id)
    for event in events:
        await _append_stored(inner, session_id, event)


async def test_session_recreated_with_a_new_first_event_is_walked_again() -> None:
    inner, cached, uncached = await _pair()
    await inner.create_session(app_name=APP, user_id=USER, session_id="s")
    await _append_stored(inner, "s", user_text())
    await fresh(cached, "s")
    await _recreate(inner, "s", [model_event([call("new")]), user_text()])
    assert sum(is_synthetic(e) for e in (await fresh(cached, "s")).events) == 1
    await _assert_reads_agree(cached, uncached, "s")


async def test_history_rewritten_before_the_same_last_event_is_walked_again() -> None:
    inner, cached, uncached = await _pair()
    second, third = user_text("second"), user_text("third")
    await inner.create_session(app_name=APP, user_id=USER, session_id="s")
    for event in [user_text("first"), second, third]:
        await _append_stored(inner, "s", event)
    await fresh(cached, "s")
    await _recreate(inner, "s", [model_event([call("new")]), second, third])
    assert sum(is_synthetic(e) for e in (await fresh(cached, "s")).events) == 1
    await _assert_reads_agree(cached, uncached, "s")


async def test_history_rewritten_behind_the_same_first_event_is_walked_again() -> None:
    inner, cached, uncached = await _pair()
    first = user_text("first")
    await inner.create_session(app_name=APP, user_id=USER, session_id="s")
    for event in [first, user_text("second")]:
        await _append_stored(inner, "s", event)
    await fresh(cached, "s")
    await _recreate(inner, "s", [first, model_event([call("new")]), user_text()])
    assert sum(is_synthetic(e) for e in (await fresh(cached, "s")).events) == 1
    await _assert_reads_agree(cached, uncached, "s")


async def test_open_call_event_replaced_in_the_middle_is_walked_again() -> None:
    inner, cached, uncached = await _pair()
    first, last = user_text("first"), user_text("last")
    await inner.create_session(app_name=APP, user_id=USER, session_id="s")
    for event in [first, model_event([call("c1")]), last]:
        await _append_stored(inner, "s", event)
    assert sum(is_synthetic(e) for e in (await fresh(cached, "s")).events) == 1
    await _recreate(inner, "s", [first, user_text("no call here"), last])
    assert not any(is_synthetic(e) for e in (await fresh(cached, "s")).events)
    await _assert_reads_agree(cached, uncached, "s")


async def test_appends_through_a_view_never_change_what_the_cache_remembers() -> None:
    inner, cached, _ = await _pair()
    session = await inner.create_session(app_name=APP, user_id=USER)
    await _append_stored(inner, session.id, model_event([call("c1"), call("c2")]))
    await fresh(cached, session.id)
    view = await fresh(cached, session.id)  # resumed from the remembered analysis
    remembered = next(iter(cached._analysis_cache._entries.values())).ledger
    before = open_call_summary(remembered)
    await cached.append_event(view, response_event([response("c1")]))
    await cached.append_event(view, model_event([call("c3")]))
    assert open_call_summary(remembered) == before


async def test_windowed_read_neither_uses_nor_feeds_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inner, cached, uncached = await _pair()
    session = await inner.create_session(app_name=APP, user_id=USER)
    for event in [user_text(), model_event([call("c1")]), user_text("a"), user_text("b")]:
        await _append_stored(inner, session.id, event)
    await fresh(cached, session.id)
    walks = _count_walks(monkeypatch)
    window = GetSessionConfig(num_recent_events=2)
    await _assert_reads_agree(cached, uncached, session.id, config=window)
    await _append_stored(inner, session.id, response_event([response("c1")]))
    await _assert_reads_agree(cached, uncached, session.id, config=window)
    cached_walks = len(walks) - 2  # the uncached service walked once per read
    await _assert_reads_agree(cached, uncached, session.id)
    # Two windows walked in full; the full read resumed from the earlier full read.
    assert cached_walks == 2
    assert len(walks) == 5


def _count_walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the length of every history the service walks from the start."""
    walks: list[int] = []
    original = service_module.build_ledger

    def counting(events: Any, *args: Any) -> PairingLedger:
        walks.append(len(events))
        return original(events, *args)

    # The decorator walks windows itself and full reads through its cache.
    monkeypatch.setattr(service_module, "build_ledger", counting)
    monkeypatch.setattr(analysis_cache_module, "build_ledger", counting)
    return walks


async def test_cache_holds_at_most_the_configured_number_of_sessions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    inner, cached, _ = await _pair(cache_size=2)
    ids = []
    for _ in range(3):
        session = await inner.create_session(app_name=APP, user_id=USER)
        await _append_stored(inner, session.id, model_event([call("c")]))
        ids.append(session.id)
        await fresh(cached, session.id)

    walks = _count_walks(monkeypatch)
    await fresh(cached, ids[2])
    await fresh(cached, ids[1])
    assert walks == []
    await fresh(cached, ids[0])  # evicted as the least recently read
    assert walks == [1]


async def test_cache_size_zero_walks_every_read(monkeypatch: pytest.MonkeyPatch) -> None:
    inner, _, uncached = await _pair()
    session = await inner.create_session(app_name=APP, user_id=USER)
    await _append_stored(inner, session.id, user_text())
    walks = _count_walks(monkeypatch)
    await fresh(uncached, session.id)
    await fresh(uncached, session.id)
    assert walks == [1, 1]


@pytest.mark.parametrize(
    ("bad", "kind"), [(-1, ValueError), (1.5, TypeError), ("10", TypeError), (True, TypeError)]
)
def test_invalid_cache_size_is_rejected_with_the_allowed_values(bad: object, kind: type) -> None:
    """A negative number is a bad value; a float, a string or a bool is the wrong type."""
    with pytest.raises(kind, match="analysis_cache_size must be a whole number"):
        PairingSessionService(InMemorySessionService(), analysis_cache_size=bad)  # type: ignore[arg-type]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(events=histories(malformed=True), split=st.integers(min_value=0, max_value=40))
def test_the_held_open_ids_read_off_a_remembered_ledger_are_the_walked_ones(
    events: list[Event], split: int
) -> None:
    # The plugin reads the ids ADK holds open off its remembered ledger, kept
    # by walking each request's new events (`AnalysisCache.ledger_for`).
    # The oracle is the rule as `held_open_call_ids` states it, walked over
    # every call: the newest call with each id, held open and unanswered.
    cache = analysis_cache_module.AnalysisCache(4)
    key = ("app", "user", "session")
    cut = split % (len(events) + 1)
    cache.ledger_for(key, events[:cut])
    ledger = cache.ledger_for(key, events)
    assert ledger.traits == NEWEST_BUILDER
    newest: dict[str, TrackedCall] = {}
    for tracked in analyze(events, traits=NEWEST_BUILDER).calls:
        if tracked.call_id:
            newest[tracked.call_id] = tracked
    walked = {
        call_id for call_id, tracked in newest.items() if tracked.held_open and not tracked.answered
    }
    assert ledger.held_open_ids() == walked
    assert held_open_call_ids(events) == walked

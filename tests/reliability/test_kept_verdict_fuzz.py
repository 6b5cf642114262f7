"""The check's verdict kept over appended events: one view per history, after every append.

A kept verdict (`adk_pairing.core.kept_verdict`) lets an append to a checked
view skip ADK's builder. It is sound only if the view it keeps is the one a
fresh read, which checks the whole history again, returns. The view fuzz
compares the two at each history's end; this run compares them after *every*
append, on histories built to reach the kept path: a fuzzed, mostly irregular
history (`histories.HistoryGenerator`), a quiet text, then appended events of
every kind the verdict must admit or refuse (calls with new ids, answers
whole, partial, out of order or late, reused ids, answers to old calls, other
agents, held-open calls).

``RELIABILITY_KEPT_VERDICT_HISTORIES`` sets how many histories (a bounded
sample by default; 10,000 is a measurement), ``RELIABILITY_FUZZ_SEED`` the
seed. Shown to fail: with `KeptVerdict.admits` admitting every event, the
first histories disagree.
"""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable
from typing import ClassVar

import pytest
from google.adk.events.event import Event
from google.adk.sessions import InMemorySessionService
from google.genai import types

from adk_pairing import PairingSessionService
from adk_pairing.passes.view import view_state_of
from tests.integration.support.scenario import event_signature
from tests.unit.events import AGENT, call, model_event, response, response_event, user_text

from .histories import HistoryGenerator, describe

HISTORIES = int(os.environ.get("RELIABILITY_KEPT_VERDICT_HISTORIES", "20"))
SEED = int(os.environ.get("RELIABILITY_FUZZ_SEED", "1313"))
APP, USER, SESSION = "kept", "user", "s"


class Appended:
    """Events appended after a quiet text, each of a kind the kept verdict must judge."""

    KINDS: ClassVar[dict[str, int]] = {
        "user_text": 6,
        "model_text": 6,
        "new_calls": 10,
        "answer_whole": 10,
        "answer_some": 3,
        "answer_reversed": 2,
        "reused_call": 4,
        "answer_old": 2,
        "other_agent": 1,
        "held_open": 1,
    }

    def __init__(self, rng: random.Random, prefix: list[Event]) -> None:
        self.rng = rng
        self.old_ids = [
            part.function_call.id
            for event in prefix
            if event.content is not None
            for part in event.content.parts or ()
            if part.function_call is not None and part.function_call.id
        ]
        self.open: list[list[str]] = []
        self.count = 0

    def _new_ids(self) -> list[str]:
        ids = []
        for _ in range(self.rng.choice((1, 1, 2, 3))):
            self.count += 1
            ids.append(f"new-{self.count}")
        return ids

    def next(self) -> Event:
        rng = self.rng
        kind = rng.choices(list(self.KINDS), weights=list(self.KINDS.values()))[0]
        if kind in ("answer_whole", "answer_some", "answer_reversed") and not self.open:
            kind = "new_calls"
        if kind == "user_text":
            return user_text("and then")
        if kind == "model_text":
            return model_event([types.Part(text="noted")])
        if kind in ("new_calls", "other_agent", "held_open"):
            ids = self._new_ids()
            self.open.append(list(ids))
            return model_event(
                [call(i) for i in ids],
                author=AGENT if kind != "other_agent" else "stranger",
                long_running=set(ids) if kind == "held_open" else None,
            )
        if kind == "reused_call":
            ids = [rng.choice(self.old_ids)] if self.old_ids else self._new_ids()
            self.open.append(list(ids))
            return model_event([call(i) for i in ids])
        if kind == "answer_old":
            target = rng.choice(self.old_ids) if self.old_ids else "never-called"
            return response_event([response(target)])
        ids = self.open.pop(rng.randrange(len(self.open)))
        if kind == "answer_some" and len(ids) > 1:
            answered = ids[: rng.randrange(1, len(ids))]
            self.open.append(ids[len(answered) :])
            ids = answered
        elif kind == "answer_reversed":
            ids = ids[::-1]
        return response_event(
            [response(i) for i in ids], author="user" if rng.random() < 0.2 else AGENT
        )


def _signatures(events: list[Event]) -> list[dict[str, object]]:
    return [event_signature(event) for event in events]


async def _check(events: list[Event], quiet_at: int, tally: Counter[str]) -> list[str]:
    """Appends `events`; after each append past `quiet_at`, the view, a cached read and a
    fresh read must agree. Returns what went wrong."""
    inner = InMemorySessionService()
    service = PairingSessionService(inner)
    key = {"app_name": APP, "user_id": USER, "session_id": SESSION}
    view = await service.create_session(**key)
    found: list[str] = []
    for index, event in enumerate(events):
        await service.append_event(view, event)
        if index < quiet_at:
            continue
        state = view_state_of(view)
        kept = state is not None and state.kept is not None
        if kept and state.kept.event_count == index + 1:
            tally["appends served by a kept verdict"] += 1
        fresh = await PairingSessionService(inner, analysis_cache_size=0).get_session(**key)
        cached = await service.get_session(**key)
        assert fresh is not None and cached is not None
        read = _signatures(fresh.events)
        if _signatures(view.events) != read:
            found.append(f"view kept by appends != fresh read after event {index}")
        if _signatures(cached.events) != read:
            found.append(f"read resumed from cache != fresh read after event {index}")
        if found:
            break
    return found


@pytest.mark.every_release
async def test_a_kept_verdict_serves_the_fresh_reads_view_after_every_append(
    figures: Callable[[str], None],
) -> None:
    rng = random.Random(SEED)
    generator = HistoryGenerator(SEED)
    tally: Counter[str] = Counter()
    failures: list[str] = []
    for _ in range(HISTORIES):
        prefix = generator.history(max_events=10)
        quiet = model_event([types.Part(text="all done")])
        appended = Appended(rng, prefix)
        suffix = [appended.next() for _ in range(rng.randint(1, 10))]
        events = [*prefix, quiet, *suffix]
        found = await _check(events, len(prefix), tally)
        if found:
            failures.append(f"{found[0]}: {describe(events)}")
    figures(
        f"{HISTORIES} histories, {tally['appends served by a kept verdict']} appends "
        f"served by a kept verdict, {len(failures)} disagreeing"
    )
    assert not failures, failures[:3]
    # Not vacuous: the kept path is taken.
    assert tally["appends served by a kept verdict"] > HISTORIES // 10

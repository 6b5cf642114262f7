"""Seeded generator of realistic interrupted sessions: the shapes ADK and models write.

`histories.HistoryGenerator` draws single events from a wide vocabulary, most
of them malformed. This one draws whole turns as a real `Runner` stores them,
so a fuzz over it says how often the everyday interruptions lose a call:

* a tool turn: one to three calls in one model event (a parallel turn), all
  results in one event as ADK merges them, then the model's text;
* a turn killed while its tool ran (no result), or with some results stored:
  on their own, or in an event that also holds text;
* a long-running call ADK holds open, with an ordinary call's result first,
  later answered by the client or never;
* a two-branch ``ParallelAgent`` turn: each branch's agent calls a tool in its
  own branch, the branches' events interleave, and one branch's call may be
  left unanswered;
* call ids as ADK writes them (``adk-<uuid>``, unique) or as a model numbers
  them (``call_1`` on every turn, so an interrupted ``call_1`` is open when the
  next turn calls ``call_1`` again).
"""

from __future__ import annotations

import random
import uuid

from google.adk.events.event import Event
from google.genai import types

from tests.unit.events import AGENT, call, model_event, response, response_event, user_text

#: Turn kind -> weight.
TURNS: dict[str, int] = {
    "text": 3,
    "tools": 6,
    "killed": 2,
    "partly answered": 2,
    "long-running": 1,
    "parallel agents": 1,
}
NAMES = ("get_weather", "get_time", "search", "refund")
BRANCH_AGENTS = ("weather_agent", "time_agent")


class InterruptedHistories:
    """``InterruptedHistories(seed).history()`` returns the next session of the seed."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def history(self, max_turns: int = 6) -> list[Event]:
        rng = self.rng
        numbered = rng.random() < 0.4  # a model numbering its calls per turn
        events: list[Event] = []
        for turn in range(rng.randint(1, max_turns)):
            kind = rng.choices(list(TURNS), weights=list(TURNS.values()))[0]
            invocation = f"e-{turn}"
            events.append(user_text(f"message {turn}", invocation_id=invocation))
            ids = self._ids(numbered, 3)
            if kind == "text":
                events.append(self._text(invocation))
            elif kind == "parallel agents":
                events.extend(self._parallel_agents(invocation, numbered))
            else:
                events.extend(self._tool_turn(kind, invocation, ids))
        return events

    def _ids(self, numbered: bool, count: int) -> list[str]:
        if numbered:
            return [f"call_{n + 1}" for n in range(count)]
        return [f"adk-{uuid.UUID(int=self.rng.getrandbits(128))}" for _ in range(count)]

    def _text(self, invocation: str, author: str = AGENT, branch: str | None = None) -> Event:
        event = model_event([types.Part(text="done")], invocation_id=invocation, author=author)
        event.branch = branch
        return event

    def _tool_turn(self, kind: str, invocation: str, ids: list[str]) -> list[Event]:
        rng = self.rng
        width = rng.randint(2 if kind in ("partly answered", "long-running") else 1, 3)
        names = [rng.choice(NAMES) for _ in range(width)]
        calls = list(zip(ids[:width], names, strict=True))
        long_running = [calls[-1][0]] if kind == "long-running" else None
        events = [
            model_event(
                [call(i, n) for i, n in calls], invocation_id=invocation, long_running=long_running
            )
        ]
        if kind == "tools":
            events.append(
                response_event([response(i, n) for i, n in calls], invocation_id=invocation)
            )
            events.append(self._text(invocation))
        elif kind == "partly answered":
            answered = rng.sample(calls, rng.randint(1, width - 1))
            answered.sort(key=calls.index)
            parts = [response(i, n) for i, n in answered]
            if rng.random() < 0.5:
                parts.append(types.Part(text="one result so far"))
            events.append(response_event(parts, invocation_id=invocation))
        elif kind == "long-running":
            ordinary = calls[:-1]
            events.append(
                response_event([response(i, n) for i, n in ordinary], invocation_id=invocation)
            )
            events.append(self._text(invocation))
            if rng.random() < 0.5:  # the client posts the result later
                events.append(
                    response_event([response(*calls[-1])], invocation_id=invocation, author="user")
                )
        # "killed": nothing after the call event
        return events

    def _parallel_agents(self, invocation: str, numbered: bool) -> list[Event]:
        """Two sub-agents of a ParallelAgent, each one call in its branch, interleaved."""
        rng = self.rng
        branches = [f"{AGENT}.team.{agent}" for agent in BRANCH_AGENTS]
        ids = [self._ids(numbered, 1)[0] for _ in BRANCH_AGENTS]
        names = [rng.choice(NAMES) for _ in BRANCH_AGENTS]
        unanswered = rng.randrange(len(BRANCH_AGENTS)) if rng.random() < 0.7 else None
        steps: list[Event] = []
        for agent, branch, call_id, name in zip(BRANCH_AGENTS, branches, ids, names, strict=True):
            steps.append(
                model_event(
                    [call(call_id, name)], invocation_id=invocation, author=agent, branch=branch
                )
            )
        order = list(range(len(BRANCH_AGENTS)))
        rng.shuffle(order)  # whichever branch's tool returns first
        for n in order:
            if n == unanswered:
                continue
            agent, branch, call_id, name = BRANCH_AGENTS[n], branches[n], ids[n], names[n]
            steps.append(
                response_event(
                    [response(call_id, name)], invocation_id=invocation, author=agent, branch=branch
                )
            )
            steps.append(self._text(invocation, author=agent, branch=branch))
        return steps

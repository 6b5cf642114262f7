"""Event histories for the benchmarks: realistic turns and adversarial shapes.

Realistic histories repeat the turn an ADK tool-using agent produces: a user
message, a model event with a ``function_call``, the tool's
``function_response`` and the model's answer. Payloads are sized like a
search tool's (a few hundred bytes of text, a results list of ~1.5 kB), so the
cost of loading a session is dominated by what a real store returns, not by
empty pydantic shells. A *broken* history drops the response and the answer of
1% of the turns (at least one), as a turn killed mid-tool does.

The adversarial shapes exist to find super-linear paths in the pure core, so
their payloads are small on purpose: they stress bookkeeping, not parsing.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Collection, Iterator

from google.adk.events.event import Event
from google.genai import types

APP = "bench_app"
USER = "bench_user"
#: A healthy history answers every call; a broken one leaves 1% of turns unanswered.
HEALTHS = ("healthy", "broken")
#: How a read finds the decorator, as its `analysis_cache_size`: "warm" when this
#: process read the session before (every turn but a session's first, while it
#: stays among the most recently read), so only events appended since are
#: walked; "cold" on a first read, or with the cache off, walking every event.
CACHE_SIZE_BY_READ: dict[str, int | None] = {"warm": None, "cold": 0}
AGENT = "research_agent"
TOOL = "search_documents"

USER_TEXT = (
    "Could you look through the quarterly reports and tell me which regions grew "
    "faster than the company average, and whether that growth came from new "
    "customers or from larger orders by existing ones? Please cite the documents. "
)
_MODEL_TEXT = (
    "Three regions outgrew the company average this quarter. The Nordics grew "
    "mostly through new customers (41 new accounts, see report Q3-NOR-2), while "
    "Iberia and the Benelux grew through larger orders from existing customers: "
    "average order value rose 18% and 12% respectively (reports Q3-IBE-1 and "
    "Q3-BNL-4). The remaining regions tracked the average within two points. "
    "I can break this down by product line if that helps. "
)


def _search_results(turn: int) -> dict[str, object]:
    """A tool result of roughly 1.5 kB, like a document-search tool returns."""
    return {
        "status": "ok",
        "total": 5,
        "results": [
            {
                "doc_id": f"Q3-{turn % 97:02d}-{rank}",
                "title": f"Quarterly report, region {rank}, section {turn % 13}",
                "snippet": (
                    "Revenue in the region rose compared with the previous quarter, "
                    "driven by account expansion and a higher average order value; "
                    "churn stayed flat and pipeline coverage improved."
                ),
                "score": round(0.95 - rank * 0.07, 2),
            }
            for rank in range(5)
        ],
    }


def usage_metadata() -> types.GenerateContentResponseUsageMetadata:
    return types.GenerateContentResponseUsageMetadata(
        prompt_token_count=1834, candidates_token_count=212, total_token_count=2046
    )


class Clock:
    """Strictly increasing timestamps, so stores that order by time keep order."""

    def __init__(self, start: float | None = None, step: float = 0.001) -> None:
        self._now = time.time() - 86_400 if start is None else start
        self._step = step

    def __call__(self) -> float:
        self._now += self._step
        return self._now


def user_text_event(clock: Clock, invocation_id: str, turn: int = 0) -> Event:
    return Event(
        invocation_id=invocation_id,
        author="user",
        timestamp=clock(),
        content=types.Content(role="user", parts=[types.Part(text=f"{USER_TEXT}#{turn}")]),
    )


def model_call_event(clock: Clock, invocation_id: str, call_id: str, turn: int = 0) -> Event:
    return Event(
        invocation_id=invocation_id,
        author=AGENT,
        timestamp=clock(),
        usage_metadata=usage_metadata(),
        content=types.Content(
            role="model",
            parts=[
                types.Part(
                    function_call=types.FunctionCall(
                        id=call_id,
                        name=TOOL,
                        args={"query": f"regional growth quarter 3 #{turn}", "limit": 5},
                    )
                )
            ],
        ),
    )


def tool_response_event(clock: Clock, invocation_id: str, call_id: str, turn: int = 0) -> Event:
    return Event(
        invocation_id=invocation_id,
        author=AGENT,
        timestamp=clock(),
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id=call_id, name=TOOL, response=_search_results(turn)
                    )
                )
            ],
        ),
    )


def model_text_event(clock: Clock, invocation_id: str, turn: int = 0) -> Event:
    return Event(
        invocation_id=invocation_id,
        author=AGENT,
        timestamp=clock(),
        usage_metadata=usage_metadata(),
        content=types.Content(role="model", parts=[types.Part(text=f"{_MODEL_TEXT}#{turn}")]),
    )


def broken_turns(total_turns: int, fraction: float = 0.01) -> set[int]:
    """Which turns lose their tool response: `fraction` of them, at least one, spread out."""
    count = max(1, round(total_turns * fraction))
    stride = max(1, total_turns // count)
    # Offset into the stride so the broken turn is never only the very last one.
    return {min(total_turns - 1, i * stride + stride // 2) for i in range(count)}


def adk_call_id(_turn: int) -> str:
    """A fresh id per call, as ADK gives a call that came without one."""
    return f"adk-{uuid.uuid4()}"


def realistic_history(
    size: int,
    *,
    broken: bool = False,
    clock: Clock | None = None,
    interrupted: Collection[int] = (),
    call_id_for: Callable[[int], str] = adk_call_id,
) -> list[Event]:
    """Exactly `size` events of user/call/response/answer turns.

    `broken` drops the response and the answer of 1% of the turns (at least
    one); `interrupted` drops them for the given turn numbers instead.
    `call_id_for(turn)` names each turn's call (``"call_0"`` every turn, as
    some OpenAI-compatible servers number calls per response). A final partial
    turn never ends on a call, so a healthy history really has every call
    answered.
    """
    clock = clock or Clock()
    total_turns = max(1, size // 4)
    dead = set(interrupted) or (broken_turns(total_turns) if broken else set())
    events: list[Event] = []
    turn = 0
    while size - len(events) >= 4:
        invocation_id = f"e-{uuid.uuid4()}"
        call_id = call_id_for(turn)
        events.append(user_text_event(clock, invocation_id, turn))
        events.append(model_call_event(clock, invocation_id, call_id, turn))
        if turn not in dead:
            events.append(tool_response_event(clock, invocation_id, call_id, turn))
            events.append(model_text_event(clock, invocation_id, turn))
        turn += 1
    invocation_id = f"e-{uuid.uuid4()}"
    remaining = size - len(events)
    if remaining == 3:
        call_id = call_id_for(turn)
        events.append(user_text_event(clock, invocation_id, turn))
        events.append(model_call_event(clock, invocation_id, call_id, turn))
        events.append(tool_response_event(clock, invocation_id, call_id, turn))
    else:
        if remaining >= 1:
            events.append(user_text_event(clock, invocation_id, turn))
        if remaining == 2:
            events.append(model_text_event(clock, invocation_id, turn))
    return events


def unanswered_call_count(events: list[Event]) -> int:
    """Calls with no response anywhere, by id (ids are unique in realistic histories).

    Deliberately independent of `adk_pairing.ledger`, so the benchmarks can
    check the view they time against something the core did not compute.
    """
    calls: set[str] = set()
    responses: set[str] = set()
    for event in events:
        for part in (event.content.parts if event.content else None) or ():
            if part.function_call is not None:
                calls.add(part.function_call.id or "")
            if part.function_response is not None:
                responses.add(part.function_response.id or "")
    return len(calls - responses)


#: The kinds of event `turn_cycle` yields, in order (event i is of kind i % 4).
TURN_KINDS = ("user text", "function_call", "function_response", "model text")


def turn_cycle(clock: Clock) -> Iterator[Event]:
    """An endless stream of healthy turns, one event at a time (for append benchmarks)."""
    turn = 0
    while True:
        invocation_id = f"e-{uuid.uuid4()}"
        call_id = f"adk-{uuid.uuid4()}"
        yield user_text_event(clock, invocation_id, turn)
        yield model_call_event(clock, invocation_id, call_id, turn)
        yield tool_response_event(clock, invocation_id, call_id, turn)
        yield model_text_event(clock, invocation_id, turn)
        turn += 1


def parallel_interrupted_turn(clock: Clock, width: int, turn: int = 0) -> list[Event]:
    """A turn whose model called `width` tools at once; all but the last answered, one event each.

    One event per answer is how ADK stores the answers of parallel calls that
    finish at different times; the turn died before the last one and before
    the model's answer.
    """
    invocation_id = f"e-{uuid.uuid4()}"
    ids = [f"adk-{uuid.uuid4()}" for _ in range(width)]
    calls = types.Content(
        role="model",
        parts=[
            types.Part(function_call=types.FunctionCall(id=i, name=TOOL, args={"query": f"#{n}"}))
            for n, i in enumerate(ids)
        ],
    )
    turn_events = [
        user_text_event(clock, invocation_id, turn),
        Event(invocation_id=invocation_id, author=AGENT, timestamp=clock(), content=calls),
    ]
    turn_events += [tool_response_event(clock, invocation_id, i, turn) for i in ids[:-1]]
    return turn_events


# -- adversarial shapes for the pure core ------------------------------------


def _call(name: str, call_id: str | None) -> types.Part:
    return types.Part(function_call=types.FunctionCall(id=call_id, name=name, args={"n": 1}))


def _response(name: str, call_id: str | None) -> types.Part:
    return types.Part(
        function_response=types.FunctionResponse(id=call_id, name=name, response={"ok": True})
    )


def _event(clock: Clock, role: str, parts: list[types.Part], **fields: object) -> Event:
    author = "user" if role == "user" and not any(p.function_response for p in parts) else AGENT
    return Event(
        invocation_id=fields.pop("invocation_id", "e-adv"),
        author=author,
        timestamp=clock(),
        content=types.Content(role=role, parts=parts),
        **fields,
    )


def reused_ids_history(size: int) -> list[Event]:
    """Gemini-style ids: every call is ``call_1``; 1% of them are never answered.

    A response answers only the newest preceding call with its id, so a
    quadratic implementation would rescan earlier calls for every response.
    """
    clock = Clock()
    events: list[Event] = []
    pairs = size // 2
    dead = broken_turns(pairs)
    for i in range(pairs):
        events.append(_event(clock, "model", [_call(TOOL, "call_1")]))
        if i not in dead:
            events.append(_event(clock, "user", [_response(TOOL, "call_1")]))
        else:
            events.append(_event(clock, "user", [types.Part(text="next question")]))
    return events


def parallel_merged_history(size: int) -> list[Event]:
    """One model event with size/2 parallel calls and one event answering 99% of them.

    ADK runs parallel calls together and merges their responses into one event
    (``merge_parallel_function_response_events``), so this is the usual shape
    of parallel calling, at an absurd width. The size counts function parts.
    """
    clock = Clock()
    width = max(1, size // 2)
    ids = [f"adk-par-{i}" for i in range(width)]
    dead = broken_turns(width)
    return [
        _event(clock, "model", [_call(TOOL, call_id) for call_id in ids]),
        _event(
            clock,
            "user",
            [_response(TOOL, call_id) for i, call_id in enumerate(ids) if i not in dead],
        ),
    ]


def parallel_calls_history(size: int) -> list[Event]:
    """One model event with size/2 parallel calls, answered one response per event.

    This is how answers to parallel *long-running* calls arrive. The size
    counts function parts; 1% of the calls are never answered. It is the
    worst case for bookkeeping that touches an event's open calls on every
    answer.
    """
    clock = Clock()
    width = max(1, size // 2)
    ids = [f"adk-par-{i}" for i in range(width)]
    events = [_event(clock, "model", [_call(TOOL, call_id) for call_id in ids])]
    dead = broken_turns(width)
    for i, call_id in enumerate(ids):
        if i not in dead:
            events.append(_event(clock, "user", [_response(TOOL, call_id)]))
    return events


def pending_run_history(size: int) -> list[Event]:
    """A long run of long-running calls (size/2), answered late, oldest first.

    Every call stays open across the whole first half, so the set of open calls
    is as large as it can be; 1% of them are never answered.
    """
    clock = Clock()
    width = max(1, size // 2)
    events: list[Event] = []
    for i in range(width):
        call_id = f"adk-lro-{i}"
        events.append(
            _event(
                clock,
                "model",
                [_call("start_export", call_id)],
                long_running_tool_ids={call_id},
            )
        )
    dead = broken_turns(width)
    for i in range(width):
        if i not in dead:
            events.append(_event(clock, "user", [_response("start_export", f"adk-lro-{i}")]))
    return events


def idless_same_name_history(size: int) -> list[Event]:
    """One event with size/2 id-less calls of one name, and one event answering 99%.

    Id-less responses are paired by name and position, not by id, so every
    response has to find "the next open call of this name"; a quadratic
    implementation would search or rebuild the queue each time.
    """
    clock = Clock()
    width = max(1, size // 2)
    answered = width - max(1, round(width * 0.01))
    return [
        _event(clock, "model", [_call(TOOL, None) for _ in range(width)]),
        _event(clock, "user", [_response(TOOL, None) for _ in range(answered)]),
    ]


def realistic_core_history(size: int) -> list[Event]:
    return realistic_history(size, broken=True)


#: Name -> builder of a history of (about) the given size.
CORE_SHAPES: dict[str, Callable[[int], list[Event]]] = {
    "realistic (1% unanswered)": realistic_core_history,
    "reused ids (call_1)": reused_ids_history,
    "parallel calls, merged answer": parallel_merged_history,
    "parallel calls, one answer/event": parallel_calls_history,
    "long run of pending calls": pending_run_history,
    "id-less calls, same name": idless_same_name_history,
}

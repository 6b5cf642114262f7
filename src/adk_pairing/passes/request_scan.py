"""The request pass's detection: which segments of a request already keep its guarantee.

A segment runs from a model content that follows a user one to the next. One
pass over the parts (`scan`) tells, per segment, whether it holds: every call
answered in place (`provider_rules.answers_in_place`), no reused id, no mixed
part, roles alternating. A request whose segments all hold goes out as it came;
only the faulty segments are rewritten (`adk_pairing.request_rewrite`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from google.genai import types

from ..rules.provider_rules import answers_in_place, refused_when_paired_by_id
from ..rules.request_form import starts_a_model_turn
from ..wire import MODEL_ROLES, is_mixed

__all__ = ["Segment", "scan"]


@dataclass(slots=True)
class Segment:
    """A stretch of contents from a model content that follows a user one to the next.

    Segments are the unit of repair. Adjacent segments that hold are kept as
    one, with their calls (what the ledger must pass over).
    """

    start: int
    stop: int
    holds: bool
    calls: list[types.FunctionCall]
    #: For a faulty segment, once prepared: its turns, as positions among the
    #: prepared turns (`request_rewrite.prepare`).
    turns: range = range(0)


def scan(contents: Sequence[types.Content], fill: bool) -> list[Segment]:
    """Checks every segment of `contents` in one pass over the parts.

    The check is positional: in a segment that holds, the ledger's attribution
    pairs each result with the call in the same position, so nothing there
    needs attributing. This pass is all a healthy request costs, so it is one
    loop with its state in locals (benchmarks/RESULTS.md, "Request pass"). A
    call id seen earlier in the request (in any segment) is a fault.
    """
    segments: list[Segment] = []
    seen_ids: set[str] = set()
    held_calls: list[types.FunctionCall] = []  # of the run of holding segments being built
    held_start = 0
    segment_start = 0
    holds = True
    calls: list[types.FunctionCall] = []
    awaiting: list[types.FunctionCall] = []
    previous_is_model: bool | None = None
    count = len(contents)
    index = 0
    while True:
        content = contents[index] if index < count else None
        is_model = content is not None and content.role in MODEL_ROLES
        if index == count or (
            starts_a_model_turn(is_model, previous_is_model) and index > segment_start
        ):
            # The segment [segment_start, index) ends here.
            if holds and not awaiting:
                held_calls += calls
            else:
                if held_start < segment_start:
                    segments.append(Segment(held_start, segment_start, True, held_calls))
                    held_calls = []
                segments.append(Segment(segment_start, index, False, calls))
                held_start = index
            if index == count:
                break
            segment_start, holds, calls, awaiting = index, True, [], []
        index += 1
        parts = content.parts if content is not None else None
        if not parts:
            holds = False
            previous_is_model = is_model
            continue
        if is_model is previous_is_model:
            holds = False
        previous_is_model = is_model
        if is_model:
            if awaiting:
                holds = False
            awaiting = []
            for part in parts:
                call = part.function_call
                if part.function_response is not None:
                    holds = False
                if call is None:
                    continue
                if is_mixed(part):
                    holds = False
                call_id = call.id
                if call_id:
                    if call_id in seen_ids:
                        holds = False
                    seen_ids.add(call_id)
                if fill and refused_when_paired_by_id(call_id):
                    holds = False
                awaiting.append(call)
            calls += awaiting
            continue
        if holds:
            holds = answers_in_place(parts, awaiting)
        awaiting = []
    if held_start < count:
        segments.append(Segment(held_start, count, True, held_calls))
    return segments

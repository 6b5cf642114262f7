"""The request pass's detection: which segments of a request already keep its guarantee.

A segment runs from a model content that follows a user one to the next. One
pass over the parts (`faulty_segments`) finds the segments that do not hold:
a call not answered in place, a reused id, a mixed part, roles that do not
alternate, or, for a model that pairs calls by id, an id a provider refuses
(`refused_when_paired_by_id`, folded from the provider rules' registry). A
request with none goes out as it came; otherwise `segments_around` lays the
request out in segments and only the faulty ones are rewritten
(`adk_pairing.passes.request_rewrite`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from google.genai import types

from ..rules.provider_rules import PROVIDER_RULES
from ..rules.request_form import starts_a_model_turn
from ..wire import MODEL_ROLES, never_sent_as_a_call

__all__ = ["Segment", "faulty_segments", "refused_when_paired_by_id", "scan", "segments_around"]


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
    #: prepared turns (`request_prepare.prepare`).
    turns: range = range(0)


_REFUSES_MISSING_IDS = any(rule.refuses_missing_ids for rule in PROVIDER_RULES.values())
_REFUSED_ID_PREFIXES = tuple(
    prefix for rule in PROVIDER_RULES.values() for prefix in rule.refuses_id_prefixes
)


def refused_when_paired_by_id(call_id: str | None) -> bool:
    """Whether a provider that pairs calls by id cannot take `call_id`.

    Folded once from the registry's `ProviderRule.refuses_missing_ids` and
    `ProviderRule.refuses_id_prefixes`: the request pass asks it of every call.
    """
    if not call_id:
        return _REFUSES_MISSING_IDS
    return call_id.startswith(_REFUSED_ID_PREFIXES)


def faulty_segments(contents: Sequence[types.Content], fill: bool) -> list[range]:
    """The segments of `contents` that break the request pass's guarantee; empty when kept.

    A segment runs from a model content that follows a user-side one
    (`request_form.starts_a_model_turn`) to the next. It holds when the
    request pass's rules 1 to 4 hold in it: roles alternate; every call of a
    model content is answered by the leading results of the user-side content
    right after it, each in its call's position, under its name, by its id
    (or id-less for an id-less call), and no other result follows; no part is
    mixed (`wire.is_mixed`); no call id was seen earlier in the request; and,
    with `fill`, no id is one a provider that pairs by id refuses
    (`refused_when_paired_by_id`). A segment that holds implies the
    ``anthropic`` and ``gemini`` rules there.

    The check is positional: in a segment that holds, the ledger's
    attribution pairs each result with the call in the same position, so
    nothing there needs attributing. This loop is all a healthy request costs
    the plugin, so its state lives in locals, it reads each field once (every
    read of a genai model's field goes through pydantic's attribute hook;
    benchmarks/RESULTS.md, "Request pass") and it makes one call per content,
    none per part: `_calls_hold` for a model content, `_answered_in_place`
    for a user-side one.
    """
    faults: list[range] = []
    seen_ids: set[str] = set()
    segment_start = 0
    holds = True
    # The calls of the model content just read: the next content must answer them.
    awaiting: list[types.FunctionCall] = []
    previous_is_model: bool | None = None
    for index, content in enumerate(contents):
        parts = content.parts
        if content.role in MODEL_ROLES:
            if starts_a_model_turn(True, previous_is_model):
                if not holds or awaiting:
                    faults.append(range(segment_start, index))
                segment_start, holds, awaiting = index, True, []
            elif previous_is_model:
                holds = False  # two model contents in a row
            previous_is_model = True
            if not parts:
                holds = False
                continue
            if awaiting:  # the model content before left its calls unanswered
                holds = False
                awaiting = []
            if not _calls_hold(parts, seen_ids, fill, awaiting):
                holds = False
            continue
        if previous_is_model is False:
            holds = False  # two user-side contents in a row
        previous_is_model = False
        if not parts:
            holds = False
        elif holds:
            holds = _answered_in_place(parts, awaiting)
        awaiting = []
    if not holds or awaiting:
        faults.append(range(segment_start, len(contents)))
    return faults


def _calls_hold(
    parts: list[types.Part], seen_ids: set[str], fill: bool, awaiting: list[types.FunctionCall]
) -> bool:
    """Whether a model content's parts keep the guarantee; reads its calls into `awaiting`.

    They do unless a part holds a result, a call is mixed (beside a result or
    what is sent in its place), a call's id was seen earlier in the request
    (each id is added to `seen_ids`), or, with `fill`, a provider that pairs
    by id refuses it. Every call is read, whatever the verdict: the next
    content must answer them all.
    """
    holds = True
    for part in parts:
        call = part.function_call
        if call is None:
            if part.function_response is not None:
                holds = False
            continue
        if part.function_response is not None or never_sent_as_a_call(part):
            holds = False  # mixed
        call_id = call.id
        if call_id:
            if call_id in seen_ids:
                holds = False
            seen_ids.add(call_id)
        if fill and refused_when_paired_by_id(call_id):
            holds = False
        awaiting.append(call)
    return holds


def _answered_in_place(parts: list[types.Part], awaiting: list[types.FunctionCall]) -> bool:
    """Whether a user-side content's parts answer `awaiting` in place.

    Each leading part is the result of the call in its position, under its
    name, by its id (id-less for an id-less call), then no call and no other
    result follows.
    """
    expected = len(awaiting)
    answered = 0
    for part in parts:
        if part.function_call is not None:
            return False
        response = part.function_response
        if answered == expected:
            if response is not None:
                return False
            continue
        # A result and no call: mixed only beside what is sent instead.
        if response is None or never_sent_as_a_call(part):
            return False
        call = awaiting[answered]
        answered += 1
        if (response.name or "") != (call.name or ""):
            return False
        call_id = call.id
        if call_id:
            if response.id != call_id:
                return False
        elif response.id:
            return False
    return answered == expected


def scan(contents: Sequence[types.Content], fill: bool) -> list[Segment]:
    """`contents` as segments (`segments_around` its `faulty_segments`)."""
    return segments_around(contents, faulty_segments(contents, fill))


def segments_around(contents: Sequence[types.Content], faults: Sequence[range]) -> list[Segment]:
    """`contents` as segments: the `faults` (faulty ones) and the runs that hold between them.

    Each segment carries the calls of its model contents, in order. Only a
    request with a fault pays for this second walk.
    """
    segments: list[Segment] = []
    held_start = 0
    for fault in faults:
        if held_start < fault.start:
            segments.append(_segment(contents, range(held_start, fault.start), True))
        segments.append(_segment(contents, fault, False))
        held_start = fault.stop
    if held_start < len(contents):
        segments.append(_segment(contents, range(held_start, len(contents)), True))
    return segments


def _segment(contents: Sequence[types.Content], span: range, holds: bool) -> Segment:
    calls = [
        part.function_call
        for content in contents[span.start : span.stop]
        if content.role in MODEL_ROLES
        for part in content.parts or ()
        if part.function_call is not None
    ]
    return Segment(span.start, span.stop, holds, calls)

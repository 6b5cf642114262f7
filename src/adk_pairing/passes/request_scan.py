"""The request pass's detection: which segments of a request already keep its guarantee.

A segment runs from a model content that follows a user one to the next. One
pass over the parts (`provider_rules.faulty_segments`) finds the segments that
do not hold: a call not answered in place, a reused id, a mixed part, roles
that do not alternate. A request with none goes out as it came; otherwise
`segments_around` lays the request out in segments and only the faulty ones
are rewritten (`adk_pairing.passes.request_rewrite`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from google.genai import types

from ..rules.provider_rules import faulty_segments
from ..wire import MODEL_ROLES

__all__ = ["Segment", "faulty_segments", "scan", "segments_around"]


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

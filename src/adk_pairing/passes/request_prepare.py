"""The request pass's rewrite, phase 1: the faulty segments as turns.

Before `adk_pairing.passes.request_rewrite` attributes results, plans ids and
places answers, each faulty segment (`adk_pairing.passes.request_scan`) is
prepared: its contents as turns, none empty, mixed parts split and calls on
the user side dropped, each turn readable by the ledger as an event
(`PreparedContent`). Segments that hold are left as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from google.genai import types

from ..wire import MODEL_ROLES, call_key, is_mixed, never_sent_as_a_call
from .request_records import ContentRepair, ContentRule
from .request_scan import Segment

__all__ = ["Prepared", "PreparedContent", "prepare"]


class PreparedContent:
    """One content of a faulty segment, prepared, as the ledger reads it: as an event.

    An `adk_pairing.ledger.reads.EventRead` whose ``content`` is itself (a
    `ContentRead`: the ledger reads ``event.content.parts``, and a second
    object per content would only cost): the request has no events, no
    authors (one for all: the request's calls are all its model's), no
    branches (ADK's builder kept only what the requesting agent's branch
    shows) and no rewinds (the builder applied them). The ledger marks calls
    held open by name; held-open ids come from the session and are looked up
    only when a call needs a placeholder (the rewrite's last phase).
    """

    __slots__ = ("is_model", "long_running_tool_ids", "parts", "source")

    author = "model"
    branch = None
    actions = None
    invocation_id = ""

    def __init__(
        self,
        source: types.Content,
        parts: list[types.Part],
        is_model: bool,
    ) -> None:
        self.source = source
        self.parts = parts
        self.is_model = is_model
        self.long_running_tool_ids = ()

    @property
    def content(self) -> PreparedContent:
        return self


class Prepared(NamedTuple):
    """The request as the later phases read it."""

    contents: Sequence[types.Content]
    #: The scan's segments; each faulty one with its `Segment.turns`.
    segments: list[Segment]
    #: The faulty segments' contents as turns, in request order.
    turns: list[PreparedContent]
    #: What preparing changed: split parts, dropped calls and contents.
    repairs: list[ContentRepair]
    #: The number of the first of `turns`: the turns of earlier segments, when
    #: a rewrite resumes after them (`adk_pairing.passes.request_rewrite.RewriteState`).
    first_turn: int = 0


def prepare(
    contents: Sequence[types.Content], segments: Sequence[Segment], first_turn: int = 0
) -> Prepared:
    """The faulty segments' contents as turns: each non-empty, none holding a mixed part.

    Every part of a turn is a call, a result or neither (`wire.is_mixed` is
    false for each), a user-side turn holds no call, and no turn is empty. A
    segment that holds is left as it is. `segments` are not changed: the
    faulty ones come back as copies that know their turns, numbered from
    `first_turn`.
    """
    repairs: list[ContentRepair] = []
    turns: list[PreparedContent] = []
    prepared: list[Segment] = []
    for segment in segments:
        if not segment.holds:
            first = first_turn + len(turns)
            turns += _prepare_turns(contents[segment.start : segment.stop], repairs)
            turned = range(first, first_turn + len(turns))
            segment = Segment(segment.start, segment.stop, False, segment.calls, turned)
        prepared.append(segment)
    return Prepared(contents, prepared, turns, repairs, first_turn)


def _prepare_turns(
    contents: Sequence[types.Content],
    repairs: list[ContentRepair],
) -> list[PreparedContent]:
    """The non-empty contents as turns, mixed parts split, user-side calls dropped."""
    turns: list[PreparedContent] = []
    for content in contents:
        if content is None or not content.parts:
            repairs.append(ContentRepair(ContentRule.EMPTY_CONTENT))
            continue
        is_model = content.role in MODEL_ROLES
        parts: list[types.Part] = content.parts
        cleaned: list[types.Part] | None = None
        for position, part in enumerate(parts):
            pieces: list[types.Part] | None = None
            if is_mixed(part):
                call = part.function_call or part.function_response
                repairs.append(
                    ContentRepair(ContentRule.SPLIT_PART, call_key(call.id, call.name))  # type: ignore[union-attr]
                )
                pieces = _split_part(part, is_model)
            if not is_model:
                source = pieces if pieces is not None else [part]
                kept = [piece for piece in source if piece.function_call is None]
                if len(kept) != len(source):
                    call = part.function_call
                    repairs.append(
                        ContentRepair(
                            ContentRule.CALL_OUTSIDE_MODEL,
                            call_key(call.id, call.name),  # type: ignore[union-attr]
                        )
                    )
                    pieces = kept
            if pieces is not None and cleaned is None:
                cleaned = list(parts[:position])
            if cleaned is not None:
                cleaned.extend(pieces if pieces is not None else (part,))
        if cleaned is not None:
            if not cleaned:
                repairs.append(ContentRepair(ContentRule.EMPTY_CONTENT))
                continue
            parts = cleaned
        turns.append(PreparedContent(content, parts, is_model))
    return turns


def _split_part(part: types.Part, is_model: bool) -> list[types.Part]:
    """A part holding a call or a result beside text (or both), as separate parts.

    ADK's Anthropic converter reads ``text`` before ``function_call`` and
    ``function_response``, and a call before a result, so a mixed part loses
    all but one of them. What it sends in their place (`wire.never_sent_as_a_call`)
    is kept as a part of its own. Text goes before a call (the assistant
    speaks, then calls) and after a result (results lead the user turn).
    """
    call, response = part.function_call, part.function_response
    rest = part.model_copy(update={"function_call": None, "function_response": None})
    sends_rest = never_sent_as_a_call(part)
    pieces: list[types.Part] = []
    if response is not None:
        pieces.append(types.Part(function_response=response))
    if sends_rest and is_model:
        pieces.append(rest)
    if call is not None:
        # A Gemini thought signature belongs to the call it was issued with.
        pieces.append(types.Part(function_call=call, thought_signature=part.thought_signature))
    if sends_rest and not is_model:
        pieces.append(rest)
    return pieces

"""The request pass's rewrite of the faulty segments, in four phases.

Given the segments `adk_pairing.passes.request_scan` found faulty: (1)
prepare them as turns, mixed parts split and user-side calls dropped
(`adk_pairing.passes.request_prepare`); (2) attribute each result to the
call it answers, by the view's own ledger (``NEWEST_BUILDER``); (3) plan the
id each call goes out with; (4) place each answer, or a placeholder, right
after its call, merging turns of one role. Segments that hold are reused as
they are. The guarantee it keeps is `adk_pairing.passes.request_pass`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from google.genai import types

from ..adk.builder import NEWEST_BUILDER
from ..core.placeholders import PlaceholderTexts, placeholder_part
from ..ledger import READS_BUILT_REQUEST, CallStatus, PairingLedger, TrackedCall
from ..rules.request_form import starts_a_model_turn
from ..wire import MODEL_ROLES, call_key, is_held_open
from .request_prepare import Prepared, PreparedContent, prepare
from .request_records import ContentRepair, ContentRule, RepairedContents
from .request_scan import Segment, refused_when_paired_by_id

__all__ = ["FILLED_ID_PREFIX", "repair_segments"]

#: How an id-less call is named when `fill_missing_ids` is on.
FILLED_ID_PREFIX = "call_pairing_"


def repair_segments(
    contents: Sequence[types.Content],
    segments: Sequence[Segment],
    held_open_ids: Collection[str] | Callable[[], Collection[str]],
    texts: PlaceholderTexts,
    fill: bool,
) -> RepairedContents:
    """Rebuilds the faulty segments of `contents`; the others are reused as they are.

    Only faulty segments are rebuilt: a segment that holds has every call
    answered where it stands, so no later result can belong to it and the
    ledger only needs to pass over it (`PairingLedger.pass_over`). A request
    with one interrupted call in a long history thus costs a check of every
    part plus the rebuild of one segment, not a rebuild of everything (the
    figures: benchmarks/RESULTS.md, "Request pass"). Given one faulty segment
    of everything, it rebuilds everything; the tests hold both ways to one
    result.
    """
    prepared = prepare(contents, segments)
    attribution = _attribute(prepared)
    ids = _plan_ids(prepared, attribution.calls, fill)
    placed = _place(prepared, attribution, ids, _HeldOpen(held_open_ids), texts)
    return RepairedContents(placed.contents, (*prepared.repairs, *ids.repairs, *placed.repairs))


# -- phase 2, attribute: which result answers which call -------------------------


@dataclass(frozen=True, slots=True)
class _Attribution:
    """Who answers whom among the prepared turns, by (turn, part) position in `Prepared.turns`."""

    #: Every call of the faulty turns, in request order.
    calls: list[TrackedCall]
    #: Where each call stands.
    call_at: dict[tuple[int, int], TrackedCall]
    #: ``id(call)`` -> where the result that answers it stands; a call not here is unanswered.
    answer_at: dict[int, tuple[int, int]]
    #: Where every result that answers a call stands; any other result answers nothing.
    answering: set[tuple[int, int]]


def _attribute(prepared: Prepared) -> _Attribution:
    """Who answers whom: each result answers at most one call, each call has at most one answer.

    The view's own ledger decides, one turn per content, passing over the
    segments that hold. NEWEST_BUILDER, not the installed ADK's traits: these
    contents are the request as sent, after ADK's builder (module docstring).
    Every call is tracked, a repeated id in one content too: `_plan_ids`
    renames it apart, so it needs an answer of its own.
    """
    turns = prepared.turns
    ledger = PairingLedger(NEWEST_BUILDER, reads=READS_BUILT_REQUEST)
    settled: list[TrackedCall] = []
    answered_at: list[tuple[int, int]] = []
    for segment in prepared.segments:
        if segment.holds:
            ledger.pass_over((call.id, call.name or "") for call in segment.calls)
        elif segment.turns:
            ledger.walk(
                turns[segment.turns.start : segment.turns.stop],
                segment.turns.start,
                settled,
                answered_at=answered_at,
            )
    return _Attribution(
        calls=ledger.calls,
        call_at={(call.event_index, call.part_index): call for call in ledger.calls},
        answer_at={id(call): where for call, where in zip(settled, answered_at, strict=True)},
        answering=set(answered_at),
    )


# -- phase 3, plan ids: the id each call goes out with ---------------------------


@dataclass(frozen=True, slots=True)
class _IdPlan:
    """The id each call goes out with: its own, or a fresh one for a duplicate or a gap."""

    #: ``id(call)`` -> its fresh id, for the calls that get one.
    fresh: dict[int, str]
    repairs: list[ContentRepair]

    def id_of(self, call: TrackedCall) -> str | None:
        return self.fresh.get(id(call), call.call_id)


def _plan_ids(prepared: Prepared, calls: Sequence[TrackedCall], fill: bool) -> _IdPlan:
    """Ids unique within the request (and on every call with `fill`), in request order.

    The first call with an id keeps it; a later call with that id gets
    ``<id>-<n>`` and an id-less one (with `fill`) ``call_pairing_<n>``,
    numbered in request order and skipping every id a call or result of the
    request already carries, so the same contents always give the same ids.
    """
    # The ids of the calls in segments that hold, which keep them. A held
    # segment reuses no earlier id (that is a fault), so they count as used
    # from the start.
    kept_ids = {
        call.id
        for segment in prepared.segments
        if segment.holds
        for call in segment.calls
        if call.id
    }
    taken: set[str] = set(kept_ids)
    for turn in prepared.turns:
        for part in turn.parts:
            if part.function_call is not None and part.function_call.id:
                taken.add(part.function_call.id)
            if part.function_response is not None and part.function_response.id:
                taken.add(part.function_response.id)
    fresh: dict[int, str] = {}
    repairs: list[ContentRepair] = []
    used: set[str] = set(kept_ids)
    filled = 0
    # Per reused id, the suffix to try next: every smaller one is taken (ids are
    # only ever added to `taken`), so an id reused n times costs n, not n².
    next_suffix: dict[str, int] = {}
    for call in calls:
        # With `fill`, a call whose id a provider that pairs by id cannot take
        # (none, or one like the Anthropic converter's own fallbacks) is
        # renamed as an id-less call is named.
        named_fresh = fill and refused_when_paired_by_id(call.call_id)
        if call.call_id and not named_fresh:
            if call.call_id not in used:
                used.add(call.call_id)
                continue
            suffix = next_suffix.get(call.call_id, 2)
            while f"{call.call_id}-{suffix}" in taken:
                suffix += 1
            next_suffix[call.call_id] = suffix + 1
            new_id = f"{call.call_id}-{suffix}"
            rule = ContentRule.DUPLICATE_ID
        elif named_fresh:
            filled += 1
            while f"{FILLED_ID_PREFIX}{filled}" in taken:
                filled += 1
            new_id = f"{FILLED_ID_PREFIX}{filled}"
            rule = ContentRule.DUPLICATE_ID if call.call_id else ContentRule.MISSING_ID
        else:
            continue
        taken.add(new_id)
        used.add(new_id)
        fresh[id(call)] = new_id
        repairs.append(ContentRepair(rule, call.key))
    return _IdPlan(fresh, repairs)


# -- phase 4, place: each answer (or placeholder) right after its call -----------


class _HeldOpen:
    """Which unanswered calls ADK holds open; the session's ids are read once, when first needed."""

    __slots__ = ("_ids", "_read")

    def __init__(self, held_open_ids: Collection[str] | Callable[[], Collection[str]]) -> None:
        self._read = held_open_ids if callable(held_open_ids) else None
        self._ids: Collection[str] | None = None if callable(held_open_ids) else held_open_ids

    def status(self, call: TrackedCall) -> CallStatus:
        """Pending when ADK holds `call` open (`wire.is_held_open`), else missing."""
        # The ledger knows the calls held open by name; ids come from the
        # session, read only now that a call needs a placeholder.
        if call.held_open:
            return CallStatus.PENDING
        if not call.call_id:
            return CallStatus.MISSING
        if self._ids is None:
            self._ids = self._read()  # type: ignore[misc]
        held = is_held_open(call.name, call.call_id, self._ids)
        return CallStatus.PENDING if held else CallStatus.MISSING


@dataclass(frozen=True, slots=True)
class _Placement:
    """What placing the turns reads, and the repairs it records."""

    turns: list[PreparedContent]
    attribution: _Attribution
    ids: _IdPlan
    #: Per turn, the run of adjacent model turns it belongs to or follows.
    model_runs: list[int]
    held_open: _HeldOpen
    texts: PlaceholderTexts
    repairs: list[ContentRepair]


class _Placed(NamedTuple):
    contents: list[types.Content]
    repairs: list[ContentRepair]


def _place(
    prepared: Prepared,
    attribution: _Attribution,
    ids: _IdPlan,
    held_open: _HeldOpen,
    texts: PlaceholderTexts,
) -> _Placed:
    """The contents to send: every call answered right after it, roles alternating.

    Each call's answer (its result, else a placeholder) leads the user turn
    after the model turn that holds the call, in call order; every other
    result is dropped; adjacent turns of one role are merged; calls carry
    their planned ids and results their calls' ids and names. A segment
    that holds is reused as it is (merged into the previous turn if it must).
    """
    turns = prepared.turns
    placement = _Placement(turns, attribution, ids, _model_runs(turns), held_open, texts, [])
    output = _Output()
    for segment in prepared.segments:
        if segment.holds:
            if output.reuse(prepared.contents[segment.start : segment.stop]):
                placement.repairs.append(ContentRepair(ContentRule.MERGED))
            continue
        for turn_index in segment.turns:
            _place_turn(placement, output, turn_index)
        if output.last_is_model and output.awaiting:
            output.open(False, None, _answers(placement, output.awaiting))
            output.awaiting = []
    return _Placed(output.build(), placement.repairs)


def _model_runs(turns: Sequence[PreparedContent]) -> list[int]:
    """Per turn, the number of the run of adjacent model turns it belongs to or follows.

    A result is in place when it sits in a user turn after its call's run.
    """
    model_run: list[int] = []
    run = 0
    previous_is_model = False
    for turn in turns:
        run += starts_a_model_turn(turn.is_model, previous_is_model)
        previous_is_model = turn.is_model
        model_run.append(run)
    return model_run


def _answers(placement: _Placement, calls: list[TrackedCall]) -> list[types.Part]:
    """The answers to `calls`, in order: each call's own result, else its placeholder."""
    turns = placement.turns
    answer_at = placement.attribution.answer_at
    model_runs = placement.model_runs
    repairs = placement.repairs
    id_of = placement.ids.id_of
    placed: list[types.Part] = []
    for call in calls:
        call_id = id_of(call)
        where = answer_at.get(id(call))
        if where is None:
            status = placement.held_open.status(call)
            placed.append(placeholder_part(call_id, call.name, status, placement.texts))
            repairs.append(ContentRepair(ContentRule.PLACEHOLDER, call_id or call.name, status))
            continue
        turn_index, part_index = where
        original = turns[turn_index].parts[part_index]
        part = _as_answer_to(original, call_id, call.name)
        if (original.function_response.name or "") != call.name:  # type: ignore[union-attr]
            repairs.append(ContentRepair(ContentRule.RESPONSE_NAME, call_id or call.name))
        if turns[turn_index].is_model or model_runs[turn_index] != model_runs[call.event_index]:
            repairs.append(ContentRepair(ContentRule.MOVED_RESPONSE, call_id or call.name))
        placed.append(part)
    return placed


def _place_turn(placement: _Placement, output: _Output, turn_index: int) -> None:
    """Adds one faulty segment's turn to `output`: its own parts, answers first after calls."""
    turn = placement.turns[turn_index]
    answering = placement.attribution.answering
    call_at = placement.attribution.call_at
    id_of = placement.ids.id_of
    repairs = placement.repairs
    parts = turn.parts
    kept: list[types.Part] | None = None
    calls_here: list[TrackedCall] = []
    for part_index, part in enumerate(parts):
        replacement: types.Part | None = part
        if part.function_response is not None:
            if (turn_index, part_index) not in answering:
                response = part.function_response
                repairs.append(
                    ContentRepair(ContentRule.ORPHAN_RESPONSE, call_key(response.id, response.name))
                )
            replacement = None  # placed with its call, or dropped
        elif part.function_call is not None:
            call = call_at[(turn_index, part_index)]
            calls_here.append(call)
            new_id = id_of(call)
            if new_id != call.call_id:
                assert new_id is not None
                replacement = _with_call_id(part, new_id)
        if replacement is not part and kept is None:
            kept = list(parts[:part_index])
        if kept is not None and replacement is not None:
            kept.append(replacement)
    own = parts if kept is None else kept
    if turn.is_model:
        if not own:
            return
        if output.last_is_model:
            repairs.append(ContentRepair(ContentRule.MERGED))
            output.extend_last(own)
            output.awaiting.extend(calls_here)
        else:
            output.open(True, turn.source, own)
            output.awaiting = calls_here
        return
    if output.last_is_model and output.awaiting:
        output.open(False, turn.source, [*_answers(placement, output.awaiting), *own])
    elif not own:
        return
    elif output.last_is_model is False:
        repairs.append(ContentRepair(ContentRule.MERGED))
        output.extend_last(own)
    else:
        output.open(False, turn.source, own)
    output.awaiting = []


def _with_call_id(part: types.Part, call_id: str) -> types.Part:
    call = part.function_call
    assert call is not None
    return part.model_copy(update={"function_call": call.model_copy(update={"id": call_id})})


def _as_answer_to(part: types.Part, call_id: str | None, name: str) -> types.Part:
    """`part`'s result carrying `call_id` and `name`: a copy when either differs."""
    response = part.function_response
    assert response is not None
    update: dict[str, str | None] = {}
    if (response.id or None) != (call_id or None):
        update["id"] = call_id
    if (response.name or "") != name:
        update["name"] = name
    if not update:
        return part
    return part.model_copy(update={"function_response": response.model_copy(update=update)})


class _Output:
    """The output contents: reused as they are, or rebuilt from a source and new parts."""

    def __init__(self) -> None:
        # Each entry is a content reused as it is, or a _Rebuilt one.
        self._entries: list[types.Content | _Rebuilt] = []
        #: The calls of the last entry while it is a model turn, in order.
        self.awaiting: list[TrackedCall] = []

    @property
    def last_is_model(self) -> bool | None:
        if not self._entries:
            return None
        last = self._entries[-1]
        return last.is_model if type(last) is _Rebuilt else last.role in MODEL_ROLES

    def open(self, is_model: bool, source: types.Content | None, parts: list[types.Part]) -> None:
        self._entries.append(_Rebuilt(source, list(parts), is_model))  # never extend an input list

    def extend_last(self, parts: list[types.Part]) -> None:
        last = self._entries[-1]
        if type(last) is not _Rebuilt:
            last = self._entries[-1] = _Rebuilt(last, list(last.parts or ()), self.last_is_model)
        last.parts.extend(parts)

    def reuse(self, contents: Sequence[types.Content]) -> bool:
        """A held segment's contents, as they are; True when the first merged into the last."""
        merged = self.last_is_model is (contents[0].role in MODEL_ROLES)
        if merged:
            self.extend_last(contents[0].parts or [])
            contents = contents[1:]
        self._entries += contents
        return merged

    def build(self) -> list[types.Content]:
        return [
            entry.build() if type(entry) is _Rebuilt else entry
            for entry in self._entries  # type: ignore[misc]
        ]


@dataclass(slots=True)
class _Rebuilt:
    source: types.Content | None
    parts: list[types.Part]
    is_model: bool

    def build(self) -> types.Content:
        source = self.source
        if source is None:
            return types.Content(role="model" if self.is_model else "user", parts=self.parts)
        if _same_parts(self.parts, source.parts):
            return source
        return source.model_copy(update={"parts": self.parts})


def _same_parts(parts: list[types.Part], original: list[types.Part] | None) -> bool:
    if original is None or len(parts) != len(original):
        return False
    return all(mine is theirs for mine, theirs in zip(parts, original, strict=True))

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

__all__ = ["FILLED_ID_PREFIX", "Rewrite", "RewriteState", "repair_segments", "rewrite_segments"]

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
    rewrite = rewrite_segments(contents, segments, held_open_ids, texts, fill)
    assert rewrite is not None  # only a resumed rewrite can refuse
    return RepairedContents(rewrite.contents, rewrite.repairs)


@dataclass(slots=True)
class RewriteState:
    """Where a rewrite stood at the start of the segment at content `cut`.

    What the phases carry across that segment start, for the contents before
    it. A later request whose contents before `cut` are the same rewrites
    only what follows, from here (`rewrite_segments` with `resume`;
    `adk_pairing.passes.request_memo` decides when the contents are the
    same). It is only read: each resumption copies what it changes.
    """

    cut: int
    #: The prepared turns before `cut`: the next one's number.
    turns: int
    #: The attribution's ledger at `cut`.
    ledger: PairingLedger
    #: The id plan at `cut` (`_plan_ids`): the ids kept or given, every id
    #: carried or given, the next suffix per reused id, the last filled number.
    used: set[str]
    taken: set[str]
    next_suffix: dict[str, int]
    filled: int
    #: The ids the plan gave before `cut`: no later content may carry one.
    fresh: set[str]
    #: The placeholders placed before `cut`, each with the status it was placed with.
    placeholders: list[tuple[TrackedCall, CallStatus]]
    #: The contents sent for those before `cut`: an int is the request's own
    #: content at that index, reused as it is.
    contents: list[types.Content | int]
    #: The repairs before `cut`, per phase: prepare, plan ids, place.
    repairs: tuple[list[ContentRepair], list[ContentRepair], list[ContentRepair]]


class Rewrite(NamedTuple):
    """A rewrite's contents and repairs, and where it stood at its last segment's start."""

    contents: list[types.Content]
    repairs: tuple[ContentRepair, ...]
    #: None when that start can serve no later request: a result after it
    #: answers a call before it, an id after it made the id plan skip one, or a
    #: turn after it merges into the content before it.
    state: RewriteState | None


def rewrite_segments(
    contents: Sequence[types.Content],
    segments: Sequence[Segment],
    held_open_ids: Collection[str] | Callable[[], Collection[str]],
    texts: PlaceholderTexts,
    fill: bool,
    resume: RewriteState | None = None,
) -> Rewrite | None:
    """`repair_segments`, which also says where it stood at its last segment's start.

    With `resume`, `segments` are those from `resume.cut` on and the
    contents before it are taken to be the ones `resume` was made from. The
    result is then what rewriting all of `contents` gives, or None when the
    contents from `resume.cut` on reach back into what `resume` fixed: a
    result answering a call before it, an id it gave, a placeholder whose
    status changed, or a turn merging into its last content.
    """
    held_open = _HeldOpen(held_open_ids)
    if resume is not None and any(
        held_open.status(call) is not status for call, status in resume.placeholders
    ):
        return None
    last = segments[-1].start if segments else 0
    start = resume.cut if resume is not None else 0
    checkpoint = last if last > start else None
    first_turn = resume.turns if resume is not None else 0
    head = prepare(contents, segments[:-1], first_turn) if checkpoint is not None else None
    turns_at_checkpoint = first_turn + len(head.turns) if head is not None else first_turn
    tail = prepare(contents, segments[-1:] if head is not None else segments, turns_at_checkpoint)
    prepared = (
        tail
        if head is None
        else Prepared(
            contents,
            [*head.segments, *tail.segments],
            [*head.turns, *tail.turns],
            [*head.repairs, *tail.repairs],
            first_turn,
        )
    )
    attribution = _attribute(prepared, resume, checkpoint, turns_at_checkpoint)
    if attribution is None:
        return None
    ids = _plan_ids(prepared, attribution.calls, fill, resume, checkpoint, turns_at_checkpoint)
    if ids is None:
        return None
    placed = _place(prepared, attribution, ids, held_open, texts, resume is not None, checkpoint)
    if placed is None:
        return None
    repairs = [prepared.repairs, ids.repairs, placed.repairs]
    if resume is not None:
        repairs = [[*before, *now] for before, now in zip(resume.repairs, repairs, strict=True)]
    output: list[types.Content] = placed.contents
    if resume is not None:
        output = [
            *(contents[entry] if type(entry) is int else entry for entry in resume.contents),
            *output,
        ]
    state = None
    if checkpoint is not None and attribution.at_checkpoint is not None and placed.at_checkpoint:
        state = _state_at(
            contents,
            prepared,
            resume,
            checkpoint,
            turns_at_checkpoint,
            attribution,
            ids,
            placed,
            len(head.repairs) if head is not None else 0,
        )
    elif resume is not None and checkpoint is None:
        state = resume  # the same start: what it holds still holds
    return Rewrite(output, (*repairs[0], *repairs[1], *repairs[2]), state)


def _state_at(
    contents: Sequence[types.Content],
    prepared: Prepared,
    resume: RewriteState | None,
    cut: int,
    turns: int,
    attribution: _Attribution,
    ids: _IdPlan,
    placed: _Placed,
    prepare_repairs: int,
) -> RewriteState | None:
    """The rewrite's state at content `cut`, from what each phase noted there."""
    plan = ids.at_checkpoint
    if plan is None:
        return None
    ledger = attribution.at_checkpoint
    assert ledger is not None and placed.at_checkpoint is not None
    entries, placeholders, place_repairs = placed.at_checkpoint
    start = resume.cut if resume is not None else 0
    index_of = {id(content): index for index, content in enumerate(contents[start:cut], start)}
    made: list[types.Content | int] = [
        index_of.get(id(content), content)
        for content in entries  # type: ignore[misc]
    ]
    repairs = (
        prepared.repairs[:prepare_repairs],
        ids.repairs[: plan.repairs],
        placed.repairs[:place_repairs],
    )
    if resume is not None:
        made = [*resume.contents, *made]
        placeholders = [*resume.placeholders, *placeholders]
        repairs = tuple(  # type: ignore[assignment]
            [*before, *now] for before, now in zip(resume.repairs, repairs, strict=True)
        )
    return RewriteState(
        cut=cut,
        turns=turns,
        ledger=ledger,
        used=plan.used,
        taken=plan.taken,
        next_suffix=plan.next_suffix,
        filled=plan.filled,
        fresh=plan.fresh,
        placeholders=placeholders,
        contents=made,
        repairs=repairs,  # type: ignore[arg-type]
    )


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
    #: A copy of the ledger as it stood at the checkpoint, when there is one.
    at_checkpoint: PairingLedger | None = None


def _attribute(
    prepared: Prepared,
    resume: RewriteState | None = None,
    checkpoint: int | None = None,
    checkpoint_turn: int = 0,
) -> _Attribution | None:
    """Who answers whom: each result answers at most one call, each call has at most one answer.

    The view's own ledger decides, one turn per content, passing over the
    segments that hold. NEWEST_BUILDER, not the installed ADK's traits: these
    contents are the request as sent, after ADK's builder (module docstring).
    Every call is tracked, a repeated id in one content too: `_plan_ids`
    renames it apart, so it needs an answer of its own. Resumed, it walks on
    from a copy of `resume`'s ledger, and gives None when a result answers a
    call from before `resume.cut`, whose place is fixed there. A checkpoint
    where a later result answers an earlier call serves no later request.
    """
    turns = prepared.turns
    first = prepared.first_turn
    if resume is not None:
        ledger = resume.ledger.carry_forward()
    else:
        ledger = PairingLedger(NEWEST_BUILDER, reads=READS_BUILT_REQUEST)
    carried = len(ledger.calls)  # the open calls from before `resume.cut`, first
    at_checkpoint: PairingLedger | None = None
    settled: list[TrackedCall] = []
    answered_at: list[tuple[int, int]] = []
    for segment in prepared.segments:
        if segment.start == checkpoint:
            at_checkpoint = ledger.carry_forward()
        if segment.holds:
            ledger.pass_over((call.id, call.name or "") for call in segment.calls)
        elif segment.turns:
            ledger.walk(
                turns[segment.turns.start - first : segment.turns.stop - first],
                segment.turns.start,
                settled,
                answered_at=answered_at,
            )
    if carried and any(call.event_index < first for call in settled):
        return None
    if at_checkpoint is not None and any(
        call.event_index < checkpoint_turn <= where[0]
        for call, where in zip(settled, answered_at, strict=True)
    ):
        at_checkpoint = None  # a result after the checkpoint answers a call before it
    calls = ledger.calls[carried:] if carried else ledger.calls
    return _Attribution(
        calls=calls,
        call_at={(call.event_index, call.part_index): call for call in calls},
        answer_at={id(call): where for call, where in zip(settled, answered_at, strict=True)},
        answering=set(answered_at),
        at_checkpoint=at_checkpoint,
    )


# -- phase 3, plan ids: the id each call goes out with ---------------------------


class _PlanAt(NamedTuple):
    """The id plan at the checkpoint (`RewriteState`'s fields of the same names)."""

    used: set[str]
    taken: set[str]
    next_suffix: dict[str, int]
    filled: int
    fresh: set[str]
    #: How many of the plan's repairs came before.
    repairs: int


@dataclass(frozen=True, slots=True)
class _IdPlan:
    """The id each call goes out with: its own, or a fresh one for a duplicate or a gap."""

    #: ``id(call)`` -> its fresh id, for the calls that get one.
    fresh: dict[int, str]
    repairs: list[ContentRepair]
    #: The plan at the checkpoint, when a later request can resume from it.
    at_checkpoint: _PlanAt | None = None

    def id_of(self, call: TrackedCall) -> str | None:
        return self.fresh.get(id(call), call.call_id)


def _plan_ids(
    prepared: Prepared,
    calls: Sequence[TrackedCall],
    fill: bool,
    resume: RewriteState | None = None,
    checkpoint: int | None = None,
    checkpoint_turn: int = 0,
) -> _IdPlan | None:
    """Ids unique within the request (and on every call with `fill`), in request order.

    The first call with an id keeps it; a later call with that id gets
    ``<id>-<n>`` and an id-less one (with `fill`) ``call_pairing_<n>``,
    numbered in request order and skipping every id a call or result of the
    request already carries, so the same contents always give the same ids.
    Resumed, it goes on from `resume`'s plan, and gives None when a content
    after `resume.cut` carries an id given before it (that id would have
    been skipped there).
    """
    # The ids of the calls in segments that hold, which keep them. A held
    # segment reuses no earlier id (that is a fault), so they count as used
    # from the start.
    kept_ids: set[str] = set()
    kept_later: set[str] = set()
    carried_before: set[str] = set()  # every id carried before the checkpoint
    carried_later: set[str] = set()
    for segment in prepared.segments:
        if segment.holds:
            later = checkpoint is not None and segment.start >= checkpoint
            for call in segment.calls:
                if call.id:
                    kept_ids.add(call.id)
                    (kept_later if later else carried_before).add(call.id)
    for turn_index, turn in enumerate(prepared.turns, prepared.first_turn):
        carried = (
            carried_later
            if checkpoint is not None and turn_index >= checkpoint_turn
            else (carried_before)
        )
        for part in turn.parts:
            if part.function_call is not None and part.function_call.id:
                carried.add(part.function_call.id)
            if part.function_response is not None and part.function_response.id:
                carried.add(part.function_response.id)
    carried_later |= kept_later
    if resume is not None:
        if not (resume.fresh.isdisjoint(carried_before) and resume.fresh.isdisjoint(carried_later)):
            return None
        taken = resume.taken | carried_before | carried_later
        used = resume.used | kept_ids
        next_suffix = dict(resume.next_suffix)
        filled = resume.filled
    else:
        taken = carried_before | carried_later
        used = set(kept_ids)
        next_suffix = {}
        filled = 0
    fresh: dict[int, str] = {}
    given: list[str] = []
    skipped: list[str] = []  # ids passed over because something carried them
    repairs: list[ContentRepair] = []
    at_checkpoint: _PlanAt | None = None
    # The plan is noted before the first call at or after the checkpoint.
    noted_at = -1
    if checkpoint is not None:
        noted_at = next(
            (at for at, call in enumerate(calls) if call.event_index >= checkpoint_turn),
            len(calls),
        )
    for at in range(len(calls) + 1):
        if at == noted_at:
            at_checkpoint = _plan_at(
                resume,
                carried_before,
                used - kept_later,
                next_suffix,
                filled,
                given,
                skipped,
                len(repairs),
            )
        if at == len(calls):
            break
        call = calls[at]
        # With `fill`, a call whose id a provider that pairs by id cannot take
        # (none, or one like the Anthropic converter's own fallbacks) is
        # renamed as an id-less call is named.
        named_fresh = fill and refused_when_paired_by_id(call.call_id)
        if call.call_id and not named_fresh:
            if call.call_id not in used:
                used.add(call.call_id)
                continue
            # Every smaller suffix is taken (ids are only ever added to
            # `taken`), so an id reused n times costs n, not n².
            suffix = next_suffix.get(call.call_id, 2)
            while f"{call.call_id}-{suffix}" in taken:
                skipped.append(f"{call.call_id}-{suffix}")
                suffix += 1
            next_suffix[call.call_id] = suffix + 1
            new_id = f"{call.call_id}-{suffix}"
            rule = ContentRule.DUPLICATE_ID
        elif named_fresh:
            filled += 1
            while f"{FILLED_ID_PREFIX}{filled}" in taken:
                skipped.append(f"{FILLED_ID_PREFIX}{filled}")
                filled += 1
            new_id = f"{FILLED_ID_PREFIX}{filled}"
            rule = ContentRule.DUPLICATE_ID if call.call_id else ContentRule.MISSING_ID
        else:
            continue
        taken.add(new_id)
        used.add(new_id)
        given.append(new_id)
        fresh[id(call)] = new_id
        repairs.append(ContentRepair(rule, call.key))
    return _IdPlan(fresh, repairs, at_checkpoint)


def _plan_at(
    resume: RewriteState | None,
    carried_before: set[str],
    used: set[str],
    next_suffix: dict[str, int],
    filled: int,
    given: list[str],
    skipped: list[str],
    repairs: int,
) -> _PlanAt | None:
    """The plan at the checkpoint; None when an id after it made the plan skip one.

    Skipping an id carried only after the checkpoint would not happen where
    that content changed: a later request could not resume from here.
    """
    taken = (resume.taken if resume is not None else set()) | carried_before
    taken.update(given)
    if any(skip not in taken for skip in skipped):
        return None
    fresh = (resume.fresh if resume is not None else set()) | set(given)
    return _PlanAt(used, taken, dict(next_suffix), filled, fresh, repairs)


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
    #: The number of the first of `turns` (`Prepared.first_turn`).
    first: int
    attribution: _Attribution
    ids: _IdPlan
    #: Per turn, the run of adjacent model turns it belongs to or follows.
    model_runs: list[int]
    held_open: _HeldOpen
    texts: PlaceholderTexts
    repairs: list[ContentRepair]
    #: Each placeholder placed, with its call and the status it was placed with.
    placeholders: list[tuple[TrackedCall, CallStatus]]


class _Placed(NamedTuple):
    contents: list[types.Content]
    repairs: list[ContentRepair]
    #: At the checkpoint, when a later request can resume from it: the
    #: contents placed before it, and how many placeholders and repairs.
    at_checkpoint: tuple[list[types.Content], list[tuple[TrackedCall, CallStatus]], int] | None


def _place(
    prepared: Prepared,
    attribution: _Attribution,
    ids: _IdPlan,
    held_open: _HeldOpen,
    texts: PlaceholderTexts,
    resumed: bool = False,
    checkpoint: int | None = None,
) -> _Placed | None:
    """The contents to send: every call answered right after it, roles alternating.

    Each call's answer (its result, else a placeholder) leads the user turn
    after the model turn that holds the call, in call order; every other
    result is dropped; adjacent turns of one role are merged; calls carry
    their planned ids and results their calls' ids and names. A segment
    that holds is reused as it is (merged into the previous turn if it must).
    `resumed`, the contents before come from a checkpoint, where the last one
    sent is a user-side turn: None when a turn would merge into it.
    """
    turns = prepared.turns
    placement = _Placement(
        turns,
        prepared.first_turn,
        attribution,
        ids,
        _model_runs(turns),
        held_open,
        texts,
        [],
        [],
    )
    output = _Output(after_user=resumed)
    noted: tuple[int, int, int] | None = None
    for segment in prepared.segments:
        if segment.start == checkpoint and output.last_is_model is False:
            noted = output.seal(), len(placement.placeholders), len(placement.repairs)
        if segment.holds:
            if output.reuse(prepared.contents[segment.start : segment.stop]):
                placement.repairs.append(ContentRepair(ContentRule.MERGED))
            continue
        for turn_index in segment.turns:
            _place_turn(placement, output, turn_index)
        if output.last_is_model and output.awaiting:
            output.open(False, None, _answers(placement, output.awaiting))
            output.awaiting = []
    if output.merged_before:
        return None
    contents = output.build()
    at_checkpoint = None
    if noted is not None and not output.broke_seal:
        entries, placeholders, repairs = noted
        at_checkpoint = (contents[:entries], placement.placeholders[:placeholders], repairs)
    return _Placed(contents, placement.repairs, at_checkpoint)


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
    first = placement.first
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
            placement.placeholders.append((call, status))
            repairs.append(ContentRepair(ContentRule.PLACEHOLDER, call_id or call.name, status))
            continue
        turn_index, part_index = where
        turn = turns[turn_index - first]
        original = turn.parts[part_index]
        part = _as_answer_to(original, call_id, call.name)
        if (original.function_response.name or "") != call.name:  # type: ignore[union-attr]
            repairs.append(ContentRepair(ContentRule.RESPONSE_NAME, call_id or call.name))
        if turn.is_model or model_runs[turn_index - first] != model_runs[call.event_index - first]:
            repairs.append(ContentRepair(ContentRule.MOVED_RESPONSE, call_id or call.name))
        placed.append(part)
    return placed


def _place_turn(placement: _Placement, output: _Output, turn_index: int) -> None:
    """Adds one faulty segment's turn to `output`: its own parts, answers first after calls."""
    turn = placement.turns[turn_index - placement.first]
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

    def __init__(self, after_user: bool = False) -> None:
        # Each entry is a content reused as it is, or a _Rebuilt one.
        self._entries: list[types.Content | _Rebuilt] = []
        #: The calls of the last entry while it is a model turn, in order.
        self.awaiting: list[TrackedCall] = []
        # After contents placed elsewhere (a resumed rewrite), which end on
        # the user's side: the first `_sealed` entries must not change either.
        self._after_user = after_user
        self._sealed = 0
        #: Something merged into a sealed entry.
        self.broke_seal = False
        #: Something merged into the contents before (`after_user`).
        self.merged_before = False

    @property
    def last_is_model(self) -> bool | None:
        if not self._entries:
            return False if self._after_user else None
        last = self._entries[-1]
        return last.is_model if type(last) is _Rebuilt else last.role in MODEL_ROLES

    def seal(self) -> int:
        """Seals the entries so far (a checkpoint's); returns how many there are."""
        self._sealed = len(self._entries)
        return self._sealed

    def open(self, is_model: bool, source: types.Content | None, parts: list[types.Part]) -> None:
        self._entries.append(_Rebuilt(source, list(parts), is_model))  # never extend an input list

    def extend_last(self, parts: list[types.Part]) -> None:
        if not self._entries:
            self.merged_before = True  # into the contents before, not here: not used
            return
        if len(self._entries) <= self._sealed:
            self.broke_seal = True
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

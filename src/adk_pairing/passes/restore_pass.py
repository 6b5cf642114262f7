"""Putting back the calls ADK's request builder dropped: the pure half of the plugin's restore.

Where ADK's contents request processor drops a function call nothing answers
(``drop_orphaned_function_calls``, `adk_pairing.adk.adk_drops_unanswered_calls`)
before any plugin runs, the request pass (`adk_pairing.passes.request_pass`)
cannot answer a call it never sees. The plugin restores it instead, with
ADK's own builder and the view's placement, and this module holds the
decisions, free of I/O:

* `calls_the_request_lacks`: which calls the history holds open that the
  request does not carry. It reads the ledger the view uses
  (`adk_pairing.ledger.PairingLedger`, the installed ADK's traits), so there
  is one model of who answers whom. A request that carries every open call,
  or a history with none, is left to the request pass alone: that is the
  common case and it costs no builder run.
* `repaired_history`: the stored events with the view's placeholders placed
  as the view places them (`adk_pairing.core.repair.place_repairs`, the same texts
  and pending/missing rule). These are the events ADK's builder is run over a
  second time; the builder then keeps every call, as it keeps a call with a
  recorded result.
* `splice`: the request with the contents ADK built from the stored events
  replaced by those it built from the repaired ones. The request must be the
  stored build plus transient user contents that processors after the
  contents processor (instructions, ``model_input_context``) inserted between
  its contents; each is put back at the same distance from the end (or the
  start) of the history. Any other difference (another plugin or an agent
  callback changed the contents, a processor rewrote them) means the request
  is not what ADK built from the session, and nothing is spliced.

* `restoration` and `place`: what the two builds differ by, kept so that a
  later request of the session is restored without building again, and put
  where ADK's builder put it in whatever contents the request holds (a window
  over them, contents another plugin added after the calls' place);
  `ends_with_a_result_reaching_back` says when the end of what ADK builds
  moves, and the builder must be asked again.

The request pass then runs over the result, so its rules hold whatever the
builder made of the placeholders: a history whose calls come before any user
message is restored too, and the request pass opens it with its note (its
rule 5).
"""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from google.adk.events.event import Event
from google.genai import types

from ..core.placeholders import PlaceholderTexts
from ..core.repair import place_repairs
from ..ledger import PairingLedger, TrackedCall
from ..rules.builder_check import calls_carried, carries_every_call
from ..wire import MODEL_ROLES, branch_shows, builder_leaves_out, is_adk_call_id

__all__ = [
    "Restoration",
    "RestoreOutcome",
    "RestoreResult",
    "calls_the_request_lacks",
    "end_in_play",
    "ends_with_a_result_reaching_back",
    "place",
    "repaired_history",
    "restoration",
    "splice",
]


def calls_the_request_lacks(
    ledger: PairingLedger,
    events: Sequence[Event],
    contents: Sequence[types.Content],
    branch: str | None,
) -> list[TrackedCall]:
    """The open calls of `events` shown to an agent in `branch` that `contents` lack.

    `ledger` is the ledger of `events`, holding every call where the history is
    irregular (`PairingLedger.holds_every_call`). A call counts as lacking when no model
    content of `contents` carries its id, or when the call sits in a user-side
    content (ADK's rearranging put it there, next to results): no provider
    takes a call there, so the request pass drops it. A withheld call is left
    as stored on purpose (`PairingLedger`), and ADK's builder never drops a
    call without an id, so those count only when misplaced. A call whose
    ``adk-`` id ADK stripped from a Gemini request counts, whether ADK dropped
    it or kept it held open: the restore then finds the same contents plus its
    placeholder, which the request pass would add anyway. In an irregular
    history, where a reused id can hide that a call is missing, a request that
    lacks none of these is also checked for calls its model turns carry fewer
    copies of than the history shows (`_cut_calls`). O(open calls + request
    parts) otherwise; nothing is read when no call is open.
    """
    open_calls = ledger.open_calls
    if not open_calls:
        return []
    shown = _shown((call for calls in open_calls.values() for call in calls), events, branch)
    if not shown:
        return []
    sent_ids: set[str] = set()
    misplaced: set[tuple[str | None, str]] = set()
    for content in contents:
        on_the_model_side = content.role in MODEL_ROLES
        for part in content.parts or ():
            call = part.function_call
            if call is None:
                continue
            if not on_the_model_side:
                misplaced.add((call.id or None, call.name or ""))
            elif call.id:
                sent_ids.add(call.id)
    lacking = [
        call
        for call in shown
        if (call.call_id or None, call.name) in misplaced
        or (call.call_id and call.call_id not in sent_ids)
    ]
    if lacking or not ledger.irregular:
        return lacking
    if not ledger.holds_every_call:
        raise ValueError("an irregular history's ledger must hold every call (AnalysisCache)")
    return _cut_calls(_shown(ledger.calls, events, branch), contents)


def _shown(
    calls: Iterable[TrackedCall], events: Sequence[Event], branch: str | None
) -> list[TrackedCall]:
    """The calls of `calls` ADK's builder shows an agent in `branch`, but the withheld ones.

    A withheld call is left as stored on purpose (`PairingLedger`): a request
    never lacks it.
    """
    return [
        call
        for call in calls
        if not call.withheld and branch_shows(branch, events[call.event_index].branch or None)
    ]


def _cut_calls(
    shown: Sequence[TrackedCall], contents: Sequence[types.Content]
) -> list[TrackedCall]:
    """The calls of an irregular history the request carries fewer copies of than it shows.

    `shown` is every call of the history an agent in the request's branch is
    shown (`_shown`), in history order.

    Where ids are reused, an older builder's walk back from a trailing result
    can cut the history at an older call event with the same id (`WalksBack`),
    or its pairing can drop a call event whose result it gave to another call
    with the id: calls the ledger counts answered, or whose id another sent
    call carries, are then absent; so is a call ADK's merge puts on the user
    side, beside results, held open or not. A placeholder after an open call
    changes the trailing event and the pairing, so the repaired build may show
    them; the splice decides. Only irregular histories with an open call pay
    this scan, O(calls).

    A call whose ``adk-`` id this request does not carry is counted as
    id-less, with the history's id-less calls of its name: ADK strips its own
    ids from the request of a model that pairs by position, so the call is
    there without its id. ADK's builder never drops an id-less call, so they
    are all carried and any shortfall is a call cut.
    """
    sent = calls_carried(contents)
    counted: Counter[tuple[str | None, str]] = Counter()
    found: list[TrackedCall] = []
    for call in shown:
        key = (call.call_id, call.name)
        if call.call_id is None or (is_adk_call_id(call.call_id) and not sent[key]):
            key = (None, call.name)
        counted[key] += 1
        if counted[key] > sent[key]:
            found.append(call)
    return found


def repaired_history(
    events: Sequence[Event], ledger: PairingLedger, texts: PlaceholderTexts
) -> list[Event]:
    """`events` with the view's placeholder after each open call, placed as the view places it.

    Unchecked (`adk_pairing.core.repair.place_repairs`): here the request ADK's
    builder makes of these events is itself what the request pass repairs,
    so nothing depends on where ADK's rearranging puts a placeholder; but
    for the id-less calls of a call event whose id-less results a stored
    event holds (`PairingLedger.collapses_idless_answers`): ADK's builder
    would keep their placeholders and drop those results, so they get none
    here, and the request pass answers them where they stand.
    """
    collapsed = ledger.collapses_idless_answers(events)
    return place_repairs(events, ledger, texts, idless_left_open=collapsed).events


class RestoreOutcome(enum.Enum):
    """What `splice` or `place` found: the calls put back into the request, or why not."""

    #: The request holds what ADK built from the session: `RestoreResult.contents`
    #: replace it, with the calls put back.
    RESTORED = "restored"
    #: (`splice`) The repaired events give the same contents, or bring back no
    #: call: nothing was dropped.
    NOTHING_TO_RESTORE = "nothing_to_restore"
    #: (`place`) The request starts after the calls' place: a window (another
    #: plugin, a processor) left their turn out on purpose, and they stay out.
    LEFT_OUT = "left_out"
    #: The request is not what ADK built from the session: another plugin, a
    #: callback or a processor changed it, and where the calls go is not certain.
    CHANGED_BY_OTHERS = "changed_by_others"


@dataclass(frozen=True, slots=True)
class RestoreResult:
    """What `splice` or `place` returns."""

    outcome: RestoreOutcome
    #: With `RestoreOutcome.RESTORED`, the request's contents with the calls put back.
    contents: list[types.Content] | None = None


def _is_transient(content: types.Content) -> bool:
    """A content a processor inserts into the history: user-side, no call or result."""
    if content.role in MODEL_ROLES:
        return False
    return not any(
        part.function_call is not None or part.function_response is not None
        for part in content.parts or ()
    )


def splice(
    request: Sequence[types.Content],
    from_stored: Sequence[types.Content],
    from_repaired: Sequence[types.Content],
) -> RestoreResult:
    """`request` with `from_stored` (ADK's contents from the stored events) replaced.

    `request` must be `from_stored` with transient user contents inserted
    between its contents (`_is_transient`; equal contents, compared by value,
    since each build copies them). Each run of inserted contents goes into
    `from_repaired` at the same place: the start, the end, or before the same
    stretch of trailing contents (the processors insert before the latest
    user turn), else after the same leading stretch; when neither matches,
    the place is not certain and nothing is spliced.
    """
    if list(from_stored) == list(from_repaired):
        return RestoreResult(RestoreOutcome.NOTHING_TO_RESTORE)
    brings_back = calls_carried(from_repaired) - calls_carried(from_stored)
    if not brings_back and not carries_every_call(from_stored, from_repaired):
        # The placeholders brought back no call (not even another copy of a
        # reused id) and displaced an event whose calls the stored build
        # showed: the stored build tells the model more.
        return RestoreResult(RestoreOutcome.NOTHING_TO_RESTORE)
    inserted: list[tuple[int, types.Content]] = []
    matched = 0
    stored_count = len(from_stored)
    for content in request:
        if matched < stored_count and content == from_stored[matched]:
            matched += 1
        elif _is_transient(content):
            inserted.append((matched, content))
        else:
            return RestoreResult(RestoreOutcome.CHANGED_BY_OTHERS)
    if matched != stored_count:
        return RestoreResult(RestoreOutcome.CHANGED_BY_OTHERS)
    repaired = list(from_repaired)
    positions: list[int] = []
    for before, _ in inserted:
        position = _place_in_repaired(before, from_stored, repaired)
        if position is None or (positions and position < positions[-1]):
            return RestoreResult(RestoreOutcome.CHANGED_BY_OTHERS)
        positions.append(position)
    result: list[types.Content] = []
    start = 0
    for position, (_, content) in zip(positions, inserted, strict=True):
        result.extend(repaired[start:position])
        result.append(content)
        start = position
    result.extend(repaired[start:])
    return RestoreResult(RestoreOutcome.RESTORED, result)


def _place_in_repaired(
    before: int, from_stored: Sequence[types.Content], repaired: list[types.Content]
) -> int | None:
    """Where a content inserted before ``from_stored[before]`` goes in `repaired`."""
    stored_count = len(from_stored)
    if before == 0:
        return 0
    if before == stored_count:
        return len(repaired)
    trailing = stored_count - before
    if trailing <= len(repaired) and repaired[len(repaired) - trailing :] == list(
        from_stored[before:]
    ):
        return len(repaired) - trailing
    if before <= len(repaired) and repaired[:before] == list(from_stored[:before]):
        return before
    return None


# -- the restore remembered: placing what one build found into later requests ----


@dataclass(frozen=True, slots=True)
class Restoration:
    """What putting back the dropped calls changes in ADK's contents, found once by its builder.

    ADK's contents from the stored events are ``head + stored_region +
    rest`` and those from the repaired events ``head + repaired_region +
    rest``: the builder's two runs differ only in the middle. While the
    history keeps its calls, placeholders and the events before them (the
    caller's marks), the contents ADK builds from that history start with
    ``head + stored_region`` whatever was appended since (a rearrangement
    that reaches back changes them, and then they no longer match), so a
    later request is restored by one pass over its start, with no builder
    run (`place`).
    """

    head: tuple[types.Content, ...]
    stored_region: tuple[types.Content, ...]
    repaired_region: tuple[types.Content, ...]
    #: For each part of `repaired_region` (its contents' parts, in order), the
    #: index among `stored_region`'s parts of the part it equals, or None where
    #: the restore added it (a call put back, a placeholder): found once here,
    #: so that placing it (`_fresh`) compares nothing.
    sources: tuple[int | None, ...] = ()

    @property
    def stored_start(self) -> tuple[types.Content, ...]:
        """What a request ADK built from the history starts with: ``head + stored_region``."""
        return self.head + self.stored_region


def restoration(
    from_stored: Sequence[types.Content], from_repaired: Sequence[types.Content]
) -> Restoration:
    """The smallest middle of `from_stored` that `from_repaired` replaces (`Restoration`)."""
    limit = min(len(from_stored), len(from_repaired))
    lead = 0
    while lead < limit and from_stored[lead] == from_repaired[lead]:
        lead += 1
    trail = 0
    last_stored, last_repaired = len(from_stored) - 1, len(from_repaired) - 1
    while (
        trail < limit - lead
        and from_stored[last_stored - trail] == from_repaired[last_repaired - trail]
    ):
        trail += 1
    stored_region = tuple(from_stored[lead : len(from_stored) - trail])
    repaired_region = tuple(from_repaired[lead : len(from_repaired) - trail])
    return Restoration(
        tuple(from_stored[:lead]),
        stored_region,
        repaired_region,
        _sources(stored_region, repaired_region),
    )


def _sources(
    stored_region: Sequence[types.Content], repaired_region: Sequence[types.Content]
) -> tuple[int | None, ...]:
    """`Restoration.sources`: each repaired part equal to the next stored part, in order, is
    that part; any other is one the restore added."""
    pool = [part for content in stored_region for part in content.parts or ()]
    taken = 0
    sources: list[int | None] = []
    for content in repaired_region:
        for part in content.parts or ():
            if taken < len(pool) and pool[taken] == part:
                sources.append(taken)
                taken += 1
            else:
                sources.append(None)
    return tuple(sources)


def place(
    found: Restoration,
    request: Sequence[types.Content],
    rest: Sequence[types.Content] = (),
) -> RestoreResult:
    """`request` with `found`'s repaired region in place of its stored one, by one pass.

    The request must start with ``found.stored_start`` (compared by value:
    each build copies its contents), or with a stretch of it up to its end
    when a window cut the request's start (ADK's `ContextFilterPlugin`, a
    custom filter), with transient user contents (`_is_transient`: ADK's
    instruction and input contexts) anywhere but inside the stored region.
    What follows is kept as it is, whatever changed it: a plugin that added
    parts to the last content, later turns. A window that starts after the
    calls' place left them out (`RestoreOutcome.LEFT_OUT`): inside the stored
    start, or in `rest` (what the same build holds after it, when known).
    The repaired region goes in as objects nothing remembers (`_fresh`), so
    nothing a later callback does to the request reaches what is remembered.
    """
    start = found.stored_start
    head_count = len(found.head)
    if not start:
        # The calls go first, and nothing before them says whether a leading
        # user content is the user's or one ADK inserted: not certain.
        return RestoreResult(RestoreOutcome.CHANGED_BY_OTHERS)
    # The request opens with a content of the build, after any transients ADK
    # inserted first (a user's message is a transient too, by its parts).
    for first, opening in enumerate(request):
        for offset in range(len(start)):
            where = _match_from(start, offset, request, first)
            if where is None:
                continue
            if offset > head_count or (offset == head_count and not found.stored_region):
                return RestoreResult(RestoreOutcome.LEFT_OUT)
            return _restored(found, offset, where, request)
        for offset in range(len(rest)):
            if _match_from(rest, offset, request, first, whole=True) is not None:
                return RestoreResult(RestoreOutcome.LEFT_OUT)
        if not _is_transient(opening):
            break
    return RestoreResult(RestoreOutcome.CHANGED_BY_OTHERS)


def _match_from(
    start: Sequence[types.Content],
    offset: int,
    request: Sequence[types.Content],
    first: int,
    *,
    whole: bool = False,
) -> list[int] | None:
    """Where ``start[offset:]`` stands in `request` from `first`, transients skipped; else None.

    ``request[first]`` must be ``start[offset]``: each content is compared once,
    the opening one included. With `whole`, nothing but transients may follow it.
    """
    count = len(request)
    if first >= count or offset >= len(start) or request[first] != start[offset]:
        return None
    where: list[int] = [first]
    expected = offset + 1
    position = first + 1
    while expected < len(start):
        if position >= count:
            return None
        content = request[position]
        if content == start[expected]:
            where.append(position)
            expected += 1
        elif not _is_transient(content):
            return None
        position += 1
    if whole and any(not _is_transient(content) for content in request[position:]):
        return None
    return where


def _restored(
    found: Restoration, offset: int, where: list[int], request: Sequence[types.Content]
) -> RestoreResult:
    """The request with the stored region (at `where`, from ``start[offset]``) replaced."""
    head_in_window = len(found.head) - offset
    region = len(found.stored_region)
    cut = where[head_in_window - 1] + 1 if head_in_window else where[0]
    if region:
        region_at = where[head_in_window : head_in_window + region]
        if region_at != list(range(cut, cut + region)):
            # A transient inside the region, or between it and the head: its place
            # among the repaired contents is not certain.
            return RestoreResult(RestoreOutcome.CHANGED_BY_OTHERS)
    repaired = _fresh(found, request[cut : cut + region])
    return RestoreResult(
        RestoreOutcome.RESTORED, [*request[:cut], *repaired, *request[cut + region :]]
    )


def _fresh(found: Restoration, replaced: Sequence[types.Content]) -> list[types.Content]:
    """`found`'s repaired region made of objects nothing remembers: the request's own parts.

    The repaired region is remembered across requests, and a later callback
    may change the request in place, so none of its objects may go out as
    they are. `replaced` is the request's stored region, which `place` found
    equal to `found`'s: its contents were built for this request alone (ADK
    copies each content per build), so each repaired part that one of them
    equals (`Restoration.sources`) is that part, and any other part (a call
    put back, a placeholder) is a deep copy. A region of many parts costs no
    comparison, and copies only what the restore added.
    """
    pool = [part for content in replaced for part in content.parts or ()]
    sources = iter(found.sources)
    fresh: list[types.Content] = []
    for content in found.repaired_region:
        if not content.parts:
            fresh.append(content.model_copy(deep=True))
            continue
        parts: list[types.Part] = []
        for part in content.parts:
            source = next(sources, None)
            if source is not None and source < len(pool):
                parts.append(pool[source])
            else:
                parts.append(part.model_copy(deep=True))
        fresh.append(content.model_copy(update={"parts": parts}))
    return fresh


def _shown_last(events: Sequence[Event]) -> int:
    """The index of the last event ADK's builder may show; -1 when none.

    The builder skips an event with nothing visible in it (no content, no
    parts, only thoughts...), so what ends the history it builds can be an
    event before the last. Here an event with no text and no call or result
    is skipped: that errs towards an earlier event, which only makes callers
    ask ADK's builder again.
    """
    index = len(events) - 1
    while index >= 0:
        content = events[index].content
        if content is not None and any(
            part.text or part.function_call is not None or part.function_response is not None
            for part in content.parts or ()
        ):
            break
        index -= 1
    return index


def end_in_play(events: Sequence[Event]) -> str | None:
    """The id of the event that ends what ADK builds, where that end depends on it; else None.

    ADK's builder treats the end of a history apart: its latest-response
    rearranger acts on a trailing result (`ends_with_a_result_reaching_back`),
    and the plugin fuzz found builds of a history that ends with open calls
    which put nothing back where the same history with a message after them
    does. So what a build of such a history shows holds for that end only.
    """
    last = _shown_last(events)
    if last < 0:
        return None
    parts = events[last].content.parts or ()  # type: ignore[union-attr]
    if any(part.function_call is not None for part in parts) or _reaches_back_from(events, last):
        return events[last].id
    return None


def ends_with_a_result_reaching_back(events: Sequence[Event]) -> bool:
    """Whether the last event holds results that ADK's latest-response rearranger acts on.

    A last event whose results all answer calls of the event right before it,
    in the same branch, is left as it is by every release's rearranger. Any
    other trailing result (a long-running call's late result, an orphan, a
    result in an event ADK leaves out, calls beside results) makes the
    builder cut or move contents from the end back, and what it built is not
    a start a later request can be checked against: the builder is asked
    again. The last event is the last the builder may show (`_shown_last`).
    O(parts of the last two events, and of the empty ones after them).
    """
    return _reaches_back_from(events, _shown_last(events))


def _reaches_back_from(events: Sequence[Event], at: int) -> bool:
    """`ends_with_a_result_reaching_back`, given the last event shown, `at`."""
    if at < 0:
        return False
    last = events[at]
    parts = last.content.parts if last.content is not None else None
    responses = [part.function_response for part in parts or () if part.function_response]
    if not responses:
        return False
    if at < 1 or any(part.function_call for part in parts or ()):
        return True
    before = events[at - 1]
    calls = [
        part.function_call
        for part in (before.content.parts if before.content is not None else None) or ()
        if part.function_call
    ]
    if not calls or (before.branch or None) != (last.branch or None):
        return True
    if builder_leaves_out([*parts, *before.content.parts]):  # type: ignore[union-attr]
        return True
    ids = {call.id for call in calls if call.id}
    names = {call.name for call in calls if not call.id}
    return not all(
        (response.id in ids) if response.id else (response.name in names) for response in responses
    )

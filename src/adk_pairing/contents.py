"""The pairing rules over a model request's contents, and the repair that makes them hold.

This module is pure: it reads a list of ``google.genai.types.Content`` (what
ADK's request builder put in ``LlmRequest.contents``) and returns a list that
every provider accepts, with a report of what it changed. It never awaits,
logs or touches a session; `adk_pairing.plugin` is the shell that calls it.

Why a request-level pass on top of the repaired view: ADK's request builder
breaks pairing on its own in cases the session layer cannot see, and strict
providers reject shapes both the view and plain ADK produce:

* two long-running calls are open and the older one's result arrives after the
  newer call: ``_rearrange_events_for_latest_function_response``
  (google-adk 2.13.0 ``flows/llm_flows/tools/_rearranger.py:378``) cuts the
  history after the newer call and drops the older call's real answer;
* a ``Part`` holding text *and* a ``function_call``: ADK's Anthropic converter
  sends only the text (``models/anthropic_llm.py:543``, ``if part.text`` before
  ``elif part.function_call``), so the call vanishes and its result is orphaned;
* a call id used by two calls of one history (model ids such as ``call_1``
  repeat across turns): Anthropic refuses duplicate ``tool_use`` ids;
* a call stored without an id: LiteLlm's conversion sends ``""`` as its
  ``tool_call_id``, and before 2.10 ADK's Anthropic converter gives every
  id-less call the same fallback id;
* a placeholder (or a real result) followed by the user's text, or two model
  turns in a row: Bedrock Converse and the chat templates of many open models
  reject two consecutive messages of one role.

The rules, which hold on every list this module returns:

1. every function call in a model content is answered by the leading
   ``function_response`` parts of the content right after it, one each, in call
   order; a call nothing answers gets the view's placeholder
   (`adk_pairing.repair.placeholder_part`), *pending* when ADK holds the call
   open and *missing* otherwise, exactly as in the view;
2. no ``function_response`` appears anywhere else: one that answers nothing is
   dropped (as ADK's own ``drop_orphaned_function_responses`` does), one that
   answers an earlier call is moved to that call's answer;
3. no two adjacent contents have the same role (``model``/``assistant`` on one
   side, everything else on the user side, as both converters map roles);
   adjacent ones are merged, the answers to the preceding model content first;
4. call ids are unique within the request: a later call reusing an id is
   renamed ``<id>-<n>`` together with its answer; with ``fill_missing_ids``,
   id-less calls get ``call_pairing_<n>``. Both are numbered in request order,
   so the same contents always give the same ids and provider prompt caches
   stay warm.

Who answers whom is decided by `adk_pairing.analysis.PairingLedger`, the same
rules the view uses (newest preceding call with the id; for id-less calls, the
newest content with an id-less call of that name, calls in order), so the view
and the request pass can never disagree about a call. A part that holds a call
or a result together with text is split first, so the call is not lost.

Properties: a request that already satisfies the rules comes back as the very
same list object; input ``Content`` and ``Part`` objects are never mutated
(ADK's per-request copies are shallow and share parts' payloads with session
events), changed contents are new objects; the pass is idempotent,
deterministic and O(parts).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from google.genai import types

from .analysis import CallStatus, PairingLedger, TrackedCall
from .repair import PlaceholderTexts, placeholder_part

if TYPE_CHECKING:
    from google.adk.events.event import Event

#: Roles both ADK converters send as the assistant (Anthropic: ``assistant``,
#: LiteLlm: ``assistant``); every other role, ``None`` included, is the user.
MODEL_ROLES = frozenset({"model", "assistant"})

#: How an id-less call is named when `fill_missing_ids` is on.
FILLED_ID_PREFIX = "call_pairing_"

_DEFAULT_TEXTS = PlaceholderTexts()


class ContentRule(enum.StrEnum):
    """What one repair of the request did."""

    #: A call nothing answered got a placeholder result.
    PLACEHOLDER = "placeholder"
    #: A real result was moved to the content right after its call.
    MOVED_RESPONSE = "moved_response"
    #: A result that answers no call was dropped.
    ORPHAN_RESPONSE = "orphan_response"
    #: A call reused an id already used in the request; it and its result were renamed.
    DUPLICATE_ID = "duplicate_id"
    #: A call without an id (and its result) got one.
    MISSING_ID = "missing_id"
    #: A part held a call or result together with text; it was split in two.
    SPLIT_PART = "split_part"
    #: A function call in a user-side content was dropped (no provider accepts one there).
    CALL_OUTSIDE_MODEL = "call_outside_model"
    #: Adjacent contents of one role were merged (answers first).
    MERGED = "merged"
    #: A content without parts was dropped (converters drop it, leaving two turns adjacent).
    EMPTY_CONTENT = "empty_content"


#: Repairs of form only: they change no call, result or id, and are not logged.
QUIET_RULES = frozenset({ContentRule.MERGED, ContentRule.EMPTY_CONTENT})


@dataclass(frozen=True, slots=True)
class ContentRepair:
    """One repair: its rule and the call it concerns (id, or name when id-less)."""

    rule: ContentRule
    call: str | None = None
    #: For `ContentRule.PLACEHOLDER`: pending or missing.
    status: CallStatus | None = None

    def describe(self) -> str:
        detail = self.rule.value
        if self.status is not None:
            detail += f"({self.status.value})"
        return detail if self.call is None else f"{detail} {self.call}"


@dataclass(frozen=True, slots=True)
class RepairedContents:
    """The contents to send, and what was changed to get them."""

    contents: list[types.Content]
    repairs: tuple[ContentRepair, ...] = ()

    @property
    def notable(self) -> list[ContentRepair]:
        """The repairs beyond merging: the ones worth a warning."""
        return [repair for repair in self.repairs if repair.rule not in QUIET_RULES]


def is_model_role(role: str | None) -> bool:
    return role in MODEL_ROLES


def _call_key(call_id: str | None, name: str | None) -> str:
    return call_id or name or ""


def satisfies_pairing_rules(
    contents: Sequence[types.Content], *, fill_missing_ids: bool = False
) -> bool:
    """Whether `contents` already satisfy the four rules (with ids on every call if asked).

    One pass over the parts, positional: on a list where it holds, the ledger's
    attribution pairs each result with the call in the same position, so
    nothing needs attributing. This is the cost a healthy request pays.
    """
    seen_ids: set[str] = set()
    awaiting: list[types.FunctionCall] = []
    previous_is_model: bool | None = None
    for content in contents:
        if content is None:
            return False
        parts = content.parts
        if not parts:
            return False
        is_model = content.role in MODEL_ROLES
        if is_model is previous_is_model:
            return False
        previous_is_model = is_model
        if is_model:
            calls: list[types.FunctionCall] = []
            for part in parts:
                if part.function_response is not None:
                    return False
                call = part.function_call
                if call is None:
                    continue
                if part.text:
                    return False
                call_id = call.id
                if call_id:
                    if call_id in seen_ids:
                        return False
                    seen_ids.add(call_id)
                elif fill_missing_ids:
                    return False
                calls.append(call)
            awaiting = calls
            continue
        expected = len(awaiting)
        if len(parts) < expected:
            return False
        position = -1
        for part in parts:
            position += 1
            if part.function_call is not None:
                return False
            response = part.function_response
            if position >= expected:
                if response is not None:
                    return False
                continue
            if response is None or part.text:
                return False
            call = awaiting[position]
            if call.id:
                if response.id != call.id:
                    return False
            elif response.id or (response.name or "") != (call.name or ""):
                return False
        awaiting = []
    return not awaiting


class _Turn:
    """One input content as the ledger reads it: an event-like view of its parts.

    `PairingLedger.walk` reads ``event.content.parts`` and
    ``event.long_running_tool_ids``; the request has no events, so every turn
    carries the session's held-open ids instead.
    """

    __slots__ = ("is_model", "long_running_tool_ids", "parts", "source")

    def __init__(
        self,
        source: types.Content,
        parts: list[types.Part],
        is_model: bool,
        held_open_ids: Collection[str],
    ) -> None:
        self.source = source
        self.parts = parts
        self.is_model = is_model
        self.long_running_tool_ids = held_open_ids

    @property
    def content(self) -> _Turn:
        return self


def _split_part(part: types.Part, is_model: bool) -> list[types.Part]:
    """A part holding a call or a result beside text (or both), as separate parts.

    ADK's Anthropic converter reads ``text`` before ``function_call`` and
    ``function_response``, and a call before a result, so a mixed part loses
    all but one of them. Text goes before a call (the assistant speaks, then
    calls) and after a result (results lead the user turn).
    """
    call, response = part.function_call, part.function_response
    rest = part.model_copy(update={"function_call": None, "function_response": None})
    pieces: list[types.Part] = []
    if response is not None:
        pieces.append(types.Part(function_response=response))
    if part.text and is_model:
        pieces.append(rest)
    if call is not None:
        # A Gemini thought signature belongs to the call it was issued with.
        pieces.append(types.Part(function_call=call, thought_signature=part.thought_signature))
    if part.text and not is_model:
        pieces.append(rest)
    return pieces


def _is_mixed(part: types.Part) -> bool:
    call, response = part.function_call, part.function_response
    if call is None and response is None:
        return False
    return bool(part.text) or (call is not None and response is not None)


def _prepare_turns(
    contents: Sequence[types.Content],
    held_open_ids: Collection[str],
    repairs: list[ContentRepair],
) -> list[_Turn]:
    """The non-empty contents as turns, mixed parts split, user-side calls dropped."""
    turns: list[_Turn] = []
    for content in contents:
        if content is None or not content.parts:
            repairs.append(ContentRepair(ContentRule.EMPTY_CONTENT))
            continue
        is_model = content.role in MODEL_ROLES
        parts: list[types.Part] = content.parts
        cleaned: list[types.Part] | None = None
        for position, part in enumerate(parts):
            pieces: list[types.Part] | None = None
            if _is_mixed(part):
                call = part.function_call or part.function_response
                repairs.append(
                    ContentRepair(ContentRule.SPLIT_PART, _call_key(call.id, call.name))  # type: ignore[union-attr]
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
                            _call_key(call.id, call.name),  # type: ignore[union-attr]
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
        turns.append(_Turn(content, parts, is_model, held_open_ids))
    return turns


class _IdPlan:
    """The id each call goes out with: its own, or a fresh one for a duplicate or a gap."""

    def __init__(self, turns: Sequence[_Turn], calls: Sequence[TrackedCall], fill: bool) -> None:
        taken: set[str] = set()
        for turn in turns:
            for part in turn.parts:
                if part.function_call is not None and part.function_call.id:
                    taken.add(part.function_call.id)
                if part.function_response is not None and part.function_response.id:
                    taken.add(part.function_response.id)
        self.new_id: dict[int, str] = {}  # id(TrackedCall) -> the id it goes out with
        self.repairs: list[ContentRepair] = []
        used: set[str] = set()
        filled = 0
        for call in calls:
            if call.call_id:
                if call.call_id not in used:
                    used.add(call.call_id)
                    continue
                suffix = 2
                while f"{call.call_id}-{suffix}" in taken:
                    suffix += 1
                fresh = f"{call.call_id}-{suffix}"
                rule = ContentRule.DUPLICATE_ID
            elif fill:
                filled += 1
                while f"{FILLED_ID_PREFIX}{filled}" in taken:
                    filled += 1
                fresh = f"{FILLED_ID_PREFIX}{filled}"
                rule = ContentRule.MISSING_ID
            else:
                continue
            taken.add(fresh)
            used.add(fresh)
            self.new_id[id(call)] = fresh
            self.repairs.append(ContentRepair(rule, call.key))

    def id_of(self, call: TrackedCall) -> str | None:
        return self.new_id.get(id(call), call.call_id)


def _with_call_id(part: types.Part, call_id: str) -> types.Part:
    call = part.function_call
    assert call is not None
    return part.model_copy(update={"function_call": call.model_copy(update={"id": call_id})})


def _with_response_id(part: types.Part, call_id: str) -> types.Part:
    response = part.function_response
    assert response is not None
    return part.model_copy(
        update={"function_response": response.model_copy(update={"id": call_id})}
    )


class _Output:
    """The merged output turns; each reuses its source content when its parts are unchanged."""

    def __init__(self) -> None:
        self._sources: list[types.Content | None] = []
        self._parts: list[list[types.Part]] = []
        self._is_model: list[bool] = []
        #: The calls of the last output turn while it is a model turn, in order.
        self.awaiting: list[TrackedCall] = []

    @property
    def last_is_model(self) -> bool | None:
        return self._is_model[-1] if self._is_model else None

    def open(self, is_model: bool, source: types.Content | None, parts: list[types.Part]) -> None:
        self._sources.append(source)
        self._parts.append(list(parts))  # owned: never extend an input list
        self._is_model.append(is_model)

    def extend_last(self, parts: list[types.Part]) -> None:
        self._parts[-1].extend(parts)

    def build(self) -> list[types.Content]:
        built: list[types.Content] = []
        for source, parts, is_model in zip(self._sources, self._parts, self._is_model, strict=True):
            if source is None:
                built.append(types.Content(role="model" if is_model else "user", parts=parts))
            elif _same_parts(parts, source.parts):
                built.append(source)
            else:
                built.append(source.model_copy(update={"parts": parts}))
        return built


def _same_parts(parts: list[types.Part], original: list[types.Part] | None) -> bool:
    if original is None or len(parts) != len(original):
        return False
    return all(mine is theirs for mine, theirs in zip(parts, original, strict=True))


def repair_contents(
    contents: list[types.Content],
    *,
    held_open_ids: Collection[str] | Callable[[], Collection[str]] = frozenset(),
    texts: PlaceholderTexts = _DEFAULT_TEXTS,
    fill_missing_ids: bool = False,
) -> RepairedContents:
    """`contents` made to satisfy the four rules, and what it took.

    Args:
      contents: The request's contents, as ADK built them. Never mutated.
      held_open_ids: The ids of the calls ADK holds open (the session's
        ``long_running_tool_ids``), or a function returning them: it is called
        only when some call needs a placeholder, so a healthy request never
        pays for reading the session. Confirmation, credential and input
        requests are held open by name, as in the view.
      texts: The placeholder texts, the view's.
      fill_missing_ids: Give id-less calls an id (for providers that pair by
        id: Anthropic, OpenAI via LiteLlm). Off for Gemini, which pairs by
        position and from which ADK strips its own ``adk-`` ids on purpose.

    Returns:
      The same list object when it already satisfies the rules; otherwise new
      contents (unchanged contents are reused as they are) and the repairs.
    """
    if satisfies_pairing_rules(contents, fill_missing_ids=fill_missing_ids):
        return RepairedContents(contents)
    if callable(held_open_ids):
        held_open_ids = held_open_ids()
    repairs: list[ContentRepair] = []
    turns = _prepare_turns(contents, held_open_ids, repairs)

    # Attribution: the view's own ledger, one turn per content.
    ledger = PairingLedger()
    settled: list[TrackedCall] = []
    answered_at: list[tuple[int, int]] = []
    ledger.walk(cast("Sequence[Event]", turns), 0, settled, answered_at=answered_at)
    answer_of: dict[int, tuple[int, int]] = {
        id(call): where for call, where in zip(settled, answered_at, strict=True)
    }
    answering: set[tuple[int, int]] = set(answered_at)
    ids = _IdPlan(turns, ledger.calls, fill_missing_ids)
    repairs.extend(ids.repairs)
    calls_at: dict[tuple[int, int], TrackedCall] = {
        (call.event_index, call.part_index): call for call in ledger.calls
    }
    # The run of adjacent model turns each turn belongs to or follows: a
    # result is in place when it sits in a user turn after its call's run.
    model_run: list[int] = []
    run = 0
    previous_is_model = False
    for turn in turns:
        run += turn.is_model and not previous_is_model
        previous_is_model = turn.is_model
        model_run.append(run)

    output = _Output()

    def answers(calls: list[TrackedCall]) -> list[types.Part]:
        placed: list[types.Part] = []
        for call in calls:
            call_id = ids.id_of(call)
            where = answer_of.get(id(call))
            if where is None:
                status = CallStatus.PENDING if call.held_open else CallStatus.MISSING
                placed.append(placeholder_part(call_id, call.name, status, texts))
                repairs.append(ContentRepair(ContentRule.PLACEHOLDER, call_id or call.name, status))
                continue
            turn_index, part_index = where
            part = turns[turn_index].parts[part_index]
            if call_id != call.call_id:
                assert call_id is not None
                part = _with_response_id(part, call_id)
            if turns[turn_index].is_model or model_run[turn_index] != model_run[call.event_index]:
                repairs.append(ContentRepair(ContentRule.MOVED_RESPONSE, call_id or call.name))
            placed.append(part)
        return placed

    for turn_index, turn in enumerate(turns):
        parts = turn.parts
        kept: list[types.Part] | None = None
        calls_here: list[TrackedCall] = []
        for part_index, part in enumerate(parts):
            replacement: types.Part | None = part
            if part.function_response is not None:
                if (turn_index, part_index) not in answering:
                    response = part.function_response
                    repairs.append(
                        ContentRepair(
                            ContentRule.ORPHAN_RESPONSE, _call_key(response.id, response.name)
                        )
                    )
                replacement = None  # placed with its call, or dropped
            elif part.function_call is not None:
                call = calls_at[(turn_index, part_index)]
                calls_here.append(call)
                new_id = ids.id_of(call)
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
                continue
            if output.last_is_model:
                repairs.append(ContentRepair(ContentRule.MERGED))
                output.extend_last(own)
                output.awaiting.extend(calls_here)
            else:
                output.open(True, turn.source, own)
                output.awaiting = calls_here
            continue
        if output.last_is_model and output.awaiting:
            output.open(False, turn.source, [*answers(output.awaiting), *own])
            output.awaiting = []
        elif not own:
            continue
        elif output.last_is_model is False:
            repairs.append(ContentRepair(ContentRule.MERGED))
            output.extend_last(own)
        else:
            output.open(False, turn.source, own)
        output.awaiting = []
    if output.last_is_model and output.awaiting:
        output.open(False, None, answers(output.awaiting))
    return RepairedContents(output.build(), tuple(repairs))

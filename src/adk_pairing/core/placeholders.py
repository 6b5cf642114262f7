"""The placeholders: their texts, their parts, and the synthetic events that carry them.

A leaf of the core: it builds, and decides nothing. What answers whom is the
ledger's (`adk_pairing.ledger`); where a synthetic event goes is the
repair's (`adk_pairing.core.repair`); the request pass (`adk_pairing.passes.request_pass`)
answers with the same part as the view. A synthetic event is shaped so that
ADK's request builder pairs it with its calls while ADK's decision logic
ignores it:

* its author is the calling agent (never ``"user"``): ADK's interrupt index,
  confirmation and credential processors only act on user-authored responses;
* its ``invocation_id`` is empty: resume/replay and interrupt logic read only
  the current invocation's events, and compaction counts only non-empty
  invocation ids, so the synthetic event belongs to no invocation;
* it keeps the call event's branch, isolation scope, node path and timestamp,
  so it is visible to exactly the agents (and compaction windows) that see
  the call;
* a confirmation/credential placeholder keeps the request's function name, so
  ADK strips it from the model request exactly as it strips the request itself.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from pydantic import BaseModel

from ..adk import adk_reads_error_code_of_responses
from ..ledger import CallStatus, TrackedCall

METADATA_KEY = "adk_pairing"
"""The key, ``"adk_pairing"``, under ``Event.custom_metadata`` that marks what a view adds.

A synthetic event carries ``{"synthetic": True, "status": "missing" | "pending",
"call_event_id": ..., "calls": [{"id": ..., "name": ..., "status": ...}]}``; the view's
copy of a call event left unanswered in the store carries ``{"synthetic_event_id": ...,
"pending": [...], "missing": [...]}`` (each call's id, or its name when it has none).
Nothing under this key is ever written to the store. To tell a synthetic event, use
`is_synthetic`.
"""

#: How every synthetic event's id starts.
SYNTHETIC_ID_PREFIX = "adk-pairing-"

#: Author used only when the calling event itself has no agent author.
FALLBACK_AUTHOR = "adk_pairing"

DEFAULT_MISSING_TEXT = (
    "No result was recorded for this call: the turn that made it ended before "
    "the tool returned. The tool may or may not have run. Check before "
    "repeating an action that has side effects."
)
"""What the model reads for a call with no recorded result (``missing_text=``)."""

DEFAULT_PENDING_TEXT = (
    "This call is awaiting a response: it is still open (a long-running "
    "operation, a confirmation or a request for input) and its result has not "
    "arrived yet. Do not call it again; its result will follow when it arrives."
)
"""What the model reads for a call ADK still holds open (``pending_text=``)."""

OPENING_NOTE_TEXT = (
    "Note from the agent framework, not from the user: the stored conversation "
    "begins with the agent's own tool calls below, made before any user message."
)
"""What opens a request whose history begins with the agent's calls (the request pass's
``opening_note``). Anthropic and Bedrock take a conversation only when the user's side
opens it, and Gemini a call only after a user turn or a result. ADK itself adds
framework text on the user's side of a request in the same spirit (its models append
one when a request does not end with the user's turn); like that text, this one lives
only in the request: no event, no session, nothing stored."""

CUT_NOTE_TEXT = (
    "Note from the agent framework, not from the user: the earlier messages of this "
    "conversation are left out of this request."
)
"""What opens a request that code after `PairingPlugin` cut so that it opens with the
model's turn (a context window that keeps the last contents): the ``opening_note`` of
`adk_pairing.shells.agent_pass.final_request_pass`. Only in the request, like
`OPENING_NOTE_TEXT`."""


#: The ``error_code`` of a synthetic event answering a call with no recorded
#: result. Our own, never ADK's ``INVOCATION_ABORTED``: ADK's runner and agent
#: router treat an event with that code as the seal of an aborted invocation.
MISSING_ERROR_CODE = "ADK_PAIRING_NO_RESULT"

#: The response key that carries a placeholder's text, by status. google-genai
#: documents ``"error"`` as the key for a failed call's details
#: (``FunctionResponse.response``); a pending call has not failed.
PLACEHOLDER_TEXT_KEY = {CallStatus.MISSING: "error", CallStatus.PENDING: "message"}


def placeholder_text(response: dict[str, Any] | None) -> str | None:
    """The text a placeholder response carries, whatever its status."""
    response = response or {}
    text = response.get(PLACEHOLDER_TEXT_KEY[CallStatus.MISSING])
    return text if text is not None else response.get(PLACEHOLDER_TEXT_KEY[CallStatus.PENDING])


@dataclass(frozen=True, slots=True)
class PlaceholderTexts:
    """What the model reads in place of a result that is not there."""

    missing: str = DEFAULT_MISSING_TEXT
    pending: str = DEFAULT_PENDING_TEXT

    def for_status(self, status: CallStatus) -> str:
        return self.pending if status is CallStatus.PENDING else self.missing

    def with_overrides(
        self, *, missing: str | None = None, pending: str | None = None
    ) -> PlaceholderTexts:
        """These texts with each one given (not None) in its place; these very texts if none is."""
        if missing is None and pending is None:
            return self
        return PlaceholderTexts(
            missing=missing if missing is not None else self.missing,
            pending=pending if pending is not None else self.pending,
        )


def synthetic_event_id(call_event: Event) -> str:
    """A deterministic id, so the same history always yields the same view.

    ADK gives every event a unique id, so the call event's own id, prefixed,
    names its one synthetic event. An event stored without an id (no ADK
    release writes one) gets a digest of its invocation and timestamp instead.
    """
    if call_event.id:
        return SYNTHETIC_ID_PREFIX + call_event.id
    seed = f"{call_event.invocation_id}|{call_event.timestamp!r}"
    return SYNTHETIC_ID_PREFIX + hashlib.sha1(seed.encode(), usedforsecurity=False).hexdigest()[:24]


def is_synthetic(event: Event) -> bool:
    """Whether `event` was added by adk-pairing (and so is not in the store)."""
    metadata = event.custom_metadata
    return bool(metadata and (metadata.get(METADATA_KEY) or {}).get("synthetic"))


_Model = TypeVar("_Model", bound=BaseModel)
_set = object.__setattr__


def _direct_clone(template: _Model, update: dict[str, Any]) -> _Model:
    """``template.model_copy(update=update)``, for less (benchmarks/RESULTS.md).

    The same steps as pydantic's own shallow copy (a new instance with a copy
    of the field values, the fields-set marker and the private values), minus
    the generic ``copy.copy`` dispatch it runs three times: this runs several
    times for every call event appended through a view. The values in `update`
    are made by this module and are of the declared types, so, as with
    ``model_copy``, nothing is validated.
    """
    clone = template.__class__.__new__(template.__class__)
    values = template.__dict__.copy()
    values.update(update)
    _set(clone, "__dict__", values)
    _set(clone, "__pydantic_fields_set__", template.__pydantic_fields_set__ | update.keys())
    extra = template.__pydantic_extra__
    _set(clone, "__pydantic_extra__", None if extra is None else dict(extra))
    private = template.__pydantic_private__
    _set(clone, "__pydantic_private__", None if private is None else dict(private))
    return clone


def _model_copy(template: _Model, update: dict[str, Any]) -> _Model:
    return template.model_copy(update=update)


def _choose_clone() -> Callable[[_Model, dict[str, Any]], _Model]:
    """`_direct_clone` if it still builds what ``model_copy`` builds, else ``model_copy``.

    `_direct_clone` sets pydantic v2's instance attributes itself; a pydantic
    release that stores them differently must cost speed, not correctness.
    """
    probe = Event(author="probe", custom_metadata={"k": "v"})
    update = {"custom_metadata": {"k": "w"}, "branch": "b"}
    try:
        cloned, copied = _direct_clone(probe, update), _model_copy(probe, update)
        sound = (
            cloned == copied
            and cloned.model_fields_set == copied.model_fields_set
            and cloned.model_dump_json() == copied.model_dump_json()
            and cloned.__dict__ is not probe.__dict__
        )
    except Exception:  # any failure at all means: do not use it
        sound = False
    return _direct_clone if sound else _model_copy


_clone = _choose_clone()


#: The scoping fields the running ADK version has (``isolation_scope`` and
#: ``node_info`` arrived in later releases); a synthetic event copies them.
_SCOPE_FIELDS = tuple(
    name for name in ("isolation_scope", "node_info") if name in Event.model_fields
)


def _copy_scope(source: Event, fields: dict[str, object]) -> None:
    for name in _SCOPE_FIELDS:
        value = getattr(source, name)
        # node_info is a model that ADK's flows mutate in place: never share it.
        fields[name] = _clone(value, {}) if isinstance(value, BaseModel) else value


#: Every synthetic part is a shallow copy of this one with only
#: ``function_response`` set, as ``types.Part(function_response=...)`` would be.
_EMPTY_PART = types.Part()
_EMPTY_RESPONSE = types.FunctionResponse.model_construct()
_EMPTY_CONTENT = types.Content.model_construct()
#: Every synthetic event is a shallow copy of this one with its fields set.
_EMPTY_EVENT = Event.model_construct(author=FALLBACK_AUTHOR, invocation_id="")


def placeholder_part(
    call_id: str | None, name: str, status: CallStatus, texts: PlaceholderTexts
) -> types.Part:
    """The placeholder result for a call, built without google-genai's validation.

    ``types.Part(...)`` and ``types.FunctionResponse(...)`` each run
    google-genai's before-validator (a Python loop over every field of the
    model), a large share of building the synthetic event of a call event
    appended through a view (benchmarks/RESULTS.md). The values are strings
    and a dict made right here, so there is nothing to validate, and the
    result equals the validated one (same values, same fields set, same
    JSON). The view and the request pass (`adk_pairing.passes.request_pass`) both answer
    with exactly this part.
    """
    response = _clone(
        _EMPTY_RESPONSE,
        {
            "id": call_id,
            "name": name,
            # "status" stays exactly "pending" for a held-open call: adk web's
            # hasFunctionResponse ignores such a response and keeps the call's
            # answer box; any other value removes it.
            "response": {
                "status": status.value,
                PLACEHOLDER_TEXT_KEY[status]: texts.for_status(status),
            },
        },
    )
    return _clone(_EMPTY_PART, {"function_response": response})


def _stored_id(parts: list[types.Part] | None, call: TrackedCall) -> str | None:
    """The call's id exactly as stored: ``""`` stays ``""``.

    The ledger reads an empty id as no id, as ADK's newest rearranger does, but
    older rearrangers match a result to its call by equal ids, so a result
    with ``None`` for a call stored with ``""`` answers nothing there and their
    builder raises.
    """
    if parts is not None and call.part_index < len(parts):
        function_call = parts[call.part_index].function_call
        if function_call is not None and (function_call.id or None) == call.call_id:
            return function_call.id
    return call.call_id


class RepairedSlot:
    """One call event's repair: its annotated copy and the synthetic result after it.

    A view keeps one per call event with open calls, because such calls can be
    answered one response event at a time (parallel long-running calls are).
    Rebuilding both events from the remaining calls on every answer would be
    O(width) Python work per answer, O(width²) for the whole event; here every
    open call's placeholder part, metadata entry and key is kept by part index,
    so `settle` is O(1) and `render` copies the survivors at C speed.
    """

    __slots__ = (
        "_entries",
        "_missing",
        "_missing_text",
        "_parts",
        "_pending",
        "_synthetic_id",
        "anchor",
        "call_event",
        "synthetic",
    )

    def __init__(
        self,
        call_event: Event,
        open_calls: Iterable[TrackedCall],
        texts: PlaceholderTexts,
        anchor: int | None,
    ) -> None:
        self.call_event = call_event
        #: The stored index of the event the synthetic event follows: the call
        #: event's own, unless `PairingLedger.placement` named a later one.
        #: None when no placement gives call order: it follows the call event.
        self.anchor = anchor
        #: The synthetic event `render` built last: the one a view now holds.
        self.synthetic: Event | None = None
        self._synthetic_id = synthetic_event_id(call_event)
        self._parts: dict[int, types.Part] = {}
        self._entries: dict[int, dict[str, str | None]] = {}
        self._pending: dict[int, str] = {}
        self._missing: dict[int, str] = {}
        self._missing_text = texts.missing
        parts = call_event.content.parts if call_event.content else None
        for call in open_calls:
            status = call.status
            self._parts[call.part_index] = placeholder_part(
                _stored_id(parts, call), call.name, status, texts
            )
            self._entries[call.part_index] = {
                "id": call.call_id,
                "name": call.name,
                "status": status.value,
            }
            keys = self._pending if status is CallStatus.PENDING else self._missing
            keys[call.part_index] = call.key

    def __bool__(self) -> bool:
        """True while some call of the event is still unanswered."""
        return bool(self._parts)

    def settle(self, part_index: int) -> None:
        """Forgets the call at `part_index`: something real answered it."""
        self._parts.pop(part_index, None)
        self._entries.pop(part_index, None)
        self._pending.pop(part_index, None)
        self._missing.pop(part_index, None)

    def render(self) -> tuple[Event, Event]:
        """The annotated call event and the synthetic event to place after it."""
        self.synthetic = self.synthetic_event()
        return self.annotated_call_event(), self.synthetic

    def annotated_call_event(self) -> Event:
        """A copy of the call event naming its unanswered calls; the original is untouched."""
        metadata = dict(self.call_event.custom_metadata or {})
        metadata[METADATA_KEY] = {
            "synthetic_event_id": self._synthetic_id,
            "pending": list(self._pending.values()),
            "missing": list(self._missing.values()),
        }
        return _clone(self.call_event, {"custom_metadata": metadata})

    def synthetic_event(self) -> Event:
        """One event answering every unanswered call of the call event, in call order."""
        call_event = self.call_event
        author = call_event.author if call_event.author and call_event.author != "user" else None
        overall = CallStatus.MISSING if self._missing else CallStatus.PENDING
        fields: dict[str, object] = {
            "id": self._synthetic_id,
            "invocation_id": "",
            "author": author or FALLBACK_AUTHOR,
            "branch": call_event.branch,
            "timestamp": call_event.timestamp,
            # Unvalidated for the same reason as the parts: it holds only them.
            "content": _clone(
                _EMPTY_CONTENT, {"role": "user", "parts": list(self._parts.values())}
            ),
            "custom_metadata": {
                METADATA_KEY: {
                    "synthetic": True,
                    "status": overall.value,
                    "call_event_id": call_event.id,
                    "calls": list(self._entries.values()),
                }
            },
        }
        if self._missing:
            # ADK's convention for a call that failed (its abort seal):
            # adk web shows the event's error under the call's chip. The code
            # goes on only where ADK decides nothing from it.
            fields["error_message"] = self._missing_text
            if not adk_reads_error_code_of_responses():
                fields["error_code"] = MISSING_ERROR_CODE
        _copy_scope(call_event, fields)
        # A copy of a template, not ``Event(**fields)``: validating every field
        # is a large share of the cost (benchmarks/RESULTS.md). The values are
        # made right here and are of the declared types; only `actions` needs
        # a fresh object of its own.
        fields["actions"] = EventActions()
        return _clone(_EMPTY_EVENT, fields)

"""The wire rules: what ADK's converters send, and who answers whom, each stated once.

Every other module of adk-pairing imports these rules and restates none of
them: the ledger (`adk_pairing.ledger`), the view, the request pass
(`adk_pairing.passes.request_pass`), the providers' rules (`adk_pairing.rules.provider_rules`)
and the plugin. This module imports nothing of ours. Where a rule differs by
ADK release, the rule here is the newest converter's, the difference is
detected by feature in `adk_pairing.adk` (this module probes nothing), and
docs/compatibility.md says which releases and where.

The rules:

* **Model roles** (`MODEL_ROLES`): ``model`` and ``assistant`` go out as the
  assistant in both converters (Anthropic, LiteLlm); every other role,
  ``None`` included, is the user's side.
* **What a part is sent as** (`anthropic_block`): ADK's Anthropic converter
  (``_part_to_message_block``) tries thinking (``thought`` with text or a
  signature), then text, then ``function_call``, then ``function_response``;
  the first match wins and the rest of the part is dropped. So a part holding
  a call beside text or a signed thought is not a call on the wire
  (`never_sent_as_a_call`); only a malformed part holds both. A converter
  without thinking sends a signed thought's call as a call (probed in
  `adk_pairing.adk`, `use_signed_thoughts_probe`); a thought signature with nothing
  beside it is dropped (``_is_content_free_signature``; `Block.DROPPED`).
* **Who answers an id-less call**, twice over because two of ADK's stages
  pair them differently:

  - ADK's request builder (the view's rule, coded in
    `adk_pairing.ledger.PairingLedger`): an id-less result belongs to the
    newest preceding event with an id-less call of its name, whose calls it
    takes in order;
  - on the wire (`IdlessCalls`): an id-less result answers an unanswered
    id-less call of the model turn right before it, the same name first,
    else the oldest; this is how a provider pairs by position, and what the
    providers' rules read.

* **Held open** (`HELD_OPEN_CALL_NAMES`, `is_held_open`,
  `adk_pairing.ledger.held_open_call_ids`): ADK answers a call only when a person or client
  does when it is a confirmation, credential or input request (by name), or
  when the newest event that calls its id lists it in
  ``long_running_tool_ids``.
* **Events the builder leaves out** (`builder_leaves_out`): ADK's request
  builder drops, whole, every event with a call or result named in
  `LEFT_OUT_CALL_NAMES` (``_should_include_event_in_context``; the installed
  release's names are `adk_pairing.adk.left_out_call_names`). ADK writes those
  requests in events of their own; a call beside one (malformed) is never sent.
* **Call keys** (`call_key`): a call's id, or its function name when the
  model gave it none.
* **What each converter does to call ids**: ADK's Anthropic converter keeps
  ids of ``[a-zA-Z0-9_-]+`` and maps every other non-empty id to a fallback
  of its own, one per distinct id (``_ToolUseIdSanitizer``), so two calls
  sharing such an id share one ``tool_use`` id on the wire
  (`anthropic_keeps_id`, `ANTHROPIC_ID`). Its fallbacks are
  ``toolu_fallback_<n>``, numbered in request order, and an id of that form
  is itself kept, so a stored id that looks like a fallback and an id the
  converter rewrites can be one ``tool_use`` id on the wire
  (`ANTHROPIC_FALLBACK_PREFIX`, `may_collide_with_a_fallback`). LiteLlm sends
  every id as it is, and an id-less call or result as ``""``. Models that
  pair by id get ids kept (`pairs_calls_by_id`).
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Callable, Iterable

from google.genai import types

#: Roles both ADK converters send as the assistant; every other role is the user's.
MODEL_ROLES = frozenset({"model", "assistant"})

#: Calls ADK answers only when a person (or client) does: confirmations,
#: credential requests and ask-user/request-input prompts.
HELD_OPEN_CALL_NAMES = frozenset(
    {"adk_request_confirmation", "adk_request_credential", "adk_request_input"}
)

#: Names whose call or result makes ADK's request builder leave an event out
#: (`builder_leaves_out`): the newest builder's. A builder that keeps an
#: ``adk_framework`` event belongs to a release that writes none, and a call left
#: unrepaired beside one is what the store would send anyway.
LEFT_OUT_CALL_NAMES = frozenset(
    {"adk_request_credential", "adk_request_confirmation", "adk_framework"}
)

#: Tool ids the Messages API accepts; ADK's sanitizer keeps exactly these.
ANTHROPIC_ID = re.compile(r"[a-zA-Z0-9_-]+")

#: The type of the block the Messages API carries a tool call in.
ANTHROPIC_CALL_BLOCK = "tool_use"

#: How the fallback ids of ADK's Anthropic converter start (``_ToolUseIdSanitizer``).
ANTHROPIC_FALLBACK_PREFIX = "toolu_fallback_"

#: How the ids ADK gives id-less calls start (``AF_FUNCTION_CALL_ID_PREFIX``). ADK's
#: builder strips exactly these from the request of a model that pairs by
#: position (Gemini), calls and results alike, and keeps every other id.
ADK_CALL_ID_PREFIX = "adk-"

#: Model classes that pair tool calls with their results by id, by module and
#: name (ADK's own ``_ID_PAIRING_MODEL_TYPE_NAMES``, where a release has that list).
ID_PAIRING_MODELS = (
    ("google.adk.models.anthropic_llm", "AnthropicLlm"),
    ("google.adk.models.lite_llm", "LiteLlm"),
    ("google.adk.integrations.openai._openai_responses_llm", "OpenAIResponsesLlm"),
)


class IrregularShape(enum.StrEnum):
    """A shape of history whose placeholders ADK's builder may put elsewhere.

    ADK's request builder keys its rearranging on call ids, so in these
    histories where a placeholder lands depends on the rest of the history
    and on the ADK release (`adk_pairing.ledger`); the view is then checked
    against ADK's own builder (`adk_pairing.rules.builder_check`).
    """

    CALL_ID_TWICE_IN_ONE_EVENT = "call_id_twice_in_one_event"
    CALL_ID_REUSED_WHILE_OPEN = "call_id_reused_while_open"
    #: A call id of the form ADK's Anthropic converter gives the ids it rewrites
    #: (`may_collide_with_a_fallback`): two stored ids may be one id on the wire.
    CALL_ID_LIKE_A_FALLBACK = "call_id_like_a_fallback"
    #: A call sharing its part with text or a signed thought (`never_sent_as_a_call`).
    NOT_SENT_AS_A_CALL = "not_sent_as_a_call"
    IDLESS_CALLS_IN_ONE_EVENT = "idless_calls_in_one_event"
    IDLESS_RESULT_NOTHING_WAITS_FOR = "idless_result_nothing_waits_for"
    ID_ANSWERED_TWICE_IN_ONE_EVENT = "id_answered_twice_in_one_event"
    CALLS_AND_RESULTS_IN_ONE_EVENT = "calls_and_results_in_one_event"
    #: A call in one event with ADK's confirmation or credential request: the
    #: builder leaves that event out whole (`builder_leaves_out`), so it is never sent.
    CALL_BESIDE_AN_ADK_REQUEST = "call_beside_an_adk_request"
    #: One agent's event answering another agent's call (ADK authors a tool's
    #: result as the agent that called it, or the user).
    ANSWER_FROM_ANOTHER_AGENT = "answer_from_another_agent"
    #: Builders that walk back only (`adk_pairing.ledger.older_builders.WalksBack`):
    #: a result before any call with its id.
    RESULT_BEFORE_ITS_CALL = "result_before_its_call"
    #: Older builders only: a result under another name than its call's.
    RESULT_UNDER_ANOTHER_NAME = "result_under_another_name"
    #: Builders that walk back only (`WalksBack`): results right after a call
    #: event of another branch that shares one of their ids.
    RESULT_AFTER_ANOTHER_BRANCHS_CALLS = "result_after_another_branchs_calls"
    #: Builders that pair by the last response only (`PairsByLastResponse`): a
    #: call reusing the id of a response its branch is not shown; an agent above
    #: both branches is shown that response's id answered by whatever response
    #: with it comes last.
    CALL_ID_ANSWERED_OUT_OF_SIGHT = "call_id_answered_out_of_sight"


def is_model_role(role: str | None) -> bool:
    """Whether a content of `role` goes out as the assistant."""
    return role in MODEL_ROLES


class Block(enum.Enum):
    """What ADK's Anthropic converter makes of one part."""

    #: Thinking, redacted thinking or text: sent, but not as a call or result.
    OTHER = "other"
    CALL = "call"
    RESULT = "result"
    #: Empty text: not sent at all (a user turn of nothing else becomes ``"."``).
    NOTHING = "nothing"
    #: A thought signature with nothing beside it (another model's): dropped by a
    #: converter that has ``_is_content_free_signature``; older converters raise.
    DROPPED = "dropped"


def anthropic_block(part: types.Part) -> Block:
    """What ADK's Anthropic converter sends `part` as (module docstring)."""
    if part.thought and (part.text or (part.thought_signature and _sends_signed_thoughts())):
        return Block.OTHER
    if part.text:
        return Block.OTHER
    if part.function_call is not None:
        return Block.CALL
    if part.function_response is not None:
        return Block.RESULT
    if part.text == "" and not part.thought_signature:
        return Block.NOTHING
    if part.thought_signature and not part.thought:
        return Block.DROPPED
    return Block.OTHER


def never_sent_as_a_call(part: types.Part) -> bool:
    """Whether the converter sends `part` as something it tries before a call or result.

    Only a malformed part holds a call or a result beside text or a signed
    thought; the converter then sends the text or thinking and drops the rest
    (a signed thought only where it sends one as thinking,
    `use_signed_thoughts_probe`).
    """
    # Branches, not one bool(...): the request pass asks this of every call and result.
    if part.text:
        return True
    if not part.thought:
        return False
    return bool(part.thought_signature) and _sends_signed_thoughts()


def _newest_converter_sends_signed_thoughts() -> bool:
    return True


#: Whether the installed converter sends a signed thought as thinking (module
#: docstring): the one fact these rules take from the installed release. Probing
#: it is ADK's layer's job (`adk_pairing.adk.converter_sends_signed_thoughts`),
#: which sets it here when imported (`use_signed_thoughts_probe`); importing the
#: package imports that layer before any rule runs.
_sends_signed_thoughts: Callable[[], bool] = _newest_converter_sends_signed_thoughts


def use_signed_thoughts_probe(probe: Callable[[], bool]) -> None:
    """Makes the rules ask `probe` whether the converter sends a signed thought as thinking.

    Until it is called the newest converter's answer (it does) stands. The
    rules ask only of a part with a signed thought, so a probe that costs
    (importing the converter) runs only where such a part exists.
    """
    global _sends_signed_thoughts
    _sends_signed_thoughts = probe


def is_mixed(part: types.Part) -> bool:
    """Whether `part` holds a call or a result that the converter would drop from it.

    That is: beside text, beside a signed thought where the converter sends
    that as thinking (`use_signed_thoughts_probe`), or a call beside a
    result (the call wins).
    """
    call, response = part.function_call, part.function_response
    if call is None and response is None:
        return False
    if call is not None and response is not None:
        return True
    return never_sent_as_a_call(part)


def builder_leaves_out(
    parts: Iterable[types.Part], names: frozenset[str] = LEFT_OUT_CALL_NAMES
) -> bool:
    """Whether ADK's request builder leaves out, whole, an event of `parts` (module docstring).

    `names` are the installed release's (`adk_pairing.adk.left_out_call_names`).
    """
    for part in parts:
        named = part.function_call or part.function_response
        if named is not None and named.name in names:
            return True
    return False


def call_key(call_id: str | None, name: str | None) -> str:
    """A call's id, or its function name when it has none."""
    return call_id or name or ""


def is_held_open(name: str, call_id: str | None, long_running_ids: Iterable[str]) -> bool:
    """Whether ADK holds a call open on purpose (module docstring)."""
    return name in HELD_OPEN_CALL_NAMES or (call_id is not None and call_id in long_running_ids)


def anthropic_keeps_id(call_id: str) -> bool:
    """Whether ADK's Anthropic converter sends `call_id` as it is (else: a fallback id)."""
    return ANTHROPIC_ID.fullmatch(call_id) is not None


def is_adk_call_id(call_id: str) -> bool:
    """Whether `call_id` is one ADK gave a call, and strips from a Gemini request."""
    return call_id.startswith(ADK_CALL_ID_PREFIX)


def may_collide_with_a_fallback(call_id: str) -> bool:
    """Whether ADK's Anthropic converter may also send another id as `call_id` (its fallback)."""
    return call_id.startswith(ANTHROPIC_FALLBACK_PREFIX)


def pairs_calls_by_id(model: object) -> bool:
    """Whether `model` (a ``BaseLlm``) sends calls and results paired by id.

    A model can only be an instance of a class whose module is imported, so
    each class is looked up in ``sys.modules``: nothing is imported here.
    """
    for module_name, class_name in ID_PAIRING_MODELS:
        model_class = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(model_class, type) and isinstance(model, model_class):
            return True
    return False


class IdlessCalls:
    """The id-less calls of the model turn before a user turn, as the wire pairs them.

    `open` each id-less call of a model turn in order (`start_turn` when a
    new model turn follows a user one); `answer` gives an id-less result the
    call it answers: the oldest open one of its name, else the oldest.
    """

    __slots__ = ("_open",)

    def __init__(self) -> None:
        self._open: list[tuple[str, str]] = []

    def start_turn(self) -> None:
        self._open = []

    def open(self, name: str | None, ident: str) -> None:
        self._open.append((name or "", ident))

    def answer(self, name: str | None) -> str | None:
        """The ident of the call an id-less result of `name` answers, or None."""
        wanted = name or ""
        match = next((c for c in self._open if c[0] == wanted), None)
        match = match or (self._open[0] if self._open else None)
        if match is None:
            return None
        self._open.remove(match)
        return match[1]


def branch_shows(branch: str | None, event_branch: str | None) -> bool:
    """Whether ADK's request builder shows an agent running in `branch` an event in `event_branch`.

    ``_is_event_belongs_to_branch``: every event when either branch is empty, else the same branch
    or an ancestor of it, compared by whole dot-separated segments.
    """
    if not branch or not event_branch:
        return True
    return branch == event_branch or branch.startswith(event_branch + ".")


def branches_shown_to(branch: str) -> list[str | None]:
    """Every branch whose events `branch_shows` an agent in non-empty `branch`."""
    segments = branch.split(".")
    return [None, *(".".join(segments[:end]) for end in range(1, len(segments) + 1))]


def held_by_child(branch: str, scope: str | None, waits: bool) -> list[str]:
    """The ids of the calls an event in `branch` holds open: the calls whose runs it is in.

    `branch` names each run it is nested in by a segment ``<agent>@<call id>``
    (``_BranchPath.run_ids``).
    When the event `waits` (it holds a call ADK holds open), every such call
    waits on it; otherwise only a task run's own call, the one its events are
    scoped to (`scope`, ``isolation_scope``), stays open until the task ends.
    """
    ids = []
    for segment in branch.split("."):
        _, at, run_id = segment.rpartition("@")
        if at and run_id and (waits or run_id == scope):
            ids.append(run_id)
    return ids

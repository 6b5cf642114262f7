"""The providers' rules for tool calls, checked on the request ADK would send.

A function call and its result reach a provider as parts of neighbouring
messages. Every strict provider checks their pairing, each in its own words.
This module states four of those rules and checks each on the messages the
real converter produces (ADK's Anthropic converter, ADK's LiteLlm message
conversion), so it sees what ADK would put on the wire, not what the session
holds. Each rule is one function returning a list of violations (empty when
the request is accepted); `request_violations` runs all four.

* ``anthropic``: every ``tool_use`` in an assistant message is answered by a
  ``tool_result`` among the *leading* blocks of the very next user message; no
  ``tool_result`` answers a call outside the message before it (consecutive
  same-role messages are merged first, as the Messages API does); and
  ``tool_use`` ids are unique within the request (the API answers "`tool_use`
  ids must be unique"). Converted with ADK's ``AnthropicLlm`` converter.
* ``openai_chat``: every assistant message's ``tool_calls`` are covered by
  the tool messages right after it (``tool_call_id`` match), no tool message
  appears without a call in the assistant message before it, and no id is
  empty. Converted with ``google.adk.models.lite_llm._get_completion_inputs``,
  i.e. the message list LiteLlm hands to ``litellm.acompletion``, including
  the tool results LiteLlm itself inserts for calls that have none
  (``_ensure_tool_results``, google-adk >= 1.39.1; 1.20.0 has none). That
  healing skips calls whose id is empty (2.13.0 lite_llm.py:1850), and a call
  stored without an id is sent with ``id=""`` (2.13.0 lite_llm.py:1686;
  1.20.0 lite_llm.py:394 sends ``None``): no OpenAI-compatible API pairs
  those. google-adk 1.20.0 strips its own ``adk-`` ids from every request
  (flows/llm_flows/contents.py:446), and 1.39.1/2.0.0 keep them for Anthropic
  only, so there a LiteLlm model that gave no ids sends id-less calls.
* ``gemini``: a model content with N function calls is followed by a content
  holding exactly N function responses, matching the calls (by id when the
  call has one, else by name), in call order: without ids Gemini can only pair
  same-name calls by position, and Gemini fronts that pair by position refuse
  a permuted answer even when the ids match. Gemini receives ADK's contents as they are, so
  this is checked on the contents themselves.
* ``strict_alternation``: no two consecutive messages of the same role, and
  the first is the user's. Bedrock's Converse API and the chat templates of
  many open models ("Conversation roles must alternate user/assistant/...")
  reject anything else. Checked on the Anthropic conversion *before* merging:
  it has exactly the user/assistant shape Converse takes (tool results ride
  in the user turn, empty turns are dropped), and ADK's LiteLlm conversion
  would give the same verdict once its tool messages are folded into the
  user turn as Converse requires.

Why the Anthropic verdict does not rest on ADK's id sanitizer: ADK rewrites
ids Anthropic would refuse, differently on every version, and the difference
decides whether a call without an id looks answered.

* 1.20.0 sends ``id or ""`` for calls and results alike
  (anthropic_llm.py:93,125), so every id-less result "answers" every id-less
  call (and the API refuses ``""`` as an id anyway);
* 1.39.1 -> 2.9.2 map every empty id to one fallback per request,
  ``toolu_fallback_0`` (``_ToolUseIdSanitizer.sanitize``, 2.9.2
  anthropic_llm.py:442-449): an unanswered id-less call shares its id with
  any earlier answered one, and a checker reading the converted ids stops
  seeing it;
* 2.10.0 -> 2.13.0 give each id-less call a fresh fallback and pair an
  id-less result with the *oldest* pending call of its name anywhere in the
  request (2.13.0 anthropic_llm.py:504-520).

So before converting, the checker gives every call and result an id of its
own (`_with_positional_ids`): ids Anthropic accepts are kept, other non-empty
ids are mapped one-to-one to fresh ids, each id-less call gets a fresh id, and
an id-less result takes the id of an unanswered id-less call of the model
turn just before it (same name first, oldest first), or a fresh id when there
is none. Every ADK converter keeps such ids unchanged, so the verdict is the
same on every version. Violations name the original ids; an id-less call
shows as ``<no id: name>``. One thing the sanitizer does is checked on its own
ids, once more: from 1.39.1 its fallbacks (``toolu_fallback_<n>``) are ids it
keeps, so a stored id of that form and an id it rewrites can be one
``tool_use`` id on the wire (`_ids_merged_on_the_wire`).

Everything else comes from ADK's converter as it is, on purpose: a ``Part``
holding both text and a ``function_call`` becomes a text block and the call
is dropped (``if part.text:`` comes first: 2.13.0 anthropic_llm.py:543,
1.20.0 :88), so a result for it is an orphan; a request the converter cannot
convert at all (``NotImplementedError`` for ``Part(text="")`` on 1.20.0,
anthropic_llm.py:151) is a violation, because ADK raises before sending it.

The Anthropic rule needs the ``anthropic`` package, the OpenAI rule
``litellm`` (``pip install 'adk-pairing[checks]'``). litellm fetches its
model price map from the internet on import unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set; when the OpenAI rule is the first to
import litellm, it sets that variable (if unset) to use the bundled map.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections import Counter
from collections.abc import Callable, Coroutine, Iterable, Sequence
from typing import Any

from google.genai import types

from .wire import Block, IdlessCalls, anthropic_block, anthropic_keeps_id, is_model_role

#: The rules `request_violations` checks, in the order it reports them.
RULES = ("anthropic", "openai_chat", "gemini", "strict_alternation")

_OWN_ID_PREFIX = "adkpairingcheck_"

#: Any OpenAI-compatible model string; LiteLlm picks provider quirks from it.
_OPENAI_MODEL = "openai/gpt-4o"
_TOOL_ROLES = ("tool", "tool_responses")


# -- Anthropic ----------------------------------------------------------------


def _anthropic_converter() -> Callable[[types.Content], dict[str, Any]]:
    """ADK's content converter, sharing one tool-id sanitizer per request.

    ``AnthropicLlm`` converts a whole request with one ``_ToolUseIdSanitizer``
    (1.39.1+); 1.20.0 has only the public ``content_to_message_param``.
    """
    try:
        from google.adk.models import anthropic_llm
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "Checking the Anthropic pairing rule needs the anthropic package: "
            "pip install 'adk-pairing[checks]'"
        ) from error
    convert = getattr(anthropic_llm, "_content_to_message_param", None)
    sanitizer_type = getattr(anthropic_llm, "_ToolUseIdSanitizer", None)
    if convert is None or sanitizer_type is None:
        return anthropic_llm.content_to_message_param
    sanitizer = sanitizer_type()
    return lambda content: convert(content, sanitizer)


class _OwnIds:
    """Hands out ids no content uses, and remembers what each stands for."""

    def __init__(self, contents: Sequence[types.Content]) -> None:
        self.taken = {
            ident
            for content in contents
            for part in content.parts or ()
            for ident in (
                part.function_call.id if part.function_call else None,
                part.function_response.id if part.function_response else None,
            )
            if ident
        }
        self.labels: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._next = 0

    def fresh(self, label: str) -> str:
        while f"{_OWN_ID_PREFIX}{self._next}" in self.taken:
            self._next += 1
        ident = f"{_OWN_ID_PREFIX}{self._next}"
        self._next += 1
        self.taken.add(ident)
        self.labels[ident] = label
        return ident

    def alias(self, original: str) -> str:
        """`original` itself when every converter keeps it, else its own fresh id."""
        if anthropic_keeps_id(original) and not original.startswith(_OWN_ID_PREFIX):
            return original
        if original not in self._aliases:
            self._aliases[original] = self.fresh(original)
        return self._aliases[original]

    def label(self, ident: Any) -> Any:
        return self.labels.get(ident, ident)


def _with_positional_ids(
    contents: Sequence[types.Content],
) -> tuple[list[types.Content], _OwnIds]:
    """Copies of `contents` whose calls and results carry ids every converter keeps.

    An id-less result answers an unanswered id-less call of the model turn
    right before it (same name first, then oldest), as pairing is positional.
    """
    ids = _OwnIds(contents)
    idless = IdlessCalls()  # the id-less calls of the last model turn
    previous_role: str | None = None
    rewritten: list[types.Content] = []
    for content in contents:
        if is_model_role(content.role) and not is_model_role(previous_role):
            idless.start_turn()
        parts: list[types.Part] = []
        for part in content.parts or ():
            call, response = part.function_call, part.function_response
            if call is not None:
                if call.id:
                    new_id = ids.alias(call.id)
                else:
                    new_id = ids.fresh(f"<no id: {call.name}>")
                    idless.open(call.name, new_id)
                part = part.model_copy(
                    update={"function_call": call.model_copy(update={"id": new_id})}
                )
            elif response is not None:
                if response.id:
                    new_id = ids.alias(response.id)
                else:
                    match = idless.answer(response.name)
                    new_id = match or ids.fresh(f"<no id: {response.name}>")
                part = part.model_copy(
                    update={"function_response": response.model_copy(update={"id": new_id})}
                )
            parts.append(part)
        rewritten.append(content.model_copy(update={"parts": parts}))
        if content.parts:
            previous_role = content.role
    return rewritten, ids


def to_anthropic_messages(contents: Iterable[types.Content]) -> list[dict[str, Any]]:
    """Converts request contents as ADK's AnthropicLlm does, dropping empty turns.

    Ids are ADK's own conversion of the contents' ids; the checks below use
    `_with_positional_ids` first so their verdict does not depend on them.
    """
    convert = _anthropic_converter()
    messages = [convert(content) for content in contents]
    return [message for message in messages if message["content"]]


def _converted(contents: Iterable[types.Content]) -> tuple[list[dict[str, Any]], _OwnIds] | str:
    """Messages with checker-owned ids, or what stopped ADK's converter from building them."""
    rewritten, ids = _with_positional_ids(list(contents))
    try:
        return to_anthropic_messages(rewritten), ids
    except (NotImplementedError, ValueError, AssertionError) as error:
        return f"ADK's Anthropic converter cannot send this request: {type(error).__name__}"


def _merge_same_role(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Joins consecutive turns of one role, as the Messages API does."""
    merged: list[dict[str, Any]] = []
    for message in messages:
        blocks = list(message["content"])
        if merged and merged[-1]["role"] == message["role"]:
            merged[-1]["content"].extend(blocks)
        else:
            merged.append({"role": message["role"], "content": blocks})
    return merged


def _field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def _pairing_violations(messages: list[dict[str, Any]], ids: _OwnIds) -> list[str]:
    violations: list[str] = []
    messages = _merge_same_role(messages)
    for position, message in enumerate(messages):
        blocks = message["content"]
        if message["role"] == "assistant":
            tool_use_ids = [_field(b, "id") for b in blocks if _field(b, "type") == "tool_use"]
            if not tool_use_ids:
                continue
            following = messages[position + 1] if position + 1 < len(messages) else None
            leading_results: list[str] = []
            if following is not None and following["role"] == "user":
                for block in following["content"]:
                    if _field(block, "type") != "tool_result":
                        break
                    leading_results.append(_field(block, "tool_use_id"))
            unanswered = [ids.label(i) for i in tool_use_ids if i not in leading_results]
            if unanswered:
                violations.append(
                    f"message {position}: tool_use ids {unanswered} were found without "
                    "tool_result blocks immediately after"
                )
        else:
            previous = messages[position - 1] if position > 0 else None
            allowed = (
                {_field(b, "id") for b in previous["content"] if _field(b, "type") == "tool_use"}
                if previous is not None and previous["role"] == "assistant"
                else set()
            )
            for block in blocks:
                if _field(block, "type") == "tool_result" and (
                    _field(block, "tool_use_id") not in allowed
                ):
                    violations.append(
                        f"message {position}: tool_result "
                        f"{ids.label(_field(block, 'tool_use_id'))!r} "
                        "has no tool_use in the previous message"
                    )
    return violations


def anthropic_pairing_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every way `contents` breaks Anthropic's positional pairing; empty when valid.

    Pairing only; `anthropic_violations` adds the uniqueness of tool_use ids.
    """
    converted = _converted(contents)
    if isinstance(converted, str):
        return [converted]
    return _pairing_violations(*converted)


def anthropic_violations(contents: Iterable[types.Content]) -> list[str]:
    """Anthropic's whole rule: positional pairing and unique tool_use ids.

    Unique both among the positional ids and as ADK's converter sends them
    (`_ids_merged_on_the_wire`).
    """
    contents = list(contents)
    converted = _converted(contents)
    if isinstance(converted, str):
        return [converted]
    messages, ids = converted
    violations = _pairing_violations(messages, ids)
    uses = Counter(
        _field(block, "id")
        for message in messages
        for block in message["content"]
        if _field(block, "type") == "tool_use"
    )
    violations.extend(
        f"tool_use id {ids.label(ident)!r} is used by {count} calls; ids must be unique"
        for ident, count in uses.items()
        if count > 1
    )
    violations.extend(_ids_merged_on_the_wire(contents))
    return violations


def _ids_merged_on_the_wire(contents: Sequence[types.Content]) -> list[str]:
    """Distinct stored call ids that ADK's Anthropic converter sends as one ``tool_use`` id.

    Its fallback for an id it rewrites has a form it keeps
    (`adk_pairing.wire.may_collide_with_a_fallback`), so a stored
    ``toolu_fallback_0`` and a rewritten ``ïd 1`` can share it on the wire.
    The positional ids above cannot show this, so the request is converted
    once more with its own ids; each ``tool_use`` block is matched to the
    call part it came from by order (`adk_pairing.wire.anthropic_block`).
    """
    try:
        messages = to_anthropic_messages(contents)
    except (NotImplementedError, ValueError, AssertionError):
        return []  # reported above
    sent = [
        _field(block, "id")
        for message in messages
        for block in message["content"]
        if _field(block, "type") == "tool_use"
    ]
    stored = [
        part.function_call.id
        for content in contents
        for part in content.parts or ()
        if part.function_call is not None and anthropic_block(part) is Block.CALL
    ]
    if len(sent) != len(stored):  # a converter this rule does not know: nothing to match
        return []
    owners: dict[str, set[str]] = {}
    for original, on_the_wire in zip(stored, sent, strict=True):
        if original:
            owners.setdefault(on_the_wire, set()).add(original)
    return [
        f"{len(originals)} distinct call ids are all sent as tool_use id {on_the_wire!r}; "
        "ids must be unique"
        for on_the_wire, originals in owners.items()
        if len(originals) > 1
    ]


def satisfies_anthropic_pairing(contents: Iterable[types.Content]) -> bool:
    """True when Anthropic would accept the pairing of `contents`."""
    return not anthropic_pairing_violations(contents)


# -- OpenAI chat through LiteLlm ------------------------------------------------


def _run_without_io(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Runs a coroutine that never suspends, from sync code, even inside a running loop.

    LiteLlm's conversion is async from 1.39.1 only because file parts may be
    uploaded; function calls, results and text never await anything.
    """
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError(
        "LiteLlm's conversion waited on I/O; check such requests with a file-free copy"
    )


def to_openai_chat_messages(contents: Iterable[types.Content]) -> list[dict[str, Any]]:
    """The chat messages ADK's LiteLlm would send for `contents` (no system message)."""
    if "litellm" not in sys.modules:
        # A check converts, it never calls a model: litellm's bundled price map
        # serves, and importing it must not reach for the internet (litellm
        # fetches the map on import unless told otherwise).
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        from google.adk.models import lite_llm
        from google.adk.models.llm_request import LlmRequest
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "Checking the OpenAI chat rule needs litellm: pip install 'adk-pairing[checks]'"
        ) from error
    request = LlmRequest(contents=list(contents), config=types.GenerateContentConfig())
    build = lite_llm._get_completion_inputs
    # 1.20.0 takes only the request and is sync; 1.39.1+ also takes the model and is async.
    takes_model = "model" in inspect.signature(build).parameters
    built = build(request, _OPENAI_MODEL) if takes_model else build(request)
    if inspect.iscoroutine(built):
        built = _run_without_io(built)
    return [dict(message) for message in built[0] if _field(message, "role") != "system"]


def openai_chat_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every way the LiteLlm chat messages for `contents` break OpenAI's tool rule."""
    try:
        messages = to_openai_chat_messages(contents)
    except (NotImplementedError, ValueError) as error:  # e.g. a call without a name
        return [f"ADK's LiteLlm conversion cannot send this request: {type(error).__name__}"]
    return openai_chat_message_violations(messages)


def openai_chat_message_violations(messages: Sequence[Any]) -> list[str]:
    """OpenAI's tool rule on chat messages (dicts with ``role``, ``tool_calls``...)."""
    violations: list[str] = []
    position = 0
    while position < len(messages):
        message = messages[position]
        role = _field(message, "role")
        if role in _TOOL_ROLES:
            violations.append(
                f"message {position}: tool message for {_field(message, 'tool_call_id')!r} "
                "follows no assistant message with tool_calls"
            )
            position += 1
            continue
        start = position
        position += 1
        tool_calls = _field(message, "tool_calls") if role == "assistant" else None
        if not tool_calls:
            continue
        call_ids = [_field(call, "id") for call in tool_calls]
        if any(not ident for ident in call_ids):
            violations.append(f"message {start}: a tool_call has an empty id")
        for ident, count in Counter(i for i in call_ids if i).items():
            if count > 1:
                violations.append(f"message {start}: tool_call id {ident!r} appears {count} times")
        answered: list[Any] = []
        while position < len(messages) and _field(messages[position], "role") in _TOOL_ROLES:
            tool_call_id = _field(messages[position], "tool_call_id")
            if not tool_call_id:
                violations.append(f"message {position}: tool message with an empty tool_call_id")
            elif tool_call_id not in call_ids:
                violations.append(
                    f"message {position}: tool message for {tool_call_id!r} answers no "
                    f"tool_call of message {start}"
                )
            answered.append(tool_call_id)
            position += 1
        unanswered = [i for i in call_ids if i and i not in answered]
        if unanswered:
            violations.append(
                f"message {start}: tool_calls {unanswered} are not followed by tool messages"
            )
    return violations


# -- Gemini ---------------------------------------------------------------------


def gemini_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every model turn with N calls is followed by exactly its N responses, in call order."""
    contents = list(contents)
    violations: list[str] = []
    answered_by_previous = False
    for position, content in enumerate(contents):
        parts = content.parts or ()
        calls = [p.function_call for p in parts if p.function_call is not None]
        responses = [p.function_response for p in parts if p.function_response is not None]
        if responses and not answered_by_previous:
            violations.append(
                f"content {position}: function responses "
                f"{[(r.id, r.name) for r in responses]} follow no function call turn"
            )
        answered_by_previous = bool(calls)
        if not calls:
            continue
        following = contents[position + 1] if position + 1 < len(contents) else None
        pending = [
            p.function_response
            for p in (following.parts or () if following is not None else ())
            if p.function_response is not None
        ]
        unmatched: list[tuple[str | None, str | None]] = []
        matched: list[types.FunctionResponse] = []
        for call in calls:
            match = next(
                (
                    r
                    for r in pending
                    if (r.id == call.id if call.id else r.name == call.name) and r.name == call.name
                ),
                None,
            )
            if match is None:
                unmatched.append((call.id, call.name))
            else:
                matched.append(match)
                pending.remove(match)
        # In call order: without ids Gemini pairs same-name calls by position, and
        # Gemini fronts that pair by position refuse a permuted answer even with ids.
        answered_in_content_order = [
            p.function_response
            for p in (following.parts or () if following is not None else ())
            if any(p.function_response is answer for answer in matched)
        ]
        if any(a is not b for a, b in zip(answered_in_content_order, matched, strict=True)):
            violations.append(
                f"content {position + 1}: function responses "
                f"{[(r.id, r.name) for r in answered_in_content_order]} are not in the order "
                f"of the calls of content {position}"
            )
        if unmatched:
            violations.append(
                f"content {position}: function calls {unmatched} have no response "
                "in the next content"
            )
        if pending:
            violations.append(
                f"content {position + 1}: function responses "
                f"{[(r.id, r.name) for r in pending]} answer no call of content {position}"
            )
    return violations


# -- strict alternation ---------------------------------------------------------


def strict_alternation_violations(contents: Iterable[types.Content]) -> list[str]:
    """Consecutive messages of one role (and a first message that is not the user's)."""
    converted = _converted(contents)
    if isinstance(converted, str):
        return [converted]
    messages, _ = converted
    violations: list[str] = []
    if messages and messages[0]["role"] != "user":
        violations.append(f"message 0: the conversation starts with {messages[0]['role']!r}")
    violations.extend(
        f"messages {position - 1} and {position}: two consecutive {message['role']!r} messages"
        for position, message in enumerate(messages)
        if position and messages[position - 1]["role"] == message["role"]
    )
    return violations


# -- all of them ----------------------------------------------------------------

_CHECKS: dict[str, Callable[[list[types.Content]], list[str]]] = {
    "anthropic": anthropic_violations,
    "openai_chat": openai_chat_violations,
    "gemini": gemini_violations,
    "strict_alternation": strict_alternation_violations,
}


def request_violations(
    contents: Iterable[types.Content], rules: Iterable[str] = RULES
) -> dict[str, list[str]]:
    """Each rule's violations for one request, keyed by rule (see `RULES`)."""
    contents = list(contents)
    return {rule: _CHECKS[rule](contents) for rule in rules}

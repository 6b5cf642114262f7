"""The providers' rules for tool calls, each written once, over one normal form of a request.

A function call and its result reach a provider as parts of neighbouring
messages, and every strict provider checks their pairing in its own words.
This module holds each such rule as one small function, and the one registry
of them (`PROVIDER_RULES`). Everything that asks whether a request keeps a
provider's rule asks here: `adk_pairing.rules.checks` (on the messages ADK's real
converters build), the view's check against ADK's builder
(`adk_pairing.rules.builder_check`), the request pass's detection and id planning
(`adk_pairing.passes.request_scan`, from the ids the registry says providers refuse)
and the demo (``adk-pairing demo``).

Pure: it reads ``google.genai`` contents, or the messages ADK's converters
made of them, and returns violations; it imports no converter and does no
I/O. Converting is `adk_pairing.rules.checks`'s part.

The rules read a request in one normal form (`WireRequest`, made in
`adk_pairing.rules.request_form`: the turns as ADK's Anthropic converter sends them,
every call and result with an id of its own), or the messages and contents
their providers receive (`Reading`).

**The rules** (`PROVIDER_RULES`, in the order `adk_pairing.rules.checks` reports them):

* ``anthropic`` (`anthropic`): every ``tool_use`` of an assistant turn is
  answered by a ``tool_result`` among the *leading* blocks of the very next
  user turn, no ``tool_result`` answers a call outside the turn before it
  (`anthropic_pairing`), ``tool_use`` ids are unique within the request
  (`unique_tool_use_ids`), and no two distinct stored ids go out as one
  ``tool_use`` id (`ids_merged_on_the_wire`: the converter's fallback for an
  id it rewrites has a form it keeps).
* ``openai_chat`` (`openai_chat`): every assistant message's ``tool_calls``
  are covered by the tool messages right after it, no tool message answers
  anything else, and no id is empty; on LiteLlm's chat messages.
* ``gemini`` (`gemini`): a model content with N calls is followed by a
  content holding exactly its N responses (by id when the call has one, else
  by name), in call order; on the contents as they are.
* ``strict_alternation`` (`strict_alternation`): no two consecutive turns of
  one role, and the first is the user's (Bedrock Converse, the chat templates
  of many open models); on the converter's turns before merging.

**Adding a rule** is one function here, one `ProviderRule` in
`PROVIDER_RULES`, and its tests (tests/unit/test_provider_rules.py, plus a
row in tests/unit/test_checks.py for its verdict through the real converter).
"""

from __future__ import annotations

import enum
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from google.genai import types

from ..wire import ANTHROPIC_FALLBACK_PREFIX, Block
from .request_form import (
    WireRequest,
    field_of,
)

__all__ = [
    "PROVIDER_RULES",
    "ProviderRule",
    "Reading",
    "anthropic",
    "anthropic_pairing",
    "gemini",
    "ids_merged_on_the_wire",
    "openai_chat",
    "strict_alternation",
    "unique_tool_use_ids",
]

#: The roles of LiteLlm's tool messages.
_TOOL_ROLES = ("tool", "tool_responses")


class Reading(enum.Enum):
    """What a provider rule reads: what its provider receives.

    ``ANTHROPIC_MESSAGES`` is a `WireRequest` of ADK's Anthropic converter's
    messages (or, without the ``anthropic`` package, `request_of_contents`);
    ``OPENAI_CHAT_MESSAGES`` the chat messages ADK's LiteLlm hands to
    ``litellm.acompletion``; ``CONTENTS`` the request contents as they are
    (Gemini receives them so).
    """

    ANTHROPIC_MESSAGES = "anthropic_messages"
    OPENAI_CHAT_MESSAGES = "openai_chat_messages"
    CONTENTS = "contents"


# -- the rules -------------------------------------------------------------------


def anthropic_pairing(request: WireRequest) -> list[str]:
    """Each ``tool_use`` answered by a leading ``tool_result`` of the next turn, and no other."""
    violations: list[str] = []
    turns = request.turns
    label = request.ids.label
    for position, turn in enumerate(turns):
        if turn.is_model:
            calls = [block.key for block in turn.blocks if block.kind is Block.CALL]
            if not calls:
                continue
            following = turns[position + 1] if position + 1 < len(turns) else None
            leading: set[str] = set()  # a set: a turn may hold many parallel calls
            if following is not None and not following.is_model:
                for block in following.blocks:
                    if block.kind is not Block.RESULT:
                        break
                    leading.add(block.key)
            unanswered = [label(key) for key in calls if key not in leading]
            if unanswered:
                violations.append(
                    f"message {position}: tool_use ids {unanswered} were found without "
                    "tool_result blocks immediately after"
                )
            continue
        previous = turns[position - 1] if position else None
        allowed = (
            {block.key for block in previous.blocks if block.kind is Block.CALL}
            if previous is not None and previous.is_model
            else set()
        )
        violations.extend(
            f"message {position}: tool_result {label(block.key)!r} "
            "has no tool_use in the previous message"
            for block in turn.blocks
            if block.kind is Block.RESULT and block.key not in allowed
        )
    return violations


def unique_tool_use_ids(request: WireRequest) -> list[str]:
    """No two ``tool_use`` blocks of the request share an id, whatever their turns' roles.

    ADK's builder can merge a malformed event's calls into a user turn, and the
    converter sends them as ``tool_use`` blocks there too.
    """
    uses = Counter(
        block.key for turn in request.messages for block in turn.blocks if block.kind is Block.CALL
    )
    return [
        f"tool_use id {request.ids.label(ident)!r} is used by {count} calls; ids must be unique"
        for ident, count in uses.items()
        if count > 1
    ]


def ids_merged_on_the_wire(request: WireRequest) -> list[str]:
    """Distinct stored call ids that ADK's Anthropic converter sends as one ``tool_use`` id.

    Its fallback for an id it rewrites has a form it keeps
    (`wire.may_collide_with_a_fallback`), so a stored ``toolu_fallback_0`` and
    a rewritten ``ïd 1`` can share it. The positional ids cannot show this;
    the ids as sent (`WireRequest.sent_ids`) can, where a converter made them.
    """
    sent = request.sent_ids
    if sent is None:
        return []
    owners: dict[str, set[str]] = {}
    for original, on_the_wire in sent:
        if original:
            owners.setdefault(on_the_wire, set()).add(original)
    return [
        f"{len(originals)} distinct call ids are all sent as tool_use id {on_the_wire!r}; "
        "ids must be unique"
        for on_the_wire, originals in owners.items()
        if len(originals) > 1
    ]


def anthropic(request: WireRequest) -> list[str]:
    """Anthropic's whole rule: positional pairing and unique ``tool_use`` ids, as sent too."""
    return [
        *anthropic_pairing(request),
        *unique_tool_use_ids(request),
        *ids_merged_on_the_wire(request),
    ]


def strict_alternation(request: WireRequest) -> list[str]:
    """Consecutive turns of one role (and a first turn that is not the user's).

    Read on the turns before merging: the converter's have exactly the
    user/assistant shape Bedrock Converse takes (tool results ride in the user
    turn, empty turns are dropped).
    """
    messages = request.messages
    violations: list[str] = []
    if messages and messages[0].is_model:
        violations.append(f"message 0: the conversation starts with {messages[0].role!r}")
    violations.extend(
        f"messages {position - 1} and {position}: two consecutive {turn.role!r} messages"
        for position, turn in enumerate(messages)
        if position and messages[position - 1].is_model == turn.is_model
    )
    return violations


def openai_chat(messages: Sequence[Any]) -> list[str]:
    """OpenAI's tool rule on chat messages (dicts or objects with ``role``, ``tool_calls``...)."""
    violations: list[str] = []
    position = 0
    while position < len(messages):
        message = messages[position]
        role = field_of(message, "role")
        if role in _TOOL_ROLES:
            violations.append(
                f"message {position}: tool message for {field_of(message, 'tool_call_id')!r} "
                "follows no assistant message with tool_calls"
            )
            position += 1
            continue
        start = position
        position += 1
        tool_calls = field_of(message, "tool_calls") if role == "assistant" else None
        if not tool_calls:
            continue
        call_ids = [field_of(call, "id") for call in tool_calls]
        if any(not ident for ident in call_ids):
            violations.append(f"message {start}: a tool_call has an empty id")
        for ident, count in Counter(i for i in call_ids if i).items():
            if count > 1:
                violations.append(f"message {start}: tool_call id {ident!r} appears {count} times")
        known = set(call_ids)  # sets: a message may hold many parallel calls
        answered: set[Any] = set()
        while position < len(messages) and field_of(messages[position], "role") in _TOOL_ROLES:
            tool_call_id = field_of(messages[position], "tool_call_id")
            if not tool_call_id:
                violations.append(f"message {position}: tool message with an empty tool_call_id")
            elif tool_call_id not in known:
                violations.append(
                    f"message {position}: tool message for {tool_call_id!r} answers no "
                    f"tool_call of message {start}"
                )
            answered.add(tool_call_id)
            position += 1
        unanswered = [i for i in call_ids if i and i not in answered]
        if unanswered:
            violations.append(
                f"message {start}: tool_calls {unanswered} are not followed by tool messages"
            )
    return violations


def gemini(contents: Sequence[types.Content]) -> list[str]:
    """Every model turn with N calls is followed by exactly its N responses, in call order.

    In call order: without ids Gemini pairs same-name calls by position, and
    Gemini fronts that pair by position refuse a permuted answer even with ids.
    """
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
        following_parts = (following.parts or ()) if following is not None else ()
        pending = [p.function_response for p in following_parts if p.function_response is not None]
        matched, unmatched, left = _match_in_call_order(calls, pending)
        matched_ids = {id(answer) for answer in matched}
        answered_in_content_order = [r for r in pending if id(r) in matched_ids]
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
        if left:
            violations.append(
                f"content {position + 1}: function responses "
                f"{[(r.id, r.name) for r in left]} answer no call of content {position}"
            )
    return violations


def _match_in_call_order(
    calls: Sequence[types.FunctionCall], responses: Sequence[types.FunctionResponse]
) -> tuple[
    list[types.FunctionResponse], list[tuple[str | None, str | None]], list[types.FunctionResponse]
]:
    """Each call's response, as Gemini pairs them: (matched in call order, unmatched calls, left).

    A call with an id takes the first remaining response with its id and name;
    an id-less call the first remaining one with its name. Linear in the parts:
    a turn of a thousand parallel calls is checked on every read of such a view.
    """
    by_key: dict[tuple[str | None, str | None], deque[int]] = defaultdict(deque)
    by_name: dict[str | None, deque[int]] = defaultdict(deque)
    for position, response in enumerate(responses):
        by_key[(response.id, response.name)].append(position)
        by_name[response.name].append(position)
    taken: set[int] = set()
    matched: list[types.FunctionResponse] = []
    unmatched: list[tuple[str | None, str | None]] = []
    for call in calls:
        queue = by_key.get((call.id, call.name)) if call.id else by_name.get(call.name)
        while queue and queue[0] in taken:
            queue.popleft()
        if not queue:
            unmatched.append((call.id, call.name))
            continue
        position = queue.popleft()
        taken.add(position)
        matched.append(responses[position])
    left = [response for position, response in enumerate(responses) if position not in taken]
    return matched, unmatched, left


# -- the registry ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ProviderRule:
    """One provider's rule for tool calls, and what it applies to."""

    name: str
    #: Who refuses a request that breaks it, as a reader would name it.
    provider: str
    #: The models whose requests it applies to.
    models: str
    reads: Reading
    #: The rule: every way the request, as `reads` says, breaks it; empty when kept.
    violations: Callable[[Any], list[str]]
    #: When the model pairs calls by id (`wire.pairs_calls_by_id`): whether the
    #: provider cannot take a call without an id, and the starts of ids it cannot
    #: keep apart from ids of its own. The request pass gives such calls ids of
    #: their own (`adk_pairing.passes.request_scan.refused_when_paired_by_id`).
    refuses_missing_ids: bool = False
    refuses_id_prefixes: tuple[str, ...] = ()
    #: Whether the view's check holds a view to it (`adk_pairing.rules.builder_check`).
    #: Strict alternation is not: a placeholder is a turn of its own before the
    #: user's next text, which the request pass merges.
    view_checked: bool = True


#: Every provider rule, by name, in the order the checks report them.
PROVIDER_RULES: Mapping[str, ProviderRule] = {
    rule.name: rule
    for rule in (
        ProviderRule(
            "anthropic",
            "Anthropic",
            "AnthropicLlm, and Claude through LiteLlm",
            Reading.ANTHROPIC_MESSAGES,
            anthropic,
            # An older converter gives every id-less call one fallback id, and an id
            # of the fallbacks' form may be sent for another call whose id is rewritten.
            refuses_missing_ids=True,
            refuses_id_prefixes=(ANTHROPIC_FALLBACK_PREFIX,),
        ),
        ProviderRule(
            "openai_chat",
            "OpenAI",
            "LiteLlm (every OpenAI-compatible API)",
            Reading.OPENAI_CHAT_MESSAGES,
            openai_chat,
            # LiteLlm sends an id-less call as "", which no OpenAI-compatible API pairs.
            refuses_missing_ids=True,
        ),
        ProviderRule("gemini", "Gemini", "Gemini", Reading.CONTENTS, gemini),
        ProviderRule(
            "strict_alternation",
            "Bedrock Converse",
            "Bedrock, and open models whose chat template wants alternating roles",
            Reading.ANTHROPIC_MESSAGES,
            strict_alternation,
            view_checked=False,
        ),
    )
}

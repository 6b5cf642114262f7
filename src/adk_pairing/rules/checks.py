"""The providers' rules for tool calls, checked on the request ADK would send.

Each provider rule is written once, in `adk_pairing.rules.provider_rules`; this
module reads a request as each provider receives it and runs the rules
there: on the messages the real converters produce (ADK's Anthropic
converter, ADK's LiteLlm message conversion, each called through
`adk_pairing.adk.models`), or on the contents themselves for Gemini, so a
verdict is about what ADK would put on the wire, not about what the session
holds. `request_violations` runs every rule of
`provider_rules.PROVIDER_RULES` (named in `RULES`); each rule also has a
function of its own here (`anthropic_violations`, ...), returning its
violations, empty when the request is accepted.

* ``anthropic``: converted with ADK's ``AnthropicLlm`` converter, one id
  sanitizer per request as ``AnthropicLlm`` does, after every call and
  result got an id every release's converter keeps
  (`request_form.with_positional_ids`: ADK rewrites ids Anthropic would
  refuse differently on every release, and that difference would decide
  whether a call without an id looks answered). The request is converted
  once more with its own ids, to see the ids the converter itself sends
  (`provider_rules.ids_merged_on_the_wire`).
* ``openai_chat``: converted with ``google.adk.models.lite_llm``'s
  ``_get_completion_inputs``, i.e. the message list LiteLlm hands to
  ``litellm.acompletion``, including the tool results LiteLlm itself
  inserts for calls that have none (where the release does). That healing skips calls
  whose id is empty, and a call stored without an id is sent with an empty
  id: no OpenAI-compatible API pairs those.
* ``gemini``: on the contents as they are.
* ``strict_alternation``: on the Anthropic conversion before merging; ADK's
  LiteLlm conversion would give the same verdict once its tool messages are
  folded into the user turn as Converse requires.

Everything else comes from ADK's converter as it is, on purpose: a ``Part``
holding both text and a ``function_call`` becomes a text block and the call
is dropped, so a result for it is an orphan; a request the converter cannot
convert at all (an older converter raises on an empty text part) is a violation, because
ADK raises before sending it. docs/compatibility.md has the releases.

The Anthropic rule needs the ``anthropic`` package, the OpenAI rule
``litellm`` (``pip install 'adk-pairing[checks]'``). litellm fetches its
model price map from the internet on import unless
``LITELLM_LOCAL_MODEL_COST_MAP`` is set; when the OpenAI rule is the first to
import litellm, it sets that variable (if unset) to use the bundled map.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

from google.genai import types

from ..adk import (
    anthropic_converter_installed,
    anthropic_message_converter,
    litellm_chat_messages,
    litellm_imported,
)
from .provider_rules import PROVIDER_RULES, ProviderRule, Reading, anthropic_pairing, openai_chat
from .request_form import (
    WireRequest,
    call_ids_as_sent,
    field_of,
    request_of_anthropic_messages,
    with_positional_ids,
)

__all__ = [
    "RULES",
    "anthropic_pairing_violations",
    "anthropic_request",
    "anthropic_violations",
    "gemini_violations",
    "openai_chat_message_violations",
    "openai_chat_violations",
    "read_as",
    "request_violations",
    "strict_alternation_violations",
    "to_anthropic_messages",
    "to_openai_chat_messages",
    "violations_of",
]

#: The provider rules `request_violations` checks, in the order it reports them.
RULES = tuple(PROVIDER_RULES)

#: Any OpenAI-compatible model string; LiteLlm picks provider quirks from it.
_OPENAI_MODEL = "openai/gpt-4o"

#: What ADK's converters raise on a request they cannot send.
_ANTHROPIC_REFUSALS = (NotImplementedError, ValueError, AssertionError)
_LITELLM_REFUSALS = (NotImplementedError, ValueError)


# -- reading a request as each provider receives it -------------------------------


def _anthropic_converter() -> Callable[[types.Content], dict[str, Any]]:
    """ADK's Anthropic converter for one request, or the extra that installs it."""
    if not anthropic_converter_installed():
        raise ImportError(
            "Checking the Anthropic pairing rule needs the anthropic package: "
            "pip install 'adk-pairing[checks]'"
        )
    return anthropic_message_converter()


def to_anthropic_messages(contents: Iterable[types.Content]) -> list[dict[str, Any]]:
    """Converts request contents as ADK's AnthropicLlm does, dropping empty turns.

    Ids are ADK's own conversion of the contents' ids; the rules read
    `anthropic_request` instead, so their verdict does not depend on them.
    """
    convert = _anthropic_converter()
    messages = [convert(content) for content in contents]
    return [message for message in messages if message["content"]]


def anthropic_request(contents: Iterable[types.Content]) -> WireRequest | str:
    """`contents` as ADK's Anthropic converter sends them, in the rules' normal form.

    Or what stopped the converter from building them. Converted with
    positional ids (`request_form.with_positional_ids`); the ids the
    converter itself sends are read from a second conversion, only when a
    rule asks for them.
    """
    contents = list(contents)
    rewritten, ids = with_positional_ids(contents)
    try:
        messages = to_anthropic_messages(rewritten)
    except _ANTHROPIC_REFUSALS as error:
        return f"ADK's Anthropic converter cannot send this request: {type(error).__name__}"

    def sent_ids() -> list[tuple[str | None, str]] | None:
        try:
            return call_ids_as_sent(contents, to_anthropic_messages(contents))
        except _ANTHROPIC_REFUSALS:
            return None  # reported above

    return request_of_anthropic_messages(messages, ids, sent_ids)


def to_openai_chat_messages(contents: Iterable[types.Content]) -> list[dict[str, Any]]:
    """The chat messages ADK's LiteLlm would send for `contents` (no system message)."""
    if not litellm_imported():
        # A check converts, it never calls a model: litellm's bundled price map
        # serves, and importing it must not reach for the internet (litellm
        # fetches the map on import unless told otherwise).
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        messages = litellm_chat_messages(contents, _OPENAI_MODEL)
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "Checking the OpenAI chat rule needs litellm: pip install 'adk-pairing[checks]'"
        ) from error
    return [dict(message) for message in messages if field_of(message, "role") != "system"]


def _openai_chat_request(contents: Iterable[types.Content]) -> list[dict[str, Any]] | str:
    try:
        return to_openai_chat_messages(contents)
    except _LITELLM_REFUSALS as error:  # e.g. a call without a name
        return f"ADK's LiteLlm conversion cannot send this request: {type(error).__name__}"


def read_as(reading: Reading, contents: list[types.Content]) -> Any:
    """`contents` as `reading` says a provider receives them, or what stopped the converter."""
    if reading is Reading.ANTHROPIC_MESSAGES:
        return anthropic_request(contents)
    if reading is Reading.OPENAI_CHAT_MESSAGES:
        return _openai_chat_request(contents)
    return contents


def _violations(rule: ProviderRule, read: Any) -> list[str]:
    return [read] if isinstance(read, str) else rule.violations(read)


# -- each rule, and all of them -------------------------------------------------


def violations_of(rule: ProviderRule | str, contents: Iterable[types.Content]) -> list[str]:
    """Every way `contents` break `rule` (a `ProviderRule` or its name), read as it says."""
    if isinstance(rule, str):
        rule = PROVIDER_RULES[rule]
    return _violations(rule, read_as(rule.reads, list(contents)))


def anthropic_violations(contents: Iterable[types.Content]) -> list[str]:
    """Anthropic's whole rule: positional pairing and unique tool_use ids, as sent too."""
    return violations_of("anthropic", contents)


def anthropic_pairing_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every way `contents` breaks Anthropic's positional pairing; empty when valid.

    Pairing only (`provider_rules.anthropic_pairing`); `anthropic_violations`
    adds the uniqueness of tool_use ids.
    """
    request = anthropic_request(contents)
    return [request] if isinstance(request, str) else anthropic_pairing(request)


def openai_chat_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every way the LiteLlm chat messages for `contents` break OpenAI's tool rule."""
    return violations_of("openai_chat", contents)


#: OpenAI's tool rule on chat messages already built (`provider_rules.openai_chat`).
openai_chat_message_violations = openai_chat


def gemini_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every model turn with N calls is followed by exactly its N responses, in call order."""
    return violations_of("gemini", contents)


def strict_alternation_violations(contents: Iterable[types.Content]) -> list[str]:
    """Consecutive messages of one role (and a first message that is not the user's)."""
    return violations_of("strict_alternation", contents)


def request_violations(
    contents: Iterable[types.Content], rules: Iterable[str] = RULES
) -> dict[str, list[str]]:
    """Each rule's violations for one request, keyed by rule (see `RULES`).

    The request is read once per reading, whichever rules share it.
    """
    contents = list(contents)
    readings: dict[Reading, Any] = {}
    found: dict[str, list[str]] = {}
    for name in rules:
        rule = PROVIDER_RULES[name]
        if rule.reads not in readings:
            readings[rule.reads] = read_as(rule.reads, contents)
        found[name] = _violations(rule, readings[rule.reads])
    return found

"""Anthropic's tool pairing rule, checked on the request ADK would send.

Anthropic (and Bedrock's Claude, and OpenAI-style providers via LiteLLM)
enforce pairing positionally: every ``tool_use`` block in an assistant message
must be answered by a ``tool_result`` block in the very next user message, and
those results must come before any other block of that message. The check
converts contents with ADK's own Anthropic converter, so it sees exactly what
ADK would put on the wire.

Requires the ``anthropic`` package (``pip install 'adk-pairing[anthropic]'``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from google.genai import types


def _converter() -> Callable[[types.Content], dict[str, Any]]:
    """ADK's content converter, sharing one tool-id sanitizer per conversation.

    ``AnthropicLlm`` converts a whole request with one ``_ToolUseIdSanitizer``,
    which is how a call without an id and its id-less result get the same
    fallback id. The public ``content_to_message_param`` makes a new sanitizer
    per content, so it is used only where the private pair is absent.
    """
    try:
        from google.adk.models import anthropic_llm
    except ImportError as error:  # pragma: no cover - depends on the install
        raise ImportError(
            "Checking the Anthropic pairing rule needs the anthropic package: "
            "pip install 'adk-pairing[anthropic]'"
        ) from error
    convert = getattr(anthropic_llm, "_content_to_message_param", None)
    sanitizer_type = getattr(anthropic_llm, "_ToolUseIdSanitizer", None)
    if convert is None or sanitizer_type is None:
        return anthropic_llm.content_to_message_param
    sanitizer = sanitizer_type()
    return lambda content: convert(content, sanitizer)


def to_anthropic_messages(contents: Iterable[types.Content]) -> list[dict[str, Any]]:
    """Converts request contents as ADK's AnthropicLlm does, dropping empty turns."""
    convert = _converter()
    messages = [convert(content) for content in contents]
    return [message for message in messages if message["content"]]


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


def _block_type(block: Any) -> str | None:
    return block.get("type") if isinstance(block, dict) else getattr(block, "type", None)


def _block_field(block: Any, name: str) -> Any:
    return block.get(name) if isinstance(block, dict) else getattr(block, name, None)


def anthropic_pairing_violations(contents: Iterable[types.Content]) -> list[str]:
    """Every way `contents` breaks Anthropic's pairing rule; empty when valid."""
    messages = _merge_same_role(to_anthropic_messages(contents))
    violations: list[str] = []
    for position, message in enumerate(messages):
        blocks = message["content"]
        if message["role"] == "assistant":
            tool_use_ids = [_block_field(b, "id") for b in blocks if _block_type(b) == "tool_use"]
            if not tool_use_ids:
                continue
            following = messages[position + 1] if position + 1 < len(messages) else None
            if following is None or following["role"] != "user":
                violations.append(
                    f"message {position}: tool_use ids {tool_use_ids} were found without "
                    "tool_result blocks immediately after"
                )
                continue
            leading_results: list[str] = []
            for block in following["content"]:
                if _block_type(block) != "tool_result":
                    break
                leading_results.append(_block_field(block, "tool_use_id"))
            unanswered = [i for i in tool_use_ids if i not in leading_results]
            if unanswered:
                violations.append(
                    f"message {position}: tool_use ids {unanswered} were found without "
                    "tool_result blocks immediately after"
                )
        else:
            previous = messages[position - 1] if position > 0 else None
            allowed = (
                {_block_field(b, "id") for b in previous["content"] if _block_type(b) == "tool_use"}
                if previous is not None and previous["role"] == "assistant"
                else set()
            )
            for block in blocks:
                if _block_type(block) == "tool_result" and (
                    _block_field(block, "tool_use_id") not in allowed
                ):
                    violations.append(
                        f"message {position}: tool_result {_block_field(block, 'tool_use_id')!r} "
                        "has no tool_use in the previous message"
                    )
    return violations


def satisfies_anthropic_pairing(contents: Iterable[types.Content]) -> bool:
    """True when Anthropic would accept the pairing of `contents`."""
    return not anthropic_pairing_violations(contents)

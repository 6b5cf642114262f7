"""Which of ADK's model converters this process can use, and what the installed ones do.

Nothing here imports a provider until it is asked about one.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from google.genai import types

from .. import wire


@functools.cache
def anthropic_converter_installed() -> bool:
    """Whether ADK's Anthropic converter imports: it needs the optional ``anthropic`` package."""
    try:
        importlib.import_module("google.adk.models.anthropic_llm")
    except ImportError:
        return False
    return True


@functools.cache
def converter_sends_signed_thoughts() -> bool:
    """Whether the installed ADK's Anthropic converter sends a signed thought as thinking.

    A converter without thinking (``part_to_message_block``) sends such a
    part's call as a call, and raises ``NotImplementedError`` on a signed
    thought with nothing else. Probed once by converting one part; without the
    ``anthropic`` package the newest converter is assumed. The wire rules ask
    it (`adk_pairing.wire.use_signed_thoughts_probe`, set below).
    """
    try:
        from google.adk.models import anthropic_llm

        block = anthropic_llm.part_to_message_block(
            types.Part(
                thought=True,
                thought_signature=b"cHJvYmU=",
                function_call=types.FunctionCall(name="probe", args={}),
            )
        )
    except Exception:  # no anthropic package, or a reshaped converter: the newest
        return True
    kind = block.get("type") if isinstance(block, dict) else getattr(block, "type", None)
    return kind != wire.ANTHROPIC_CALL_BLOCK


# The wire rules hold what a part is sent as; whether a signed thought is
# thinking is this release's answer, so they ask this probe.
wire.use_signed_thoughts_probe(converter_sends_signed_thoughts)


def anthropic_message_converter() -> Callable[[types.Content], dict[str, Any]]:
    """ADK's Anthropic content converter, sharing one tool-id sanitizer per request.

    ``AnthropicLlm`` converts a whole request with one ``_ToolUseIdSanitizer``,
    so one converter serves one request. A converter without the sanitizer
    has only the public ``content_to_message_param``. Needs the ``anthropic``
    package (`anthropic_converter_installed`).
    """
    from google.adk.models import anthropic_llm

    convert = getattr(anthropic_llm, "_content_to_message_param", None)
    sanitizer_type = getattr(anthropic_llm, "_ToolUseIdSanitizer", None)
    if convert is None or sanitizer_type is None:
        return anthropic_llm.content_to_message_param
    sanitizer = sanitizer_type()
    return lambda content: convert(content, sanitizer)


def litellm_imported() -> bool:
    """Whether the app has imported ``litellm``: only apps that send through LiteLlm do.

    Asked instead of importing it, which costs seconds.
    """
    return "litellm" in sys.modules


def litellm_completion_inputs(request: Any, model: str) -> Any:
    """LiteLlm's ``_get_completion_inputs`` of `request`, however the release declares it.

    A release whose function takes only the request returns the messages; one
    that also takes the model returns a coroutine, which comes back as it is.
    """
    from google.adk.models import lite_llm

    build = lite_llm._get_completion_inputs
    if "model" in inspect.signature(build).parameters:
        return build(request, model)
    return build(request)


def litellm_chat_messages(contents: Iterable[types.Content], model: str) -> list[Any]:
    """The messages ADK's LiteLlm hands to ``litellm.acompletion`` for `contents` and `model`.

    The system message included. Raises ``ImportError`` without ``litellm``.
    """
    from google.adk.models import lite_llm  # noqa: F401 - fails here without litellm
    from google.adk.models.llm_request import LlmRequest

    request = LlmRequest(contents=list(contents), config=types.GenerateContentConfig())
    built = litellm_completion_inputs(request, model)
    if inspect.iscoroutine(built):
        built = _run_without_io(built)
    return list(built[0])


def _run_without_io(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Runs a coroutine that never suspends, from sync code, even inside a running loop.

    Where LiteLlm's conversion is async, it is only because file parts may be
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

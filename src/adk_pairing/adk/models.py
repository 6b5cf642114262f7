"""Which of ADK's model converters this process can use, without importing a provider."""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
from typing import Any


@functools.cache
def anthropic_converter_installed() -> bool:
    """Whether ADK's Anthropic converter imports: it needs the optional ``anthropic`` package."""
    try:
        importlib.import_module("google.adk.models.anthropic_llm")
    except ImportError:
        return False
    return True


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

"""Which of ADK's model converters this process can use, without importing a provider."""

from __future__ import annotations

import functools
import importlib
import sys


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

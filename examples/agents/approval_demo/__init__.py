"""A runnable ADK agent with a held-open (long-running) call (no API key needed)."""

from . import agent

__all__ = ["agent"]

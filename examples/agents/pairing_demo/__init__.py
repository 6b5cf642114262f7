"""A runnable ADK agent directory that shows adk-pairing at work (no API key needed)."""

from . import agent

__all__ = ["agent"]

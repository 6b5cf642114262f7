"""Looking up an ADK module that a release may not have."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


def module_exists(name: str) -> bool:
    """Whether module `name` can be imported (without importing it)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a parent package is missing, or a None entry
        return False


def imported_or_none(name: str) -> ModuleType | None:
    """Module `name`, imported; None when this release has no such module."""
    try:
        return importlib.import_module(name)
    except ImportError:
        return None

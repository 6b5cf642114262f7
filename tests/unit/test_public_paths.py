"""Every import path the documentation names still imports, whatever module it now lives in.

The README, docs/ and examples/ name module paths (``adk_pairing.view``,
``adk_pairing.checks.anthropic_pairing_violations``...) and the public API
(``adk_pairing.PairingSessionService``); the layout moved modules into their
layers (`adk_pairing._moved` keeps the old paths). Each path named must import,
as a module or as an attribute of one, and an old path must give the very
module at the new one.
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from adk_pairing import _moved
from adk_pairing.shells import metrics

pytestmark = pytest.mark.version_independent

ROOT = Path(__file__).parents[2]
#: The public API and the module paths people import, whether documented or not.
PUBLIC = (
    "adk_pairing.PairingSessionService",
    "adk_pairing.PairingPlugin",
    "adk_pairing.create_session_service",
    "adk_pairing.checks",
    "adk_pairing.service",
    "adk_pairing.plugin",
    "adk_pairing.view",
    "adk_pairing.analysis",
    "adk_pairing.adk_compat",
    "adk_pairing.builder_traits",
)
#: Names that are instruments' names (`adk_pairing.shells.metrics`), not import paths.
INSTRUMENTS = {
    value
    for value in vars(metrics).values()
    if isinstance(value, str) and value.startswith("adk_pairing.")
}


def _documented() -> set[str]:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    texts += sorted((ROOT / "examples").rglob("*.py")) if (ROOT / "examples").exists() else []
    found: set[str] = set()
    for path in texts:
        found.update(re.findall(r"\badk_pairing(?:\.[A-Za-z_][A-Za-z0-9_]*)+", path.read_text()))
    return found - INSTRUMENTS


def _resolves(path: str) -> bool:
    try:
        importlib.import_module(path)
        return True
    except ModuleNotFoundError:
        pass
    parent, _, name = path.rpartition(".")
    return bool(parent) and _resolves(parent) and hasattr(importlib.import_module(parent), name)


def test_the_documentation_names_paths_at_all() -> None:
    assert {"adk_pairing.rules.checks", "adk_pairing.wire"} <= _documented()


@pytest.mark.parametrize("path", sorted(_documented() | set(PUBLIC)))
def test_every_documented_path_imports(path: str) -> None:
    assert _resolves(path), path


@pytest.mark.parametrize("old", sorted(_moved.MOVED))
def test_an_old_module_path_is_the_moved_module_itself(old: str) -> None:
    module = importlib.import_module(old)
    assert module is importlib.import_module(_moved.MOVED[old])
    assert module.__spec__ is not None and module.__spec__.name == _moved.MOVED[old]

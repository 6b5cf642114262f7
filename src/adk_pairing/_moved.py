"""Old module paths of the package, still importable after the modules moved into their layers.

``import adk_pairing.view`` (or ``from adk_pairing import checks``) gives the
very module now at its new path (`MOVED`): the same object, so its classes,
its functions and whatever patches it are one. No file stands at the old
path, so the file list shows only the layers.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType

#: Old module path -> the module's path now.
MOVED: dict[str, str] = {
    "adk_pairing.provider_rules": "adk_pairing.rules.provider_rules",
    "adk_pairing.request_form": "adk_pairing.rules.request_form",
    "adk_pairing.checks": "adk_pairing.rules.checks",
    "adk_pairing.builder_check": "adk_pairing.rules.builder_check",
    "adk_pairing.placeholders": "adk_pairing.core.placeholders",
    "adk_pairing.repair": "adk_pairing.core.repair",
    "adk_pairing.analysis_cache": "adk_pairing.core.analysis_cache",
    "adk_pairing.lru": "adk_pairing.core.lru",
    "adk_pairing.ownership": "adk_pairing.core.ownership",
    "adk_pairing.view": "adk_pairing.passes.view",
    "adk_pairing.request_pass": "adk_pairing.passes.request_pass",
    "adk_pairing.request_records": "adk_pairing.passes.request_records",
    "adk_pairing.request_rewrite": "adk_pairing.passes.request_rewrite",
    "adk_pairing.request_scan": "adk_pairing.passes.request_scan",
    "adk_pairing.restore_pass": "adk_pairing.passes.restore_pass",
    "adk_pairing.service": "adk_pairing.shells.service",
    "adk_pairing.shielding": "adk_pairing.shells.shielding",
    "adk_pairing.plugin": "adk_pairing.shells.plugin",
    "adk_pairing.agent_pass": "adk_pairing.shells.agent_pass",
    "adk_pairing.metrics": "adk_pairing.shells.metrics",
    "adk_pairing.factory": "adk_pairing.shells.factory",
    "adk_pairing.config": "adk_pairing.shells.config",
    "adk_pairing.adk_services": "adk_pairing.shells.adk_services",
    "adk_pairing.extras": "adk_pairing.shells.extras",
    "adk_pairing.uris": "adk_pairing.shells.uris",
    "adk_pairing.masking": "adk_pairing.shells.masking",
    "adk_pairing.ledger_reads": "adk_pairing.ledger.reads",
}


class _Alias(importlib.abc.Loader):
    """Loads an old path as the module at its new path, leaving that module as it is."""

    def __init__(self, target: str) -> None:
        self._target = target
        self._spec: importlib.machinery.ModuleSpec | None = None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(self._target)
        self._spec = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # The import system set the old path's spec on the module: give it back its own.
        module.__spec__ = self._spec


class _MovedModules(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        moved_to = MOVED.get(fullname)
        if moved_to is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias(moved_to))


def install() -> None:
    """Makes the old paths importable (once per process)."""
    if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
        sys.meta_path.append(_MovedModules())

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
MOVED: dict[str, str] = {}


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

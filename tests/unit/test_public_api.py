"""The public API as it is: the names the package exports, the modules the docs document.

`adk_pairing.__all__` is pinned name by name, so adding, renaming or dropping a
public name is a change someone makes on purpose (with its page under
docs/api/, which ``make docs`` asks for). The modules with an API page of their
own are pinned too, every module path the README, docs/ and examples/ name must
import, and each module has one path: the flat paths the modules had before
they moved into their layers (``adk_pairing.view``, ``adk_pairing.checks``...)
were never released, and none may import again.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

import adk_pairing
from adk_pairing.shells import metrics

pytestmark = pytest.mark.version_independent

ROOT = Path(__file__).parents[2]

#: What ``from adk_pairing import ...`` offers.
PUBLIC_NAMES = frozenset(
    {
        "DEFAULT_MISSING_TEXT",
        "DEFAULT_PENDING_TEXT",
        "METADATA_KEY",
        "ArgumentTypeError",
        "ArgumentValueError",
        "CallStatus",
        "ConfigError",
        "PairedSession",
        "PairingError",
        "PairingPlugin",
        "PairingReport",
        "PairingSessionService",
        "PlaceholderTexts",
        "StoreConnectionError",
        "StoreDatabaseError",
        "StoreHostError",
        "StoreLayoutError",
        "StoreLoginError",
        "TrackedCall",
        "UnsupportedSchemeError",
        "UriPasswordError",
        "analyze",
        "create_session_service",
        "is_synthetic",
        "load_config",
        "load_session_service",
        "mask_uri",
        "pair_request",
        "register_pairing_schemes",
        "repaired_events",
    }
)

#: The submodules with an API page of their own (docs/api/, ``::: module``), and their names.
DOCUMENTED_MODULES = {
    "adk_pairing.rules.checks": frozenset(
        {
            "RULES",
            "anthropic_pairing_violations",
            "anthropic_request",
            "anthropic_violations",
            "gemini_violations",
            "openai_chat_message_violations",
            "openai_chat_violations",
            "read_as",
            "request_violations",
            "strict_alternation_violations",
            "to_anthropic_messages",
            "to_openai_chat_messages",
            "violations_of",
        }
    ),
    "adk_pairing.rules.provider_rules": frozenset(
        {
            "PROVIDER_RULES",
            "ProviderRule",
            "Reading",
            "anthropic",
            "anthropic_pairing",
            "gemini",
            "ids_merged_on_the_wire",
            "openai_chat",
            "strict_alternation",
            "unique_tool_use_ids",
        }
    ),
}

#: The flat module paths of before the layers, never released: none may import.
FLAT_PATHS = (
    "adk_compat",
    "adk_services",
    "agent_pass",
    "analysis",
    "analysis_cache",
    "builder_check",
    "builder_traits",
    "checks",
    "config",
    "extras",
    "factory",
    "ledger_reads",
    "lru",
    "masking",
    "metrics",
    "ownership",
    "placeholders",
    "plugin",
    "provider_rules",
    "repair",
    "request_form",
    "request_pass",
    "request_records",
    "request_rewrite",
    "request_scan",
    "restore_pass",
    "service",
    "shielding",
    "uris",
    "view",
)

#: Names of instruments (`adk_pairing.shells.metrics`), not import paths.
INSTRUMENTS = {
    value
    for value in vars(metrics).values()
    if isinstance(value, str) and value.startswith("adk_pairing.")
}


def _documented_paths() -> set[str]:
    texts = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    texts += sorted((ROOT / "examples").rglob("*.py"))
    found: set[str] = set()
    for path in texts:
        found.update(re.findall(r"\badk_pairing(?:\.[A-Za-z_][A-Za-z0-9_]*)+", path.read_text()))
    return found - INSTRUMENTS


def _api_page_targets() -> set[str]:
    """What each page under docs/api/ renders (its ``::: target`` lines)."""
    return {
        target
        for page in (ROOT / "docs" / "api").glob("*.md")
        for target in re.findall(r"^::: (\S+)$", page.read_text(), re.MULTILINE)
    }


def _resolves(path: str) -> bool:
    """Whether `path` imports as a module, or is an attribute of a module that does."""
    try:
        importlib.import_module(path)
        return True
    except ModuleNotFoundError:
        pass
    parent, _, name = path.rpartition(".")
    return bool(parent) and _resolves(parent) and hasattr(importlib.import_module(parent), name)


def test_the_package_exports_exactly_its_public_names() -> None:
    assert set(adk_pairing.__all__) == PUBLIC_NAMES
    assert len(adk_pairing.__all__) == len(PUBLIC_NAMES), "a name listed twice"
    for name in PUBLIC_NAMES:
        assert getattr(adk_pairing, name) is not None, name


def test_the_api_pages_are_the_public_names_and_the_documented_modules() -> None:
    assert _api_page_targets() == {f"adk_pairing.{name}" for name in PUBLIC_NAMES} | set(
        DOCUMENTED_MODULES
    )


@pytest.mark.parametrize("module", sorted(DOCUMENTED_MODULES))
def test_a_documented_module_exports_exactly_its_public_names(module: str) -> None:
    imported = importlib.import_module(module)
    assert set(imported.__all__) == DOCUMENTED_MODULES[module]
    for name in imported.__all__:
        assert hasattr(imported, name), f"{module}.{name}"


def test_the_documentation_names_paths_at_all() -> None:
    assert {"adk_pairing.rules.checks", "adk_pairing.wire"} <= _documented_paths()


@pytest.mark.parametrize("path", sorted(_documented_paths()))
def test_every_path_the_documentation_names_imports(path: str) -> None:
    assert _resolves(path), path


def _importable(name: str) -> bool:
    """Whether ``import adk_pairing.<name>`` or ``from adk_pairing import <name>`` works."""
    return hasattr(adk_pairing, name) or importlib.util.find_spec(f"adk_pairing.{name}") is not None


@pytest.mark.parametrize("name", FLAT_PATHS)
def test_a_flat_path_of_before_the_layers_does_not_import(name: str) -> None:
    assert not _importable(name), f"adk_pairing.{name} imports: give each module one path"


@pytest.mark.parametrize("name", ["wire", "ledger", "adk", "rules", "PairingPlugin"])
def test_the_flat_path_check_sees_what_does_import(name: str) -> None:
    """The check above can fail: the same test says yes to what is there."""
    assert _importable(name)

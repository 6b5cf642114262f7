"""The layers the file list promises: no import circle, and a core that never awaits."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import adk_pairing

# Reads our source files only.
pytestmark = pytest.mark.version_independent

PACKAGE = Path(adk_pairing.__file__).parent
#: Modules that hold rules and never do I/O: no ``async def``, no ``await``.
PURE = (
    "analysis.py",
    "analysis_cache.py",
    "builder_traits.py",
    "request_pass.py",
    "ownership.py",
    "builder_check.py",
    "placeholders.py",
    "repair.py",
    "view.py",
    "wire.py",
)

#: The wire rules (`adk_pairing.wire`): defined there, imported everywhere else.
WIRE_RULES = frozenset(
    {
        "MODEL_ROLES",
        "HELD_OPEN_CALL_NAMES",
        "ANTHROPIC_ID",
        "ID_PAIRING_MODELS",
        "anthropic_block",
        "branch_shows",
        "branches_shown_to",
        "held_by_child",
        "call_key",
        "is_held_open",
        "is_mixed",
        "never_sent_as_a_call",
        "pairs_calls_by_id",
    }
)


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    """Package modules `path` imports, at module level or inside functions."""
    package = _module_name(path).split(".") if path.name == "__init__.py" else None
    here = package if package is not None else _module_name(path).split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(target.strip("."))
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    return {
        name: {target for target in _imports(path) if target in modules and target != name}
        for name, path in modules.items()
    }


def test_no_module_of_the_package_imports_in_a_circle() -> None:
    graph = _graph()
    # Importing the package itself ("" / "cli") is how submodules reach their
    # package's __init__; those edges are not circles of the layers.
    edges = {name: {t for t in targets if t not in ("", "cli")} for name, targets in graph.items()}
    state: dict[str, int] = {}
    circle: list[str] = []

    def visit(name: str, trail: list[str]) -> bool:
        state[name] = 1
        for target in sorted(edges.get(name, ())):
            if state.get(target) == 1:
                circle.extend([*trail, name, target])
                return True
            if target not in state and visit(target, [*trail, name]):
                return True
        state[name] = 2
        return False

    for name in sorted(edges):
        if name not in state and visit(name, []):
            break
    assert not circle, " -> ".join(circle)


def test_the_factory_does_not_import_the_decorator() -> None:
    assert "service" not in _graph()["factory"]


def test_secret_masking_and_the_uri_grammar_are_leaves() -> None:
    graph = _graph()
    assert graph["uris"] == set()
    assert graph["masking"] == {"uris"}


def test_the_core_and_the_view_never_await() -> None:
    for name in PURE:
        tree = ast.parse((PACKAGE / name).read_text())
        awaiting = [
            type(node).__name__
            for node in ast.walk(tree)
            if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith))
        ]
        assert not awaiting, f"{name}: {awaiting}"


def test_the_wire_rules_import_nothing_of_ours() -> None:
    assert _graph()["wire"] == set()


def test_each_wire_rule_is_defined_in_the_wire_module_alone() -> None:
    """No module restates a wire rule under its name, public or private."""
    restated: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "wire.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            restated += [f"{path.name}: {name}" for name in names if name.lstrip("_") in WIRE_RULES]
    assert not restated, restated


def test_the_placeholders_are_a_leaf_and_the_request_pass_skips_the_view_repair() -> None:
    """The request pass answers with the view's placeholder without the view's check."""
    graph = _graph()
    assert graph["placeholders"] <= {"adk_compat", "analysis", "wire", "builder_traits"}
    assert not {"repair", "builder_check", "view"} & graph["request_pass"]

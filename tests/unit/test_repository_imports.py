"""No import circle anywhere in the repository: benchmarks/ and tests/ as well as the package.

`test_layers` holds the package to its layers; the scripts around it import each other by
plain module names (benchmarks/ runs with its own folder on ``sys.path``) or as ``tests.*``,
and a circle there makes a module's meaning depend on which one was imported first.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

# Reads our source files only.
pytestmark = pytest.mark.version_independent

REPOSITORY = Path(__file__).resolve().parents[2]


def _modules(root: Path, prefix: tuple[str, ...]) -> dict[str, Path]:
    """Module name -> file, for every .py below `root`, named as seen from its sys.path entry."""
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = (*prefix, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The known modules `path` (module `name`) imports, anywhere in its body."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        candidates: list[str] = []
        if isinstance(node, ast.Import):
            candidates = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            candidates = [module, *(f"{module}.{alias.name}" for alias in node.names)]
        for candidate in candidates:
            # `import a.b.c` also runs a and a.b; the deepest known module is the edge.
            parts = candidate.split(".")
            for depth in range(len(parts), 0, -1):
                target = ".".join(parts[:depth])
                if target in known:
                    if target != name and not name.startswith(f"{target}."):
                        targets.add(target)
                    break
    return targets


def _circle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    trail: list[str] = []

    def visit(name: str) -> list[str]:
        state[name] = 1
        trail.append(name)
        for target in sorted(graph[name]):
            if state.get(target) == 1:
                return [*trail[trail.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        trail.pop()
        state[name] = 2
        return []

    for name in sorted(graph):
        if name not in state and (found := visit(name)):
            return found
    return []


@pytest.mark.parametrize(
    ("folder", "prefix"),
    [("benchmarks", ()), ("tests", ("tests",))],
)
def test_the_scripts_beside_the_package_import_in_no_circle(folder: str, prefix: tuple) -> None:
    known = _modules(REPOSITORY / folder, prefix)
    graph = {name: _imported(name, path, known) for name, path in known.items()}
    assert not (circle := _circle(graph)), " -> ".join(circle)


def test_a_circle_is_found_where_there_is_one() -> None:
    assert _circle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert _circle({"a": {"b"}, "b": set()}) == []

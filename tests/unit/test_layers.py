"""The layers the file list promises: calls go down only, and the core never awaits.

Shells (the decorator, the plugin, the factory, the CLI) call passes (the
view, the request pass), passes call the core (the ledger, the repair, the
placeholders, the checks against ADK's builder), the core calls the wire rules,
and each returns: nothing below calls back up. Asserted twice: on the imports
of every module of the package, and on the frames of a real append through
the decorator (`test_an_append_calls_only_downward_through_the_layers`). Each wire rule is
defined in ``wire.py`` alone, and each provider rule's function in
``provider_rules.py`` alone: it and the normal form it reads (``request_form.py``)
are the only modules that read the providers' messages.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable
from pathlib import Path

import pytest

import adk_pairing

# Reads our source files only.
pytestmark = pytest.mark.version_independent

PACKAGE = Path(adk_pairing.__file__).parent
#: Modules that hold rules and never do I/O: no ``async def``, no ``await``.
PURE = (
    "ledger/__init__.py",
    "ledger/calls.py",
    "ledger/child_runs.py",
    "ledger/history.py",
    "ledger/older_builders.py",
    "ledger/open_calls.py",
    "ledger/pairing.py",
    "ledger/placement.py",
    "ledger/rewinds.py",
    "ledger/reads.py",
    "core/analysis_cache.py",
    "core/lru.py",
    "adk/builder.py",
    "adk/events.py",
    "adk/internals.py",
    "adk/_modules.py",
    "adk/models.py",
    "passes/request_pass.py",
    "passes/request_records.py",
    "passes/request_rewrite.py",
    "passes/request_scan.py",
    "passes/restore_pass.py",
    "core/ownership.py",
    "rules/builder_check.py",
    "core/placeholders.py",
    "rules/provider_rules.py",
    "rules/request_form.py",
    "core/repair.py",
    "passes/view.py",
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
        "may_collide_with_a_fallback",
    }
)


#: The layers, lowest first. A module imports from its own layer and those below.
WIRE, CORE, PASSES, SHELLS = range(4)
LAYER_NAMES = ("wire", "core", "passes", "shells")
#: Each module's layer; every module of the package must be placed here (the CLI
#: package, ``cli`` and ``cli.*``, is a shell as a whole).
LAYER_OF = {
    "wire": WIRE,
    # The ledger's parts (`adk_pairing.ledger`).
    "ledger": CORE,
    "ledger.calls": CORE,
    "ledger.child_runs": CORE,
    "ledger.history": CORE,
    "ledger.older_builders": CORE,
    "ledger.open_calls": CORE,
    "ledger.pairing": CORE,
    "ledger.placement": CORE,
    "ledger.rewinds": CORE,
    "core.analysis_cache": CORE,
    "core.lru": CORE,
    "ledger.reads": CORE,
    "core.ownership": CORE,
    "core.placeholders": CORE,
    # The providers' rules, each once, and their registry.
    "rules.provider_rules": CORE,
    # The one normal form of a request the provider rules read.
    "rules.request_form": CORE,
    "core.repair": CORE,
    # The checks: the repair asks ADK's own builder whether a view is never worse.
    "rules.builder_check": CORE,
    "rules.checks": CORE,
    # What the installed ADK does, detected by feature: read by the core and the shells.
    "adk": CORE,
    "adk._modules": CORE,
    "adk.builder": CORE,
    "adk.events": CORE,
    "adk.internals": CORE,
    "adk.models": CORE,
    "adk.stores": CORE,
    "passes.request_pass": PASSES,
    # The request pass in parts: what it reports, its detection, its rewrite.
    "passes.request_records": PASSES,
    "passes.request_rewrite": PASSES,
    "passes.request_scan": PASSES,
    # The plugin's restore of dropped calls: the view's placement, then the request pass.
    "passes.restore_pass": PASSES,
    "passes.view": PASSES,
    "": SHELLS,
    "__main__": SHELLS,
    "shells.adk_services": SHELLS,
    "shells.agent_pass": SHELLS,
    "shells.config": SHELLS,
    # The error types and the one-line messages the library and the CLI share.
    "shells.errors": SHELLS,
    "shells.extras": SHELLS,
    "shells.factory": SHELLS,
    "shells.masking": SHELLS,
    "shells.metrics": SHELLS,
    # What the shells log once per process.
    "shells.once": SHELLS,
    "shells.plugin": SHELLS,
    "shells.service": SHELLS,
    # The decorator's calls of a SQLite store, shielded from cancellation.
    "shells.shielding": SHELLS,
    # Which ADK service wrote a store's tables (the library and the CLI refuse the other).
    "shells.store_layouts": SHELLS,
    "shells.uris": SHELLS,
    # The layers' packages.
    "rules": CORE,
    "core": CORE,
    "passes": PASSES,
    "shells": SHELLS,
}


def _layer(module: str) -> int:
    if module == "cli" or module.startswith("cli."):
        return SHELLS
    return LAYER_OF[module]


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in PACKAGE.rglob("*.py")}


def _imports(path: Path, modules: Iterable[str]) -> set[str]:
    """Package modules `path` imports (see `_imported`)."""
    name = _module_name(path)
    return _imported(path.read_text(), name, path.name == "__init__.py", modules)


def _imported(source: str, name: str, is_package: bool, modules: Iterable[str]) -> set[str]:
    """Package modules module `name` imports, relatively or absolutely, anywhere in it.

    ``from . import view`` imports the module ``view``, not the package.
    """
    known = set(modules)
    here = name.split(".") if is_package else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                head, _, rest = alias.name.partition(".")
                if head == PACKAGE.name:
                    found.add(rest)
            continue
        if not isinstance(node, ast.ImportFrom):
            continue
        module = (node.module or "").split(".") if node.module else []
        if node.level:
            base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            target = ".".join([*base, *module]).strip(".")
        elif module and module[0] == PACKAGE.name:
            target = ".".join(module[1:])
        else:
            continue
        for alias in node.names:
            submodule = f"{target}.{alias.name}".strip(".")
            found.add(submodule if submodule in known else target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {
        name: {target for target in _imports(path, modules) if target in modules and target != name}
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


def test_every_module_has_a_layer() -> None:
    unplaced = [name for name in _modules() if name != "cli" and not name.startswith("cli.")]
    assert not [name for name in unplaced if name not in LAYER_OF], "add it to LAYER_OF"
    assert not [name for name in LAYER_OF if name not in _modules()], "a module is gone"


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name or '__init__'} ({LAYER_NAMES[_layer(name)]}) imports "
        f"{target or '__init__'} ({LAYER_NAMES[_layer(target)]})"
        for name, targets in graph.items()
        for target in targets
        if _layer(target) > _layer(name)
    )


def test_each_module_imports_only_its_own_layer_and_those_below() -> None:
    """Shells import passes, core and wire; passes the core and wire; the core the wire."""
    assert not _upward_imports(_graph())


@pytest.mark.parametrize(
    "spelling",
    [
        "from ..passes.view import PairedSession",
        "from ..shells import service",
        "from ..cli._scan import scan",
        "from adk_pairing.shells.plugin import PairingPlugin",
        "from adk_pairing.passes import request_pass",
        "import adk_pairing.passes.view",
    ],
)
def test_an_upward_import_in_the_core_is_caught(spelling: str) -> None:
    """Every spelling of an import is read, inside a function too."""
    modules = _modules()
    graph = _graph()
    graph["core.repair"] = _imported(f"def f():\n    {spelling}\n", "core.repair", False, modules)
    assert _upward_imports(graph)


def test_the_factory_does_not_import_the_decorator() -> None:
    assert "shells.service" not in _graph()["shells.factory"]


def test_secret_masking_and_the_uri_grammar_are_leaves() -> None:
    graph = _graph()
    assert graph["shells.uris"] == set()
    assert graph["shells.masking"] == {"shells.uris"}


def test_the_core_and_the_view_never_await() -> None:
    for name in PURE:
        tree = ast.parse((PACKAGE / name).read_text())
        awaiting = [
            type(node).__name__
            for node in ast.walk(tree)
            if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith))
        ]
        assert not awaiting, f"{name}: {awaiting}"


def _private_names_taken(source: str, name: str, is_package: bool, modules: set[str]) -> list[str]:
    """Private names of other modules of ours that module `name` imports or reads.

    ``from .service import _x`` and ``service._x`` both count; a private module
    (``from . import _scan``) does not: it is a module of its package, not a name.
    """
    here = name.split(".") if is_package else name.split(".")[:-1]
    taken: list[str] = []
    imported_modules: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        module = node.module.split(".") if node.module else []
        if node.level:
            base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            target = ".".join([*base, *module]).strip(".")
        elif module and module[0] == PACKAGE.name:
            target = ".".join(module[1:])
        else:
            continue
        for alias in node.names:
            if f"{target}.{alias.name}".strip(".") in modules:
                imported_modules.add(alias.asname or alias.name)
            elif alias.name.startswith("_") and not alias.name.startswith("__"):
                taken.append(f"{name}: {alias.name} from {target or '__init__'}")
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in imported_modules
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            taken.append(f"{name}: {node.value.id}.{node.attr}")
    return taken


def test_no_module_takes_another_modules_private_name() -> None:
    """A name with a leading underscore is its module's own: what another module
    needs has a public name, in the lowest layer that all its users can import.
    """
    modules = set(_modules())
    taken = [
        private
        for name, path in _modules().items()
        for private in _private_names_taken(
            path.read_text(), name, path.name == "__init__.py", modules
        )
    ]
    assert not taken, taken


@pytest.mark.parametrize(
    "spelling",
    [
        "from .service import PairingSessionService, _logged_once",
        "from adk_pairing.shells.service import _shape_name",
        "from . import service\nservice._logged_once.first_time(())",
    ],
)
def test_a_private_name_taken_from_another_module_is_caught(spelling: str) -> None:
    assert _private_names_taken(spelling, "shells.plugin", False, set(_modules()))


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


#: The modules of the provider rules: the rules and the normal form they read.
RULES_MODULES = ("provider_rules.py", "request_form.py")


def _provider_rule_functions() -> set[str]:
    """Every rule function: the registry's, their helpers and the normal form's."""
    from adk_pairing.rules import provider_rules, request_form

    registered = {rule.violations.__name__ for rule in provider_rules.PROVIDER_RULES.values()}
    public = {
        name
        for module in (provider_rules, request_form)
        for name in module.__all__
        if inspect.isfunction(getattr(module, name))
        and getattr(module, name).__module__ == module.__name__
    }
    return registered | public


def test_each_provider_rule_function_is_defined_in_the_rules_module_alone() -> None:
    """No module defines a provider rule's function again, under its name, public or private.

    The functions are the registry's (`provider_rules.PROVIDER_RULES`), the
    helpers it exports and the normal form's (`request_form`); every one must
    live in one of `RULES_MODULES`, and be defined there once.
    """
    from adk_pairing.rules import provider_rules

    functions = _provider_rule_functions()
    assert {"anthropic", "gemini", "openai_chat", "strict_alternation"} <= functions
    for rule in provider_rules.PROVIDER_RULES.values():
        assert rule.violations.__module__ == provider_rules.__name__, rule.name
    bare = {name.lstrip("_") for name in functions}
    defined_elsewhere: list[str] = []
    defined_in_the_rules: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        if path.name in RULES_MODULES:
            defined_in_the_rules += [
                node.name.lstrip("_")
                for node in ast.walk(ast.parse(path.read_text()))
                if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in bare
            ]
            continue
        defined_elsewhere += [
            f"{path.name}: {node.name}"
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.name.lstrip("_") in bare
        ]
    assert not defined_elsewhere, defined_elsewhere
    assert sorted(defined_in_the_rules) == sorted(set(defined_in_the_rules)), "defined twice"


#: The words of the providers' wire (block types, tool message fields): a module
#: that reads them is reading a converter's messages, which only the rules do.
_PROVIDER_WIRE_WORDS = frozenset({"tool_use", "tool_result", "tool_use_id", "tool_call_id"})


def _reads_provider_messages(source: str, name: str) -> list[str]:
    """Where `source` reads converted blocks, pairs id-less calls by position
    (`wire.IdlessCalls`) or tests for a turn boundary itself.
    """
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and node.value in _PROVIDER_WIRE_WORDS:
            found.append(f"{name}:{node.lineno}: {node.value!r}")
        if isinstance(node, ast.Name) and node.id == "IdlessCalls":
            found.append(f"{name}:{node.lineno}: IdlessCalls")
        # ``is_model and previous_is_model is False``: `starts_a_model_turn`'s test. A
        # ``previous_is_model is False`` alone asks whether two user-side contents
        # follow each other (the request pass's alternation), not where a turn starts.
        if (
            isinstance(node, ast.BoolOp)
            and isinstance(node.op, ast.And)
            and any(
                isinstance(value, ast.Compare)
                and isinstance(value.left, ast.Name)
                and value.left.id.startswith("previous")
                and any(isinstance(c, ast.Constant) and c.value is False for c in value.comparators)
                for value in node.values
            )
        ):
            found.append(f"{name}:{node.lineno}: a turn boundary")
    return found


def test_only_the_rules_module_reads_the_providers_messages() -> None:
    """The logic of a rule, not only its name: no other module reads converted blocks,
    pairs id-less calls by position (`wire.IdlessCalls`) or tests for a turn boundary.
    """
    found = [
        reading
        for path in PACKAGE.rglob("*.py")
        if path.name not in (*RULES_MODULES, "wire.py")
        for reading in _reads_provider_messages(path.read_text(), path.name)
    ]
    assert not found, found


@pytest.mark.parametrize(
    "spelling",
    [
        "starts = is_model and previous_is_model is False",
        "if block['type'] == 'tool_use': pass",
        "pending = IdlessCalls()",
    ],
)
def test_a_module_reading_the_providers_messages_is_caught(spelling: str) -> None:
    assert _reads_provider_messages(spelling, "m.py")


def test_a_restated_provider_rule_is_caught() -> None:
    """The check can fail: a module defining `anthropic_pairing` (or `_unique_tool_use_ids`)."""
    functions = {name.lstrip("_") for name in _provider_rule_functions()}
    for spelling in ("def anthropic_pairing(request): ...", "def _unique_tool_use_ids(r): ..."):
        [node] = ast.parse(spelling).body
        assert isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in functions


def test_the_placeholders_are_a_leaf_and_the_request_pass_skips_the_view_repair() -> None:
    """The request pass answers with the view's placeholder without the view's check."""
    graph = _graph()
    assert graph["core.placeholders"] <= {"adk", "ledger", "wire"}
    for part in ("request_pass", "request_records", "request_rewrite", "request_scan"):
        assert not {"core.repair", "rules.builder_check", "passes.view"} & graph[f"passes.{part}"]

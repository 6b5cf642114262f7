"""The layers the file list promises: imports go down only, and nothing below the shells awaits.

From the bottom: ``wire.py`` (each rule about the wire, once), ``adk/`` (what
the installed ADK does, by feature), ``rules/`` and ``ledger/`` (the providers'
rules and who answers whom: pure, side by side), ``core/`` (placeholders,
repair, what is remembered, ownership), ``passes/`` (the view, the request
pass, the restore), ``shells/`` (the decorator, the plugin, the factory) and
``cli/``. A module imports from its own layer and those below, never above;
its layer is its folder's (`LAYERS`). Asserted on the imports of every module
of the package, and on the frames of a real append through the decorator
(tests/unit/test_layers_at_runtime.py). docs/development.md's map names the
layers in this order and every module of the file list.

Each wire rule is defined in ``wire.py`` alone, and each provider rule's
function in ``provider_rules.py`` alone: it and the normal form it reads
(``request_form.py``) are the only modules that read the providers' messages.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Iterable
from pathlib import Path

import pytest

import adk_pairing

# Reads our source files only.
pytestmark = pytest.mark.version_independent

PACKAGE = Path(adk_pairing.__file__).parent
DEVELOPMENT_MD = Path(__file__).parents[2] / "docs" / "development.md"

#: The layers, lowest first. A module imports from its own layer and those below.
WIRE, ADK, RULES_LEDGER, CORE, PASSES, SHELLS, CLI = range(7)
LAYER_NAMES = ("wire", "adk", "rules / ledger", "core", "passes", "shells", "cli")
#: Each layer's folders (``wire`` is one module). A module's layer is its folder's.
LAYERS = {
    "wire": WIRE,
    "adk": ADK,
    "rules": RULES_LEDGER,
    "ledger": RULES_LEDGER,
    "core": CORE,
    "passes": PASSES,
    "shells": SHELLS,
    "cli": CLI,
}
#: The modules outside the folders: the package's front (``__init__``, which
#: exports the shells' names) and ``python -m adk_pairing`` (the command line).
OUTSIDE_THE_FOLDERS = {"": SHELLS, "__main__": CLI}
#: Below the shells nothing awaits (no ``async def``, no ``await``) but two
#: ADK probes whose ADK function is a coroutine: closing a store, and running
#: ADK's contents request processor again (the plugin's restore).
AWAITS_BELOW_THE_SHELLS = frozenset({"adk.stores", "adk.callbacks"})


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


def _layer(module: str) -> int:
    if module in OUTSIDE_THE_FOLDERS:
        return OUTSIDE_THE_FOLDERS[module]
    return LAYERS[module.split(".")[0]]


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
    """A module outside the layers' folders (a flat ``adk_pairing/view.py``, say) has none."""
    unplaced = [
        name
        for name in _modules()
        if name not in OUTSIDE_THE_FOLDERS and name.split(".")[0] not in LAYERS
    ]
    assert not unplaced, "put it in its layer's folder"
    assert all((PACKAGE / folder).is_dir() for folder in LAYERS if folder != "wire")
    assert (PACKAGE / "wire.py").is_file()


def _upward_imports(graph: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{name or '__init__'} ({LAYER_NAMES[_layer(name)]}) imports "
        f"{target or '__init__'} ({LAYER_NAMES[_layer(target)]})"
        for name, targets in graph.items()
        for target in targets
        if _layer(target) > _layer(name)
    )


def test_each_module_imports_only_its_own_layer_and_those_below() -> None:
    """wire <- adk <- rules / ledger <- core <- passes <- shells <- cli, and never back."""
    assert not _upward_imports(_graph())


@pytest.mark.parametrize(
    ("module", "spelling"),
    [
        ("wire", "from .adk import builder_traits"),
        ("adk.builder", "from ..ledger import PairingLedger"),
        ("adk.models", "from ..rules.provider_rules import PROVIDER_RULES"),
        ("ledger.pairing", "from ..core.placeholders import placeholder_part"),
        ("rules.builder_check", "from ..core.repair import repair_history"),
        ("core.repair", "from ..passes.view import PairedSession"),
        ("core.repair", "from adk_pairing.passes import request_pass"),
        ("core.repair", "import adk_pairing.passes.view"),
        ("passes.view", "from ..shells import service"),
        ("passes.request_pass", "from adk_pairing.shells.plugin import PairingPlugin"),
        ("shells.service", "from ..cli._store_scan import scan"),
    ],
)
def test_an_import_one_layer_up_is_caught(module: str, spelling: str) -> None:
    """Each step of the order, and every spelling of an import, inside a function too."""
    modules = _modules()
    graph = _graph()
    graph[module] = _imported(f"def f():\n    {spelling}\n", module, False, modules)
    assert _upward_imports(graph)


def test_rules_and_ledger_are_one_layer_and_core_is_the_core_folder_alone() -> None:
    assert _layer("rules.provider_rules") == _layer("ledger.pairing") == RULES_LEDGER
    in_core = sorted(name for name in _modules() if _layer(name) == CORE)
    assert in_core == sorted(name for name in _modules() if name.split(".")[0] == "core")


def test_the_factory_does_not_import_the_decorator() -> None:
    assert "shells.service" not in _graph()["shells.factory"]


def test_secret_masking_and_the_uri_grammar_are_leaves() -> None:
    graph = _graph()
    assert graph["shells.uris"] == set()
    assert graph["shells.masking"] == {"shells.uris"}


def _awaits(path: Path) -> list[str]:
    return [
        type(node).__name__
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, (ast.AsyncFunctionDef, ast.Await, ast.AsyncFor, ast.AsyncWith))
    ]


def test_nothing_below_the_shells_awaits() -> None:
    """The wire, the probes, the rules, the ledger, the core and the passes are pure:
    the shells do the I/O and hand them what the store returned.
    """
    below = {name: path for name, path in _modules().items() if _layer(name) < SHELLS}
    assert set(below) >= AWAITS_BELOW_THE_SHELLS
    awaiting = {name: found for name, path in below.items() if (found := _awaits(path))}
    assert set(awaiting) == AWAITS_BELOW_THE_SHELLS, awaiting


def _map_of_the_layers() -> str:
    """docs/development.md's section on the layers, up to the next section."""
    text = DEVELOPMENT_MD.read_text()
    start = text.index("## The package's layers")
    end = text.find("\n### ", start)
    return text[start : end if end != -1 else len(text)]


def test_the_development_map_names_the_layers_in_order_and_every_module() -> None:
    """Its bullets are the layers, lowest first, and each module is named by its path."""
    section = _map_of_the_layers()
    bullets = re.findall(r"^- \*\*([^*]+)\*\*", section, re.MULTILINE)
    assert tuple(bullets) == LAYER_NAMES
    folders = "|".join(folder for folder in LAYERS if folder != "wire")
    pattern = rf"`((?:{folders})/(?:[a-z_]+/)*[a-z_]+\.py|wire\.py)`"
    # A package's __init__ is its folder's front: the map names the folder.
    named = {name for name in re.findall(pattern, section) if not name.endswith("__init__.py")}
    files = {
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py")
    }
    assert sorted(files - named) == [], "name it in docs/development.md's map"
    assert sorted(named - files) == [], "the map names a file that is gone"


def _private_names_taken(source: str, name: str, is_package: bool, modules: set[str]) -> list[str]:
    """Private names of other modules of ours that module `name` imports or reads.

    ``from .service import _x`` and ``service._x`` both count; a private module
    (``from . import _store_scan``) does not: it is a module of its package, not a name.
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


def _exported_but_not_defined(source: str) -> list[str]:
    """The names a module's ``__all__`` lists that the module does not define itself."""
    tree = ast.parse(source)
    defined: set[str] = set()
    exported: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {target.id for target in targets if isinstance(target, ast.Name)}
            defined |= names
            if "__all__" in names and isinstance(node.value, (ast.List, ast.Tuple)):
                exported = [
                    item.value for item in node.value.elts if isinstance(item, ast.Constant)
                ]
    return [name for name in exported if name not in defined]


def test_a_module_exports_only_what_it_defines() -> None:
    """Each name has one home: only a package's front (its ``__init__``) re-exports."""
    re_exported = {
        name: found
        for name, path in _modules().items()
        if path.name != "__init__.py" and (found := _exported_but_not_defined(path.read_text()))
    }
    assert not re_exported, re_exported


def test_a_re_export_is_caught() -> None:
    source = "from .view import PairedSession\n__all__ = ['PairedSession', 'f']\ndef f(): ...\n"
    assert _exported_but_not_defined(source) == ["PairedSession"]


def test_the_wire_rules_import_nothing_of_ours() -> None:
    assert _graph()["wire"] == set()


def test_the_wire_rules_probe_nothing_of_adk() -> None:
    """What the installed ADK does is probed in adk/: wire imports no ADK module, anywhere."""
    names: list[str] = []
    for node in ast.walk(ast.parse((PACKAGE / "wire.py").read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    assert names, "the walk found wire's imports"
    assert [name for name in names if name.startswith("google.adk")] == []


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
    for part in (
        "request_pass",
        "request_prepare",
        "request_records",
        "request_rewrite",
        "request_scan",
    ):
        assert not {"core.repair", "rules.builder_check", "passes.view"} & graph[f"passes.{part}"]

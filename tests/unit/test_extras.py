"""Which extra a store URI needs, and the CLI's one line naming it.

The real proof that the base install lacks these modules is
scripts/check-wheel.sh (a fresh virtualenv with the wheel and no extras);
here the mapping itself is pinned, and checked against pyproject.toml.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from adk_pairing.cli import app
from adk_pairing.shells import extras

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def _requirement_names(extra: str) -> set[str]:
    """The distribution names an extra lists, following self-references."""
    table = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    names: set[str] = set()
    for requirement in table[extra]:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0].lower()
        if name == "adk-pairing":
            inner = re.search(r"\[(.*)\]", requirement)[1]
            for nested in inner.split(","):
                names |= _requirement_names(nested.strip())
        else:
            names.add(name)
    return names


@pytest.mark.parametrize(
    ("uri", "modules", "extra"),
    [
        ("postgresql+asyncpg://u:pw@h/db", ("sqlalchemy", "asyncpg"), "postgres"),
        ("pairing+postgresql+asyncpg://u:pw@h/db", ("sqlalchemy", "asyncpg"), "postgres"),
        ("sqlite+aiosqlite:///sessions.db", ("sqlalchemy",), "postgres"),
        ("mysql+aiomysql://u:pw@h/db", ("sqlalchemy", "aiomysql"), "mysql"),
        ("pairing+mariadb+aiomysql://u:pw@h/db", ("sqlalchemy", "aiomysql"), "mysql"),
        ("mysql+asyncmy://u:pw@h/db", ("sqlalchemy",), "mysql"),
        ("postgresql+psycopg://u:pw@h/db", ("sqlalchemy",), "postgres"),
        ("redis://localhost:6379/0", ("redis",), "redis"),
        ("pairing+rediss://:pw@h:6380/0", ("redis",), "redis"),
    ],
)
def test_store_uris_name_the_modules_and_extra_they_need(uri, modules, extra) -> None:
    assert extras.needed_modules(uri) == (modules, extra)


@pytest.mark.parametrize("uri", ["sqlite:///sessions.db", "memory://", "agentengine://x", "x.db"])
def test_stores_the_base_install_serves_need_no_extra(uri) -> None:
    assert extras.needed_modules(uri) is None


def test_every_module_named_is_installed_by_the_extra_named() -> None:
    for modules, extra in extras.MODULES_FOR_SCHEME.values():
        assert set(modules) <= _requirement_names(extra), (modules, extra)


def test_missing_extra_lists_only_the_modules_that_do_not_import(monkeypatch) -> None:
    installed = {"sqlalchemy"}
    monkeypatch.setattr(
        extras.importlib.util, "find_spec", lambda name: object() if name in installed else None
    )

    assert extras.missing_extra("postgresql+asyncpg://h/db") == (["asyncpg"], "postgres")
    assert extras.missing_extra("sqlite+aiosqlite:///x.db") is None
    assert extras.missing_extra("redis://h") == (["redis"], "redis")


@pytest.mark.parametrize("command", ["scan", "show"])
def test_cli_names_the_extra_in_one_line_and_exits_2(monkeypatch, command) -> None:
    monkeypatch.setattr(extras.importlib.util, "find_spec", lambda name: None)
    args = [command, "postgresql+asyncpg://u:s3cret@h:5432/db"]
    if command == "show":
        args += ["--app", "a", "--user", "u", "--session", "s"]

    result = CliRunner().invoke(app, args)

    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        "error: postgresql+asyncpg://u:***@h:5432/db needs sqlalchemy and asyncpg, which "
        "adk-pairing's base install leaves out: pip install 'adk-pairing[postgres]'"
    ]


def test_version_option_prints_the_package_version() -> None:
    from adk_pairing import __version__

    result = CliRunner().invoke(app, ["--version"])

    assert result.exit_code == 0
    assert result.stdout == f"adk-pairing {__version__}\n"


def test_demo_checks_anthropic_rule_when_adks_converter_imports() -> None:
    from adk_pairing.cli import _demo

    assert _demo.request_rule() is _demo.ANTHROPIC_RULE  # the test extra installs anthropic


def test_demo_falls_back_to_gemini_rule_when_adks_anthropic_converter_cannot_import(
    monkeypatch,
) -> None:
    import sys

    import google.adk.models

    from adk_pairing.adk import anthropic_converter_installed
    from adk_pairing.cli import _demo

    monkeypatch.delattr(google.adk.models, "anthropic_llm", raising=False)
    monkeypatch.setitem(sys.modules, "google.adk.models.anthropic_llm", None)
    anthropic_converter_installed.cache_clear()  # probed once per process
    try:
        assert _demo.request_rule() is _demo.GEMINI_RULE
    finally:
        monkeypatch.undo()
        anthropic_converter_installed.cache_clear()

"""The reliability suite: load, faults and fuzz, bounded, every figure printed.

Every test here is marked ``reliability`` (select it with ``-m reliability``,
leave it out with ``-m "not reliability"``). Each test reports its figures
through the `figures` fixture: they are printed as the test runs (so
``pytest -rA`` and a failure's captured output show them), kept in the test's
``user_properties`` (JUnit XML), and repeated in a "reliability figures"
section of the terminal summary, with or without ``-s``. Assertions are about
correctness only; the figures are what to read for load and memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The integration suite's store fixtures, shared rather than rewritten.
from tests.integration.conftest import open_store  # noqa: F401

_HERE = Path(__file__).parent
_REPORTED: list[tuple[str, list[str]]] = []


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in item.path.parents:
            item.add_marker(pytest.mark.reliability)


@pytest.fixture
def figures(request: pytest.FixtureRequest) -> Iterator[Callable[[str], None]]:
    """``figures(line)`` reports one line of this test's figures."""
    lines: list[str] = []

    def report(line: str) -> None:
        lines.append(line)
        request.node.user_properties.append(("figure", line))
        print(f"[figures] {line}", flush=True)

    yield report
    _REPORTED.append((request.node.nodeid, lines))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not _REPORTED:
        return
    terminalreporter.section("reliability figures")
    for nodeid, lines in _REPORTED:
        terminalreporter.write_line(nodeid)
        for line in lines:
            terminalreporter.write_line(f"    {line}")

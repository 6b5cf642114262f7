"""The one place store strings are printed (`adk_pairing.cli._printable`), and the CLI's guards.

The strings come from a model's output: any text, lone surrogates, escape
sequences and bidi overrides included. Text must show them as escapes, JSON
must carry them whole and stay valid, and neither may fail to encode.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from adk_pairing.cli import app
from adk_pairing.cli._common import explain
from adk_pairing.cli._printable import CUT_MARK, json_text, printable
from adk_pairing.cli._scan_report import ScanResult

#: Our own code alone: run on the newest google-adk only.
pytestmark = pytest.mark.version_independent

runner = CliRunner()

#: What a model can put in a name: ESC and a colour, BEL, a right-to-left
#: override, a lone surrogate, an invisible tag character, a line separator.
HOSTILE = "t\x1b[31mred\x07\u202eabc\ud800\U000e0041\u2028end"


def _safe_for_a_terminal(text: str) -> bool:
    return all(char.isprintable() for char in text)


def test_printable_shows_every_unsafe_character_as_its_escape() -> None:
    assert printable(HOSTILE) == r"t\x1b[31mred\x07\u202eabc\ud800\U000e0041\u2028end"
    assert printable("plain name, é and 中文") == "plain name, é and 中文"


def test_printable_cuts_long_strings_with_a_marker_never_inside_an_escape() -> None:
    assert printable("a" * 1_000_000, 10) == "a" * 9 + CUT_MARK
    assert printable("a" * 10, 10) == "a" * 10
    cut = printable("ab" + "\x1b" * 10, 10)
    assert cut == r"ab\x1b" + CUT_MARK and len(cut) <= 10


@settings(max_examples=200, deadline=None)
@given(text=st.text(), limit=st.integers(min_value=2, max_value=40))
def test_printable_is_always_safe_and_within_its_width(text: str, limit: int) -> None:
    whole = printable(text)
    assert _safe_for_a_terminal(whole)
    whole.encode("utf-8")  # strict: nothing a UTF-8 console refuses
    cut = printable(text, limit)
    assert _safe_for_a_terminal(cut) and len(cut) <= limit
    assert cut == whole or (cut.endswith(CUT_MARK) and whole.startswith(cut[:-1]))


@settings(max_examples=100, deadline=None)
@given(
    data=st.recursive(
        st.text(),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
        max_leaves=8,
    )
)
def test_json_text_is_valid_whole_and_safe_for_a_terminal(data: Any) -> None:
    for indent in (2, None):
        text = json_text(data, indent=indent)
        text.encode("utf-8")  # strict
        assert json.loads(text) == data
        assert _safe_for_a_terminal(text.replace("\n", ""))


def test_json_text_is_ascii_for_an_output_that_cannot_hold_the_rest() -> None:
    ascii_out = io.TextIOWrapper(io.BytesIO(), encoding="ascii")
    text = json_text({"name": "é\ud800"}, stream=ascii_out)
    assert text.isascii() and json.loads(text) == {"name": "é\ud800"}


def test_a_server_without_a_password_gets_a_sentence_not_correct_dot() -> None:
    class AuthenticationError(Exception):  # redis-py's, by name
        pass

    error = AuthenticationError(
        "AUTH <password> called without any password configured for the default user. "
        "Are you sure your configuration is correct?"
    )
    line = explain(error, "redis://:pw@localhost:6379/0", store_name="the store")
    assert line is not None
    assert "?." not in line and "correct? The server has no password set" in line
    assert "remove the password from the URI" in line


# -- the guards: nothing unexpected reads as a finding, nothing names the URI wrongly ----


def _store_that_raises(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    """`scan` whose store fails, inside the command, with `error` (no store is opened)."""

    async def failing(*args: Any, **kwargs: Any) -> Any:
        raise error

    class Store:
        masked_uri = "sqlite+aiosqlite:///x.db"

        async def close(self) -> None:
            pass

    monkeypatch.setattr("adk_pairing.cli._store.open_read_only", lambda *a, **k: Store())
    monkeypatch.setattr("adk_pairing.cli._store_scan.scan_store", failing)


def test_an_unexpected_error_is_one_line_with_its_own_status_and_no_uri_blame(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A ValueError raised while reading (not while parsing the URI) was called "bad store URI".
    _store_that_raises(monkeypatch, ValueError("something inside went wrong"))
    result = runner.invoke(app, ["scan", "sqlite+aiosqlite:///x.db", "--app", "a"])
    assert result.exit_code == 70, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: unexpected ValueError"), lines
    assert "URI" not in lines[0] and "Traceback" not in result.output


def test_an_unexpected_error_outside_the_read_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A failure while printing the report: before, a traceback and exit 1 (--fail-on's)."""
    report = ScanResult(store="sqlite:///x.db", apps=["a"], user=None, read_only="yes", shard="0/1")
    shard = tmp_path / "shard.json"
    shard.write_text(json.dumps(report.to_json()))

    def broken_render(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("cannot print")

    monkeypatch.setattr("adk_pairing.cli._scan_report.render", broken_render)
    for debug in ([], ["--debug"]):
        result = runner.invoke(app, ["scan", "--merge", str(shard), *debug])
        assert result.exit_code == 70, result.output
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("error: unexpected RuntimeError: cannot print (run again")
        assert ("Traceback" in result.stderr) is bool(debug)


def test_usage_errors_begin_with_error_as_the_tools_own_do() -> None:
    result = runner.invoke(app, ["scan", "sqlite:///x.db", "--fail-on", "sometimes"])
    assert result.exit_code == 2
    assert "Error:" not in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("error: Invalid value for --fail-on")


def test_scan_help_names_both_sqlite_forms() -> None:
    result = runner.invoke(app, ["scan", "--help"], terminal_width=200)
    assert re.search(r"(?<![+\w])sqlite:///", result.stdout), result.stdout
    assert "sqlite+aiosqlite:///" in result.stdout

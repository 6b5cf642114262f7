"""The CLI never prints a password: one-line errors, ``--debug`` tracebacks and logs.

The same generated passwords as tests/unit/test_secrets_never_shown.py, in
URIs of every scheme, given to ``scan`` and ``show`` in-process (typer's
`CliRunner`). Every store is 127.0.0.1 port 1, where nothing listens, so each
command fails the way it does against a mistyped port, or earlier, while
parsing a URI that a password with ``#`` or ``/`` has cut short (or, where
that makes redis-py fall back to localhost:6379, succeeds).
"""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from adk_pairing.cli import app
from tests.unit.test_secrets_never_shown import (
    PLACEHOLDER,
    URI_TEMPLATES,
    assert_hidden,
    meaningful,
    passwords,
    written,
)

runner = CliRunner()


def commands(uri: str) -> list[list[str]]:
    return [
        ["scan", uri, "--app", "shop"],
        ["show", uri, "--app", "shop", "--user", "alice", "--session", "s1"],
    ]


def outputs(uri: str) -> list[str]:
    shown = []
    for command in commands(uri):
        for debug in ([], ["--debug"]):
            # Mostly exit 2; but redis-py reads "redis://:00000#@127.0.0.1:1/0" as
            # port 0, i.e. its default localhost:6379, and that scan succeeds.
            result = runner.invoke(app, command + debug)
            assert result.exit_code in (0, 1, 2), result.output
            shown.append(result.output)
    return shown


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
)
@given(template=st.sampled_from(URI_TEMPLATES), password=passwords, encoded=st.booleans())
@example(template=URI_TEMPLATES[0], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[4], password="S3cret#Pw", encoded=False)
@example(template=URI_TEMPLATES[0], password="S3cret?Pw", encoded=False)
@example(template=URI_TEMPLATES[4], password="S3cret/Pw x", encoded=False)
def test_cli_output_never_shows_the_password(template, password, encoded):
    uri = written(template, password, encoded)
    meaningful(
        password, template, encoded, "\n".join(outputs(written(template, PLACEHOLDER, encoded)))
    )

    for text in outputs(uri):
        assert_hidden(password, text, "the CLI")

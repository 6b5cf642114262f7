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


# -- real servers: a failed login, masked by position, with the fix named ------

import uuid  # noqa: E402
from urllib.parse import quote  # noqa: E402

import pytest  # noqa: E402

from adk_pairing import load_session_service  # noqa: E402
from tests.adk_features import HAS_ADK_REDIS, requires  # noqa: E402
from tests.conftest import PG_HOST, PG_PORT  # noqa: E402
from tests.unit.test_secrets_never_shown import (  # noqa: E402
    CUTTING,
    assert_masked_by_position,
    message_passwords,
    same_shape,
)

needs_adk_redis = requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)")
#: What a right password holding "%41" is read as, and how it must be written.
LITERAL_ESCAPE, WRITTEN_ESCAPE = "Ab%41cd", "Ab%2541cd"


@pytest.fixture
def redis_login(redis_url):
    """A Redis ACL user of this test's own, whose password is `LITERAL_ESCAPE`."""
    import redis

    client = redis.Redis.from_url(redis_url)
    name = f"adk_pairing_test_{uuid.uuid4().hex[:10]}"
    client.acl_setuser(name, enabled=True, passwords=[f"+{LITERAL_ESCAPE}"], commands=["+@all"],
                       keys=["*"])  # fmt: skip
    try:
        yield name
    finally:
        client.acl_deluser(name)
        client.close()


def scan_output(uri: str, debug: bool = False) -> tuple[int, str]:
    result = runner.invoke(app, ["scan", uri, "--app", "shop"] + (["--debug"] if debug else []))
    return result.exit_code, result.output


@needs_adk_redis
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(password=message_passwords)
@example(password="p@ss#word")
@example(password="e@x")
@example(password="1:X?")  # redis-py's port '1:X' was shown
def test_a_wrong_redis_password_shows_our_words_whole_and_no_piece_of_it(redis_login, password):
    """Real Redis, a real ACL user, a wrong password written raw and percent-encoded."""
    for written_password in (password, quote(password, safe="")):
        shown = {}
        for candidate in (written_password, same_shape(written_password)):
            uri = f"redis://{redis_login}:{candidate}@127.0.0.1:6379/0"
            for debug in (False, True):
                exit_code, shown[candidate, debug] = scan_output(uri, debug)
                assert exit_code == 2, shown[candidate, debug]
        for debug in (False, True):
            assert_masked_by_position(
                password, shown[written_password, debug], shown[same_shape(written_password), debug]
            )
        line = shown[written_password, False]
        assert line.startswith("error: ") and line.count("\n") == 1, line
        if written_password != password or not any(char in password for char in CUTTING):
            assert f"redis://{redis_login}:***@127.0.0.1:6379/0 rejected the login" in line
            assert "Fix the password in the URI." in line


@needs_adk_redis
def test_a_right_redis_password_holding_a_percent_escape_gets_the_hint_to_write_25(redis_login):
    """redis-py reads "Ab%41cd" as "AbAcd": the login fails, and the line says % as %25."""
    exit_code, line = scan_output(f"redis://{redis_login}:{LITERAL_ESCAPE}@127.0.0.1:6379/0")

    assert exit_code == 2
    assert "rejected the login" in line
    assert "percent-encode them: % as %25" in line
    assert "41cd" not in line


@needs_adk_redis
def test_the_config_password_key_logs_in_to_redis_whatever_the_password_holds(
    redis_login, tmp_path, unique_prefix
):
    import asyncio

    path = tmp_path / "s.yaml"
    path.write_text(
        "session_service:\n"
        f"  uri: pairing+redis://{redis_login}@127.0.0.1:6379/0\n"
        "  password: ${REDIS_PASSWORD}\n"
        f"  engine: {{key_prefix: '{unique_prefix}'}}\n"
    )

    async def list_sessions() -> int:
        service = load_session_service(path, environ={"REDIS_PASSWORD": LITERAL_ESCAPE})
        try:
            listed = await service.list_sessions(app_name="shop", user_id="alice")
        finally:
            await service.close()
        return len(listed.sessions)

    assert asyncio.run(list_sessions()) == 0


def test_a_postgres_login_rejected_with_a_percent_in_the_password_gets_the_hint(
    postgres_database,
):
    """The local server trusts 127.0.0.1, so a role that does not exist is the failed login."""
    role = f"nosuchrole_{uuid.uuid4().hex[:8]}"
    uri = f"postgresql+asyncpg://{role}:{LITERAL_ESCAPE}@{PG_HOST}:{PG_PORT}/{postgres_database}"

    exit_code, line = scan_output(uri)

    assert exit_code == 2
    assert f"postgresql+asyncpg://{role}:***@{PG_HOST}:{PG_PORT}/" in line
    assert "rejected the login" in line
    assert "percent-encode them: % as %25" in line
    assert "41cd" not in line.lower()


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(password=message_passwords)
@example(password="p@ss#word")
@example(password="e@x")
def test_a_rejected_postgres_login_shows_our_words_whole_and_no_piece_of_the_password(
    postgres_database, password
):
    role = f"nosuchrole_{uuid.uuid4().hex[:8]}"
    shown = {}
    for candidate in (password, same_shape(password)):
        uri = f"postgresql+asyncpg://{role}:{candidate}@{PG_HOST}:{PG_PORT}/{postgres_database}"
        for debug in (False, True):
            exit_code, shown[candidate, debug] = scan_output(uri, debug)
            assert exit_code == 2, shown[candidate, debug]
    for debug in (False, True):
        assert_masked_by_position(
            password, shown[password, debug], shown[same_shape(password), debug]
        )
    assert shown[password, False].startswith("error: ")


def test_readme_config_with_a_raw_password_fails_and_with_the_password_key_works(
    postgres_url, tmp_path
):
    """README's ``DB_PASSWORD='p@ss#word'`` in the URI failed with socket.gaierror."""
    import asyncio

    user_and_rest = postgres_url.split("://", 1)[1]
    user, rest = user_and_rest.split("@", 1)
    environ = {"DB_PASSWORD": "p@ss#word"}

    def sessions(config: str) -> int:
        path = tmp_path / "s.yaml"
        path.write_text(config)

        async def count() -> int:
            service = load_session_service(path, environ=environ)
            try:
                listed = await service.list_sessions(app_name="shop", user_id="alice")
            finally:
                await service.close()
            return len(listed.sessions)

        return asyncio.run(count())

    raw = f"session_service:\n  uri: pairing+postgresql+asyncpg://{user}:${{DB_PASSWORD}}@{rest}\n"
    with pytest.raises(OSError):  # socket.gaierror: "ss#word@127.0.0.1" is no host
        sessions(raw)
    keyed = (
        f"session_service:\n  uri: pairing+postgresql+asyncpg://{user}@{rest}\n"
        "  password: ${DB_PASSWORD}\n"
    )
    assert sessions(keyed) == 0

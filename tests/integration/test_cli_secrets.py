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

import asyncio  # noqa: E402
import glob  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import uuid  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from pathlib import Path  # noqa: E402
from urllib.parse import quote  # noqa: E402

import pytest  # noqa: E402

from adk_pairing import ConfigError, load_session_service  # noqa: E402
from tests.adk_features import HAS_ADK_REDIS, requires  # noqa: E402
from tests.conftest import IN_CI  # noqa: E402
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


def sessions_listed(path: Path, environ: dict[str, str]) -> int:
    """How many sessions of app "shop", user "alice" the service `path` configures lists."""

    async def count() -> int:
        service = load_session_service(path, environ=environ)
        try:
            listed = await service.list_sessions(app_name="shop", user_id="alice")
        finally:
            await service.close()
        return len(listed.sessions)

    return asyncio.run(count())


def scan_output(uri: str, debug: bool = False) -> tuple[int, str]:
    result = runner.invoke(app, ["scan", uri, "--app", "shop"] + (["--debug"] if debug else []))
    return result.exit_code, result.output


def failed_login_lines(password: str, uri_for: Callable[[str], str]) -> dict[str, str]:
    """The CLI's one-line error for `password` written raw and %-encoded, each checked.

    Every run exits 2, prints one line (and with ``--debug`` a traceback),
    and shows no piece of the password that the run for `same_shape` of it
    does not show too.
    """
    lines = {}
    for written_password in (password, quote(password, safe="")):
        shown = {}
        for candidate in (written_password, same_shape(written_password)):
            for debug in (False, True):
                exit_code, shown[candidate, debug] = scan_output(uri_for(candidate), debug)
                assert exit_code == 2, shown[candidate, debug]
        for debug in (False, True):
            assert_masked_by_position(
                password, shown[written_password, debug], shown[same_shape(written_password), debug]
            )
        line = lines[written_password] = shown[written_password, False]
        assert line.startswith("error: ") and line.count("\n") == 1, line
    return lines


@needs_adk_redis
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(password=message_passwords)
@example(password="p@ss#word")
@example(password="e@x")
@example(password="1:X?")  # redis-py's port '1:X' was shown
def test_a_wrong_redis_password_shows_our_words_whole_and_no_piece_of_it(redis_login, password):
    """Real Redis, a real ACL user, a wrong password written raw and percent-encoded."""
    lines = failed_login_lines(password, lambda pw: f"redis://{redis_login}:{pw}@127.0.0.1:6379/0")
    for written_password, line in lines.items():
        if written_password != password or not any(char in password for char in CUTTING):
            assert f"redis://{redis_login}:***@127.0.0.1:6379/0 rejected the login" in line
            assert "Fix the user name or password in the URI." in line


@needs_adk_redis
def test_a_right_redis_password_holding_a_percent_escape_gets_the_hint_to_write_25(redis_login):
    """redis-py reads "Ab%41cd" as "AbAcd": the login fails, and the line says % as %25."""
    exit_code, line = scan_output(f"redis://{redis_login}:{LITERAL_ESCAPE}@127.0.0.1:6379/0")

    assert exit_code == 2
    assert "rejected the login" in line
    assert "if a % is meant literally, write it as %25" in line
    assert "percent-encode" not in line
    assert "41cd" not in line


@needs_adk_redis
def test_the_config_password_key_logs_in_to_redis_whatever_the_password_holds(
    redis_login, tmp_path, unique_prefix
):
    path = tmp_path / "s.yaml"
    path.write_text(
        "session_service:\n"
        f"  uri: pairing+redis://{redis_login}@127.0.0.1:6379/0\n"
        "  password: ${REDIS_PASSWORD}\n"
        f"  engine: {{key_prefix: '{unique_prefix}'}}\n"
    )

    assert sessions_listed(path, {"REDIS_PASSWORD": LITERAL_ESCAPE}) == 0


@pytest.fixture(scope="module")
def password_postgres() -> Iterator[int]:
    """A PostgreSQL server of this module's own that checks passwords; yields its port.

    The shared test server trusts 127.0.0.1, so a wrong password cannot fail
    there. This one is initialised with scram-sha-256 and `SERVER_PASSWORD`.
    """
    newest = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    initdb = shutil.which("initdb") or next(iter(newest), None)
    if initdb is None:
        message = "initdb (PostgreSQL's server binaries) is not installed"
        if IN_CI:
            pytest.fail(f"{message}; CI=true requires it")
        pytest.skip(message)
    pg_ctl = os.path.join(os.path.dirname(os.path.realpath(initdb)), "pg_ctl")
    as_server = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    directory = tempfile.mkdtemp(prefix="adk_pairing_pw_")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    Path(directory, "pw").write_text(SERVER_PASSWORD + "\n")
    if as_server:
        shutil.chown(directory, "postgres")
        shutil.chown(Path(directory, "pw"), "postgres")
    data = os.path.join(directory, "data")
    subprocess.run(
        [*as_server, initdb, "-D", data, "-U", "postgres", "--auth=scram-sha-256",
         f"--pwfile={directory}/pw", "-N"],
        check=True, capture_output=True,
    )  # fmt: skip
    options = f"-p {port} -k {directory} -c listen_addresses=127.0.0.1 -c fsync=off"
    subprocess.run(
        [*as_server, pg_ctl, "-D", data, "-o", options, "-w", "-l", f"{directory}/log", "start"],
        check=True,
        capture_output=True,
    )
    try:
        yield port
    finally:
        subprocess.run([*as_server, pg_ctl, "-D", data, "-m", "immediate", "stop"], check=False,
                       capture_output=True)  # fmt: skip
        shutil.rmtree(directory, ignore_errors=True)


#: The private server's password: every character that cuts or changes a
#: password in a URI, and a literal "%41".
SERVER_PASSWORD = "p@ss#wo/rd?%41 :x"


def postgres_uri(port: int, written_password: str) -> str:
    return f"postgresql+asyncpg://postgres:{written_password}@127.0.0.1:{port}/postgres"


def test_a_right_postgres_password_holding_a_percent_escape_gets_the_hint_to_write_25(
    password_postgres,
):
    """Percent-encoded except its "%41", the right password is read with "A" and refused."""
    written_password = quote(SERVER_PASSWORD, safe="%")
    exit_code, line = scan_output(postgres_uri(password_postgres, written_password))

    assert exit_code == 2
    assert f"postgresql+asyncpg://postgres:***@127.0.0.1:{password_postgres}/postgres" in line
    assert 'rejected the login: password authentication failed for user "postgres"' in line
    assert "if a % is meant literally, write it as %25" in line
    assert "percent-encode" not in line
    # Written with "%25", it logs in: whatever the store lacks, the login is not it.
    exit_code, line = scan_output(postgres_uri(password_postgres, quote(SERVER_PASSWORD, safe="")))
    assert "rejected the login" not in line, line


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(password=message_passwords)
@example(password="p@ss#word")
@example(password="e@x")
def test_a_wrong_postgres_password_shows_our_words_whole_and_no_piece_of_it(
    password_postgres, password
):
    """Real PostgreSQL checking passwords; the wrong one written raw and percent-encoded."""
    lines = failed_login_lines(password, lambda pw: postgres_uri(password_postgres, pw))
    for written_password, line in lines.items():
        if written_password != password:  # read as written: the server refuses it
            assert "password authentication failed" in line, line
            assert "Fix the user name or password in the URI." in line


def test_the_config_password_key_logs_in_to_postgres_whatever_the_password_holds(
    password_postgres, tmp_path
):
    path = tmp_path / "s.yaml"
    path.write_text(
        "session_service:\n"
        f"  uri: pairing+postgresql+asyncpg://postgres@127.0.0.1:{password_postgres}/postgres\n"
        "  password: ${DB_PASSWORD}\n"
    )

    assert sessions_listed(path, {"DB_PASSWORD": SERVER_PASSWORD}) == 0


def test_readme_config_with_a_raw_password_fails_and_with_the_password_key_works(
    postgres_url, tmp_path
):
    """README's ``DB_PASSWORD='p@ss#word'`` in the URI failed with socket.gaierror."""
    user_and_rest = postgres_url.split("://", 1)[1]
    user, rest = user_and_rest.split("@", 1)
    environ = {"DB_PASSWORD": "p@ss#word"}

    def sessions(config: str) -> int:
        path = tmp_path / "s.yaml"
        path.write_text(config)
        return sessions_listed(path, environ)

    raw = f"session_service:\n  uri: pairing+postgresql+asyncpg://{user}:${{DB_PASSWORD}}@{rest}\n"
    # SQLAlchemy would end the password at its "@" and look up "ss#word@127.0.0.1".
    with pytest.raises(ConfigError, match="percent-encode it: # as %23") as refused:
        sessions(raw)
    assert "ss#word" not in str(refused.value)
    keyed = (
        f"session_service:\n  uri: pairing+postgresql+asyncpg://{user}@{rest}\n"
        "  password: ${DB_PASSWORD}\n"
    )
    assert sessions(keyed) == 0


# -- MariaDB: a user of this module's own with `SERVER_PASSWORD` ---------------


@pytest.fixture(scope="module")
def mariadb_login(mariadb_database) -> Iterator[str]:
    """A MariaDB user whose password is `SERVER_PASSWORD`, allowed this session's
    database; yields its URI without the password (``{pw}`` where it goes)."""
    from tests.conftest import MARIADB_HOST, MARIADB_PORT, mariadb_admin

    user = f"adkp_{uuid.uuid4().hex[:10]}"
    mariadb_admin(
        f"CREATE USER '{user}'@'%' IDENTIFIED BY '{SERVER_PASSWORD}'",
        f"GRANT ALL ON `{mariadb_database}`.* TO '{user}'@'%'",
    )
    try:
        yield f"mysql+aiomysql://{user}:{{pw}}@{MARIADB_HOST}:{MARIADB_PORT}/{mariadb_database}"
    finally:
        mariadb_admin(f"DROP USER IF EXISTS '{user}'@'%'")


@pytest.mark.mariadb
@pytest.mark.parametrize("password", ["p@ss#word", "e@x"])
def test_a_wrong_mariadb_password_shows_our_words_whole_and_no_piece_of_it(mariadb_login, password):
    """Real MariaDB, its own user; the wrong password written raw and percent-encoded."""
    lines = failed_login_lines(password, lambda pw: mariadb_login.format(pw=pw))
    for written_password, line in lines.items():
        if written_password != password:  # read as written: the server refuses it
            assert "rejected the login: Access denied for user" in line, line
            assert "Fix the user name or password in the URI." in line


@pytest.mark.mariadb
def test_a_right_mariadb_password_holding_a_percent_escape_gets_the_hint_to_write_25(
    mariadb_login,
):
    """Percent-encoded except its "%41", the right password is read with "A" and refused."""
    exit_code, line = scan_output(mariadb_login.format(pw=quote(SERVER_PASSWORD, safe="%")))

    assert exit_code == 2
    assert mariadb_login.format(pw="***") in line
    assert "rejected the login: Access denied for user" in line
    assert "as %25" in line  # the hint to write a literal % as %25
    # Written with "%25", it logs in: whatever the store lacks, the login is not it.
    exit_code, line = scan_output(mariadb_login.format(pw=quote(SERVER_PASSWORD, safe="")))
    assert "rejected the login" not in line, line


@pytest.mark.mariadb
def test_an_unknown_mariadb_database_names_the_database_as_the_thing_to_fix(mariadb_login):
    uri = mariadb_login.format(pw=quote(SERVER_PASSWORD, safe="")).rsplit("/", 1)[0]
    exit_code, line = scan_output(f"{uri}/adk_pairing_no_such_db")

    assert exit_code == 2
    assert "adk_pairing_no_such_db" in line and "Fix the database name in the URI" in line, line


@pytest.mark.mariadb
async def test_the_library_never_logs_or_raises_the_mariadb_password(mariadb_login):
    """Through the decorator a refused login raises the driver's error; no log line and
    no part of the exception (message, repr, traceback) holds the password."""
    from adk_pairing import create_session_service
    from tests.unit.test_secrets_never_shown import assert_hidden, captured_logs, described

    wrong = "Wr0ng#Pass/word"
    service = create_session_service("pairing+" + mariadb_login.format(pw=quote(wrong, safe="")))
    try:
        with captured_logs() as logs, pytest.raises(Exception) as raised:
            await service.get_session(app_name="shop", user_id="alice", session_id="s1")
    finally:
        await service.close()
    assert "Access denied" in described(raised.value)
    assert_hidden(wrong, described(raised.value), "the exception")
    assert_hidden(wrong, "\n".join(logs), "the logs")

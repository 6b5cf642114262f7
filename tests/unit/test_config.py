"""Config files: parsing, environment expansion, validation, and what errors say.

Every error test asserts the message names the file and the key (or the
variable), and that no secret from the file or the environment leaks into it.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from google.adk.sessions import DatabaseSessionService, InMemorySessionService

from adk_pairing import ConfigError, PairingSessionService, load_config, load_session_service
from adk_pairing.core.analysis_cache import DEFAULT_ANALYSIS_CACHE_SIZE
from tests.adk_features import HAS_ADK_REDIS, requires

SECRET = "Pa55-w0rd-xyz"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def config_error(path: Path, environ: dict[str, str] | None = None) -> str:
    """The message of the ConfigError that loading `path` raises."""
    with pytest.raises(ConfigError) as raised:
        load_config(path, environ=environ or {})
    message = str(raised.value)
    assert str(path) in message, "every error names the file"
    assert raised.value.path == str(path)
    return message


# -- happy paths ----------------------------------------------------------------


def test_yaml_file_with_env_expansion_texts_and_engine_options(tmp_path):
    path = write(
        tmp_path,
        "sessions.yaml",
        """
        session_service:
          uri: pairing+postgresql+asyncpg://${DB_USER}:${DB_PASSWORD}@db:5432/${DB_NAME:-agents}
          pairing:
            missing_text: "No result for ${TOOL_KIND:-this call}."
            pending_text: still waiting
          engine: {pool_size: 10, pool_pre_ping: true}
        """,
    )

    settings = load_config(path, environ={"DB_USER": "svc", "DB_PASSWORD": SECRET})

    assert settings.uri == f"pairing+postgresql+asyncpg://svc:{SECRET}@db:5432/agents"
    assert settings.inner_uri == f"postgresql+asyncpg://svc:{SECRET}@db:5432/agents"
    assert settings.masked_uri == "pairing+postgresql+asyncpg://svc:***@db:5432/agents"
    assert settings.missing_text == "No result for this call."
    assert settings.pending_text == "still waiting"
    assert settings.inner_kwargs == {"pool_size": 10, "pool_pre_ping": True}
    assert SECRET not in repr(settings)


def test_toml_file_with_plain_uri_and_pairing_table(tmp_path):
    path = write(
        tmp_path,
        "sessions.toml",
        """
        [session_service]
        uri = "sqlite+aiosqlite:///${STATE_DIR}/sessions.db"

        [session_service.pairing]
        pending_text = "hold on"

        [session_service.engine]
        pool_size = 3
        """,
    )

    settings = load_config(path, environ={"STATE_DIR": "/srv/state"})

    assert settings.uri == "sqlite+aiosqlite:////srv/state/sessions.db"
    assert settings.pending_text == "hold on"
    assert settings.missing_text is None
    assert settings.inner_kwargs == {"pool_size": 3}


def test_environment_value_wins_over_default_and_double_dollar_is_literal(tmp_path):
    path = write(
        tmp_path,
        "s.yml",
        """
        session_service:
          uri: pairing+memory://
          pairing:
            missing_text: "${A:-fallback} $${NOT_A_VAR} ${B:-}"
        """,
    )

    settings = load_config(path, environ={"A": "from-env"})

    assert settings.missing_text == "from-env ${NOT_A_VAR} "


@pytest.mark.parametrize("pairing_block", ["pairing: {}", "pairing:"])
def test_plain_uri_is_accepted_with_a_pairing_block_even_an_empty_one(tmp_path, pairing_block):
    path = write(
        tmp_path,
        "s.yaml",
        f"""
        session_service:
          uri: memory://
          {pairing_block}
        """,
    )

    assert load_config(path, environ={}).uri == "memory://"


def test_load_session_service_builds_wrapped_database_service_with_engine_options(tmp_path):
    path = write(
        tmp_path,
        "s.toml",
        f"""
        [session_service]
        uri = "pairing+sqlite+aiosqlite:///{tmp_path}/sessions.db"
        engine = {{ pool_size = 6 }}

        [session_service.pairing]
        missing_text = "lost"
        """,
    )

    service = load_session_service(path, environ={})

    assert isinstance(service, PairingSessionService)
    assert isinstance(service.inner, DatabaseSessionService)
    assert service.inner.db_engine.pool.size() == 6
    assert service.texts.missing == "lost"


@pytest.mark.parametrize("size", [0, 17])
def test_yaml_analysis_cache_size_reaches_the_built_service(tmp_path, size):
    path = write(
        tmp_path,
        "s.yaml",
        f"""
        session_service:
          uri: pairing+memory://
          pairing:
            analysis_cache_size: {size}
        """,
    )

    assert load_config(path, environ={}).analysis_cache_size == size
    assert load_session_service(path, environ={}).analysis_cache_size == size


def test_toml_analysis_cache_size_reaches_the_built_service(tmp_path):
    path = write(
        tmp_path,
        "s.toml",
        """
        [session_service]
        uri = "memory://"

        [session_service.pairing]
        analysis_cache_size = 0
        """,
    )

    assert load_session_service(path, environ={}).analysis_cache_size == 0


@pytest.mark.parametrize("pairing_block", ["", "\n  pairing: {missing_text: lost}"])
def test_config_without_analysis_cache_size_builds_a_service_with_the_default(
    tmp_path, pairing_block
):
    path = tmp_path / "s.yaml"
    path.write_text(f"session_service:\n  uri: pairing+memory://{pairing_block}\n")

    assert load_config(path, environ={}).analysis_cache_size is None
    assert load_session_service(path, environ={}).analysis_cache_size == (
        DEFAULT_ANALYSIS_CACHE_SIZE
    )


def test_load_session_service_reads_os_environ_by_default(tmp_path, monkeypatch):
    monkeypatch.setenv("ADK_PAIRING_TEST_SCHEME", "memory")
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: pairing+${ADK_PAIRING_TEST_SCHEME}://
        """,
    )

    assert isinstance(load_session_service(path).inner, InMemorySessionService)


# -- environment errors -------------------------------------------------------------


def test_unset_variable_without_default_names_variable_key_and_file(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: pairing+postgresql+asyncpg://svc:${DB_PASSWORD}@db/agents
        """,
    )

    message = config_error(path)

    assert "environment variable DB_PASSWORD is not set" in message
    assert "session_service.uri" in message
    assert "${DB_PASSWORD:-default}" in message


def test_unset_variable_inside_engine_options_names_the_nested_key(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: pairing+memory://
          engine:
            connect_args: {ssl_key: "${TLS_KEY}"}
        """,
    )

    message = config_error(path)

    assert "session_service.engine.connect_args.ssl_key" in message
    assert "TLS_KEY" in message


@pytest.mark.parametrize("reference", ["${1ABC}", "${DB_USER", "${DB_USER:default}", "${}"])
def test_malformed_variable_reference_is_an_error_naming_the_key(tmp_path, reference):
    path = write(
        tmp_path,
        "s.yaml",
        f"""
        session_service:
          uri: "pairing+memory://{reference}"
        """,
    )

    message = config_error(path, {"DB_USER": "x"})

    assert "session_service.uri: malformed variable reference" in message


# -- schema errors ----------------------------------------------------------------------


def test_misspelt_pairing_key_names_key_path_and_allowed_keys(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: pairing+memory://
          pairing:
            missing_txt: "typo"
        """,
    )

    message = config_error(path)

    assert "session_service.pairing.missing_txt: unknown key 'missing_txt'" in message
    assert (
        "allowed keys under session_service.pairing: "
        "missing_text, pending_text, analysis_cache_size" in message
    )


def test_unknown_key_in_session_service_lists_its_allowed_keys(tmp_path):
    path = write(
        tmp_path,
        "s.toml",
        """
        [session_service]
        uri = "pairing+memory://"
        pool_size = 5
        """,
    )

    message = config_error(path)

    assert "session_service.pool_size: unknown key 'pool_size'" in message
    assert "uri, password, pairing, engine" in message


def test_unknown_top_level_key_is_an_error(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_services:
          uri: pairing+memory://
        """,
    )

    message = config_error(path)

    assert "session_services: unknown key 'session_services'" in message
    assert "allowed keys at the top level: session_service" in message
    assert "session_service: required key is missing" in message
    # The misspelling (the cause) first, with the key it stands for; sentences, not ".;".
    assert message.index("unknown key") < message.index("required key is missing")
    assert "(did you mean 'session_service'?)" in message
    assert ".;" not in message and message.endswith(".")


@pytest.mark.parametrize(
    ("body", "key_path", "expected"),
    [
        ("uri: 42", "session_service.uri", "expected a string"),
        (
            "uri: pairing+memory://\n  pairing: {missing_text: 7}",
            "session_service.pairing.missing_text",
            "expected a string",
        ),
        (
            "uri: pairing+memory://\n  pairing: [a]",
            "session_service.pairing",
            "missing_text, pending_text",
        ),
        (
            "uri: pairing+memory://\n  engine: pool_size=10",
            "session_service.engine",
            "keyword arguments for the inner service",
        ),
    ],
)
def test_wrong_type_names_key_path_and_expected_type(tmp_path, body, key_path, expected):
    path = tmp_path / "s.yaml"
    path.write_text(f"session_service:\n  {body}\n")

    message = config_error(path)

    assert f"{key_path}: wrong type" in message
    assert expected in message


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("-1", "invalid value"),
        ("true", "wrong type"),
        ("false", "wrong type"),
        ("2.5", "wrong type"),
        ("10.0", "wrong type"),
        ('"10"', "wrong type"),
    ],
)
def test_bad_analysis_cache_size_is_a_config_error_naming_the_key_path(tmp_path, value, problem):
    path = tmp_path / "s.yaml"
    path.write_text(
        f"session_service:\n  uri: pairing+memory://\n  pairing: {{analysis_cache_size: {value}}}\n"
    )

    message = config_error(path)

    assert (
        f"session_service.pairing.analysis_cache_size: {problem}; "
        "expected a whole number >= 0 (0 turns the cache off)." in message
    )


def test_bad_analysis_cache_size_in_toml_is_a_config_error_naming_the_key_path(tmp_path):
    path = write(
        tmp_path,
        "s.toml",
        """
        [session_service]
        uri = "pairing+memory://"

        [session_service.pairing]
        analysis_cache_size = -5
        """,
    )

    message = config_error(path)

    assert "session_service.pairing.analysis_cache_size: invalid value" in message


def test_session_service_that_is_not_a_mapping_is_an_error(tmp_path):
    path = write(tmp_path, "s.yaml", "session_service: pairing+memory://\n")

    message = config_error(path)

    assert "session_service: wrong type; expected a table/mapping" in message


def test_missing_uri_is_an_error(tmp_path):
    path = write(tmp_path, "s.yaml", "session_service:\n  pairing: {}\n")

    assert "session_service.uri: required key is missing" in config_error(path)


@pytest.mark.parametrize("content", ["", "- a\n- b\n", "just text\n"])
def test_file_that_is_empty_or_not_a_mapping_is_an_error(tmp_path, content):
    path = tmp_path / "s.yaml"
    path.write_text(content)

    assert "session_service" in config_error(path)


def test_wrong_type_error_does_not_echo_the_value(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        f"""
        session_service:
          uri: [pairing+postgresql+asyncpg://u:{SECRET}@db/agents]
        """,
    )

    message = config_error(path)

    assert "session_service.uri: wrong type" in message
    assert SECRET not in message


def test_several_problems_come_as_one_error(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: 1
          pairing: {missing_txt: a, pending_txt: b}
        """,
    )

    message = config_error(path)

    for key_path in (
        "session_service.uri",
        "session_service.pairing.missing_txt",
        "session_service.pairing.pending_txt",
    ):
        assert key_path in message


# -- plain URI without pairing block --------------------------------------------------------


def test_plain_uri_without_pairing_block_is_refused_with_both_fixes_and_masked(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: postgresql+asyncpg://svc:${DB_PASSWORD}@db:5432/agents
        """,
    )

    message = config_error(path, {"DB_PASSWORD": SECRET})

    assert "session_service.uri" in message
    assert "'pairing+postgresql+asyncpg://svc:***@db:5432/agents'" in message
    assert "pairing: {}" in message and "[session_service.pairing]" in message
    assert SECRET not in message


# -- syntax and file errors -------------------------------------------------------------------


def test_invalid_yaml_names_line_without_quoting_it(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(f'session_service:\n  uri: "pairing+redis://:{SECRET}@r:6379/0\n  x: [\n')

    message = config_error(path)

    assert "invalid YAML" in message
    assert "line" in message
    assert SECRET not in message


def test_invalid_toml_names_line(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(f'[session_service]\nuri = "pairing+redis://:{SECRET}@r:6379/0\n')

    message = config_error(path)

    assert "invalid TOML" in message
    assert "line 2" in message
    assert SECRET not in message


def test_unsupported_extension_is_an_error(tmp_path):
    path = write(tmp_path, "s.json", "{}")

    message = config_error(path)

    assert "'.json'" in message and ".yaml, .yml or .toml" in message


def test_missing_file_is_an_error_naming_it(tmp_path):
    message = config_error(tmp_path / "absent.yaml")

    assert "cannot read the file" in message


def test_config_error_is_a_value_error():
    assert issubclass(ConfigError, ValueError)


# -- errors while building the service ----------------------------------------------------------


def test_bad_engine_option_is_a_config_error_naming_file_and_masking(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        f"""
        session_service:
          uri: pairing+postgresql+asyncpg://svc:{SECRET}@127.0.0.1:5432/agents
          engine: {{no_such_engine_option: 1}}
        """,
    )

    with pytest.raises(ConfigError) as raised:
        load_session_service(path, environ={})

    message = str(raised.value)
    assert str(path) in message
    assert "session_service" in message and "no_such_engine_option" in message
    assert "'pairing+postgresql+asyncpg://svc:***@127.0.0.1:5432/agents'" in message
    assert SECRET not in message


@requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)")
def test_unbuildable_redis_option_is_a_config_error(tmp_path):
    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: pairing+redis://127.0.0.1:6379/0
          engine: {pool_size: 3}
        """,
    )

    with pytest.raises(ConfigError) as raised:
        load_session_service(path, environ={})

    assert "pool_size" in str(raised.value) and "key_prefix" in str(raised.value)


# -- password: a password from the environment, whatever it holds -------------

AWKWARD_PASSWORD = "p@ss#wo/rd?%41 :x"


@pytest.mark.parametrize("suffix", [".yaml", ".toml"])
def test_password_key_sends_the_password_as_written_whatever_it_holds(tmp_path, suffix):
    """README's ``DB_PASSWORD='p@ss#word'`` inside the URI failed with socket.gaierror."""
    from sqlalchemy.engine import make_url

    if suffix == ".yaml":
        text = """
            session_service:
              uri: pairing+postgresql+asyncpg://${DB_USER}@db:5432/agents
              password: ${DB_PASSWORD}
            """
    else:
        text = """
            [session_service]
            uri = "pairing+postgresql+asyncpg://${DB_USER}@db:5432/agents"
            password = "${DB_PASSWORD}"
            """
    path = write(tmp_path, f"s{suffix}", text)

    settings = load_config(path, environ={"DB_USER": "ann", "DB_PASSWORD": AWKWARD_PASSWORD})

    url = make_url(settings.inner_uri)
    assert (url.username, url.password, url.host, url.port, url.database) == (
        "ann",
        AWKWARD_PASSWORD,
        "db",
        5432,
        "agents",
    )
    assert settings.masked_uri == "pairing+postgresql+asyncpg://ann:***@db:5432/agents"
    assert "p@ss" not in repr(settings) and "%40" not in repr(settings)


def test_password_key_reaches_redis_py_as_written(tmp_path):
    from redis.connection import parse_url

    path = write(
        tmp_path,
        "s.yaml",
        """
        session_service:
          uri: redis://127.0.0.1:6379/0
          password: ${P}
          pairing: {}
        """,
    )

    settings = load_config(path, environ={"P": AWKWARD_PASSWORD})

    read = parse_url(settings.inner_uri)
    assert (read["password"], read["host"], read["port"], read["db"]) == (
        AWKWARD_PASSWORD,
        "127.0.0.1",
        6379,
        0,
    )


@pytest.mark.parametrize(
    ("uri", "problem"),
    [
        ("pairing+postgresql+asyncpg://ann:Other1@db/agents", "holds a password already"),
        ("pairing+sqlite+aiosqlite:///sessions.db", "names no host"),
    ],
)
def test_password_key_refuses_a_uri_it_cannot_go_into(tmp_path, uri, problem):
    path = write(tmp_path, "s.yaml", f"session_service:\n  uri: {uri}\n  password: S3cretPw\n")

    message = config_error(path)

    assert f"session_service.password: the URI {problem}" in message
    assert "S3cretPw" not in message and "Other1" not in message


def test_a_uri_without_the_password_key_is_used_as_written(tmp_path):
    """Backward compatibility: a percent-encoded password in the URI is left alone."""
    path = write(
        tmp_path, "s.yaml", "session_service:\n  uri: pairing+redis://:p%40ss%23word@h:6379/0\n"
    )

    assert load_config(path).uri == "pairing+redis://:p%40ss%23word@h:6379/0"

"""URI factory, ADK scheme registration and URI masking.

Building a service object connects nowhere (SQLAlchemy engines and Redis
clients are lazy), so these run without servers; the integration suite runs
the same services against real stores.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from google.adk.cli.service_registry import (
    ServiceRegistry,
    _create_generic_factory,
    get_service_registry,
)
from google.adk.cli.utils.service_factory import create_session_service_from_options
from google.adk.sessions import DatabaseSessionService, InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService
from google.adk.sessions.sqlite_session_service import SqliteSessionService

from adk_pairing import (
    PairingSessionService,
    create_session_service,
    mask_uri,
    register_pairing_schemes,
)
from adk_pairing.core.analysis_cache import DEFAULT_ANALYSIS_CACHE_SIZE
from adk_pairing.shells import factory
from adk_pairing.shells.adk_services import SQLALCHEMY_ASYNC_SCHEMES
from adk_pairing.shells.factory import create_inner_session_service
from adk_pairing.shells.masking import mask_secrets
from tests.adk_features import ADK_VERSION, HAS_ADK_REDIS, requires

SECRET = "s3cr3t-Pa55"

# -- mask_uri -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "expected"),
    [
        (
            f"postgresql+asyncpg://agents:{SECRET}@db:5432/agents",
            "postgresql+asyncpg://agents:***@db:5432/agents",
        ),
        (f"redis://:{SECRET}@cache:6379/0", "redis://:***@cache:6379/0"),
        (
            f"pairing+mysql+aiomysql://root:{SECRET}@db/app?charset=utf8mb4",
            "pairing+mysql+aiomysql://root:***@db/app?charset=utf8mb4",
        ),
        # An unescaped "@" in the password must not leave its tail visible.
        (f"postgresql://u:{SECRET}@x@db/agents", "postgresql://u:***@db/agents"),
        # SQLAlchemy reads this as user "db", password "5432/agents?application_name=a",
        # host "b": whatever a driver would send as a password is masked.
        (
            "postgresql://db:5432/agents?application_name=a@b",
            "postgresql://db:***@b",
        ),
        (
            f"rediss://cache:6380/0?password={SECRET}&ssl_cert_reqs=none",
            "rediss://cache:6380/0?password=***&ssl_cert_reqs=none",
        ),
        (
            f"postgresql+asyncpg://db/agents?sslpassword={SECRET}&application_name=api",
            "postgresql+asyncpg://db/agents?sslpassword=***&application_name=api",
        ),
    ],
)
def test_mask_uri_hides_password_and_secret_query_values_but_keeps_the_rest(uri, expected):
    assert mask_uri(uri) == expected
    assert SECRET not in mask_uri(uri)


@pytest.mark.parametrize(
    "uri",
    [
        "postgresql+asyncpg://postgres@127.0.0.1:5432/agents",
        "sqlite+aiosqlite:///var/lib/app/sessions.db",
        "sqlite:///tmp/odd:name@host.db",  # a colon and "@" in a path are not a password
        "postgresql://alice@db:5432/agents",  # a user name alone is not a secret
        "redis://default@cache:6379/0",
        "memory://",
        "not a uri at all",
    ],
)
def test_mask_uri_leaves_uris_without_secrets_unchanged(uri):
    assert mask_uri(uri) == uri


def test_mask_secrets_masks_every_uri_inside_free_text():
    text = f"failed for 'postgresql://u:{SECRET}@db/a' then redis://:{SECRET}@r:6379/0."

    masked = mask_secrets(text)

    assert SECRET not in masked
    assert "postgresql://u:***@db/a" in masked
    assert "redis://:***@r:6379/0" in masked


# -- create_session_service ---------------------------------------------------


def test_create_session_service_refuses_a_plain_uri_and_shows_the_corrected_one_masked():
    with pytest.raises(ValueError) as raised:
        create_session_service(f"postgresql+asyncpg://agents:{SECRET}@db:5432/agents")

    message = str(raised.value)
    assert "'pairing+postgresql+asyncpg://agents:***@db:5432/agents'" in message
    assert "create_inner_session_service" in message
    assert SECRET not in message


def test_create_session_service_wraps_adk_database_service_and_passes_engine_kwargs(tmp_path):
    service = create_session_service(
        f"pairing+sqlite+aiosqlite:///{tmp_path}/sessions.db", pool_size=7
    )

    assert isinstance(service, PairingSessionService)
    assert isinstance(service.inner, DatabaseSessionService)
    assert service.inner.db_engine.pool.size() == 7


def test_create_session_service_applies_placeholder_texts():
    service = create_session_service(
        "pairing+memory://", missing_text="lost", pending_text="still waiting"
    )

    assert service.texts.missing == "lost"
    assert service.texts.pending == "still waiting"


# 0 is falsy: it must arrive as 0 (cache off), not be mistaken for "not given".
@pytest.mark.parametrize("size", [0, 17])
def test_create_session_service_passes_analysis_cache_size_to_the_service(size):
    service = create_session_service("pairing+memory://", analysis_cache_size=size)

    assert service.analysis_cache_size == size


def test_create_session_service_without_analysis_cache_size_keeps_the_service_default():
    assert DEFAULT_ANALYSIS_CACHE_SIZE != 0
    service = create_session_service("pairing+memory://")

    assert service.analysis_cache_size == DEFAULT_ANALYSIS_CACHE_SIZE


def test_create_session_service_refuses_a_negative_analysis_cache_size():
    with pytest.raises(ValueError, match="analysis_cache_size must be a whole number"):
        create_session_service("pairing+memory://", analysis_cache_size=-1)


def test_the_prefix_is_matched_case_insensitively():
    assert isinstance(create_session_service("PAIRING+memory://").inner, InMemorySessionService)


@pytest.mark.parametrize(
    ("uri", "inner_type"),
    [
        ("memory://", InMemorySessionService),
        ("sqlite:///{tmp}/adk.db", SqliteSessionService),
        ("sqlite+aiosqlite:///{tmp}/db.db", DatabaseSessionService),
        ("postgresql+asyncpg://postgres@127.0.0.1:5432/agents", DatabaseSessionService),
    ],
)
def test_inner_service_is_the_one_adk_cli_builds_for_the_same_uri(uri, inner_type, tmp_path):
    """Guards the claim "exactly as adk web --session_service_uri would"."""
    uri = uri.format(tmp=tmp_path)

    ours = create_inner_session_service("pairing+" + uri, agents_dir=str(tmp_path))
    adks = create_session_service_from_options(base_dir=tmp_path, session_service_uri=uri)

    assert type(ours) is type(adks) is inner_type


def test_plain_and_pairing_uri_build_the_same_inner_service(tmp_path):
    plain = create_inner_session_service(f"sqlite+aiosqlite:///{tmp_path}/a.db")
    prefixed = create_inner_session_service(f"pairing+sqlite+aiosqlite:///{tmp_path}/a.db")

    assert type(plain) is type(prefixed) is DatabaseSessionService
    assert str(plain.db_engine.url) == str(prefixed.db_engine.url)


needs_adk_redis = requires(HAS_ADK_REDIS, "google.adk.integrations.redis (added in 2.9)")


def _adk_redis_session_service() -> type:
    from google.adk.integrations.redis import RedisSessionService

    return RedisSessionService


@needs_adk_redis
def test_redis_uri_builds_adk_redis_service_with_uri_and_options():
    RedisSessionService = _adk_redis_session_service()
    service = create_inner_session_service(
        "pairing+redis://127.0.0.1:6379/3", key_prefix="myapp:", ttl_seconds=60, agents_dir="."
    )

    assert isinstance(service, RedisSessionService)
    assert service.config.uri == "redis://127.0.0.1:6379/3"
    assert service.config.key_prefix == "myapp:"
    assert service.config.ttl_seconds == 60


@needs_adk_redis
def test_rediss_scheme_is_served_by_redis_service_too():
    service = create_inner_session_service(f"rediss://:{SECRET}@cache:6380/0")

    assert isinstance(service, _adk_redis_session_service())


def test_redis_uri_without_adks_redis_service_names_the_minimum_version_and_the_alternative(
    monkeypatch,
):
    """On google-adk < 2.9 for real; on newer versions with ADK's service hidden."""
    if HAS_ADK_REDIS:
        monkeypatch.setattr(factory, "has_adk_redis_session_service", lambda: False)

    with pytest.raises(ValueError) as raised:
        create_session_service(f"pairing+redis://:{SECRET}@cache:6379/0")

    message = str(raised.value)
    assert "\n" not in message
    assert "google-adk >= 2.9" in message and f"(installed: {ADK_VERSION})" in message
    assert "google.adk_community.sessions.redis_session_service" in message
    assert "PairingSessionService(RedisSessionService(uri=" in message
    assert "redis package" not in message
    assert SECRET not in message and "redis://:***@cache:6379/0" in message


@needs_adk_redis
@pytest.mark.parametrize("option", ["pool_size", "host", "password"])
def test_redis_rejects_options_it_would_silently_ignore(option):
    with pytest.raises(ValueError) as raised:
        create_inner_session_service(f"redis://:{SECRET}@cache:6379/0", **{option: 1})

    message = str(raised.value)
    assert repr(option) in message
    assert "key_prefix" in message and "ttl_seconds" in message
    assert SECRET not in message


def test_agents_dir_from_adk_cli_is_dropped_for_the_database_fallback(tmp_path):
    service = create_inner_session_service(
        "postgresql+asyncpg://postgres@127.0.0.1/agents", agents_dir=str(tmp_path)
    )

    assert isinstance(service, DatabaseSessionService)


def test_user_registered_scheme_in_adk_registry_is_wrapped(monkeypatch):
    built: list[tuple[str, dict[str, Any]]] = []

    def custom_factory(uri: str, **kwargs: Any) -> BaseSessionService:
        built.append((uri, kwargs))
        return InMemorySessionService()

    registry = get_service_registry()
    # The registry has no unregister; patching its dict restores it after the test.
    monkeypatch.setitem(registry._session_factories, "customstore", custom_factory)

    service = create_session_service("pairing+customstore://bucket/x", region="eu")

    assert isinstance(service.inner, InMemorySessionService)
    assert built == [("customstore://bucket/x", {"region": "eu"})]


@pytest.mark.parametrize(
    ("uri", "fragment"),
    [
        ("pairing+pairing+memory://", "wraps twice"),
        ("pairing+", "is not a session service URI"),
        ("sessions.db", "is not a session service URI"),
        (f"pairing+pairing+redis://:{SECRET}@r:6379/0", "'pairing+redis://:***@r:6379/0'"),
    ],
)
def test_malformed_uris_are_refused_with_a_masked_explanation(uri, fragment):
    with pytest.raises(ValueError) as raised:
        create_inner_session_service(uri)

    assert fragment in str(raised.value)
    assert SECRET not in str(raised.value)


def test_database_errors_from_adk_do_not_show_the_password():
    with pytest.raises(ValueError) as raised:
        create_session_service(f"pairing+nosuchdialect://u:{SECRET}@db/x")

    assert SECRET not in str(raised.value)


# -- services.yaml: PairingSessionService(uri=..., agents_dir=...) -------------


def test_services_yaml_class_entry_builds_a_pairing_service_the_way_adk_calls_it(tmp_path):
    """ADK's YAML loader instantiates ``cls(uri=uri, **kwargs)`` with ``agents_dir``."""
    factory = _create_generic_factory("adk_pairing.PairingSessionService")

    service = factory(
        f"pairing+sqlite+aiosqlite:///{tmp_path}/s.db", agents_dir=str(tmp_path), pool_size=3
    )

    assert isinstance(service, PairingSessionService)
    assert isinstance(service.inner, DatabaseSessionService)
    assert service.inner.db_engine.pool.size() == 3


# -- register_pairing_schemes -------------------------------------------------


def _fresh_registry() -> ServiceRegistry:
    registry = ServiceRegistry()
    registry.register_session_service("memory", lambda uri, **kw: InMemorySessionService())
    registry.register_session_service("sqlite", lambda uri, **kw: InMemorySessionService())
    return registry


def test_register_pairing_schemes_covers_registry_sql_drivers_redis_and_extras():
    registry = _fresh_registry()

    registered = register_pairing_schemes(registry=registry, extra_schemes=["spanner+spanner"])

    expected = {"pairing+memory", "pairing+sqlite", "pairing+redis", "pairing+rediss"}
    expected |= {"pairing+" + scheme for scheme in SQLALCHEMY_ASYNC_SCHEMES}
    expected.add("pairing+spanner+spanner")
    assert set(registered) == expected
    assert registered == sorted(registered)


def test_registered_scheme_builds_pairing_service_with_texts_and_cli_kwargs(tmp_path):
    registry = _fresh_registry()
    register_pairing_schemes(registry=registry, missing_text="lost", pending_text="waiting")

    service = registry.create_session_service(
        f"pairing+sqlite+aiosqlite:///{tmp_path}/x.db", agents_dir=str(tmp_path), pool_size=4
    )

    assert isinstance(service, PairingSessionService)
    assert service.texts.missing == "lost" and service.texts.pending == "waiting"
    assert service.inner.db_engine.pool.size() == 4


@pytest.mark.parametrize("size", [0, 17])
def test_registered_scheme_builds_pairing_service_with_the_given_analysis_cache_size(size):
    registry = _fresh_registry()
    register_pairing_schemes(registry=registry, analysis_cache_size=size)

    service = registry.create_session_service("pairing+memory://")

    assert isinstance(service, PairingSessionService)
    assert service.analysis_cache_size == size


def test_registered_scheme_without_analysis_cache_size_keeps_the_service_default():
    registry = _fresh_registry()
    register_pairing_schemes(registry=registry)

    service = registry.create_session_service("pairing+memory://")

    assert service.analysis_cache_size == DEFAULT_ANALYSIS_CACHE_SIZE


def test_registering_twice_does_not_register_pairing_of_pairing():
    registry = _fresh_registry()
    register_pairing_schemes(registry=registry)

    again = register_pairing_schemes(registry=registry)

    assert not any(scheme.startswith("pairing+pairing+") for scheme in again)


def test_register_pairing_schemes_defaults_to_adk_singleton(monkeypatch):
    registry = get_service_registry()
    monkeypatch.setattr(registry, "_session_factories", dict(registry._session_factories))

    registered = register_pairing_schemes()

    assert "pairing+postgresql+asyncpg" in registered
    assert "pairing+agentengine" in registered
    service = registry.create_session_service("pairing+memory://")
    assert isinstance(service, PairingSessionService)


def test_example_agent_directory_services_yaml_registers_working_schemes(tmp_path):
    """The shipped services.yaml, read by ADK's own loader code."""
    import yaml
    from google.adk.cli.service_registry import _register_services_from_yaml_config

    example = Path(__file__).parents[2] / "examples/agents/services.yaml"
    registry = ServiceRegistry()
    _register_services_from_yaml_config(yaml.safe_load(example.read_text()), registry)

    service = registry.create_session_service(
        f"pairing+sqlite+aiosqlite:///{tmp_path}/y.db", agents_dir=str(tmp_path)
    )
    assert isinstance(service, PairingSessionService)
    assert registry.create_session_service("pairing+postgresql+asyncpg://u@h/db") is not None


def test_registered_inner_kwargs_reach_the_inner_service_and_adk_kwargs_win(tmp_path):
    registry = _fresh_registry()
    register_pairing_schemes(registry=registry, inner_kwargs={"pool_size": 9, "max_overflow": 1})

    service = registry.create_session_service(
        f"pairing+sqlite+aiosqlite:///{tmp_path}/z.db", agents_dir=str(tmp_path), max_overflow=4
    )

    assert service.inner.db_engine.pool.size() == 9
    assert service.inner.db_engine.pool._max_overflow == 4


# -- MariaDB's own dialect name ---------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "drops"),
    [
        ("mysql+aiomysql://u@127.0.0.1:1/db", False),
        ("mysql+asyncmy://u@127.0.0.1:1/db", False),
        ("mariadb+aiomysql://u@127.0.0.1:1/db", True),
        ("mariadb+asyncmy://u@127.0.0.1:1/db", True),
        ("postgresql+asyncpg://u@127.0.0.1:1/db", False),
        ("sqlite+aiosqlite:///sessions.db", False),
        ("not a url", False),
    ],
)
def test_adk_types_microsecond_times_for_the_mysql_dialect_only(uri, drops):
    """ADK's column type tests the dialect's name for "mysql"; MariaDB's is "mariadb"."""
    from adk_pairing.adk import database_drops_subsecond_times

    assert database_drops_subsecond_times(uri) is drops


@pytest.mark.parametrize("driver", ["aiomysql", "asyncmy"])
def test_a_mariadb_dialect_uri_is_refused_naming_the_mysql_form(driver):
    uri = f"pairing+mariadb+{driver}://root:{SECRET}@127.0.0.1:1/agents"
    with pytest.raises(ValueError) as refused:
        create_session_service(uri)
    message = str(refused.value)
    assert f"use 'pairing+mysql+{driver}://root:***@127.0.0.1:1/agents'" in message
    assert "to the second" in message
    assert SECRET not in message


async def test_the_mysql_dialect_uri_builds_database_session_service():
    service = create_session_service(f"pairing+mysql+aiomysql://root:{SECRET}@127.0.0.1:1/agents")
    try:
        assert isinstance(service.inner, DatabaseSessionService)
    finally:
        await service.close()

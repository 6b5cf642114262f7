"""The only places adk-pairing reaches into a session service's internals.

The scan's direct reader needs a store's connection; an error about a Redis
or SQLite store needs its address (`store_uri`).

Reading a store around ``get_session`` needs the service's connection, which
ADK keeps as an implementation detail: ``DatabaseSessionService.db_engine``,
the ``_get_redis()`` method and ``config.key_prefix`` of ADK's
``RedisSessionService`` (docs/compatibility.md says where), and the ``cache``
client of google-adk-community's ``RedisSessionService``. Each is read here,
in one function per store, and nowhere else. When a release renames one, the function raises
`InternalsChanged` naming the attribute; the scan then falls back to
``get_session`` and says why, instead of failing with an ``AttributeError``
halfway through. ``tests/integration/test_scan_adapters.py`` calls each
function on the installed release's real service, so a rename fails there
first, with the same message.
"""

from __future__ import annotations

from typing import Any


class InternalsChanged(Exception):
    """A session service lacks an internal attribute the direct reader reads."""


def _changed(service: object, attribute: str, role: str) -> InternalsChanged:
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = f"google-adk {version('google-adk')}"
    except PackageNotFoundError:
        release = "the installed google-adk"
    kind = type(service)
    return InternalsChanged(
        f"{kind.__module__}.{kind.__qualname__} of {release} has no {attribute} ({role}); "
        "adk-pairing's direct reader needs updating for this release "
        "(src/adk_pairing/adk/internals.py)"
    )


def database_engine(service: object) -> Any:
    """``DatabaseSessionService``'s SQLAlchemy ``AsyncEngine`` (``db_engine``)."""
    engine = getattr(service, "db_engine", None)
    if engine is None or not hasattr(engine, "connect"):
        raise _changed(service, "db_engine", "its SQLAlchemy AsyncEngine")
    return engine


def adk_redis_client(service: object) -> tuple[Any, str]:
    """ADK's ``RedisSessionService``: its ``redis.asyncio`` client and key prefix."""
    get_client = getattr(service, "_get_redis", None)
    if not callable(get_client):
        raise _changed(service, "_get_redis()", "the method returning its Redis client")
    prefix = getattr(getattr(service, "config", None), "key_prefix", None)
    if not isinstance(prefix, str):
        raise _changed(service, "config.key_prefix", "the prefix of its session keys")
    return get_client(), prefix


def community_redis_client(service: object) -> Any:
    """google-adk-community's ``RedisSessionService``: its ``redis`` client (``cache``)."""
    client = getattr(service, "cache", None)
    if client is None or not hasattr(client, "scan_iter"):
        raise _changed(service, "cache", "its Redis client")
    return client


def store_uri(service: object) -> str | None:
    """The store a Redis or SQLite session service talks to, as a URI for messages, or None.

    ADK's ``RedisSessionService`` keeps the URI it was given (``config.uri``),
    password and all (messages mask it, and read its escapes for hints).
    Otherwise the address is read from the ``redis`` client (ADK's, made on
    first use, or google-adk-community's ``cache``), without the password:
    the client holds it decoded, so it is not a URI's password. ADK's
    ``SqliteSessionService`` keeps its file's path in ``_db_path``. Never
    raises: it only names the store in an error that is being raised.
    """
    try:
        path = getattr(service, "_db_path", None)
        if isinstance(path, str) and path:
            return f"sqlite:///{path}"
        config = getattr(service, "config", None)
        uri = getattr(config, "uri", None)
        if isinstance(uri, str) and uri:
            return uri
        client = getattr(service, "_redis_client", None) or getattr(service, "cache", None)
        pool = getattr(client, "connection_pool", None)
        options = getattr(pool, "connection_kwargs", None)
        if not isinstance(options, dict):
            return None
        if options.get("path"):
            return f"unix://{options['path']}?db={options.get('db', 0)}"
        secure = "SSL" in getattr(getattr(pool, "connection_class", None), "__name__", "")
        scheme = "rediss" if secure else "redis"
        user = f"{options['username']}@" if options.get("username") else ""
        address = f"{options.get('host')}:{options.get('port')}/{options.get('db', 0)}"
        return f"{scheme}://{user}{address}"
    except Exception:  # a client of another shape: the message says "the store"
        return None

"""Opening a store for reading only.

`scan` and `show` promise never to write. Avoiding write calls is not enough:
ADK's session services write on their own when they meet a store they did not
create (``DatabaseSessionService.prepare_tables`` creates missing tables and
indexes and records a schema version; ``SqliteSessionService`` creates the
file and its schema). So SQL stores are opened through read-only connections,
and the database itself refuses any write:

* PostgreSQL: every transaction starts read-only
  (``default_transaction_read_only=on``);
* SQLite: the file is opened with ``mode=ro`` (and must already exist); with
  an ADK whose ``SqliteSessionService`` takes no URI, through its connection
  factory (`_read_only_sqlite_service`);
* other stores (Redis, Vertex AI, custom schemes) have no such switch; for
  them the guarantee is that this tool calls only ``list_sessions`` and
  ``get_session``, and its direct reader (`_direct`) only ``SCAN``, ``GET``,
  ``SMEMBERS`` and ``SCARD``.

The inner service is built by `adk_pairing.shells.factory.create_inner_session_service`
(ADK's own resolution of URIs); a ``pairing+`` prefix is dropped, since an
operator reads what is stored, not the repaired view.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from google.adk.sessions.base_session_service import BaseSessionService

from ..adk import close_session_service, sqlite_service_parses_uris
from ..shells.errors import (
    PairingError,
    UnknownEngineOptionError,
    directory_message,
    not_sqlite_message,
    other_layout_message,
    unknown_engine_options_message,
)
from ..shells.extras import install_line, missing_extra
from ..shells.factory import create_inner_session_service
from ..shells.masking import mask_uri
from ..shells.store_layouts import SQLITE_SCHEME_OF, sqlite_layout
from ..shells.uris import inner_uri
from ._common import URI_EXAMPLES, CliError, bad_uri_message

#: Seconds to wait for a PostgreSQL connection before calling the server unreachable.
CONNECT_TIMEOUT_SECONDS = 10


@dataclass
class OpenedStore:
    """A read-only inner service and what the operator should be told about it."""

    service: BaseSessionService
    uri: str
    read_only: str
    #: The file of a ``sqlite://`` store (SqliteSessionService), for the direct reader.
    sqlite_path: str | None = None

    @property
    def masked_uri(self) -> str:
        return mask_uri(self.uri)

    async def close(self) -> None:
        await close_session_service(self.service)


def parse_options(pairs: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings as factory keyword arguments (JSON values, else text)."""
    options: dict[str, Any] = {}
    for pair in pairs or ():
        key, sep, raw = pair.partition("=")
        if not sep or not key.strip():
            raise CliError(f"--option {pair!r} is not KEY=VALUE, e.g. -o key_prefix=myapp:")
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw
        options[key.strip()] = value
    return options


def _scheme(uri: str) -> str:
    return urlsplit(uri).scheme.lower() if "://" in uri else ""


def _sqlite_path(uri: str) -> str:
    """The file path of a SQLite URL, following SQLAlchemy's slash convention."""
    path = unquote(urlsplit(uri).path)
    return path[1:] if path.startswith("/") else path


def _require_sqlite_file(uri: str, scheme: str) -> str:
    """The file of a SQLite URI, checked to hold the layout `scheme`'s service reads."""
    path = _sqlite_path(uri)
    where = mask_uri(uri)
    if not path or path == ":memory:":
        raise CliError(
            f"{where} names no SQLite file; give one, e.g. sqlite+aiosqlite:///sessions.db"
        )
    if os.path.isdir(path):
        raise CliError(directory_message(path, where))
    if not os.path.isfile(path):
        raise CliError(
            f"no SQLite database at {path!r} (from {where}). Check the path; "
            "three slashes mean a relative path, four an absolute one."
        )
    if os.path.getsize(path) == 0:
        raise CliError(
            f"{where} has no ADK session tables: {path!r} is an empty file (0 bytes). "
            "Check that the URI names the database your ADK app uses."
        )
    try:
        service, tables = sqlite_layout(path)
    except sqlite3.DatabaseError as error:
        raise CliError(not_sqlite_message(path, where, error)) from None
    if service is None:
        held = f"only {', '.join(tables)}" if tables else "no tables"
        raise CliError(
            f"{where} has no ADK session tables ({path!r} holds {held}). "
            "Check that the URI names the database your ADK app uses."
        )
    wanted = SQLITE_SCHEME_OF[service]
    if wanted != scheme:
        raise CliError(other_layout_message(service, path, scheme, wanted))
    return path


def read_only_target(uri: str, options: dict[str, Any]) -> tuple[str, dict[str, Any], str]:
    """The URI and factory options that make the store refuse writes.

    Returns the rewritten URI, the options, and a phrase saying how reads are
    enforced (shown in JSON output so a reviewer can tell).
    """
    target = inner_uri(uri)
    scheme = _scheme(target)
    if not scheme:
        raise CliError(f"{mask_uri(uri)!r} is not a store URI; use e.g. {URI_EXAMPLES}.")
    options = dict(options)
    if scheme in {"sqlite+aiosqlite", "sqlite"}:
        if scheme == "sqlite" and options:
            raise CliError(
                f"sqlite:// (ADK's SqliteSessionService) takes no -o options, only a file: "
                f"drop {', '.join(sorted(options))}"
            )
        path = _require_sqlite_file(target, scheme)
        query = urlsplit(target).query
        if scheme == "sqlite":
            # ADK's registry sends sqlite:// to SqliteSessionService and drops
            # the query string, so it is handled by `open_read_only` directly.
            return target, options, "SQLite file opened with mode=ro"
        extra = f"&{query}" if query else ""
        rewritten = f"sqlite+aiosqlite:///file:{quote(path)}?mode=ro&uri=true{extra}"
        return rewritten, options, "SQLite file opened with mode=ro"
    if scheme.startswith("postgresql"):
        connect_args = dict(options.pop("connect_args", None) or {})
        settings = dict(connect_args.pop("server_settings", None) or {})
        settings["default_transaction_read_only"] = "on"
        connect_args["server_settings"] = settings
        if scheme == "postgresql+asyncpg":
            connect_args.setdefault("timeout", CONNECT_TIMEOUT_SECONDS)
        options["connect_args"] = connect_args
        return target, options, "PostgreSQL transactions are read-only"
    if scheme == "memory":
        raise CliError(
            "memory:// is a fresh, empty in-process store: there is nothing to read. "
            "Point at the store your ADK app writes to."
        )
    return target, options, "only reads are issued (no switch enforces it)"


def open_read_only(uri: str, options: dict[str, Any] | None = None) -> OpenedStore:
    """Builds the inner (unwrapped) service for `uri` on read-only connections."""
    missing = missing_extra(uri)
    if missing is not None:
        modules, extra = missing
        raise CliError(
            f"{mask_uri(uri)} needs {' and '.join(modules)}, which adk-pairing's base install "
            f"leaves out: {install_line(extra)}"
        )
    target, factory_options, how = read_only_target(uri, options or {})
    if _scheme(target) == "sqlite":
        path = _sqlite_path(target)
        service = _read_only_sqlite_service(path)
        return OpenedStore(service=service, uri=target, read_only=how, sqlite_path=path)
    try:
        # A port that is no number (a raw "#" or "/" in the password ends the
        # netloc early) is found here, not by a driver at its first read.
        urlsplit(target).port  # noqa: B018 - parsing it is the check
        service = create_inner_session_service(target, **factory_options)
    except UnknownEngineOptionError as error:
        raise CliError(
            unknown_engine_options_message(
                error.names, error.configuration, mask_uri(uri), "-o option"
            )
        ) from None
    except PairingError:
        raise  # already the one line that names the fix
    except ValueError as error:
        # The one place a ValueError means the URI is at fault.
        raise CliError(bad_uri_message(error, uri)) from error
    return OpenedStore(service=service, uri=inner_uri(uri), read_only=how)


def _read_only_sqlite_service(path: str) -> BaseSessionService:
    """ADK's ``SqliteSessionService`` on `path`, on connections opened with ``mode=ro``."""
    from google.adk.sessions import sqlite_session_service as adk_sqlite

    if sqlite_service_parses_uris():
        return adk_sqlite.SqliteSessionService(db_path=f"sqlite:///{quote(path)}?mode=ro")

    # This ADK passes db_path to aiosqlite.connect as a file name, so
    # "?mode=ro" would name another file.
    # Its one connection factory is overridden instead: the same set-up
    # (row factory, foreign keys, the schema script, which is a no-op on an ADK
    # store and refused by SQLite on anything else), on a read-only SQLite URI.
    import aiosqlite

    read_only_uri = f"file:{quote(path)}?mode=ro"

    class ReadOnlySqliteSessionService(adk_sqlite.SqliteSessionService):
        @contextlib.asynccontextmanager
        async def _get_db_connection(self) -> AsyncIterator[aiosqlite.Connection]:
            async with aiosqlite.connect(read_only_uri, uri=True) as db:
                db.row_factory = aiosqlite.Row
                await db.execute(adk_sqlite.PRAGMA_FOREIGN_KEYS)
                await db.executescript(adk_sqlite.CREATE_SCHEMA_SQL)
                yield db

    return ReadOnlySqliteSessionService(db_path=path)

"""Reading stored sessions straight from a store's tables or keys, in batches.

`scan` on ADK's ``get_session`` pays, per session, a pool check-out, a
transaction, four queries and an ORM load (docs/cli.md). A scan needs none of
the state merging nor the per-session round trips, so for the layouts we can
read we fetch the events of many sessions at once and rebuild them exactly as
ADK does.

One module per store layout, beside `base` (what every reader shares: the
window, shards, the ``concurrency`` rule) and `_paged` (the SQL layouts' keyset
pages and the one triage). Each
declares ``LAYOUT``, a `base.StoreLayout`: the class that writes the layout
and how to open a reader for it. `direct_reader` finds the layout of a service
by what the service is (`base.is_service`): adding a store is one module here
(and its tests); modules whose names start with ``_`` hold shared helpers.

Two modes. By default (the fast path, `_fast`) the SQL readers ask the
database only for the rows that name a call, a result or a rewind, and every
reader parses only the fields the analysis reads; a session that path finds
broken is read again with ADK's own row models, and only that is reported
(`ClearedSession` is a session the fast path found healthy). With ``strict``
every event is rebuilt by ADK, as ``get_session`` does.

`Shard` splits a store by a stable hash of each session's key, so N scans
cover every session exactly once. Memory holds one batch of sessions
(``batch_size`` sessions and their events), three when the next batch is
fetched ahead. Nothing here writes: SQL connections are the read-only ones
`_store` opened, and the Redis readers issue only ``SCAN``, ``GET``,
``SMEMBERS`` and ``SCARD``. The services' private attributes are read in
`adk_pairing.adk.internals` only.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from google.adk.sessions.base_session_service import BaseSessionService

from .base import (
    DirectReader,
    NoAdkTables,
    Shard,
    StoreLayout,
    Unsupported,
    Window,
    is_service,
    prefetched,
)
from .database import JSONB_CALL_PATHS

__all__ = [
    "JSONB_CALL_PATHS",
    "DirectReader",
    "NoAdkTables",
    "Shard",
    "StoreLayout",
    "Unsupported",
    "Window",
    "direct_reader",
    "layouts",
    "prefetched",
]


@cache
def layouts() -> dict[str, StoreLayout]:
    """Every store module of this package and its ``LAYOUT``, by module name."""
    found: dict[str, StoreLayout] = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name.startswith("_") or module.name == "base":
            continue
        layout = importlib.import_module(f"{__name__}.{module.name}").LAYOUT
        found[module.name] = layout
    return found


async def direct_reader(service: BaseSessionService, sqlite_path: str | None) -> DirectReader:
    """The reader for `service`'s layout; raises `Unsupported` saying why there is none.

    Chosen by what the service is (an instance of the class a layout's module
    names, reading as that class does), then checked against what the store
    holds.
    """
    for layout in layouts().values():
        if is_service(service, layout.service_class()):
            return await layout.open(service, sqlite_path)
    kind = type(service)
    raise Unsupported(
        f"{kind.__name__} ({kind.__module__}) has no layout adk-pairing reads directly"
    )

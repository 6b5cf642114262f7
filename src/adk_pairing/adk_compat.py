"""What differs between the google-adk versions adk-pairing supports (1.20 to 2.x).

One wheel serves ``google-adk>=1.20,<3``. Every difference below is detected
by feature (an import, an attribute), never assumed from a version number, so
a backport or a patch release is handled by what it actually contains. The
version is only quoted in messages, for the reader.

* Closing a session service. ``DatabaseSessionService.close()`` exists from
  1.39 (``sessions/database_session_service.py:753`` in 1.39.1); on 1.20 the
  service holds its ``db_engine`` (``database_session_service.py:465``) with
  no way to release the pool but ``db_engine.dispose()``.
  ``SqliteSessionService.close()`` exists from 2.12; before that it opens a
  connection per call (``sqlite_session_service.py:418`` in 1.20.0) and holds
  nothing between calls. `close_session_service` covers all three.
* ADK's own Redis session service, ``google.adk.integrations.redis``, exists
  from 2.9. Before that, ``pairing+redis://`` cannot be served by ADK;
  google-adk-community's ``RedisSessionService`` can, wrapped by hand
  (`REDIS_ALTERNATIVE`).
* ``SqliteSessionService`` parses ``sqlite:///path?mode=ro`` into an SQLite
  URI from 1.39 (``_parse_db_path``); 1.20 hands its ``db_path`` to
  ``aiosqlite.connect`` as a plain file name, so a query string becomes part
  of the name and the file cannot be found.
* What ADK does with a function call nothing answers when it builds a model
  request: up to 2.9 it sends the call as stored (strict providers reject the
  request); from 2.10 ``drop_orphaned_function_calls``
  (``flows/llm_flows/tools/_rearranger.py:247`` in 2.10.0) removes it and
  logs a warning.
* What ADK decides from an event's ``error_code`` (`adk_reads_error_code_of_responses`).
  No release reads it when it builds a request or routes a run (2.13's runner
  and agent router single out only its own ``INVOCATION_ABORTED``,
  ``events/_abort_events.py:47``). But from 2.9 ``Event.is_final_response()``
  is True for any non-partial event with an ``error_code`` and no call
  (``events/event.py:300`` in 2.9.2), function responses included; and from
  2.6 a workflow rebuilds each node's outcome from the session, where an
  ``error_code`` makes an event terminal (``is_terminal_event``,
  ``workflow/utils/_rehydration_utils.py:370`` in 2.6.2, ``:495`` in 2.13.0)
  and records the node as failed (``:435`` in 2.13.0).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import sys
from typing import Any

from google.adk import __version__ as ADK_VERSION

__all__ = [
    "ADK_VERSION",
    "MIN_ADK_FOR_REDIS",
    "REDIS_ALTERNATIVE",
    "adk_drops_unanswered_calls",
    "adk_reads_error_code_of_responses",
    "anthropic_converter_installed",
    "close_session_service",
    "has_adk_redis_session_service",
    "litellm_imported",
    "sqlite_service_parses_uris",
]

#: The first google-adk release with ``google.adk.integrations.redis``.
MIN_ADK_FOR_REDIS = "2.9"

#: How to serve Redis on an older google-adk, for error messages and README.
REDIS_ALTERNATIVE = (
    "google-adk-community's RedisSessionService, wrapped by hand: "
    "PairingSessionService(RedisSessionService(uri=<the redis URI>)) with "
    "`from google.adk_community.sessions.redis_session_service import RedisSessionService` "
    "(pip install 'adk-pairing[redis]')"
)


def _module_exists(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:  # a parent package is missing
        return False


@functools.cache
def anthropic_converter_installed() -> bool:
    """Whether ADK's Anthropic converter imports: it needs the optional ``anthropic`` package."""
    try:
        importlib.import_module("google.adk.models.anthropic_llm")
    except ImportError:
        return False
    return True


def litellm_imported() -> bool:
    """Whether the app has imported ``litellm``: only apps that send through LiteLlm do.

    Asked instead of importing it, which costs seconds.
    """
    return "litellm" in sys.modules


def has_adk_redis_session_service() -> bool:
    """Whether ADK ships its own Redis session service (google-adk >= 2.9)."""
    return _module_exists("google.adk.integrations.redis")


def sqlite_service_parses_uris() -> bool:
    """Whether ``SqliteSessionService`` accepts ``sqlite:///path?mode=ro`` (>= 1.39)."""
    from google.adk.sessions import sqlite_session_service

    return hasattr(sqlite_session_service, "_parse_db_path")


@functools.cache
def adk_drops_unanswered_calls() -> bool:
    """Whether ADK's request builder drops a call nothing answers (>= 2.10).

    Before 2.10 it sends the call as stored, and Anthropic's API rejects it.
    """
    name = "google.adk.flows.llm_flows.tools._rearranger"
    if not _module_exists(name):
        return False
    return hasattr(importlib.import_module(name), "drop_orphaned_function_calls")


@functools.cache
def adk_reads_error_code_of_responses() -> bool:
    """Whether ADK decides anything from the ``error_code`` of a function-response event.

    Probed on two events that differ only in ``error_code``: through
    ``Event.is_final_response`` and, where the release has workflows, the
    rehydration's ``is_terminal_event``. Any failure of the probe answers True.
    """
    from google.adk.events.event import Event
    from google.genai import types

    def response_event(**error: str) -> Event:
        response = types.FunctionResponse(id="probe", name="probe", response={"error": "x"})
        part = types.Part(function_response=response)
        return Event(author="probe", content=types.Content(role="user", parts=[part]), **error)

    try:
        plain, failed = response_event(), response_event(error_code="PROBE", error_message="x")
        readers: list[Any] = [Event.is_final_response]
        name = "google.adk.workflow.utils._rehydration_utils"
        if _module_exists(name):
            readers.append(importlib.import_module(name).is_terminal_event)
        return any(bool(read(plain)) != bool(read(failed)) for read in readers)
    except Exception:  # an unforeseen release: assume it reads the field
        return True


async def close_session_service(service: Any) -> None:
    """Releases what `service` holds: its ``close()``, or its engine's pool.

    A ``close`` may be sync or async (ADK's are async). Without one, a
    SQLAlchemy ``db_engine`` (``DatabaseSessionService`` on 1.20) is disposed;
    anything else holds nothing we can release.
    """
    close = getattr(service, "close", None)
    if callable(close):
        result = close()
        if inspect.isawaitable(result):
            await result
        return
    engine = getattr(service, "db_engine", None)
    dispose = getattr(engine, "dispose", None)
    if callable(dispose):
        result = dispose()
        if inspect.isawaitable(result):
            await result

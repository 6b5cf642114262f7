"""Every difference between the google-adk releases adk-pairing supports, by name.

One wheel serves ``google-adk>=1.20,<3``. Each difference is detected by
feature (running ADK's own function, an import, an attribute), never assumed
from a version number, so a backport or a patch release is handled by what it
contains; the version is only quoted in messages. Where a probe cannot tell
(a module gone, a function reshaped), it assumes the newest release's
behaviour. The table of release × behaviour × ADK file and line is in
docs/compatibility.md; the code keeps one line of reason per probe.

* `adk_pairing.adk.builder`: how the request builder pairs reused ids
  (`builder_traits`), whether it drops a call nothing answers
  (`adk_drops_unanswered_calls`) and how to call it (`contents_builder`);
* `adk_pairing.adk.events`: what ADK decides from an event's ``error_code``;
* `adk_pairing.adk.models`: which model converters this process can use,
  whether the Anthropic one sends a signed thought as thinking
  (`converter_sends_signed_thoughts`, which the wire rules ask) and how to
  call each converter (`anthropic_message_converter`, `litellm_chat_messages`,
  over `litellm_completion_inputs`);
* `adk_pairing.adk.stores`: what the session stores offer (closing, Redis,
  SQLite URIs, the error for a missing session, which ones check a session's
  owner themselves, whether ``list_sessions`` needs a user, how SQLite orders
  tied events, what an append changes in the session object before the store
  writes it);
* `adk_pairing.adk.callbacks`: the invocation a callback context keeps
  (`invocation_of`) and ADK's contents processor run again
  (`rerun_contents_processor`);
* `adk_pairing.adk.internals`: the session services' private attributes the
  scan's direct reader reads, each in one function.
"""

from __future__ import annotations

from google.adk import __version__ as ADK_VERSION

from .builder import (
    NEWEST_BUILDER,
    BuilderTraits,
    adk_drops_unanswered_calls,
    builder_traits,
    contents_builder,
    left_out_call_names,
)
from .events import adk_reads_error_code_of_responses
from .models import (
    anthropic_converter_installed,
    anthropic_message_converter,
    converter_sends_signed_thoughts,
    litellm_chat_messages,
    litellm_completion_inputs,
    litellm_imported,
)
from .stores import (
    MIN_ADK_FOR_REDIS,
    REDIS_ALTERNATIVE,
    SessionNotFoundError,
    SessionObjectBeforeAppend,
    checks_ownership,
    close_session_service,
    database_drops_subsecond_times,
    has_adk_redis_session_service,
    is_sqlite_backed,
    list_sessions_requires_user,
    probe_tie_break,
    sqlite_service_parses_uris,
    sqlite_service_tie_break,
)

__all__ = [
    "ADK_VERSION",
    "MIN_ADK_FOR_REDIS",
    "NEWEST_BUILDER",
    "REDIS_ALTERNATIVE",
    "BuilderTraits",
    "SessionNotFoundError",
    "SessionObjectBeforeAppend",
    "adk_drops_unanswered_calls",
    "adk_reads_error_code_of_responses",
    "anthropic_converter_installed",
    "anthropic_message_converter",
    "builder_traits",
    "checks_ownership",
    "close_session_service",
    "contents_builder",
    "converter_sends_signed_thoughts",
    "database_drops_subsecond_times",
    "has_adk_redis_session_service",
    "is_sqlite_backed",
    "left_out_call_names",
    "list_sessions_requires_user",
    "litellm_chat_messages",
    "litellm_completion_inputs",
    "litellm_imported",
    "probe_tie_break",
    "sqlite_service_parses_uris",
    "sqlite_service_tie_break",
]

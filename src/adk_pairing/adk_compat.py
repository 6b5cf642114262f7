"""The ADK probes' former home, kept importable: they live in `adk_pairing.adk`."""

from __future__ import annotations

from .adk import (
    ADK_VERSION,
    MIN_ADK_FOR_REDIS,
    REDIS_ALTERNATIVE,
    adk_drops_unanswered_calls,
    adk_reads_error_code_of_responses,
    anthropic_converter_installed,
    close_session_service,
    has_adk_redis_session_service,
    litellm_imported,
    sqlite_service_parses_uris,
)

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

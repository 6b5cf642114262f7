"""The fields of an ADK ``Event`` the ledger reads, declared once.

The ledger (`adk_pairing.analysis`: `analyze`, `build_ledger`, `is_rewind`)
decides every call's status from these fields alone, the wire rules it asks
included (`adk_pairing.wire.never_sent_as_a_call` reads a part's text and
thought). Whatever runs the ledger on stand-ins for events builds them with
exactly these: the scan's fast path (`adk_pairing.cli._fast`) takes its light
objects' attributes from here. tests/unit/test_ledger_reads.py runs the ledger
over events that refuse every other attribute, under every builder's traits.
"""

from __future__ import annotations

#: Of an event. ``isolation_scope`` is absent before google-adk 2.x's task
#: runs; the ledger reads it with a default.
EVENT_FIELDS = (
    "actions",
    "author",
    "branch",
    "content",
    "invocation_id",
    "isolation_scope",
    "long_running_tool_ids",
)
#: Of an event's ``actions``.
ACTIONS_FIELDS = ("rewind_before_invocation_id",)
#: Of an event's ``content``.
CONTENT_FIELDS = ("parts",)
#: Of each of the content's ``parts``.
PART_FIELDS = ("function_call", "function_response", "text", "thought", "thought_signature")
#: Of a part's ``function_call`` and ``function_response``: what calls are paired by.
CALL_FIELDS = ("id", "name")

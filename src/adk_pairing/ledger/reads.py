"""What the ledger reads of an ADK ``Event``, declared once as typed protocols.

Read only: the ledger never writes these fields.

The ledger (`adk_pairing.ledger`: `analyze`,
`build_ledger`, `is_rewind`) decides every call's status from these fields
alone, the wire rules it asks included (`adk_pairing.wire.never_sent_as_a_call`
reads a part's text and thought). ADK's ``Event`` satisfies `EventRead`, and so
does whatever runs the ledger on stand-ins for events: the scan's fast path
(`adk_pairing.cli._fast`) takes its light objects' attributes from the
``*_FIELDS`` below, and the request pass reads the contents it rewrites as
events (`adk_pairing.passes.request_rewrite`). tests/unit/test_ledger_reads.py runs the ledger over
events that refuse every other attribute, under every builder's traits.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol


class CallRead(Protocol):
    """Of a part's ``function_call`` and ``function_response``: what calls are paired by."""

    id: str | None
    name: str | None


class PartRead(Protocol):
    """Of each of a content's ``parts``."""

    function_call: CallRead | None
    function_response: CallRead | None
    text: str | None
    thought: bool | None
    thought_signature: object


class ContentRead(Protocol):
    """Of an event's ``content``."""

    parts: Sequence[PartRead] | None


class ActionsRead(Protocol):
    """Of an event's ``actions``; ``compaction`` (`OPTIONAL_ACTIONS_FIELDS`) read with a default."""

    rewind_before_invocation_id: str | None


class EventRead(Protocol):
    """Of an event. ``isolation_scope`` (`OPTIONAL_EVENT_FIELDS`) is read with a default."""

    actions: ActionsRead | None
    author: str
    branch: str | None
    content: ContentRead | None
    invocation_id: str
    long_running_tool_ids: Collection[str] | None


def parts_of(content: ContentRead | None) -> Sequence[PartRead]:
    """The parts of an event's content: none when it has no content, or no parts."""
    return (content.parts or ()) if content is not None else ()


def _fields(protocol: type) -> tuple[str, ...]:
    return tuple(protocol.__annotations__)


#: Of an event, read only where present: absent from releases without task runs.
OPTIONAL_EVENT_FIELDS = ("isolation_scope",)
#: Of an event's actions, read only where present: whether it is a compaction,
#: which can take an answer out of ADK's request (`OpenCallIndex.watch_for_compaction`).
OPTIONAL_ACTIONS_FIELDS = ("compaction",)
#: The field names of each protocol, for stand-ins' ``__slots__``.
EVENT_FIELDS = (*_fields(EventRead), *OPTIONAL_EVENT_FIELDS)
ACTIONS_FIELDS = (*_fields(ActionsRead), *OPTIONAL_ACTIONS_FIELDS)
CONTENT_FIELDS = _fields(ContentRead)
PART_FIELDS = _fields(PartRead)
CALL_FIELDS = _fields(CallRead)

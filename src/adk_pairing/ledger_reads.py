"""What the ledger reads of an ADK ``Event``, declared once as typed protocols.

The ledger (`adk_pairing.ledger`; `adk_pairing.analysis`: `analyze`,
`build_ledger`, `is_rewind`) decides every call's status from these fields
alone, the wire rules it asks included (`adk_pairing.wire.never_sent_as_a_call`
reads a part's text and thought). ADK's ``Event`` satisfies `EventRead`, and so
does whatever runs the ledger on stand-ins for events: the scan's fast path
(`adk_pairing.cli._fast`) takes its light objects' attributes from the
``*_FIELDS`` below, and the request pass's turns (`adk_pairing.request_pass`)
are read as events. tests/unit/test_ledger_reads.py runs the ledger over
events that refuse every other attribute, under every builder's traits.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol


class CallRead(Protocol):
    """Of a part's ``function_call`` and ``function_response``: what calls are paired by."""

    @property
    def id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...


class PartRead(Protocol):
    """Of each of a content's ``parts``."""

    @property
    def function_call(self) -> CallRead | None: ...
    @property
    def function_response(self) -> CallRead | None: ...
    @property
    def text(self) -> str | None: ...
    @property
    def thought(self) -> bool | None: ...
    @property
    def thought_signature(self) -> object: ...


class ContentRead(Protocol):
    """Of an event's ``content``."""

    @property
    def parts(self) -> Sequence[PartRead] | None: ...


class ActionsRead(Protocol):
    """Of an event's ``actions``."""

    @property
    def rewind_before_invocation_id(self) -> str | None: ...


class EventRead(Protocol):
    """Of an event. ``isolation_scope`` (`OPTIONAL_EVENT_FIELDS`) is read with a default."""

    @property
    def actions(self) -> ActionsRead | None: ...
    @property
    def author(self) -> str: ...
    @property
    def branch(self) -> str | None: ...
    @property
    def content(self) -> ContentRead | None: ...
    @property
    def invocation_id(self) -> str: ...
    @property
    def long_running_tool_ids(self) -> Collection[str] | None: ...


def _fields(protocol: type) -> tuple[str, ...]:
    return tuple(name for name, member in vars(protocol).items() if isinstance(member, property))


#: Of an event, read only where present: absent before google-adk 2.x's task runs.
OPTIONAL_EVENT_FIELDS = ("isolation_scope",)
#: The field names of each protocol, for stand-ins' ``__slots__``.
EVENT_FIELDS = (*_fields(EventRead), *OPTIONAL_EVENT_FIELDS)
ACTIONS_FIELDS = _fields(ActionsRead)
CONTENT_FIELDS = _fields(ContentRead)
PART_FIELDS = _fields(PartRead)
CALL_FIELDS = _fields(CallRead)

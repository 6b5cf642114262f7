"""Which events survive rewinds, as ADK's request builder decides.

A rewind is any event whose ``actions.rewind_before_invocation_id`` is set,
*whatever else it carries*. ADK's request builder drops it, content and all,
together with every event from the first event of the rewound invocation up to
it, walking backwards so that a rewind inside an annulled stretch is never
applied (a rewind of a rewind revives what the inner one annulled). Every
supported release does exactly this (docs/compatibility.md says where). So
annulled events neither answer calls nor need answers, and a call or response
inside a rewind event counts for nothing. ADK itself writes rewinds without
content; a rewind with content is malformed, but one rule for all events is
what keeps every path that builds a view (append, fresh read, cached read) on
the same view.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from .reads import EventRead


def live_event_mask(events: Sequence[EventRead]) -> list[bool]:
    """Marks which events survive rewinds (the module docstring).

    Walking backwards keeps the cost linear; the invocation index is built only
    when a rewind is present.
    """
    live = [True] * len(events)
    first_index_of: dict[str, int] | None = None
    i = len(events) - 1
    while i >= 0:
        actions = events[i].actions
        target = actions.rewind_before_invocation_id if actions is not None else None
        if target:
            if first_index_of is None:
                first_index_of = {}
                for idx, event in enumerate(events):
                    if event.invocation_id and event.invocation_id not in first_index_of:
                        first_index_of[event.invocation_id] = idx
            live[i] = False
            start = first_index_of.get(target)
            if start is not None and start < i:
                for j in range(start, i):
                    live[j] = False
                i = start
        i -= 1
    return live


def is_rewind(event: EventRead) -> bool:
    """Whether `event` is a rewind: it carries a rewind target, with or without content.

    ADK's request builder honours the target on any event and drops the
    event's content with it (see the module docstring), so every walk here
    does too. Appending a rewind can annul events already walked: whoever
    keeps a ledger current must rebuild it then.
    """
    actions = event.actions
    return bool(actions is not None and actions.rewind_before_invocation_id)


def live_runs(live: Sequence[bool]) -> Iterator[tuple[int, int]]:
    """The [start, stop) ranges of consecutive live events."""
    start: int | None = None
    for index, alive in enumerate(live):
        if alive and start is None:
            start = index
        elif not alive and start is not None:
            yield start, index
            start = None
    if start is not None:
        yield start, len(live)

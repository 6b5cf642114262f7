"""``adk-pairing show``: one session as stored and as `PairingSessionService` serves it.

The stored side is read through the inner service; the view side is what
``PairingSessionService.get_session`` returns for the same session (the real
decorator, not a re-implementation), so the two columns show exactly what the
decorator adds: a synthetic result after each unanswered call.
"""

from __future__ import annotations

import datetime
import json
import shlex
from dataclasses import dataclass
from typing import Any

from google.adk.events.event import Event
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..core.placeholders import METADATA_KEY, is_synthetic
from ..ledger import CallStatus, analyze
from ..shells.service import PairingSessionService
from ._common import CliError, print_table, short
from ._printable import printable
from ._store import OpenedStore


def part_summaries(event: Event) -> list[dict[str, Any]]:
    """The parts of `event` that matter for pairing, as small dicts."""
    parts = event.content.parts if event.content is not None else None
    summaries: list[dict[str, Any]] = []
    for part in parts or ():
        if part.function_call is not None:
            call = part.function_call
            summaries.append({"kind": "call", "id": call.id, "name": call.name})
        elif part.function_response is not None:
            response = part.function_response
            summary: dict[str, Any] = {"kind": "response", "id": response.id, "name": response.name}
            payload = response.response or {}
            if isinstance(payload, dict) and "status" in payload:
                summary["status"] = str(payload["status"])
            summaries.append(summary)
        elif part.text is not None:
            kind = "thought" if part.thought else "text"
            summaries.append({"kind": kind, "text": short(part.text, 200)})
        else:
            summaries.append({"kind": "other"})
    return summaries


def event_json(event: Event, call_status: dict[tuple[str, int], str]) -> dict[str, Any]:
    """One event for ``--json``, with the pairing status of each call part."""
    parts = part_summaries(event)
    for index, part in enumerate(parts):
        if part["kind"] == "call":
            part["status"] = call_status.get((event.id, index), CallStatus.ANSWERED.value)
    data: dict[str, Any] = {
        "id": event.id,
        "author": event.author,
        "invocation_id": event.invocation_id,
        "timestamp": event.timestamp,
        "synthetic": is_synthetic(event),
        "parts": parts,
    }
    return data


#: Widths of store strings in the text (``--json`` has them whole).
NAME_WIDTH = 48
ID_WIDTH = 64
AUTHOR_WIDTH = 24


def _describe(part: dict[str, Any]) -> str:
    if part["kind"] in {"call", "response"}:
        call_id = printable(part["id"], ID_WIDTH) if part["id"] else "no id"
        label = f"{part['kind']} {printable(part['name'], NAME_WIDTH)} ({call_id})"
        status = part.get("status")
        if part["kind"] == "call" and status and status != CallStatus.ANSWERED.value:
            label += f" [{printable(status, NAME_WIDTH)}]"
        return label
    if part["kind"] in {"text", "thought"}:
        quoted = json.dumps(short(part["text"], 40), ensure_ascii=False)
        return f"{part['kind']} {printable(quoted)}"
    return "(other part)"


def _cell(event_data: dict[str, Any] | None) -> str:
    if event_data is None:
        return ""
    parts = event_data["parts"]
    return "; ".join(_describe(p) for p in parts) if parts else "(no content)"


@dataclass
class ShownSession:
    """A session's stored events, its view, and the calls it leaves unanswered."""

    store: str
    app: str
    user: str
    session: str
    stored: list[dict[str, Any]]
    view: list[dict[str, Any]]
    missing: list[dict[str, Any]]
    pending: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "app": self.app,
            "user": self.user,
            "session": self.session,
            "missing_calls": self.missing,
            "pending_calls": self.pending,
            "stored_events": self.stored,
            "view_events": self.view,
        }


async def load(store: OpenedStore, *, app: str, user: str, session_id: str) -> ShownSession:
    """Reads the session twice: through the inner service and through the decorator."""
    stored = await store.service.get_session(app_name=app, user_id=user, session_id=session_id)
    if stored is None:
        raise CliError(await _no_such_session(store, app, user, session_id))
    paired = PairingSessionService(store.service)
    view = await paired.get_session(app_name=app, user_id=user, session_id=session_id)
    if view is None:
        raise CliError(f"session {session_id!r} disappeared between two reads; run show again")
    report = analyze(stored.events)
    status_of: dict[tuple[str, int], str] = {}
    missing: list[dict[str, Any]] = []
    pending: list[dict[str, Any]] = []
    for call in report.calls:
        if call.status is CallStatus.ANSWERED:
            continue
        event = stored.events[call.event_index]
        status_of[(event.id, call.part_index)] = call.status.value
        entry = {"event_id": event.id, "call_id": call.call_id, "name": call.name}
        (missing if call.status is CallStatus.MISSING else pending).append(entry)
    return ShownSession(
        store=store.masked_uri,
        app=app,
        user=user,
        session=session_id,
        stored=[event_json(e, status_of) for e in stored.events],
        view=[event_json(e, status_of) for e in view.events],
        missing=missing,
        pending=pending,
    )


async def list_sessions(store: OpenedStore, *, app: str, user: str) -> list[dict[str, Any]]:
    """The user's sessions in `app` (id and last update time), newest first."""
    listing = await store.service.list_sessions(app_name=app, user_id=user)
    sessions = sorted(listing.sessions, key=lambda s: s.last_update_time, reverse=True)
    return [{"session": s.id, "last_update_time": s.last_update_time} for s in sessions]


#: Session ids an error names before it says how to list them all.
_IDS_SHOWN = 5


async def _no_such_session(store: OpenedStore, app: str, user: str, session_id: str) -> str:
    """Why `show` found nothing, naming the user's other sessions and how to list them."""
    where = shlex.quote(store.masked_uri)
    listing = f"adk-pairing show {where} --app {shlex.quote(app)} --user {shlex.quote(user)}"
    neighbours = await list_sessions(store, app=app, user=user)
    if not neighbours:
        from ._store_scan import refuse_unknown_app_or_user  # the scan's own check, not a copy

        await refuse_unknown_app_or_user(store, app, user)
        return (
            f"no session {session_id!r}: user {user!r} has no sessions in app {app!r} at "
            f"{store.masked_uri}. Check the --app and --user names (adk-pairing scan "
            f"{where} lists the apps)"
        )
    ids = ", ".join(printable(item["session"], ID_WIDTH) for item in neighbours[:_IDS_SHOWN])
    more = ", …" if len(neighbours) > _IDS_SHOWN else ""
    return (
        f"no session {session_id!r} of user {user!r} in app {app!r} at {store.masked_uri}; "
        f"the user has {len(neighbours)} there ({ids}{more}). List them with: {listing}"
    )


def render_listing(
    store: str, app: str, user: str, sessions: list[dict[str, Any]], console: Console
) -> None:
    """`show` without ``--session``: the user's sessions in the app, newest first."""
    console.print(
        f"{len(sessions)} session{'' if len(sessions) == 1 else 's'} of user "
        f"{printable(user, ID_WIDTH)} in app "
        f"{printable(app, ID_WIDTH)}  ({printable(store)})",
        markup=False,
    )
    for item in sessions:
        when = datetime.datetime.fromtimestamp(item["last_update_time"], datetime.UTC)
        console.print(
            f"{printable(item['session'], ID_WIDTH)}  updated {when:%Y-%m-%d %H:%M:%S} UTC",
            markup=False,
        )


def render(shown: ShownSession, console: Console) -> None:
    """Stored events and view side by side, one row per view event."""
    console.print(
        f"Session app={printable(shown.app, ID_WIDTH)} user={printable(shown.user, ID_WIDTH)} "
        f"session={printable(shown.session, ID_WIDTH)}  ({printable(shown.store)})",
        markup=False,
    )
    console.print(
        f"{len(shown.stored)} stored events, {len(shown.view)} in the view; "
        f"{len(shown.missing)} missing and {len(shown.pending)} pending calls",
        markup=False,
    )
    table = Table(box=None, show_edge=False, pad_edge=False, header_style="bold")
    table.add_column("#", justify="right")
    table.add_column("author")
    table.add_column("stored", overflow="fold")
    table.add_column("view (PairingSessionService)", overflow="fold")
    stored_by_id = {event["id"]: (i, event) for i, event in enumerate(shown.stored, start=1)}
    for event in shown.view:
        if event["synthetic"]:
            statuses = sorted({p.get("status", "") for p in event["parts"]} - {""})
            table.add_row(
                "+",
                Text(printable(event["author"], AUTHOR_WIDTH)),
                "",
                Text(f"{_cell(event)}  synthetic: {', '.join(statuses)}", style="cyan"),
            )
            continue
        position, stored_event = stored_by_id.get(event["id"], (None, None))
        same = stored_event is not None and event["parts"] == stored_event["parts"]
        table.add_row(
            str(position) if position is not None else "?",
            Text(printable(event["author"], AUTHOR_WIDTH)),
            Text(_cell(stored_event)),
            Text("=" if same else _cell(event)),
        )
    print_table(console, table)
    console.print(
        f"'+' rows exist only in the view: they carry metadata key {METADATA_KEY!r} "
        "and are never written to the store.",
        markup=False,
    )

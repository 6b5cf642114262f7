"""The names a scan was given, checked against what the store holds.

A typo in ``--app`` or ``--user`` must not read as a clean store: when a
scan met nothing for a name, the store is asked whether it holds that name
at all, and the error lists what it does hold.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from google.adk.sessions.base_session_service import BaseSessionService

from ..adk import list_sessions_requires_user
from ._common import CliError
from ._direct.base import DirectReader, Window
from ._printable import printable
from ._scan_report import count_of
from ._store import OpenedStore

#: Names shown when an error lists what a store holds, and the width of each.
_NAMES_SHOWN = 10
_NAME_WIDTH = 80


def _names(names: Sequence[str], noun: str) -> str:
    """`names` for an error: ``2 apps: desk, shop``, cut after `_NAMES_SHOWN`."""
    if not names:
        return f"no {noun}s"
    shown = ", ".join(printable(repr(name), _NAME_WIDTH) for name in names[:_NAMES_SHOWN])
    more = ", …" if len(names) > _NAMES_SHOWN else ""
    return f"{count_of(len(names), noun)}: {shown}{more}"


async def _users_of(service: BaseSessionService, apps: Sequence[str]) -> list[str] | None:
    """The users with sessions in `apps`, or None when the service lists one user at a time."""
    if list_sessions_requires_user(service):
        return None
    users: set[str] = set()
    for app in apps:
        listing = await service.list_sessions(app_name=app, user_id=None)
        users.update(session.user_id for session in listing.sessions)
    return sorted(users)


async def refuse_names_matching_nothing(
    store: OpenedStore, reader: DirectReader | None, window: Window, met: Collection[str]
) -> None:
    """Raises `CliError` when an ``--app`` or the ``--user`` names nothing the store holds.

    A typo must not read as a clean store. Asked only after a scan that met
    nothing for a name (so a scan that found sessions costs nothing more);
    the time window and the shard are left out: an app or user with no session
    *in the window* is a true answer, one with no session at all is a typo.
    `met` holds the apps the scan met sessions of.
    """
    where = store.masked_uri
    named = list(window.apps or ())
    absent = [app for app in named if app not in met]
    if absent:
        held = await reader.list_apps() if reader is not None else None
        if held is not None:
            unknown = [app for app in absent if app not in held]
            if unknown:
                raise CliError(
                    f"no app {', '.join(map(repr, unknown))} in {where}: "
                    f"it holds {_names(held, 'app')}"
                )
        else:
            for app in absent:
                listing = await store.service.list_sessions(app_name=app, user_id=window.user)
                if not listing.sessions:
                    whose = f" of user {window.user!r}" if window.user is not None else ""
                    raise CliError(
                        f"no session{whose} in app {app!r} at {where} (this store cannot "
                        "list the apps it holds): check the --app and --user names"
                    )
    if window.user is None or met or reader is None:
        return
    if await reader.count(Window(apps=window.apps, user=window.user)):
        return
    apps = named or await reader.list_apps()
    users = await _users_of(store.service, apps)
    scope = f"app {', '.join(map(repr, named))}" if named else "any app"
    held = f": it holds {_names(users, 'user')}" if users is not None else ""
    raise CliError(f"user {window.user!r} has no session in {scope} at {where}{held}")


def no_app_listing_message(service: BaseSessionService, reason: str | None) -> str:
    name = type(service).__name__
    why = f" ({reason})" if reason else ""
    return (
        f"{name} cannot list its apps: ADK's session services list sessions per app only, "
        f"and this store's layout is not one adk-pairing reads directly{why}. "
        "Name the apps with --app APP (repeatable)."
    )

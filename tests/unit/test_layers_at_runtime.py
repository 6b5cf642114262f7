"""The layers at run time: an append and a read through the decorator call only downward.

`test_layers` holds every module's imports to its layer. This watches the
calls themselves: every frame of our package entered while the decorator
appends generated histories and reads them back belongs to the layer of the
nearest frame of ours below it on the stack, or to a lower one
(`test_layers.LAYERS`). A callback from a lower layer into a higher one
(the core handed a function of the view, say) would show as such a frame.
"""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions import InMemorySessionService
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import adk_pairing
from adk_pairing import PairingSessionService
from adk_pairing.core import placeholders
from adk_pairing.passes import view

from .events import call, model_event, rewind_event
from .history_strategies import histories
from .test_layers import LAYER_NAMES, _layer

PREFIX = adk_pairing.__name__ + "."
#: The one call up the layers known today. `rules.builder_check` puts a logging filter
#: on ADK's builder loggers, to quiet them while it proves a view; ADK's builder, called
#: through `adk.builder`'s wrapper, logs, and logging calls the filter. Which loggers
#: ADK's builder has is an ADK fact, so the quieting belongs in adk/; it moves there
#: once the reshaping of builder_check.py under way lands, and this entry goes with it.
KNOWN_UPWARD: frozenset[str] = frozenset()


def _our_module(frame: FrameType) -> str | None:
    """The package-relative module name of `frame`'s code ("" for the package), or None."""
    name = frame.f_globals.get("__name__", "")
    if name == adk_pairing.__name__:
        return ""
    return name[len(PREFIX) :] if name.startswith(PREFIX) else None


def _watching(upward: list[str]) -> Any:
    """A profile function noting each call into a layer above its nearest caller of ours."""

    def profile(frame: FrameType, event: str, arg: object) -> None:
        if event != "call":
            return
        callee = _our_module(frame)
        if callee is None:
            return
        caller = frame.f_back
        while caller is not None and (called_from := _our_module(caller)) is None:
            caller = caller.f_back
        if caller is not None and _layer(callee) > _layer(called_from):
            upward.append(
                f"{called_from}.{caller.f_code.co_name} ({LAYER_NAMES[_layer(called_from)]}) "
                f"-> {callee}.{frame.f_code.co_name} ({LAYER_NAMES[_layer(callee)]})"
            )

    return profile


async def _append_and_read(events: list[Event]) -> list[str]:
    """Appends `events` through the decorator, then reads the session, watching the calls."""
    service = PairingSessionService(InMemorySessionService())
    session = await service.create_session(app_name="app", user_id="user")
    upward: list[str] = []
    sys.setprofile(_watching(upward))
    try:
        for event in events:
            await service.append_event(session, event)
        await service.get_session(app_name="app", user_id="user", session_id=session.id)
    finally:
        sys.setprofile(None)
    return upward


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(max_steps=12), st.data())
def test_an_append_calls_only_downward_through_the_layers(
    events: list[Event], data: st.DataObject
) -> None:
    if data.draw(st.booleans(), label="rewind"):
        invocations = sorted({event.invocation_id for event in events})
        before = data.draw(st.sampled_from(invocations), label="rewound")
        events = [*events, rewind_event(before), model_event([call("after")])]
    assert [
        call for call in asyncio.run(_append_and_read(events)) if call not in KNOWN_UPWARD
    ] == []


def test_a_call_from_the_core_up_into_the_view_is_seen(monkeypatch: Any) -> None:
    """The watch can fail: a core function that calls a function of the view's module."""
    of_the_view = eval("lambda: False", vars(view))  # its frames run in the view's module
    monkeypatch.setattr(placeholders, "adk_reads_error_code_of_responses", of_the_view)
    upward = asyncio.run(_append_and_read([model_event([call("a")])]))
    assert upward and all("(core) -> passes.view.<lambda> (passes)" in found for found in upward)

"""The scan's fast path: only the fields the analysis reads, from stored JSON.

Rebuilding a stored event with ADK's ``Event`` model validates every field of
every part; the analysis (`adk_pairing.ledger`) reads a handful, declared
once in `adk_pairing.ledger.reads`. `light_event` builds objects with exactly
those attributes (their slots are the declaration) from an event's
JSON document, and the ledger's own `analyze` and `is_rewind` run on them
unchanged (objects built with pydantic's ``model_construct`` cost more than
validating: ``benchmarks/RESULTS.md``).

Which rows can matter. An event without a call or a result part changes no
call's status: the ledger settles calls only on response parts and opens them
only on call parts, under every builder's traits (the older builders' hazard
that text events end changes what a view withholds, never a status). A rewind
can annul a stretch reaching back to events of either kind. So the stores are
asked only for rows whose stored text names a call, a result or a rewind
(`CALL_MARKERS`, in the snake_case names ADK writes and the camelCase aliases
its models also accept), and a session holding a rewind is always re-read in
full.

Exact findings. A session the fast path finds broken (or that holds a
rewind, or a row it cannot read) is *confirmed*: read again through ADK's own
row models, and only what that finds is reported (`needs_confirmation`). A
row ADK would reject in a session the fast path finds healthy is never
validated, so it counts as readable: the one difference from ``--strict``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from ..ledger import analyze, is_rewind
from ..ledger.reads import (
    ACTIONS_FIELDS,
    CALL_FIELDS,
    CONTENT_FIELDS,
    EVENT_FIELDS,
    PART_FIELDS,
)


def _json_parser() -> Callable[[str | bytes], Any]:
    """orjson's parser when installed (litellm brings it; faster), else json's."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - depends on the environment
        return json.loads
    return orjson.loads


parse_json = _json_parser()

#: Substrings of a stored event that mark it as one the analysis needs: a call,
#: a result or a rewind, in both spellings ADK's models read.
CALL_MARKERS = (
    "function_call",
    "functionCall",
    "function_response",
    "functionResponse",
    "rewind_before_invocation_id",
    "rewindBeforeInvocationId",
)
CALL_MARKER_BYTES = tuple(marker.encode() for marker in CALL_MARKERS)


class UnexpectedShape(ValueError):
    """A stored event whose fields are not the types ADK writes."""


def _stand_in(name: str, fields: tuple[str, ...], doc: str) -> Any:
    """A class whose instances hold exactly `fields`, one of `adk_pairing.ledger.reads`'s
    declarations: its slots and its constructor's parameters, in that order, both
    come from it, so a field the ledger starts reading is declared there alone.
    Built positionally: this runs once per fetched row, and keyword calls cost more.
    """
    made = dataclasses.make_dataclass(
        name, fields, slots=True, eq=False, namespace={"__doc__": doc}
    )
    made.__module__ = __name__
    return made


#: A function call or response: the id and name the ledger pairs by.
LightCall = _stand_in("LightCall", CALL_FIELDS, "A call or response: what calls are paired by.")
LightPart = _stand_in("LightPart", PART_FIELDS, "A part: its call, response, text and thought.")
LightContent = _stand_in("LightContent", CONTENT_FIELDS, "An event's content: its parts.")
LightActions = _stand_in("LightActions", ACTIONS_FIELDS, "An event's actions: its rewind.")
#: The fields of an ``Event`` the analysis reads, and nothing else.
LightEvent = _stand_in("LightEvent", EVENT_FIELDS, "The fields of an Event the analysis reads.")


#: A compaction event holds no call, so the rows fetched here are never one;
#: and whether a session is healthy does not depend on it.
_NO_REWIND = LightActions(None, None)


def _refuse(what: str, value: Any, expected: str) -> UnexpectedShape:
    return UnexpectedShape(f"{what} is {type(value).__name__}, not {expected}")


def _either(get: Callable[[str], Any], name: str, alias: str) -> Any:
    """A field under the name ADK writes, else under the camelCase alias its models accept."""
    value = get(name)
    return get(alias) if value is None else value


def _string(value: Any, what: str) -> str | None:
    """`value`, a string or None; anything else is a shape ADK never writes."""
    if not (value is None or type(value) is str):
        raise _refuse(what, value, "a string")
    return value


def _light_call(data: Any, what: str) -> LightCall:
    if type(data) is not dict:
        raise _refuse(what, data, "an object")
    call_id = data.get("id")
    name = data.get("name")
    if not (call_id is None or type(call_id) is str) or not (name is None or type(name) is str):
        raise UnexpectedShape(f"{what} has an id or name that is not a string")
    return LightCall(call_id, name)


def _light_part(data: Any) -> LightPart:
    if type(data) is not dict:
        raise _refuse("a part", data, "an object")
    # Inline, not `_either`: this runs once per part of every fetched row.
    get = data.get
    call = get("function_call")
    if call is None:
        call = get("functionCall")
    response = get("function_response")
    if response is None:
        response = get("functionResponse")
    text = get("text")
    if not (text is None or type(text) is str):
        raise _refuse("text", text, "a string")
    signature = get("thought_signature")
    return LightPart(  # in `PART_FIELDS`' order
        None if call is None else _light_call(call, "function_call"),
        None if response is None else _light_call(response, "function_response"),
        text,
        get("thought"),
        get("thoughtSignature") if signature is None else signature,
    )


_NO_PARTS = LightContent(None)


def light_event(data: Any, invocation_id: str | None = None) -> LightEvent:
    """The analysed fields of one stored event (`data`: its JSON, parsed).

    `invocation_id` overrides the document's, for layouts that keep it in a
    column (``DatabaseSessionService`` schema 1's ``to_event`` does the same).
    Raises `UnexpectedShape` for a field of a type ADK never writes. Written
    for speed (it runs once per fetched row): plain `dict` checks, as JSON
    parsers build, rather than `Mapping`.
    """
    if type(data) is not dict:
        raise _refuse("an event", data, "an object")
    get = data.get
    content = get("content")
    light_content: LightContent | None = None
    if content is not None:
        if type(content) is not dict:
            raise _refuse("content", content, "an object")
        parts = content.get("parts")
        if parts is None:
            light_content = _NO_PARTS
        elif type(parts) is list:
            light_content = LightContent([_light_part(part) for part in parts])
        else:
            raise _refuse("content.parts", parts, "a list")
    actions = get("actions")
    rewind = None
    if actions is not None:
        if type(actions) is not dict:
            raise _refuse("actions", actions, "an object")
        rewind = _string(
            _either(actions.get, "rewind_before_invocation_id", "rewindBeforeInvocationId"),
            "actions.rewind_before_invocation_id",
        )
    held_open = _either(get, "long_running_tool_ids", "longRunningToolIds")
    if held_open is not None and type(held_open) is not list:
        raise _refuse("long_running_tool_ids", held_open, "a list")
    if invocation_id is None:
        invocation_id = _string(_either(get, "invocation_id", "invocationId"), "invocation_id")
    return LightEvent(  # positional, in `EVENT_FIELDS`' order (see `_stand_in`)
        _NO_REWIND if rewind is None else LightActions(rewind, None),
        _string(get("author"), "author") or "",
        _string(get("branch"), "branch"),
        light_content,
        invocation_id or "",
        set(held_open) if held_open else None,
        _string(_either(get, "isolation_scope", "isolationScope"), "isolation_scope"),
    )


def needs_confirmation(events: Sequence[LightEvent]) -> bool:
    """Whether a session read by the fast path must be read again in full.

    True when the ledger's analysis finds a call unanswered, or a rewind is
    present (the fast path skips the rows that would say where its annulled
    stretch starts).
    """
    return any(is_rewind(event) for event in events) or not analyze(events).is_healthy

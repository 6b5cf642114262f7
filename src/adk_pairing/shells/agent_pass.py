"""The last word on a model request: what `PairingPlugin` runs after every other callback.

ADK runs a model request's ``before_model_callback``s in one order on every
release we support: the plugins' in the order they were registered, then the
agent's own (``LlmAgent.before_model_callback``, one callable or a list),
reading the agent's list only after the plugins have returned. A plugin
listed after `PairingPlugin`, and every agent callback, can therefore edit
``llm_request.contents`` after the plugin made it valid: a window that keeps
the last contents cuts a call from its answer, and the provider rejects the
request.

So `PairingPlugin` ends each agent's chain. At an agent's first request it
places `final_request_pass` last in that agent's ``before_model_callback``
list (a new list: the agent's callables are kept, in order), logged once
per agent; at every later request it finds it there, which is the whole
cost. If something was appended after it since, it moves back to the end.
`final_request_pass` applies the five rules of the request pass
(`adk_pairing.passes.request_pass`) to the contents as they are after everything
else: a result whose call a window cut is dropped, as ADK's own
``drop_orphaned_function_responses`` does, a call whose answer was cut is
answered by the placeholder, turns of one role are merged. It restores
nothing: the plugin restored what ADK's builder dropped before the others
ran, and what they removed since they removed on purpose.

Where the chain cannot be ended, this is said once per agent at its first
request, with the fix: an agent without a ``before_model_callback`` list
(not an ``LlmAgent``), and a callback that returns an ``LlmResponse``,
which ends ADK's chain (ADK then sends no request; one that sends the
request to a model itself must call `pair_request` first).

Where nothing can run in between, the plugin registered last and the
agent's chain holding the final pass alone, the request the final pass would
check is the one the plugin just repaired: it is not checked twice
(`edits_may_follow`).

`adk_pairing.pair_request` (in `adk_pairing.shells.plugin`) is the same pass for
people who compose callbacks themselves: put last in an agent's
``before_model_callback`` list, it is the plugin's whole pass without
`PairingPlugin` in the runner, and `final_request_pass` with it. Which
requests the plugin saw, and with which settings, is kept per request's
callback context (`remember_what_the_plugin_left`).
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..adk.callbacks import invocation_of
from ..core.ownership import session_label
from ..core.placeholders import PlaceholderTexts
from ..ledger import held_open_call_ids
from ..passes.request_pass import repair_contents
from .metrics import record_request_repairs
from .once import logged_once

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse

__all__ = [
    "also_ends_a_chain",
    "apply_after_the_plugin",
    "edits_may_follow",
    "final_request_pass",
    "history_opens_with_the_user",
    "place_final_pass",
    "remember_what_the_plugin_left",
    "seen_by_the_plugin",
]

logger = logging.getLogger("adk_pairing")


async def final_request_pass(
    callback_context: CallbackContext, llm_request: LlmRequest
) -> LlmResponse | None:
    """The last agent callback `PairingPlugin` places: the five rules, after everything else.

    A no-op for a request `PairingPlugin` did not see (an agent shared with a
    runner that does not use it).
    """
    apply_after_the_plugin(callback_context, llm_request)
    return None


#: The callables that end a chain as `PairingPlugin` needs it ended: this
#: module's `final_request_pass`, and `adk_pairing.pair_request`.
_CHAIN_ENDS: list[object] = [final_request_pass]


def also_ends_a_chain(callback: object) -> None:
    """Counts `callback` as ending an agent's chain as the final pass does."""
    _CHAIN_ENDS.append(callback)


def place_final_pass(callback_context: CallbackContext) -> bool:
    """Ends the requesting agent's ``before_model_callback`` chain with `final_request_pass`.

    Called by `PairingPlugin` at every request, before ADK reads the agent's
    callbacks (it reads them only after every plugin returned). True when
    the chain ends with `final_request_pass` or `pair_request`; False, said
    once per agent, when the agent has no chain to end.
    """
    invocation = invocation_of(callback_context)
    try:
        return _place_final_pass(getattr(invocation, "agent", None))
    except Exception:  # fail open: the plugin's own pass still runs
        logger.exception("adk_pairing: could not end the agent's before_model_callback chain")
        return False


def _place_final_pass(agent: object) -> bool:
    chain: Any = getattr(agent, "before_model_callback", _NO_CHAIN)
    if isinstance(chain, list):
        if chain and chain[-1] in _CHAIN_ENDS:
            return True
        own = [callback for callback in chain if callback is not final_request_pass]
    elif chain is _NO_CHAIN:
        own = None
    else:
        if chain in _CHAIN_ENDS:
            return True
        own = [] if chain is None else [chain]
    name = str(getattr(agent, "name", "?"))
    if own is not None:
        try:
            agent.before_model_callback = [*own, final_request_pass]  # type: ignore[union-attr]
            placed = final_request_pass in agent.canonical_before_model_callbacks  # type: ignore[union-attr]
        except Exception:  # an agent whose chain cannot be set is one we cannot follow
            placed = False
        if placed:
            if logged_once.first_time(("final_pass_placed", name, type(agent).__name__)):
                logger.info(
                    "adk_pairing: placed adk_pairing.shells.agent_pass.final_request_pass last in "
                    "agent %r's before_model_callback chain, after its %d own callback(s), so "
                    "the request "
                    "is checked after every plugin and callback that edits it. A callback that "
                    "returns an LlmResponse ends the chain before it: ADK then sends no request; "
                    "if that callback sends the request to a model itself, it must call "
                    "adk_pairing.pair_request on it first",
                    name,
                    len(own),
                )
            return True
    if logged_once.first_time(("final_pass_unplaced", name, type(agent).__name__)):
        logger.warning(
            "adk_pairing: agent %r (%s) has no before_model_callback list PairingPlugin can end: "
            "a plugin listed after PairingPlugin that edits the request is not followed. "
            "Register PairingPlugin last, or call adk_pairing.pair_request on the request "
            "after the last change to it",
            name,
            type(agent).__name__,
        )
    return False


_NO_CHAIN = object()


@dataclass(frozen=True, slots=True)
class _Left:
    """The settings `PairingPlugin` repaired one request with."""

    texts: PlaceholderTexts
    fill_missing_ids: bool


#: The requests the plugin repaired, by the request's callback context: ADK
#: hands the plugins and the agent's callbacks one context per request.
_LEFT: weakref.WeakKeyDictionary[object, _Left] = weakref.WeakKeyDictionary()


def remember_what_the_plugin_left(
    callback_context: object,
    llm_request: LlmRequest,
    texts: PlaceholderTexts,
    fill_missing_ids: bool,
) -> None:
    """Notes that `PairingPlugin` repaired this request, and with which settings."""
    with contextlib.suppress(TypeError):  # a context that cannot be weakly referenced
        _LEFT[callback_context] = _Left(texts, fill_missing_ids)


def edits_may_follow(callback_context: object, plugin: object) -> bool:
    """Whether a callback may edit the request after `plugin`, before the final pass.

    ADK runs the plugins' callbacks in registration order, then the agent's
    chain, and nothing else touches the request between them (module
    docstring). So none may when `plugin` is the last plugin registered and
    the agent's chain holds `final_request_pass` alone. True where that
    cannot be read.
    """
    invocation = invocation_of(callback_context)
    try:
        plugins = invocation.plugin_manager.plugins  # type: ignore[union-attr]
        chain = invocation.agent.canonical_before_model_callbacks  # type: ignore[union-attr]
        return not (plugins[-1] is plugin and list(chain) == [final_request_pass])
    except Exception:  # an invocation shaped otherwise: check again, as before
        return True


def history_opens_with_the_user(session: object) -> bool:
    """Whether the session's first event with content is the user's.

    Then a request that opens with the model's turn was cut there (a context
    window, a rewind, compaction), and says so (`request_pass`, rule 5); a
    history the agent opened (a greeting, calls before any user message)
    opens its requests as it is.
    """
    for event in getattr(session, "events", None) or ():
        content = getattr(event, "content", None)
        if content is not None and content.parts:
            return getattr(event, "author", None) == "user"
    return False


def seen_by_the_plugin(callback_context: object) -> bool:
    """Whether `PairingPlugin` repaired this request before the agent's callbacks ran."""
    try:
        return callback_context in _LEFT
    except TypeError:
        return False


def apply_after_the_plugin(callback_context: object, llm_request: LlmRequest) -> None:
    """The five rules on the request as it is now, with the settings `PairingPlugin` used.

    Nothing when the plugin did not see this request. A request nothing
    changed since costs the request pass's check (one read of each part):
    comparing what the plugin left part by part would cost as much, and an
    edit can replace a content anywhere. Repairs are counted; a session's
    first notable one is logged.
    """
    contents = llm_request.contents
    left: _Left | None = None
    with contextlib.suppress(TypeError):
        left = _LEFT.pop(callback_context, None)
    if left is None:
        return
    invocation = invocation_of(callback_context)
    session = getattr(invocation, "session", None)
    try:
        result = repair_contents(
            contents,
            held_open_ids=lambda: held_open_call_ids(getattr(session, "events", None) or ()),
            texts=left.texts,
            fill_missing_ids=left.fill_missing_ids,
            cut=history_opens_with_the_user(session),
        )
    except Exception:  # fail open: the request goes out as it is
        logger.exception(
            "adk_pairing: could not check the model request of session %s after the agent's "
            "callbacks; sending it as it is",
            session_label(session),
        )
        return
    if result.contents is contents or not result.contents:
        return
    llm_request.contents = result.contents
    app = getattr(session, "app_name", None) or "unknown"
    for rule, count in Counter(repair.rule.value for repair in result.repairs).items():
        record_request_repairs(rule, app, count)
    notable = result.notable
    key = (*(str(getattr(session, f, "?")) for f in ("app_name", "user_id", "id")), "after")
    if notable and logged_once.first_time(key):
        logger.warning(
            "adk_pairing: the model request of session %s was changed after PairingPlugin ran "
            "(a plugin listed after it, or the agent's before_model_callback); repaired it "
            "again before it was sent: %s. Logged once per session",
            session_label(session),
            result.summary(),
        )

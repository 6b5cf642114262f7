"""`PairingPlugin`: the last pass over every model request, so every provider accepts it.

A thin shell over `adk_pairing.passes.request_pass`: it takes the contents ADK has built
for this request, has them repaired, assigns the result to
``llm_request.contents`` and logs what was repaired. It never touches the
session or any event.

Where it runs: ``before_model_callback`` exists with the same keyword
signature on every google-adk release this package supports. ADK calls
the plugins' callbacks after its request processors have built
``llm_request.contents``, in the order they were registered, and then the
agent's own ``before_model_callback``s, read from the agent only after every
plugin returned. So the plugin ends each agent's chain with
`adk_pairing.shells.agent_pass.final_request_pass` (placed at the agent's first
request, logged once): a plugin listed after this one, or an agent callback,
that edits the contents is followed by the five rules again.

What it reads from the callback context:

* which calls ADK holds open: the ``long_running_tool_ids`` of the session's
  events (plus confirmations, credential and input requests, by name). The
  session is read only when some call needs a placeholder;
* whether the model pairs calls with results by id (AnthropicLlm, LiteLlm,
  OpenAIResponsesLlm, looked up among the modules already imported, as ADK's
  own ``_is_id_pairing_model`` does where ADK has one): only then are id-less
  calls given ids. For Gemini ADK strips its own ``adk-`` ids from the request
  on purpose;
* the placeholder texts of the `PairingSessionService` the runner uses, when
  the plugin was not given texts of its own, so the view and the request pass
  say the same thing whatever configured them (constructor, config file,
  ``register_pairing_schemes``).

Calls ADK's builder dropped (the restore): an ADK whose contents request
processor drops a call nothing answers does so before any plugin runs, so
the request pass alone never sees it. On every release, a trailing event that
holds a result makes ADK's rearranger cut the history back to that result's
call, and it can put calls on the user's side next to results, where no
provider takes them; an unanswered call is what leaves such a result last.
The plugin keeps, per session, a ledger of the session's events (the one the
view uses, brought up to date incrementally by an `AnalysisCache`), and asks
it whether the history holds open calls, shown to this agent's branch, that
the request lacks (`adk_pairing.passes.restore_pass`). The first time it does,
it runs ADK's own contents request processor twice
(`adk_pairing.adk.callbacks.rerun_contents_processor`), on the stored events
and then on the events with the view's placeholders: whatever arguments the
installed release passes its builder, they are the same as for the real
request. What the two builds differ by is kept per session
(`restore_pass.Restoration`) under what it depends on (`_marks`), and placed
into this request and the session's later ones where ADK's builder put it
(`restore_pass.place`): a later request costs one pass over its start, no
builder run. Contents another plugin added after the calls' place stay; a
window that cut their turn leaves them out (said once); a start that is not
what ADK built is left to the request pass alone, said once per session with
the fix. Irregular histories and a trailing result ADK's rearranger acts on
are built again each time. Agent callbacks run after every plugin, so they
cannot be the cause. A healthy request pays for one incremental ledger read,
no builder run.

If the repair itself fails on some input, the request goes out as ADK built
it and the error is logged: the plugin is never less available than ADK.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, ClassVar

from google.adk.plugins.base_plugin import BasePlugin

from ..adk.builder import NEWEST_BUILDER
from ..adk.callbacks import invocation_of, rerun_contents_processor
from ..core.analysis_cache import DEFAULT_ANALYSIS_CACHE_SIZE, AnalysisCache
from ..core.lru import Lru
from ..core.ownership import session_label
from ..core.placeholders import PlaceholderTexts
from ..ledger import PairingLedger, TrackedCall, held_open_call_ids
from ..passes.request_memo import RememberedRewrite
from ..passes.request_pass import repair_contents
from ..passes.restore_pass import (
    Restoration,
    RestoreOutcome,
    calls_the_request_lacks,
    end_in_play,
    ends_with_a_result_reaching_back,
    place,
    repaired_history,
    restoration,
    splice,
)
from ..wire import pairs_calls_by_id
from .agent_pass import (
    also_ends_a_chain,
    apply_after_the_plugin,
    edits_may_follow,
    history_opens_with_the_user,
    place_final_pass,
    remember_what_the_plugin_left,
    seen_by_the_plugin,
)
from .errors import require_pairing_options, require_type
from .metrics import record_request_repairs
from .once import logged_once
from .service import PairingSessionService

__all__ = ["PairingPlugin", "pair_request"]

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.events.event import Event
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse
    from google.genai import types

logger = logging.getLogger("adk_pairing")

#: How many sessions' restores are remembered; a session beyond it pays ADK's
#: builder again on its next request that lacks a call.
REMEMBERED_RESTORES = 512
#: How many sessions' (and agents') last rewrites of the request are
#: remembered; a session beyond it rewrites its next request whole, as without
#: a memory. Fewer than restores: a rewrite holds the contents it read and made,
#: as large as the faulty part of the request (benchmarks/RESULTS.md has the
#: size), which a store read afresh every turn does not share.
REMEMBERED_REWRITES = 32


class PairingPlugin(BasePlugin):
    """Makes every model request satisfy the pairing rules of every provider.

    Args:
      name: The plugin's name; ADK's ``--extra_plugins`` passes the qualified
        class name.
      missing_text: What the model reads for a call with no recorded result.
        Default: the runner's `PairingSessionService`'s text, else the view's
        default.
      pending_text: What the model reads for a call ADK still holds open.
        Default as for `missing_text`.
      fill_missing_ids: Give calls without an id an id. None (the default)
        decides per request from the agent's model: on for models that pair
        by id (Anthropic, LiteLlm, OpenAI), off otherwise (Gemini).
    """

    #: Whether this plugin ends each agent's callback chain with the final
    #: pass (`adk_pairing.shells.agent_pass`); not when it runs inside that chain.
    _places_final_pass: ClassVar[bool] = True

    def __init__(
        self,
        name: str = "adk_pairing",
        *,
        missing_text: str | None = None,
        pending_text: str | None = None,
        fill_missing_ids: bool | None = None,
    ) -> None:
        require_type("name", name, str, "a string", optional=False)
        require_pairing_options(missing_text, pending_text, None)
        require_type(
            "fill_missing_ids", fill_missing_ids, bool, "True, False or None", optional=True
        )
        super().__init__(name=name)
        self._missing_text = missing_text
        self._pending_text = pending_text
        self._fill_missing_ids = fill_missing_ids
        # The ledger of each session's events, walked only where they grew.
        self._analysis_cache = AnalysisCache(DEFAULT_ANALYSIS_CACHE_SIZE)
        # Sessions and their lacking calls that ADK's builder showed no more
        # with results (a compacted range): not built again for the same calls.
        self._nothing_to_restore: Lru[tuple[object, ...], None] = Lru(DEFAULT_ANALYSIS_CACHE_SIZE)
        # Per session, what ADK's builder showed the restore changes, under the
        # marks of the history it holds for (`restore_pass.Restoration`): later
        # requests are restored from it by one pass over their start. It holds
        # the contents before the calls' place, so fewer sessions than ledgers.
        self._restorations: Lru[tuple[str, str, str], tuple[tuple[object, ...], Restoration]] = Lru(
            REMEMBERED_RESTORES
        )
        # Per session and agent, the request pass's last rewrite: the next
        # request rewrites only what follows its last segment's start.
        self._rewrites: Lru[tuple[str, str, str, str], RememberedRewrite] = Lru(REMEMBERED_REWRITES)

    def texts_for(self, session_service: object) -> PlaceholderTexts:
        """The placeholder texts: this plugin's own, then the decorator's, then the defaults."""
        base = (
            session_service.texts
            if isinstance(session_service, PairingSessionService)
            else PlaceholderTexts()
        )
        return base.with_overrides(missing=self._missing_text, pending=self._pending_text)

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        # First, so ADK reads the agent's chain with the final pass at its end.
        if self._places_final_pass:
            place_final_pass(callback_context)
        await self._repair_request(callback_context, llm_request)
        if self._places_final_pass and edits_may_follow(callback_context, self):
            invocation = invocation_of(callback_context)
            texts = self.texts_for(getattr(invocation, "session_service", None))
            fill = self._fill_for(invocation)
            remember_what_the_plugin_left(callback_context, llm_request, texts, fill)
        return None

    def _held_open_ids(self, session: object) -> set[str]:
        """The ids of the calls ADK holds open (`held_open_call_ids`), from this session's
        remembered ledger where it is the newest builder's, else by walking its history."""
        events = getattr(session, "events", None) or ()
        key = _session_key(session)
        if isinstance(events, list) and events and key is not None:
            ledger = self._analysis_cache.ledger_for(key, events)
            if ledger.traits == NEWEST_BUILDER:
                return ledger.held_open_ids()
        return held_open_call_ids(events)

    def _rewrite_of(
        self, invocation: object, session: object
    ) -> tuple[tuple[str, str, str, str], RememberedRewrite] | None:
        """The request pass's memory for this session's agent, and its key; None without a
        session. `_keep_rewrite` puts it back once the request pass has used it."""
        session_key = _session_key(session)
        if session_key is None:
            return None
        agent = getattr(invocation, "agent", None)
        key = (*session_key, str(getattr(agent, "name", "")))
        return key, self._rewrites.get(key) or RememberedRewrite()

    def _keep_rewrite(self, key: tuple[str, str, str, str], remembered: RememberedRewrite) -> None:
        """Keeps a memory that holds a rewrite to resume from, as the newest; drops one that
        does not, so sessions that need no rewrite never push out those that do."""
        if remembered.holds_a_rewrite:
            self._rewrites.put(key, remembered)
        else:
            self._rewrites.discard(key)

    def _fill_for(self, invocation: object) -> bool:
        """Whether id-less calls get ids: as configured, else per the agent's model."""
        if self._fill_missing_ids is not None:
            return self._fill_missing_ids
        agent = getattr(invocation, "agent", None)
        return pairs_calls_by_id(getattr(agent, "canonical_model", None))

    async def _repair_request(
        self, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> None:
        """The request pass: the calls ADK dropped put back, then the five rules."""
        contents = llm_request.contents
        invocation = invocation_of(callback_context)
        session = getattr(invocation, "session", None)
        texts = self.texts_for(getattr(invocation, "session_service", None))
        try:
            restored = await self._restored(invocation, llm_request, texts)
        except Exception:  # fail open: the request pass still runs on ADK's contents
            restored = None
            logger.exception(
                "adk_pairing: could not restore the calls ADK dropped from the model request "
                "of session %s; repairing the request as ADK built it",
                session_label(session),
            )
        try:
            fill = self._fill_for(invocation)
            memory = self._rewrite_of(invocation, session)
            result = repair_contents(
                restored if restored is not None else contents,
                held_open_ids=lambda: self._held_open_ids(session),
                texts=texts,
                fill_missing_ids=fill,
                cut=history_opens_with_the_user(session),
                remembered=memory[1] if memory is not None else None,
            )
            if memory is not None:
                self._keep_rewrite(*memory)
        except Exception:  # fail open: the request goes out as ADK built it
            logger.exception(
                "adk_pairing: could not check the model request of session %s; "
                "sending it as ADK built it",
                session_label(session),
            )
            return None
        if result.contents is contents or not result.contents:
            return None
        llm_request.contents = result.contents
        # Rule names are fixed words (`ContentRule`): labels stay low-cardinality.
        app = getattr(session, "app_name", None) or "unknown"
        for rule, count in Counter(repair.rule.value for repair in result.repairs).items():
            record_request_repairs(rule, app, count)
        notable = result.notable
        if notable:
            logger.warning(
                "adk_pairing: repaired the model request of session %s: %s",
                session_label(session),
                result.summary(),
            )
        return None

    async def _restored(
        self, invocation: object, llm_request: LlmRequest, texts: PlaceholderTexts
    ) -> list[types.Content] | None:
        """The request's contents with the calls ADK dropped put back; None when none were.

        See the module docstring: one incremental ledger read when nothing
        is open; when the request lacks an open call, one pass over its start
        if this session's restore is remembered, else two runs of ADK's
        contents processor.
        """
        session = getattr(invocation, "session", None)
        events = getattr(session, "events", None)
        if not events or not isinstance(events, list):
            return None
        key = _session_key(session)
        if key is None:
            return None
        ledger = self._analysis_cache.ledger_for(key, events)
        contents = llm_request.contents
        branch = getattr(invocation, "branch", None)
        lacking = calls_the_request_lacks(ledger, events, contents, branch)
        if not lacking:
            return None
        marks = _marks(key, invocation, branch, texts, ledger, events, lacking)
        if marks in self._nothing_to_restore:
            return None
        # What ADK's builder does is local to the calls' place only in a regular
        # history: in an irregular one (reused ids, results beside calls...) its
        # pairing reaches across the history, and a trailing result its
        # rearranger acts on changes the end of what it builds. Those are built
        # again each time, never remembered.
        remembers = not (
            ledger.irregular or ledger.withholding or ends_with_a_result_reaching_back(events)
        )
        if remembers:
            remembered = self._restorations.get(key)
            if remembered is not None and remembered[0] == marks:
                placed = place(remembered[1], contents)
                if placed.outcome is RestoreOutcome.RESTORED:
                    return placed.contents
        # The repaired build first: where ADK refuses it, the stored one is not needed.
        try:
            from_repaired = await rerun_contents_processor(
                invocation, llm_request, repaired_history(events, ledger, texts)
            )
        except Exception as error:  # an older builder's walk-back refuses some placements
            self._nothing_to_restore.put(marks, None)
            if logged_once.first_time((*key, "builder_refused")):
                logger.warning(
                    "adk_pairing: ADK's request builder refused the history of session %s "
                    "with its unanswered calls answered (%s); the request goes out as ADK "
                    "built it, repaired by the request pass",
                    session_label(session),
                    type(error).__name__,
                )
            return None
        from_stored = await rerun_contents_processor(invocation, llm_request, events)
        spliced = splice(contents, from_stored, from_repaired)
        if spliced.outcome is RestoreOutcome.NOTHING_TO_RESTORE:
            self._nothing_to_restore.put(marks, None)
            return None
        found = restoration(from_stored, from_repaired)
        if remembers:
            self._restorations.put(key, (marks, found))
        if spliced.outcome is RestoreOutcome.RESTORED:
            return spliced.contents
        # Another plugin (or a processor) changed the contents first: the calls
        # go where ADK's builder put them, if the request still holds that place.
        placed = place(found, contents, from_stored[len(found.stored_start) :])
        if placed.outcome is RestoreOutcome.RESTORED:
            return placed.contents
        if placed.outcome is RestoreOutcome.LEFT_OUT:
            if logged_once.first_time((*key, "left_out")):
                logger.info(
                    "adk_pairing: the model request of session %s starts after the turn of "
                    "calls the history holds unanswered (a window, such as ContextFilterPlugin, "
                    "left it out before PairingPlugin ran); they stay out",
                    session_label(session),
                )
            return None
        if logged_once.first_time((*key, "not_restored")):
            logger.warning(
                "adk_pairing: the model request of session %s was changed before PairingPlugin "
                "ran (another plugin, or a request processor that rewrites contents) where "
                "ADK's request builder dropped calls, so they could not be put back; list "
                "PairingPlugin before that plugin, or wrap the session service in "
                "PairingSessionService, whose view keeps the calls",
                session_label(session),
            )
        return None


def _session_key(session: object) -> tuple[str, str, str] | None:
    """What the plugin remembers a session under: its app, user and id, as a store keys it.

    None for something that is not a session: nothing is remembered for it.
    """
    try:
        return (str(session.app_name), str(session.user_id), str(session.id))  # type: ignore[attr-defined]
    except AttributeError:
        return None


def _marks(
    key: tuple[str, str, str],
    invocation: object,
    branch: str | None,
    texts: PlaceholderTexts,
    ledger: PairingLedger,
    events: list[Event],
    lacking: list[TrackedCall],
) -> tuple[object, ...]:
    """What a restore of this session's request depends on, but for the events it passes over.

    The requesting agent and branch, the texts, the calls the request lacks,
    and every open call with its status and placement: the repaired events
    differ from the stored ones only there. And the event that ends what ADK
    builds, where that end depends on it (`restore_pass.end_in_play`).
    O(open calls).
    """
    open_calls = ledger.open_calls
    return (
        *key,
        end_in_play(events),
        str(getattr(getattr(invocation, "agent", None), "name", "")),
        str(branch),
        texts.missing,
        texts.pending,
        tuple(f"{events[c.event_index].id}/{c.part_index}" for c in lacking),
        tuple(
            (
                events[index].id,
                index,
                ledger.placement(index),
                tuple((c.part_index, c.status, c.withheld) for c in calls),
            )
            for index, calls in open_calls.items()
        ),
    )


async def pair_request(
    callback_context: CallbackContext, llm_request: LlmRequest
) -> LlmResponse | None:
    """Makes `llm_request` valid for every provider: the request pass as an agent callback.

    For agents that compose their callbacks themselves. Put it last, after
    every callback that edits ``llm_request.contents``; it returns None, so
    ADK goes on to call the model with the repaired request::

        from adk_pairing import pair_request

        agent = Agent(
            name="assistant",
            model="gemini-2.5-flash",
            before_model_callback=[keep_recent_turns, pair_request],
        )

    Or, inside a callback of your own, once it has edited the request:
    ``await pair_request(callback_context, llm_request)``.

    Without `PairingPlugin` in the runner it is the plugin's whole pass: the
    calls ADK's request builder dropped (where it drops any) are put back and
    every call is answered, with the placeholder texts of the runner's
    `PairingSessionService`, else the defaults. With `PairingPlugin`
    registered, the plugin did that before the agent's callbacks ran, with
    its own settings, and this applies the five rules again to what they
    left (the plugin then places no final pass of its own behind it). Never
    raises: a failure is logged and the request goes out as it was.
    """
    if seen_by_the_plugin(callback_context):
        apply_after_the_plugin(callback_context, llm_request)
        return None
    return await _agent_level_pass().before_model_callback(
        callback_context=callback_context, llm_request=llm_request
    )


also_ends_a_chain(pair_request)


class _AgentLevelPass(PairingPlugin):
    """`pair_request` without a runner's `PairingPlugin`: the pass, inside the agent's chain."""

    _places_final_pass = False


_AGENT_LEVEL: list[_AgentLevelPass] = []


def _agent_level_pass() -> _AgentLevelPass:
    """One per process: its ledgers are per session, as a plugin's are per runner."""
    if not _AGENT_LEVEL:
        _AGENT_LEVEL.append(_AgentLevelPass(name="adk_pairing.pair_request"))
    return _AGENT_LEVEL[0]

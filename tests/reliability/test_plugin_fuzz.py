"""The fuzz's histories through `PairingPlugin`, alone and behind the view: never worse.

The histories of `test_fuzz` (`HistoryGenerator`, same seed), each built into a
request by ADK's own contents request processor (`tests.adk_request`) over the
stored events (plugin alone) and over the view (both pieces), then passed
through the plugin's ``before_model_callback`` as ADK runs it. For each:

* never worse: every rule of `adk_pairing.rules.checks` the request ADK builds from
  the stored events keeps, the request after the plugin keeps too (all four,
  strict alternation included: the plugin merges turns);
* no call lost: every call ADK's builder shows once it has a result
  (`tests.calls_lost.calls_lost`, the oracle) reaches the
  model, answered. Required of well-formed histories; in malformed ones
  (`histories.traits`: reused ids, calls beside ADK's confirmation request,
  text and a call in one part...) the oracle itself is approximate, and the
  count is reported, not asserted;
* no real result replaced: a call the request ADK builds from the stored
  events answers with a result a tool wrote is not answered by a placeholder
  instead (`tests.calls_lost.results_replaced`), as ADK's own request pairs
  them. Reported, not asserted (see the test).

Counted over the whole run and printed before anything is asserted.
``RELIABILITY_FUZZ_HISTORIES`` and ``RELIABILITY_FUZZ_SEED`` as in `test_fuzz`.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import Counter
from collections.abc import Callable

import pytest
from google.adk.agents.callback_context import CallbackContext
from google.adk.events.event import Event

from adk_pairing import PairingPlugin, repaired_events
from adk_pairing.rules.checks import request_violations
from tests.adk_features import adk_drops_unanswered_calls
from tests.adk_request import AGENT_NAME, build_request_async, build_request_contents_async
from tests.calls_lost import calls_lost, results_replaced
from tests.unit.events import call, model_event, response, response_event, user_text
from tests.unit.test_plugin_restores_calls import _no_oracle, sent_after_plugin

from .histories import HistoryGenerator, describe, traits
from .test_fuzz import HISTORIES, SEED

#: How many of the histories the remembered-restore check replays (each one a
#: turn further): a fifth of the fuzz's by default, to keep CI within budget;
#: ``RELIABILITY_REMEMBERED_HISTORIES`` sets it for a measurement.
REMEMBERED_HISTORIES = int(
    os.environ.get("RELIABILITY_REMEMBERED_HISTORIES", str(max(HISTORIES // 5, 1)))
)

SETUPS = ("plugin alone", "both")
LOST = "call lost or unanswered"


def _kept(contents: list) -> set[str]:
    """The rules `contents` keep; none for an empty request, which every provider refuses."""
    if not contents:
        return set()
    return {rule for rule, found in request_violations(contents).items() if not found}


def _check(events: list[Event], setup: str) -> list[str]:
    """What went wrong for `events` in `setup` (empty when nothing)."""
    try:
        stored_request = asyncio.run(build_request_contents_async(events))
    except Exception:
        return []  # ADK raises before any plugin runs: nothing to send either way
    session_events = list(events) if setup == "plugin alone" else repaired_events(events)
    try:
        sent = asyncio.run(sent_after_plugin(session_events))
    except Exception as error:
        return [f"raised {type(error).__name__}"]
    found = [f"worse ({rule})" for rule in sorted(_kept(stored_request) - _kept(sent))]
    found += ["real result replaced by a placeholder"] * results_replaced(stored_request, sent)
    if _no_oracle(events):
        return found
    try:
        lost = calls_lost(events, sent, AGENT_NAME)
    except Exception:  # ADK's builder refuses the answered copy: no oracle here
        return found
    found += [LOST] * len(lost)
    return found


@pytest.mark.every_release
def test_the_plugin_never_makes_a_request_worse_and_loses_no_call(
    figures: Callable[[str], None],
) -> None:
    generator = HistoryGenerator(SEED)
    failures: dict[str, Counter[str]] = {setup: Counter() for setup in SETUPS}
    shortest: dict[str, list[Event]] = {}
    # Calls lost are required to be none in well-formed histories (a rewind is
    # ADK's own); in malformed ones the oracle is approximate, and the count is
    # reported. Results replaced are reported only: where an id is reused, ADK's
    # own request can pair a later call with an earlier call's result, which
    # the plugin rightly answers with a placeholder.
    well_formed_losses: dict[str, str] = {}
    for _ in range(HISTORIES):
        events = generator.history()
        generator.rng.randrange(len(events))  # in step with test_fuzz's draws
        well_formed = not traits(events) - {"a rewind"}
        for setup in SETUPS:
            for kind in _check(events, setup):
                failures[setup][kind] += 1
                label = f"{setup}: {kind}"
                if label not in shortest or len(events) < len(shortest[label]):
                    shortest[label] = events
                if well_formed and kind == LOST:
                    well_formed_losses.setdefault(label, describe(events))
    figures(f"{HISTORIES} histories (seed {SEED})")
    for setup in SETUPS:
        figures(f"{setup}: {dict(failures[setup]) or 'nothing worse, no call lost'}")
    for label, events in shortest.items():
        figures(f"shortest, {label}: {describe(events)}")
    worse = {
        s: {k: n for k, n in found.items() if k.startswith("worse")}
        for s, found in failures.items()
    }
    assert not any(worse.values()), worse
    raised = {
        s: {k: n for k, n in found.items() if k.startswith("raised")}
        for s, found in failures.items()
    }
    assert not any(raised.values()), raised
    assert not well_formed_losses, well_formed_losses


async def _sent(plugin: PairingPlugin, events: list[Event]) -> list:
    request, invocation = await build_request_async(events)
    await plugin.before_model_callback(
        callback_context=CallbackContext(invocation), llm_request=request
    )
    return list(request.contents)


def _next_turn(events: list[Event], number: int) -> list[list[Event]]:
    """The histories of the two requests of one more turn: its message, then its tool's result."""
    invocation = f"inv-next-{number}"
    asked = [*events, user_text("and now?", invocation_id=invocation)]
    call_id = f"next-call-{number}"
    answered = [
        *asked,
        model_event([call(call_id)], invocation_id=invocation),
        response_event([response(call_id)], invocation_id=invocation),
    ]
    return [asked, answered]


def _remembering_differs(events: list[Event]) -> tuple[bool, int]:
    """Whether a plugin that restored `events` sends the next turn's requests as a fresh one does.

    Returns (differs, requests restored from what the plugin remembered).
    """
    warm = PairingPlugin()
    try:
        asyncio.run(_sent(warm, events))
    except Exception:
        return False, 0  # ADK's builder raises on this history
    if not len(warm._restorations):
        return False, 0
    remembered = 0
    for later in _next_turn(events, 1):
        before = len(_BUILDS)
        try:
            fresh = asyncio.run(_sent(PairingPlugin(), later))
        except Exception:
            return False, remembered
        builds = len(_BUILDS)
        if asyncio.run(_sent(warm, later)) != fresh:
            return True, remembered
        remembered += len(_BUILDS) == builds and builds > before
    return False, remembered


_BUILDS: list[int] = []


@pytest.mark.every_release
def test_a_remembered_restore_sends_what_a_fresh_one_does(
    figures: Callable[[str], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plugin restores a session's later requests from what ADK's builder
    # showed it once (`restore_pass.Restoration`): each of the next turn's two
    # requests must be what a plugin that never saw the session sends.
    import adk_pairing.shells.plugin as plugin_module

    real_build = plugin_module.rerun_contents_processor

    async def counting_build(*args, **kwargs):  # type: ignore[no-untyped-def]
        _BUILDS.append(1)
        return await real_build(*args, **kwargs)

    monkeypatch.setattr(plugin_module, "rerun_contents_processor", counting_build)
    generator = HistoryGenerator(SEED)
    differing: list[list[Event]] = []
    remembered = 0
    for _ in range(REMEMBERED_HISTORIES):
        events = generator.history()
        generator.rng.randrange(len(events))  # in step with test_fuzz's draws
        differs, count = _remembering_differs(events)
        remembered += count
        if differs:
            differing.append(events)
    figures(
        f"{REMEMBERED_HISTORIES} histories (seed {SEED}): {remembered} later requests "
        f"restored from memory, {len(differing)} histories where that differs from a fresh plugin"
    )
    assert not differing, describe(min(differing, key=len))
    if adk_drops_unanswered_calls():
        # Before 2.10 ADK keeps an unanswered call, and the restore's other
        # cases (a trailing result reaching back) are never remembered.
        assert remembered, "no request was restored from memory: the test checks nothing"


def _rewrite_remembering_differs(events: list[Event]) -> bool:
    """Whether a plugin that remembers its rewrites sends what one that does not sends.

    Both send `events`, then the next two turns' requests. Every request
    after the first may resume the plugin's last rewrite
    (`adk_pairing.passes.request_memo`). The other plugin remembers all else
    (its ledgers, its restores) alike, so only the rewrite's memory differs.
    """
    remembering, forgetting = PairingPlugin(), PairingPlugin()
    forgetting._rewrite_of = lambda invocation, session: None  # type: ignore[method-assign]
    for history in _with_two_more_turns(events):
        try:
            expected = asyncio.run(_sent(forgetting, history))
        except Exception:
            return False  # ADK's builder raises on this history
        if asyncio.run(_sent(remembering, history)) != expected:
            return True
    return False


@pytest.mark.every_release
def test_a_remembered_rewrite_sends_what_a_plain_one_does(
    figures: Callable[[str], None],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The request pass resumes a session's last rewrite where the contents
    # before its last segment are the same: each of the next two turns'
    # requests must be what a plugin that never saw the session sends.
    from adk_pairing.passes import request_memo

    real_rewrite = request_memo.rewrite_segments
    resumed: list[int] = []

    def counting_rewrite(*args, **kwargs):  # type: ignore[no-untyped-def]
        rewrite = real_rewrite(*args, **kwargs)
        if rewrite is not None and len(args) > 5:
            resumed.append(1)
        return rewrite

    monkeypatch.setattr(request_memo, "rewrite_segments", counting_rewrite)
    caplog.set_level(logging.ERROR, logger="adk_pairing")
    differing = _histories_where(_rewrite_remembering_differs)
    figures(
        f"{REMEMBERED_HISTORIES} histories (seed {SEED}): {len(resumed)} later requests "
        f"rewritten from memory, {len(differing)} histories where that differs from a plugin "
        "that rewrites every request whole"
    )
    assert not differing, describe(min(differing, key=len))
    assert resumed, "no request was rewritten from memory: the test checks nothing"
    _assert_nothing_failed_open(caplog)


def _with_two_more_turns(events: list[Event]) -> list[list[Event]]:
    """`events`, then the histories of the next two turns' four requests."""
    histories = [events]
    for number in (1, 2):
        histories += _next_turn(histories[-1], number)
    return histories


def _histories_where(differs: Callable[[list[Event]], bool]) -> list[list[Event]]:
    """The first `REMEMBERED_HISTORIES` fuzzed histories for which `differs` holds."""
    generator = HistoryGenerator(SEED)
    differing: list[list[Event]] = []
    for _ in range(REMEMBERED_HISTORIES):
        events = generator.history()
        generator.rng.randrange(len(events))  # in step with test_fuzz's draws
        if differs(events):
            differing.append(events)
    return differing


def _assert_nothing_failed_open(caplog: pytest.LogCaptureFixture) -> None:
    """The plugin logged no error: a pass that fails open sends what ADK built, on both
    sides of a comparison alike, so only its log says it failed."""
    errors = [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert not errors, errors[:3]


def _warm_differs(events: list[Event]) -> bool:
    """Whether a plugin that served `events` sends the next two turns as a fresh plugin does.

    Everything the plugin remembers of a session (its ledger, its restores,
    what it found nothing to restore for, its rewrites) is in play.
    """
    warm = PairingPlugin()
    requests = _with_two_more_turns(events)
    try:
        asyncio.run(_sent(warm, events))
    except Exception:
        return False  # ADK's builder raises on this history
    for history in requests[1:]:
        try:
            fresh = asyncio.run(_sent(PairingPlugin(), history))
        except Exception:
            return False
        if asyncio.run(_sent(warm, history)) != fresh:
            return True
    return False


@pytest.mark.every_release
def test_a_plugin_that_served_a_session_sends_what_a_fresh_one_does(
    figures: Callable[[str], None], caplog: pytest.LogCaptureFixture
) -> None:
    # What the plugin remembers of a session only saves work: each request of
    # the next two turns must be what a plugin that never saw it sends.
    caplog.set_level(logging.ERROR, logger="adk_pairing")
    differing = _histories_where(_warm_differs)
    figures(
        f"{REMEMBERED_HISTORIES} histories (seed {SEED}): {len(differing)} where a plugin "
        "that served the session sends its next two turns otherwise than a fresh one"
    )
    assert not differing, describe(min(differing, key=len))
    _assert_nothing_failed_open(caplog)

"""The request guarantee holds whatever else edits the request: ADK's plugins and agent callbacks.

`PairingPlugin` is one of the ``before_model_callback``s ADK runs on a model
request: the plugins' in registration order, then the agent's own. Each test
here runs a real `Runner` with the scripted model over a history with an
interrupted call ``call_S``, in the four ways production leaves one (a killed
process, a cancelled task, a parallel turn partly answered, a call ADK holds
open), then a new user message after which the model calls one more tool
(``call_T``) and answers. Beside `PairingPlugin` runs one of ADK's plugins,
listed after it, or an agent callback that keeps the last three contents,
with the plugin alone and with both pieces (decorator + plugin).

Every request the model receives must keep every provider rule of
`adk_pairing.rules.checks`; no tool may run twice; nothing synthetic may reach the
store (the ``backend`` fixture searches its raw text); and ``call_S`` must be
in every request of the turn, answered, except where the other code removed
its turn on purpose: the windows here record, per request, whether what
they kept held ``call_S`` (`Kept`), and the model must receive it exactly then.

The same plugins listed *before* `PairingPlugin` are in
``test_request_before_others.py``; the machinery is `support.neighbours`.
Cheap on purpose (the matrix runs on every CI release): in-memory stores,
seeded histories, one SQLite case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from google.adk.plugins.base_plugin import BasePlugin

from adk_pairing import PairingPlugin
from adk_pairing.core.placeholders import CUT_NOTE_TEXT
from adk_pairing.shells import agent_pass
from adk_pairing.shells.once import OncePerKey

from .conftest import backend_params
from .support.backends import Backend
from .support.neighbours import (
    CASES,
    NEIGHBOURS,
    assert_the_guarantee,
    no_plugin,
    ours_first,
    run_case,
)
from .support.scripted_model import text

PLACED = "placed adk_pairing.shells.agent_pass.final_request_pass"

#: ADK's plugins warn that they are experimental; that is not what is tested.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*\[EXPERIMENTAL\]")


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
@pytest.mark.parametrize("wrapped", [False, True], ids=["plugin-alone", "both"])
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", NEIGHBOURS)
async def test_the_request_stays_valid_whatever_runs_after_the_plugin(
    backend: Backend, kind: str, case: str, wrapped: bool
) -> None:
    run = await run_case(backend, case=case, wrapped=wrapped, plugins=ours_first, kind=kind)
    assert_the_guarantee(run, kind)


@pytest.mark.parametrize("backend_spec", backend_params({"db-sqlite"}), indirect=True)
async def test_a_window_after_the_plugin_over_a_sqlite_store(backend: Backend) -> None:
    run = await run_case(
        backend,
        case="cancelled_task",
        wrapped=False,
        plugins=ours_first,
        kind="context_filter_custom",
    )
    assert_the_guarantee(run, "context_filter_custom")


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
async def test_the_final_pass_is_placed_once_last_and_said_once(
    backend: Backend, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Said once per process: forget what earlier tests had said.
    monkeypatch.setattr(agent_pass, "logged_once", OncePerKey())
    caplog.set_level(logging.INFO, logger="adk_pairing")
    run = await run_case(
        backend,
        case="held_open",
        wrapped=True,
        plugins=ours_first,
        kind="agent_callback_window",
    )
    # ADK ran the agent's own callback, then the final pass, in every request.
    assert run.kept.chains == [["keep_recent", "final_request_pass"]] * 2
    placed = [r for r in caplog.records if PLACED in r.message]
    assert len(placed) == 1, [r.message for r in caplog.records]
    repaired = [r for r in caplog.records if "changed after PairingPlugin ran" in r.message]
    # Once per session. The window cut the first request after the placeholder
    # (dropped, its call gone) to open on the model's text: a note opens it.
    assert len(repaired) == 1
    assert "orphan_response call_S; opening_note" in repaired[0].message
    assert run.harness.script.requests[-2].texts()[0] == CUT_NOTE_TEXT

    # Idempotent: another turn places it once more at most and logs nothing more.
    run.harness.script.extend([text("Still here.")])
    await run.harness.turn(await run.harness.new_session(), "hi")
    assert run.kept.chains[2:] == [["keep_recent", "final_request_pass"]]
    assert len([r for r in caplog.records if "placed adk_pairing" in r.message]) == 1


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
@pytest.mark.parametrize("case", CASES)
async def test_pair_request_last_in_the_agents_own_chain_keeps_the_guarantee(
    backend: Backend, case: str
) -> None:
    # How kagent composes it: no plugin, the pass as the agent's last callback,
    # here behind the decorator (alone: test_request_before_others_restore.py).
    run = await run_case(
        backend,
        case=case,
        wrapped=True,
        plugins=no_plugin,
        kind="agent_callback_window",
        composed=True,
    )
    assert_the_guarantee(run, "agent_callback_window")
    assert run.kept.chains == [["keep_recent", "pair_request"]] * 2


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
async def test_pair_request_in_the_chain_takes_the_final_pass_place_beside_the_plugin(
    backend: Backend,
) -> None:
    run = await run_case(
        backend,
        case="dead_process",
        wrapped=False,
        plugins=ours_first,
        kind="agent_callback_window",
        composed=True,
    )
    assert_the_guarantee(run, "agent_callback_window")
    # The plugin placed nothing behind it: pair_request already ends the chain.
    assert run.kept.chains == [["keep_recent", "pair_request"]] * 2


def _ours_alone(ours: PairingPlugin, other: BasePlugin | None) -> list[BasePlugin]:
    return [ours]


def _ours_last(ours: PairingPlugin, other: BasePlugin | None) -> list[BasePlugin]:
    return [ours] if other is None else [other, ours]


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
@pytest.mark.parametrize(
    ("plugins", "kind", "checked_again"),
    [
        (_ours_alone, "logging", False),
        (_ours_last, "logging", False),
        (ours_first, "logging", True),
        (ours_first, "agent_callback_window", True),
    ],
    ids=["plugin-alone", "plugin-last", "plugin-before-another", "agent-callback"],
)
async def test_the_final_pass_checks_again_only_where_something_ran_after_the_plugin(
    backend: Backend,
    monkeypatch: pytest.MonkeyPatch,
    plugins: Callable[[PairingPlugin, BasePlugin | None], list[BasePlugin]],
    kind: str,
    checked_again: bool,
) -> None:
    # ADK runs nothing between the last plugin and the agent's chain: with the plugin
    # last and no callback of the agent's own, the final pass would check the very
    # request the plugin just repaired, so it does not run the request pass again.
    checks: list[int] = []
    real = agent_pass.repair_contents

    def counted(*args: Any, **kwargs: Any) -> Any:
        checks.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(agent_pass, "repair_contents", counted)
    run = await run_case(backend, case="dead_process", wrapped=False, plugins=plugins, kind=kind)
    assert_the_guarantee(run, kind)
    if checked_again:
        assert len(checks) >= len(run.harness.script.requests[run.before :]) == 2
    else:
        assert checks == []

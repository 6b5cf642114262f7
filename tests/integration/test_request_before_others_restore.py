"""The plugin alone keeps the call in every request, whatever ran before it (issue 35, item 2).

On google-adk 2.10+ ADK's builder drops the interrupted call before any
plugin runs; `PairingPlugin` puts it back (the restore). Here one of ADK's
plugins runs first and may change the contents, or the agent composes
`adk_pairing.pair_request` itself after its own window, and the call must
still reach the model in every request whose turn the window would keep
(`support.neighbours.Kept`). Otherwise as ``test_request_before_others.py``.
"""

from __future__ import annotations

import pytest

from .conftest import backend_params
from .support.backends import Backend
from .support.neighbours import CASES, assert_the_guarantee, no_plugin, run_case
from .test_request_before_others import PLUGINS, ours_last

#: ADK's plugins warn that they are experimental; that is not what is tested.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*\[EXPERIMENTAL\]")


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", PLUGINS)
async def test_the_plugin_alone_keeps_the_call_whatever_ran_before_it(
    backend: Backend, kind: str, case: str
) -> None:
    run = await run_case(backend, case=case, wrapped=False, plugins=ours_last, kind=kind)
    assert_the_guarantee(run, kind, exact=False)


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
@pytest.mark.parametrize("case", CASES)
async def test_pair_request_alone_after_the_agents_window_keeps_the_call(
    backend: Backend, case: str
) -> None:
    run = await run_case(
        backend,
        case=case,
        wrapped=False,
        plugins=no_plugin,
        kind="agent_callback_window",
        composed=True,
    )
    assert_the_guarantee(run, "agent_callback_window", exact=False)
    assert run.kept.chains == [["keep_recent", "pair_request"]] * 2

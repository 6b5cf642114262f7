"""The request guarantee with ADK's plugins listed *before* `PairingPlugin`, with both pieces.

The counterpart of ``test_request_after_others.py`` (its docstring says what
is run and checked; the machinery is `support.neighbours`): here each of
ADK's plugins runs before `PairingPlugin`, so it edits the contents ADK built
and the plugin repairs what it left. With the decorator, ADK's builder
already shows the interrupted call answered by the view's placeholder, so
every plugin sees it; a window that cuts its turn removes it on purpose.

With the plugin alone, on google-adk 2.10+ ADK's builder drops the
unanswered call before any plugin runs, and what the plugin puts back after
an earlier plugin changed the contents is the restore's
(``test_request_before_others_restore.py``).
"""

from __future__ import annotations

import pytest
from google.adk.plugins.base_plugin import BasePlugin

from adk_pairing import PairingPlugin

from .conftest import backend_params
from .support.backends import Backend
from .support.neighbours import CASES, NEIGHBOURS, assert_the_guarantee, run_case

#: ADK's plugins warn that they are experimental; that is not what is tested.
pytestmark = pytest.mark.filterwarnings(r"ignore:.*\[EXPERIMENTAL\]")

#: The plugins; the agent callback runs after every plugin whatever the order.
PLUGINS = tuple(kind for kind in NEIGHBOURS if kind != "agent_callback_window")


def ours_last(ours: PairingPlugin, other: BasePlugin | None) -> list[BasePlugin]:
    assert other is not None
    return [other, ours]


@pytest.mark.parametrize("backend_spec", backend_params({"memory"}), indirect=True)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("kind", PLUGINS)
async def test_the_request_stays_valid_whatever_ran_before_the_plugin(
    backend: Backend, kind: str, case: str
) -> None:
    run = await run_case(backend, case=case, wrapped=True, plugins=ours_last, kind=kind)
    assert_the_guarantee(run, kind, exact=False)

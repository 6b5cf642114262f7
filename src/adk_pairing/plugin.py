"""`PairingPlugin`: the last pass over every model request, so every provider accepts it.

A thin shell over `adk_pairing.request_pass`: it takes the contents ADK has built
for this request, has them repaired, assigns the result to
``llm_request.contents`` and logs what was repaired. It never touches the
session or any event.

Where it runs: ``before_model_callback`` exists with the same keyword
signature on every google-adk release we support (1.20.0 to 2.13.0,
``plugins/base_plugin.py:233``). ADK calls the plugins' callbacks after its
request processors have built ``llm_request.contents`` and before the agent's
own ``before_model_callback`` (2.13.0 ``flows/llm_flows/core/_finalizer.py:151``;
``base_llm_flow.py`` on older releases), so an agent callback that edits the
contents afterwards is not covered.

What it reads from the callback context:

* which calls ADK holds open: the ``long_running_tool_ids`` of the session's
  events (plus confirmations, credential and input requests, by name). The
  session is read only when some call needs a placeholder;
* whether the model pairs calls with results by id (AnthropicLlm, LiteLlm,
  OpenAIResponsesLlm, looked up as ADK 2.12's ``_is_id_pairing_model`` does,
  without importing a provider): only then are id-less calls given ids. For
  Gemini ADK strips its own ``adk-`` ids from the request on purpose
  (``flows/llm_flows/context/_contents.py:398`` in 2.13.0);
* the placeholder texts of the `PairingSessionService` the runner uses, when
  the plugin was not given texts of its own, so the view and the request pass
  say the same thing whatever configured them (constructor, config file,
  ``register_pairing_schemes``).

If the repair itself fails on some input, the request goes out as ADK built
it and the error is logged: the plugin is never less available than ADK.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING

from google.adk.plugins.base_plugin import BasePlugin

from .analysis import held_open_call_ids
from .metrics import record_request_repairs
from .placeholders import PlaceholderTexts
from .request_pass import repair_contents
from .service import PairingSessionService
from .wire import pairs_calls_by_id

__all__ = ["PairingPlugin", "pairs_calls_by_id"]

if TYPE_CHECKING:
    from google.adk.agents.callback_context import CallbackContext
    from google.adk.models.llm_request import LlmRequest
    from google.adk.models.llm_response import LlmResponse

logger = logging.getLogger("adk_pairing")


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

    def __init__(
        self,
        name: str = "adk_pairing",
        *,
        missing_text: str | None = None,
        pending_text: str | None = None,
        fill_missing_ids: bool | None = None,
    ) -> None:
        super().__init__(name=name)
        self._missing_text = missing_text
        self._pending_text = pending_text
        self._fill_missing_ids = fill_missing_ids

    def texts_for(self, session_service: object) -> PlaceholderTexts:
        """The placeholder texts: this plugin's own, then the decorator's, then the defaults."""
        base = (
            session_service.texts
            if isinstance(session_service, PairingSessionService)
            else PlaceholderTexts()
        )
        if self._missing_text is None and self._pending_text is None:
            return base
        return PlaceholderTexts(
            missing=self._missing_text if self._missing_text is not None else base.missing,
            pending=self._pending_text if self._pending_text is not None else base.pending,
        )

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        contents = llm_request.contents
        if not contents:
            return None
        invocation = getattr(callback_context, "_invocation_context", None)
        session = getattr(invocation, "session", None)
        try:
            fill = self._fill_missing_ids
            if fill is None:
                agent = getattr(invocation, "agent", None)
                fill = pairs_calls_by_id(getattr(agent, "canonical_model", None))
            result = repair_contents(
                contents,
                held_open_ids=lambda: held_open_call_ids(getattr(session, "events", None) or ()),
                texts=self.texts_for(getattr(invocation, "session_service", None)),
                fill_missing_ids=fill,
            )
        except Exception:  # fail open: the request goes out as ADK built it
            logger.exception(
                "adk_pairing: could not check the model request of session %s; "
                "sending it as ADK built it",
                _session_label(session),
            )
            return None
        if result.contents is contents:
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
                _session_label(session),
                "; ".join(repair.describe() for repair in notable),
            )
        return None


def _session_label(session: object) -> str:
    """app/user/session, for log lines: ids only, never contents."""
    if session is None:
        return "<unknown>"
    return "/".join(str(getattr(session, field, "?")) for field in ("app_name", "user_id", "id"))

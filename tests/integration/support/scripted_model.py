"""A scripted stand-in for an LLM provider that checks every request it receives.

The runner under test is a real `google.adk.runners.Runner`; only the provider
is replaced. Each request is recorded (a deep copy, because ADK reuses and
mutates request objects) together with its violations of every rule in
`adk_pairing.rules.checks` (Anthropic, OpenAI chat through LiteLlm, Gemini, strict
alternation), so a test can assert "every request the model received was
valid". Every request is also appended to `REQUEST_LOG` under its harness's
setup (plain ADK, view alone, view + plugin), from which the integration
conftest prints the rule x setup table at the end of the run.

Two model classes share one `Script`:

* `ScriptedClaude` subclasses ADK's `AnthropicLlm`. ADK recognises it as a
  provider that pairs calls and results *by id*, so it keeps ADK's own
  ``adk-...`` fallback ids in requests (``_contents._is_id_pairing_model``),
  exactly as it does for Claude. This is the default: it is the provider
  adk-pairing exists for.
* `ScriptedGemini` is a plain `BaseLlm`; ADK strips ``adk-`` ids from its
  requests, as it does for Gemini.

With ``Script(strict=True)`` the model behaves like Anthropic's API on an
invalid request: it raises `AnthropicPairingRejected` instead of answering.
"""

from __future__ import annotations

import copy
import importlib
import os
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.adk.models.anthropic_llm import AnthropicLlm
from google.adk.models.base_llm import BaseLlm
from google.adk.models.lite_llm import LiteLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_pairing.rules.checks import RULES, anthropic_pairing_violations, request_violations

# ADK's lite_llm imports litellm lazily (2.x), i.e. on the first request checked
# for the OpenAI rule, inside a turn and its timeout; litellm's import takes
# seconds (30 s on a loaded 2-core machine), so it is paid here, at collection.
importlib.import_module("litellm")

#: One scripted step: a fixed response, or a function of the request.
Step = LlmResponse | Callable[[LlmRequest], LlmResponse]

#: The rules checked on requests to a Gemini-style model (ids stripped by ADK).
GEMINI_RULES = ("gemini", "strict_alternation")

#: Setups a harness runs under, in the order the rule table shows them.
PLAIN_ADK = "plain ADK"
VIEW_ALONE = "view alone"
VIEW_AND_PLUGIN = "view+plugin"
PLUGIN_ALONE = "plugin alone"
SETUPS = (VIEW_ALONE, PLAIN_ADK, VIEW_AND_PLUGIN, PLUGIN_ALONE)

#: Every request any scripted model received in this test run.
REQUEST_LOG: list[RecordedRequest] = []


def setup_label(*, wrapped: bool, pairing_plugin: bool) -> str:
    if pairing_plugin:
        return VIEW_AND_PLUGIN if wrapped else PLUGIN_ALONE
    return VIEW_ALONE if wrapped else PLAIN_ADK


class AnthropicPairingRejected(Exception):
    """What Anthropic's API answers (HTTP 400) to a request with unpaired tool_use ids."""


class ScriptExhausted(AssertionError):
    """The runner asked the model for more responses than the test scripted."""


@dataclass
class RecordedRequest:
    """One request as the model received it, and what was wrong with it.

    ``violations`` is Anthropic's positional pairing alone (what ``strict``
    rejects, as before); ``rules`` has every rule's violations.
    """

    contents: list[types.Content]
    violations: list[str]
    rules: dict[str, list[str]] = field(default_factory=dict)
    setup: str = "unlabelled"
    test: str = ""

    @property
    def broken_rules(self) -> dict[str, list[str]]:
        return {rule: found for rule, found in self.rules.items() if found}

    @property
    def function_responses(self) -> list[types.FunctionResponse]:
        return [
            part.function_response
            for content in self.contents
            for part in content.parts or ()
            if part.function_response is not None
        ]

    @property
    def function_calls(self) -> list[types.FunctionCall]:
        return [
            part.function_call
            for content in self.contents
            for part in content.parts or ()
            if part.function_call is not None
        ]

    def responses_with_status(self, status: str) -> list[types.FunctionResponse]:
        """Function responses whose payload says ``status`` (placeholders carry one)."""
        return [
            response
            for response in self.function_responses
            if isinstance(response.response, dict) and response.response.get("status") == status
        ]

    def texts(self) -> list[str]:
        return [part.text for content in self.contents for part in content.parts or () if part.text]


@dataclass
class Script:
    """The responses to give, in order, and the record of what was asked.

    Shared by reference between a model and any copy ADK makes of it, so the
    test always reads the complete record.
    """

    steps: list[Step] = field(default_factory=list)
    strict: bool = False
    requests: list[RecordedRequest] = field(default_factory=list)
    #: Which setup produced the requests (see `setup_label`), for the table.
    setup: str = "unlabelled"
    #: The rules that apply to this model's requests: all four for models ADK
    #: pairs by id (Claude, LiteLlm), whose requests go to strict providers;
    #: a Gemini-bound request has ADK's ids stripped on purpose and would never
    #: be converted for LiteLlm or Anthropic.
    rules: tuple[str, ...] = RULES

    def extend(self, steps: Iterable[Step]) -> None:
        self.steps.extend(steps)

    def respond(self, llm_request: LlmRequest) -> LlmResponse:
        contents = copy.deepcopy(list(llm_request.contents or ()))
        violations = anthropic_pairing_violations(contents)
        recorded = RecordedRequest(
            contents=contents,
            violations=violations,
            rules=request_violations(contents, self.rules),
            setup=self.setup,
            test=os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
        )
        self.requests.append(recorded)
        REQUEST_LOG.append(recorded)
        if violations and self.strict:
            raise AnthropicPairingRejected(
                "messages: tool_use ids were found without tool_result blocks "
                f"immediately after: {violations}"
            )
        if not self.steps:
            raise ScriptExhausted(f"request #{len(self.requests)} has no scripted response left")
        step = self.steps.pop(0)
        return step(llm_request) if callable(step) else step.model_copy(deep=True)

    @property
    def all_valid(self) -> bool:
        return all(not request.violations for request in self.requests)

    def all_violations(self) -> list[str]:
        return [v for request in self.requests for v in request.violations]

    def all_rule_violations(self) -> list[str]:
        """Every violation of any rule, prefixed with request number and rule."""
        return [
            f"request {number} {rule}: {violation}"
            for number, request in enumerate(self.requests)
            for rule, found in request.rules.items()
            for violation in found
        ]

    @property
    def last(self) -> RecordedRequest:
        return self.requests[-1]


class ScriptedGemini(BaseLlm):
    """A scripted model ADK treats like Gemini (it strips ``adk-`` ids from requests)."""

    model: str = "scripted-gemini"
    script: Script

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self.script.respond(llm_request)


class ScriptedLiteLlm(LiteLlm):
    """A scripted model ADK treats like an OpenAI model behind LiteLlm.

    Its requests are checked like the others; the OpenAI chat rule is what
    LiteLlm's own conversion of them would send.
    """

    script: Script

    def __init__(self, *, script: Script) -> None:
        super().__init__(model="openai/scripted", script=script)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self.script.respond(llm_request)


class ScriptedClaude(AnthropicLlm):
    """A scripted model ADK treats like Claude (it keeps call ids in requests)."""

    model: str = "scripted-claude"
    script: Script

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        yield self.script.respond(llm_request)


# -- building responses ------------------------------------------------------


def call(name: str, args: dict[str, Any] | None = None, id: str | None = None) -> types.Part:
    """A function-call part; ``id=None`` makes a call without an id."""
    return types.Part(function_call=types.FunctionCall(name=name, args=args or {}, id=id))


def calls(*parts: types.Part, text: str | None = None) -> LlmResponse:
    """A model turn with the given call parts (parallel when several), then optional text."""
    all_parts = list(parts)
    if text is not None:
        all_parts.append(types.Part(text=text))
    return LlmResponse(content=types.Content(role="model", parts=all_parts))


def text(message: str) -> LlmResponse:
    """A final text answer."""
    return LlmResponse(content=types.Content(role="model", parts=[types.Part(text=message)]))


def user_text(message: str) -> types.Content:
    return types.Content(role="user", parts=[types.Part(text=message)])


def function_responses(
    *responses: tuple[str, str, dict[str, Any]],
) -> types.Content:
    """A user message carrying function responses, given as ``(id, name, payload)``."""
    return types.Content(
        role="user",
        parts=[
            types.Part(
                function_response=types.FunctionResponse(id=call_id, name=name, response=payload)
            )
            for call_id, name, payload in responses
        ],
    )


def response_ids(responses: Sequence[types.FunctionResponse]) -> list[str | None]:
    return [response.id for response in responses]

"""Seeded conversational load through a real `Runner`, with cancels, for the reliability suite.

A session's turns are planned from a seeded `random.Random`, so a wrapped run
and an unwrapped run of the same seed send the same user messages in the same
order, whatever the interleaving of sessions. The scripted model's answer is
a function of the request alone (`policy_step`): the user's message carries a
marker such as ``[job:t7:<tag>]`` and the model makes that call with that id,
so no response list has to follow the interleaving either.

What a turn can be (`INTENT_WEIGHTS`):

* ``say``: a text answer;
* ``lookup``: an ordinary tool call, then text;
* ``parallel``: an ordinary call and a long-running ``start_job`` call in one
  model turn; the job stays pending;
* ``job``: ``start_job`` alone; ADK pauses the invocation after it;
* ``post``: the client posts the result of one pending job, picked at random,
  so an older job is sometimes answered after a newer one was started (the
  case ADK's ``_rearrange_events_for_latest_function_response`` mishandles);
* ``hang``: a call to ``hang``, cancelled once the tool runs, as a killed or
  disconnected turn is: the store keeps the call unanswered;
* ``disconnect``: a ``lookup`` turn cancelled after a seeded delay, wherever it
  is by then (in the model call, in a store call, between events).

Errors are exceptions a turn raised that the driver did not cause; the
driver's own cancellations are counted apart.
"""

from __future__ import annotations

import asyncio
import random
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types

from adk_pairing.rules.checks import RULES
from tests.integration.support.scenario import Harness
from tests.integration.support.scripted_model import (
    REQUEST_LOG,
    RecordedRequest,
    call,
    calls,
    function_responses,
    text,
)

INTENT_WEIGHTS: dict[str, int] = {
    "say": 20,
    "lookup": 25,
    "parallel": 10,
    "job": 12,
    "post": 18,
    "hang": 8,
    "disconnect": 7,
}

#: Longest seeded delay before a ``disconnect`` cancel; a scripted turn takes
#: a few to a few tens of milliseconds here, so cancels land all along it.
DISCONNECT_MAX_DELAY_SECONDS = 0.04

#: Bound on waiting for a ``hang`` tool to start; only keeps a broken turn
#: from hanging the suite. Not a speed assertion.
HANG_START_TIMEOUT_SECONDS = 30.0

_MARKER = re.compile(r"\[(\w+):([\w-]+):([^\]]*)\]")


def _latest_text(contents: list[types.Content]) -> str:
    if not contents:
        return ""
    return " ".join(part.text for part in contents[-1].parts or () if part.text)


def policy_step(llm_request: LlmRequest) -> LlmResponse:
    """The model's answer, read from the newest marker in the latest content.

    No marker there (a tool result, a posted job result) means the model got
    what it asked for and answers in text. The newest marker, because ADK and
    `PairingPlugin` merge a user message left alone by a killed turn with the
    next one: the model answers what was asked last.
    """
    markers = _MARKER.findall(_latest_text(list(llm_request.contents or ())))
    if not markers:
        return text("Done.")
    intent, call_id, tag = markers[-1]
    if intent == "lookup" or intent == "disconnect":
        return calls(call("lookup", {"city": tag}, id=call_id))
    if intent == "parallel":
        return calls(
            call("lookup", {"city": tag}, id=f"{call_id}-a"),
            call("start_job", {"name": tag}, id=call_id),
        )
    if intent == "job":
        return calls(call("start_job", {"name": tag}, id=call_id))
    if intent == "hang":
        return calls(call("hang", {"reason": tag}, id=call_id))
    return text("Sure.")


class PolicyScript(list):
    """Script steps that never run out: every request is answered by `policy_step`."""

    def __bool__(self) -> bool:
        return True

    def pop(self, index: int = -1) -> Callable[[LlmRequest], LlmResponse]:
        return policy_step


@dataclass
class LoadFigures:
    """What one load run did and what went wrong."""

    turns: int = 0
    intents: Counter[str] = field(default_factory=Counter)
    cancelled: int = 0
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())

    def record_error(self, error: BaseException) -> None:
        self.errors[f"{type(error).__name__}: {str(error)[:120]}"] += 1


async def _cancel(task: asyncio.Task[object]) -> BaseException | None:
    """Cancels `task`; returns the error it ended with instead, if it had one."""
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        return None
    except Exception as error:
        return error
    return None


async def _hang_until_running(harness: Harness, turn: asyncio.Task[object], reason: str) -> None:
    async with asyncio.timeout(HANG_START_TIMEOUT_SECONDS):
        while reason not in harness.toolbox.hanging:
            if turn.done():
                turn.result()  # surfaces the error of a turn that died early
                raise AssertionError(f"the turn ended before its hang call {reason!r} ran")
            await asyncio.sleep(0.002)


async def drive_session(
    harness: Harness,
    session_id: str,
    rng: random.Random,
    turns: int,
    figures: LoadFigures,
    intents: Mapping[str, int] = INTENT_WEIGHTS,
) -> None:
    """Runs `turns` planned turns on one session, one after the other."""
    pending_jobs: list[str] = []
    for number in range(turns):
        intent = rng.choices(list(intents), weights=list(intents.values()))[0]
        if intent == "post" and not pending_jobs:
            intent = "say"
        call_id = f"t{number}"
        tag = f"{session_id}/{call_id}"
        if intent == "post":
            job = pending_jobs.pop(rng.randrange(len(pending_jobs)))
            message: types.Content | str = function_responses((job, "start_job", {"rows": number}))
        else:
            message = f"turn {number} [{intent}:{call_id}:{tag}]"
        if intent in ("job", "parallel"):
            pending_jobs.append(call_id)
        figures.turns += 1
        figures.intents[intent] += 1
        task = asyncio.create_task(harness.turn(session_id, message))
        try:
            if intent == "hang":
                await _hang_until_running(harness, task, tag)
            elif intent == "disconnect":
                await asyncio.wait({task}, timeout=rng.uniform(0, DISCONNECT_MAX_DELAY_SECONDS))
            if intent in ("hang", "disconnect") and not task.done():
                figures.cancelled += 1
                error = await _cancel(task)
                if error is not None:
                    figures.record_error(error)
            else:
                await task
        except Exception as error:
            figures.record_error(error)
            if not task.done():
                await _cancel(task)


async def run_load(
    harness: Harness, *, sessions: int, turns: int, in_flight: int, seed: int
) -> LoadFigures:
    """`sessions` x `turns` planned turns, at most `in_flight` sessions at once."""
    harness.script.steps = PolicyScript()
    figures = LoadFigures()
    gate = asyncio.Semaphore(in_flight)

    async def one(index: int) -> None:
        async with gate:
            session_id = await harness.new_session()
            await drive_session(
                harness, session_id, random.Random(seed * 7919 + index), turns, figures
            )

    await asyncio.gather(*(one(index) for index in range(sessions)))
    return figures


# -- the request rules ----------------------------------------------------------


def violations_by_rule(requests: list[RecordedRequest]) -> Counter[str]:
    """How many of `requests` break each rule of `adk_pairing.rules.checks` (`Script` records)."""
    broken: Counter[str] = Counter({rule: 0 for rule in RULES})
    broken.update(rule for request in requests for rule in request.broken_rules)
    return broken


def keep_out_of_the_rule_table(requests: list[RecordedRequest]) -> None:
    """Takes a load run's requests out of `REQUEST_LOG`.

    The integration suite's rule table counts its scenarios' requests; a load
    run reports its own figures and would otherwise swamp the table.
    """
    mine = {id(request) for request in requests}
    REQUEST_LOG[:] = [request for request in REQUEST_LOG if id(request) not in mine]

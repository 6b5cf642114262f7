"""Live metrics appear in an OpenTelemetry reader during real Runner turns.

The SDK's `InMemoryMetricReader` collects what `adk_pairing.shells.metrics` records
while a real `Runner` (scripted model, no network) runs turns over a
PostgreSQL and an in-memory store: placeholders by status and app, the
decorator's own time per read, fallbacks when a repair raises, and the
request guarantee's repairs. Labels must never carry a session or a user id.
Without any meter provider nothing is recorded and nothing is built.
"""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.events.event import Event
from google.adk.sessions.in_memory_session_service import InMemorySessionService
from google.adk.sessions.session import Session
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from adk_pairing import PairingPlugin, PairingSessionService, is_synthetic
from adk_pairing.shells import metrics
from tests.adk_features import BUILDER_DROPS_UNANSWERED_CALLS, requires

from .conftest import backend_params
from .support.backends import Backend, open_backend
from .support.scenario import USER_ID, Harness
from .support.scripted_model import call, calls, text
from .wiring_support import readme_snippet


@pytest.fixture
def reader() -> Iterator[InMemoryMetricReader]:
    reader = InMemoryMetricReader()
    metrics.use_meter_provider(MeterProvider(metric_readers=[reader]))
    yield reader
    metrics.use_meter_provider(None)


def points(reader: InMemoryMetricReader) -> dict[str, list[Any]]:
    """Metric name -> its data points, for the adk_pairing meter only."""
    found: dict[str, list[Any]] = {}
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            if scope.scope.name != metrics.METER_NAME:
                continue
            for metric in scope.metrics:
                found.setdefault(metric.name, []).extend(metric.data.data_points)
    return found


def totals(reader: InMemoryMetricReader, name: str) -> dict[tuple[tuple[str, Any], ...], int]:
    return {
        tuple(sorted(point.attributes.items())): point.value
        for point in points(reader).get(name, [])
    }


def assert_low_cardinality(reader: InMemoryMetricReader, *ids: str) -> None:
    for name, found in points(reader).items():
        for point in found:
            for value in point.attributes.values():
                assert all(the_id not in str(value) for the_id in ids), (name, point.attributes)


@pytest.mark.parametrize("backend_spec", backend_params({"memory", "db-postgres"}), indirect=True)
async def test_placeholders_and_read_time_are_recorded_during_real_turns(
    backend: Backend, reader: InMemoryMetricReader
) -> None:
    harness = Harness.build(
        backend,
        wrapped=True,
        steps=[
            calls(call("start_job", {"name": "report"}, id="job_1")),  # ADK holds it open
            text("Still running."),
            calls(call("hang", {"reason": "slow"}, id="call_1")),  # interrupted: missing
            text("Sorry."),
        ],
    )
    session_id = await harness.new_session()
    await harness.turn(session_id, "start the report job")
    await harness.turn(session_id, "how is it going?")  # a read with one pending call
    await harness.interrupted_turn(session_id, "do the slow thing")
    await harness.turn(session_id, "are you there?")  # pending and missing

    app = backend.app_name
    placeholders = totals(reader, metrics.PLACEHOLDERS)
    assert placeholders[(("app", app), ("status", "pending"))] >= 2
    assert placeholders[(("app", app), ("status", "missing"))] >= 1
    (durations,) = points(reader)[metrics.GET_SESSION_DURATION]
    assert durations.attributes == {"app": app}
    assert durations.count >= 4  # every turn reads the session at least once
    assert 0 < durations.sum < durations.count  # seconds, and well under one per read
    assert metrics.REPAIR_FALLBACKS not in points(reader)
    assert_low_cardinality(reader, session_id, USER_ID)


async def test_a_repair_that_raises_is_counted_as_a_fallback(
    reader: InMemoryMetricReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    service = PairingSessionService(InMemorySessionService())
    session = await service.create_session(app_name="shop", user_id="alice", session_id="s1")

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a history the repair cannot handle")

    monkeypatch.setattr("adk_pairing.shells.service.repair_history", broken)
    served = await service.get_session(app_name="shop", user_id="alice", session_id="s1")

    assert served is not None and served.id == session.id
    assert totals(reader, metrics.REPAIR_FALLBACKS) == {(("app", "shop"), ("operation", "read")): 1}


def test_the_plugins_repairs_are_counted_by_rule_and_app(reader: InMemoryMetricReader) -> None:
    metrics.record_request_repairs("missing_result", "shop", 2)
    metrics.record_request_repairs("missing_result", "shop")
    metrics.record_request_repairs("orphan_result", "shop", 0)  # nothing to count

    assert totals(reader, metrics.REQUEST_REPAIRS) == {
        (("app", "shop"), ("rule", "missing_result")): 3
    }


def test_without_a_meter_provider_nothing_is_built_or_recorded() -> None:
    """In a fresh process: OpenTelemetry's global provider is set once per process."""
    code = (
        "from adk_pairing.shells import metrics\n"
        "assert metrics.live_metrics() is None\n"
        "metrics.record_request_repairs('missing_result', 'shop', 1)\n"
        "assert metrics._live is None\n"
        "from opentelemetry import metrics as api\n"
        "from opentelemetry.sdk.metrics import MeterProvider\n"
        "api.set_meter_provider(MeterProvider())\n"
        "assert metrics.live_metrics() is not None  # a provider set later is picked up\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.version_independent
def test_the_cost_benchmark_computes_every_ratio() -> None:
    """benchmarks/metrics_cost.py end to end, tiny: every figure is a finite ratio.

    Not timed: the figures themselves are in benchmarks/RESULTS.md.
    """
    script = Path(__file__).resolve().parents[2] / "benchmarks" / "metrics_cost.py"
    done = subprocess.run(
        [sys.executable, str(script), "--rounds", "20", "--json"],
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    rows = json.loads(done.stdout)

    assert [row["events"] for row in rows] == [10, 100, 1000]
    for row in rows:
        for key in ("shipped/no_hook", "recording/shipped", "shipped/unwrapped"):
            assert all(math.isfinite(value) and value > 0 for value in row[key]), (key, row)
        assert metrics.GET_SESSION_DURATION in row["recorded_metrics"]
    assert metrics.PLACEHOLDERS in rows[0]["recorded_metrics"]


def test_the_docs_export_example_exports_our_metrics() -> None:
    """docs/observability.md's export snippet, run as written in a fresh process."""
    snippet = readme_snippet("otel-export")
    code = (
        snippet + "\nimport asyncio\n"
        "from google.adk.sessions import InMemorySessionService\n"
        "from adk_pairing import PairingSessionService\n"
        "from tests.integration.test_ownership import _call_event\n"
        "async def main():\n"
        "    service = PairingSessionService(InMemorySessionService())\n"
        "    view = await service.create_session(app_name='shop', user_id='u', session_id='s')\n"
        "    await service.append_event(view, _call_event())\n"
        "    await service.get_session(app_name='shop', user_id='u', session_id='s')\n"
        "asyncio.run(main())\n"
        "metrics.get_meter_provider().shutdown()  # flushes to the exporter\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
    )

    for name in (metrics.PLACEHOLDERS, metrics.GET_SESSION_DURATION):
        assert f'"name": "{name}"' in done.stdout, done.stdout[-2000:]


async def test_the_plugins_repairs_are_counted_during_a_real_turn(
    reader: InMemoryMetricReader,
) -> None:
    """PairingPlugin alone, unwrapped store: the held-open call it answers is counted by rule."""
    backend = await open_backend({"kind": "memory", "app_name": "shop", "session_prefix": "m"})
    try:
        harness = Harness.build(
            backend,
            wrapped=False,
            plugins=[PairingPlugin()],
            steps=[
                calls(call("start_job", {"name": "report"}, id="job_1")),  # ADK holds it open
                text("Started."),
                text("Still running."),
            ],
        )
        session_id = await harness.new_session()
        await harness.turn(session_id, "start the report job")
        await harness.turn(session_id, "how is it going?")  # job_1 is open: the plugin answers
    finally:
        await backend.close()

    repairs = totals(reader, metrics.REQUEST_REPAIRS)
    assert repairs.get((("app", "shop"), ("rule", "placeholder")), 0) >= 1, repairs
    assert_low_cardinality(reader, session_id, USER_ID)


async def _stored_then_read_twice(
    events: list[Event], session_id: str, caplog: pytest.LogCaptureFixture
) -> Session:
    """`events` stored in shop/alice/`session_id`, read twice through the decorator, logs captured.

    Returns the first read.
    """
    inner = InMemorySessionService()
    stored = await inner.create_session(app_name="shop", user_id="alice", session_id=session_id)
    for event in events:
        await inner.append_event(stored, event)
    service = PairingSessionService(inner)
    key = {"app_name": "shop", "user_id": "alice", "session_id": session_id}
    with caplog.at_level(logging.WARNING, logger="adk_pairing"):
        first = await service.get_session(**key)
        second = await service.get_session(**key)
    assert first is not None and second is not None
    return first


async def test_an_irregular_history_served_as_stored_is_counted_and_logged_once(
    reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    """ADK merges result events keyed by id: a placeholder would collapse the stored results."""
    from tests.unit.test_builder_check import _idless_results_after_a_placeholder

    events = _idless_results_after_a_placeholder()
    first = await _stored_then_read_twice(events, "s1", caplog)
    assert [e.id for e in first.events] == [e.id for e in events]  # served as stored
    warnings = [r for r in caplog.records if r.name == "adk_pairing"]
    assert len(warnings) == 1 and "PairingPlugin" in warnings[0].getMessage()
    assert "s1" in warnings[0].getMessage()
    shape = "idless_calls_in_one_event"  # the first of its shapes
    assert f"shape={shape}" in warnings[0].getMessage()
    assert totals(reader, metrics.REPAIR_FALLBACKS) == {
        (("app", "shop"), ("operation", "unproven"), ("shape", shape)): 2
    }
    assert metrics.PLACEHOLDERS not in points(reader)


@requires(BUILDER_DROPS_UNANSWERED_CALLS, "drop of unanswered calls in its request builder")
async def test_a_partial_fallback_is_counted_logged_once_and_keeps_the_other_placeholders(
    reader: InMemoryMetricReader, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 23, item 8: only the call event the check cannot prove is served as stored.

    The warning says how many call events go as stored, the fallback is
    counted per read, and the calls the view does answer are counted and
    logged as placeholders, the others not.
    """
    from tests.unit.test_builder_check import _unprovable_spot_then_an_interrupted_call

    first = await _stored_then_read_twice(_unprovable_spot_then_an_interrupted_call(), "s2", caplog)
    synthetic = [e for e in first.events if is_synthetic(e)]
    assert [r.function_response.id for e in synthetic for r in e.content.parts] == ["c9"]
    messages = [r.getMessage() for r in caplog.records if r.name == "adk_pairing"]
    unproven = [m for m in messages if "shape=answers_out_of_order" in m]
    assert len(unproven) == 1 and "serves 1 of its 2 call events" in unproven[0]
    missing = [m for m in messages if m.startswith("Unanswered function call")]
    assert len(missing) == 1 and "c9" in missing[0]  # not "t": the view does not answer it
    assert totals(reader, metrics.REPAIR_FALLBACKS) == {
        (("app", "shop"), ("operation", "unproven"), ("shape", "answers_out_of_order")): 2
    }
    assert totals(reader, metrics.PLACEHOLDERS) == {(("app", "shop"), ("status", "missing")): 2}

"""A meter provider that fails turns the metrics off; it never fails a turn.

The decorator and the plugin call `live_metrics` on every read and request;
an exception from it would reach the caller where the unwrapped store (or
ADK without the plugin) raises nothing.
"""

from __future__ import annotations

import logging

import pytest
from opentelemetry.environment_variables import OTEL_PYTHON_METER_PROVIDER
from opentelemetry.metrics import Meter, MeterProvider

from adk_pairing.shells import metrics


class RefusingProvider(MeterProvider):
    """A provider whose meters cannot be had (a broken exporter setup, say)."""

    def get_meter(self, name: str, *args: object, **kwargs: object) -> Meter:
        raise RuntimeError("no meter today")


@pytest.fixture(autouse=True)
def fresh_metrics_state(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(metrics, "_env_checked", False)
    monkeypatch.setattr(metrics, "_broken", False, raising=False)
    yield
    metrics.use_meter_provider(None)


def test_a_provider_that_refuses_its_meter_turns_metrics_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    metrics.use_meter_provider(RefusingProvider())
    with caplog.at_level(logging.ERROR, logger="adk_pairing"):
        assert metrics.live_metrics() is None
        assert metrics.live_metrics() is None
        metrics.record_request_repairs("placeholder", "app", 2)
    assert len([r for r in caplog.records if "meter provider failed" in r.getMessage()]) == 1


def test_an_environment_naming_no_installed_provider_turns_metrics_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert metrics._otel_global is not None
    monkeypatch.setattr(metrics._otel_global, "_METER_PROVIDER", None)
    monkeypatch.setenv(OTEL_PYTHON_METER_PROVIDER, "no_such_meter_provider")
    metrics.use_meter_provider(None)
    assert metrics.live_metrics() is None
    metrics.record_request_repairs("placeholder", "app")


def test_a_working_provider_after_a_failing_one_records_again() -> None:
    from opentelemetry.sdk.metrics import MeterProvider as SdkMeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    metrics.use_meter_provider(RefusingProvider())
    assert metrics.live_metrics() is None
    reader = InMemoryMetricReader()
    metrics.use_meter_provider(SdkMeterProvider(metric_readers=[reader]))
    metrics.record_request_repairs("placeholder", "app", 3)
    data = reader.get_metrics_data()
    points = [
        point.value
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == metrics.REQUEST_REPAIRS
        for point in metric.data.data_points
    ]
    assert points == [3]


class _RaisingInstrument:
    """An instrument whose every recording raises (a broken exporter pipeline, say)."""

    def add(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("cannot record")

    record = add


class _ProviderOfRaisingInstruments(MeterProvider):
    def get_meter(self, name: str, *args: object, **kwargs: object) -> Meter:
        class _Meter:
            def create_counter(self, *args: object, **kwargs: object) -> _RaisingInstrument:
                return _RaisingInstrument()

            create_histogram = create_counter

        return _Meter()  # type: ignore[return-value]


async def test_instruments_that_raise_never_fail_a_read_and_turn_metrics_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from google.adk.events.event import Event
    from google.adk.sessions.in_memory_session_service import InMemorySessionService
    from google.genai import types

    from adk_pairing import PairingSessionService

    metrics.use_meter_provider(_ProviderOfRaisingInstruments())
    service = PairingSessionService(InMemorySessionService())
    view = await service.create_session(app_name="shop", user_id="u", session_id="s")
    call = types.Part(function_call=types.FunctionCall(id="c1", name="refund", args={}))
    await service.append_event(
        view,
        Event(
            author="agent", invocation_id="i1", content=types.Content(role="model", parts=[call])
        ),
    )
    with caplog.at_level(logging.ERROR, logger="adk_pairing"):
        for _ in range(3):
            read = await service.get_session(app_name="shop", user_id="u", session_id="s")
            assert read is not None and len(read.events) == 2  # the call and its placeholder
    assert metrics.live_metrics() is None
    assert len([r for r in caplog.records if "metrics turned off" in r.getMessage()]) == 1

"""Live metrics through OpenTelemetry: what the decorator and the plugin do in production.

One meter, named ``adk_pairing`` for this package (never ADK's own meter, so
ADK's dashboards and ours stay apart), holding four instruments:

- ``adk_pairing.placeholders`` (counter, ``{call}``): calls answered by a
  placeholder in a view `PairingSessionService.get_session` served, labelled
  ``status`` (``missing``, ``pending``) and ``app``. Counted per read: a
  session read on every turn counts its open calls on every turn;
- ``adk_pairing.repair_fallbacks`` (counter, ``{session}``): a stored session
  served unrepaired, or partly as stored, labelled ``app`` and ``operation``:
  ``read`` (its repair raised; get/create served the stored session),
  ``append`` (the view's upkeep raised and it fell back to the stored events),
  ``unproven`` (some call events served as stored, the others repaired, for
  either `adk_pairing.core.repair.Fallback`: ADK's builder could misplace their
  placeholders, `adk_pairing.rules.builder_check`, or no placement gives their
  answers in call order; counted per read, like placeholders), with a
  ``shape`` label naming why (`adk_pairing.wire.IrregularShape`, or
  ``answers_out_of_order``);
- ``adk_pairing.get_session.duration`` (histogram, ``s``): the decorator's
  own time per ``get_session``, the inner store's read excluded, labelled
  ``app``;
- ``adk_pairing.request_repairs`` (counter, ``{repair}``): repairs the
  request guarantee (`PairingPlugin`) made to a model request, labelled
  ``rule`` and ``app``, through `record_request_repairs`.

Labels stay low-cardinality on purpose: app names and fixed words, never a
session id, a user id or a call id (a time series per session would swamp any
metrics backend).

Cost with nothing configured: OpenTelemetry's API hands out proxy
instruments that do nothing until a meter provider is set, but each call
still costs a few hundred nanoseconds, and timing a read costs two clock
reads. So `live_metrics` returns None (one module attribute read) while no
meter provider is set, neither globally (``opentelemetry.metrics.
set_meter_provider``, or the ``OTEL_PYTHON_METER_PROVIDER`` variable) nor for
this package (`use_meter_provider`), and the callers skip everything; the
benchmark (benchmarks/metrics_cost.py) shows the ratio. A provider set later is
picked up on the next call: the global one can be set only once per process,
and a changed provider rebuilds the instruments.

Metrics never cost a turn: a provider that cannot be had or refuses to make
the instruments (``OTEL_PYTHON_METER_PROVIDER`` naming no installed provider
makes ``get_meter_provider`` raise on every call, opentelemetry-api 1.3x
``util/_providers.py``, ``_load_provider``) is logged once and metrics stay off
until `use_meter_provider` is called; the decorator and the plugin must raise
nothing the unwrapped store would not.
"""

from __future__ import annotations

import importlib.metadata
import logging
import os
from typing import TYPE_CHECKING

from opentelemetry import metrics as otel_metrics
from opentelemetry.environment_variables import OTEL_PYTHON_METER_PROVIDER

if TYPE_CHECKING:
    from collections.abc import Iterable

    from opentelemetry.metrics import MeterProvider

    from ..ledger import TrackedCall

#: The meter's name: this package, never ADK's.
METER_NAME = "adk_pairing"

PLACEHOLDERS = "adk_pairing.placeholders"
REPAIR_FALLBACKS = "adk_pairing.repair_fallbacks"
GET_SESSION_DURATION = "adk_pairing.get_session.duration"
REQUEST_REPAIRS = "adk_pairing.request_repairs"

#: Bucket bounds in seconds for the decorator's own time per read: 10 µs to
#: 1 s (a cached read of a long session is ~0.1 ms, a first read of 10,000
#: events ~10 ms). OpenTelemetry's default bounds (0, 5, 10, ... 10,000) suit
#: milliseconds and would put every read in the first bucket.
DURATION_BUCKETS_S = (
    1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2, 2.5e-2, 5e-2, 0.1, 0.25, 1.0,
)  # fmt: skip

try:  # The API's private global, None until a provider is set; probed, as it may move.
    from opentelemetry.metrics import _internal as _otel_global

    _otel_global._METER_PROVIDER  # noqa: B018 - probe that the attribute exists
except (ImportError, AttributeError):  # pragma: no cover - a future API: always record
    _otel_global = None


class LiveMetrics:
    """The package's instruments on one meter provider."""

    __slots__ = ("_durations", "_fallbacks", "_placeholders", "_request_repairs", "provider")

    def __init__(self, provider: MeterProvider) -> None:
        self.provider = provider
        meter = provider.get_meter(METER_NAME, _package_version())
        self._placeholders = meter.create_counter(
            PLACEHOLDERS,
            unit="{call}",
            description="Calls answered by a placeholder in a view get_session served.",
        )
        self._fallbacks = meter.create_counter(
            REPAIR_FALLBACKS,
            unit="{session}",
            description=(
                "Sessions served unrepaired (their repair or its upkeep raised) or with some "
                "call events as stored (their placeholders unproven or out of call order)."
            ),
        )
        self._durations = meter.create_histogram(
            GET_SESSION_DURATION,
            unit="s",
            description="adk-pairing's own time per get_session, the store's read excluded.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
        )
        self._request_repairs = meter.create_counter(
            REQUEST_REPAIRS,
            unit="{repair}",
            description="Repairs the request guarantee made to model requests.",
        )

    def count_placeholders(self, answered: Iterable[TrackedCall], app: str) -> None:
        """Counts the calls a view answers with a placeholder, by status."""
        counts: dict[str, int] = {}
        for call in answered:
            counts[call.status.value] = counts.get(call.status.value, 0) + 1
        try:
            for status, count in counts.items():
                self._placeholders.add(count, {"status": status, "app": app})
        except Exception:
            _turn_off("recording failed")

    def count_fallback(self, app: str, operation: str, shape: str | None = None) -> None:
        """Counts one session served unrepaired; `shape` says why, when known."""
        attributes = {"app": app, "operation": operation}
        if shape is not None:
            attributes["shape"] = shape
        try:
            self._fallbacks.add(1, attributes)
        except Exception:
            _turn_off("recording failed")

    def record_read(self, app: str, seconds: float) -> None:
        try:
            self._durations.record(seconds, {"app": app})
        except Exception:
            _turn_off("recording failed")

    def count_request_repairs(self, rule: str, app: str, count: int) -> None:
        if count <= 0:
            return
        try:
            self._request_repairs.add(count, {"rule": rule, "app": app})
        except Exception:
            _turn_off("recording failed")


def _package_version() -> str | None:
    try:
        return importlib.metadata.version("adk-pairing")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - run from a checkout
        return None


logger = logging.getLogger("adk_pairing")

_chosen_provider: MeterProvider | None = None
_live: LiveMetrics | None = None
_env_checked = False
#: Set when the provider failed: metrics stay off until `use_meter_provider`.
_broken = False


def use_meter_provider(provider: MeterProvider | None) -> None:
    """Records this package's metrics into `provider` rather than the global one.

    For a process that keeps several providers, and for tests (the global
    provider can be set only once per process). None goes back to the global
    provider.
    """
    global _chosen_provider, _live, _broken
    _chosen_provider = provider
    _live = None
    _broken = False


def live_metrics() -> LiveMetrics | None:
    """The instruments, or None while no meter provider is configured (nothing to pay)."""
    global _live, _env_checked, _broken
    if _broken:
        return None
    provider = _chosen_provider
    if provider is None and _otel_global is not None and _otel_global._METER_PROVIDER is None:
        if _env_checked:
            return None
        _env_checked = True
        if OTEL_PYTHON_METER_PROVIDER not in os.environ:
            return None
    live = _live
    try:
        if provider is None:
            provider = otel_metrics.get_meter_provider()
        if live is None or live.provider is not provider:
            live = _live = LiveMetrics(provider)
    except Exception:
        _turn_off("the meter provider failed")
        return None
    return live


def _turn_off(why: str) -> None:
    """Stops recording after a failure of the metrics backend, logging it once.

    Metrics are never worth a failed read or model request: with a broken
    provider or instrument, the decorator and the plugin go on without them
    (`use_meter_provider` turns them on again).
    """
    global _broken
    if not _broken:
        _broken = True
        logger.exception("adk_pairing: metrics turned off: %s", why)


def record_request_repairs(rule: str, app: str, count: int = 1) -> None:
    """Counts `count` repairs of rule `rule` made to one model request of app `app`.

    For the request guarantee (`PairingPlugin`): call it once per request and
    rule with the number of repairs that rule made (nothing is recorded for
    0). `rule` must be a fixed word naming the rule, never an id.
    """
    live = live_metrics()
    if live is not None:
        live.count_request_repairs(rule, app, count)

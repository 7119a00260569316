"""The sensor-data app's metrics made and counted by Python streamlets
(``blueprint.toml`` beside this file; docs/python.md).

The records match the Rust app's (``../src/model.rs``): the same record names and fields, so the
Rust generator's readings are read here and a Rust reader reads these metrics.
"""

from __future__ import annotations

from dataclasses import dataclass

import runnel


@dataclass
class Measurements:
    """What a wind turbine measures."""

    power: float
    rotor_speed: float
    wind_speed: float


@dataclass
class SensorData:
    """One reading of one device."""

    device_id: str
    timestamp: int
    sequence: int
    measurements: Measurements


@dataclass
class Metric:
    """One named measurement of one reading."""

    device_id: str
    timestamp: int
    sequence: int
    name: str
    value: float


@dataclass
class MetricCount:
    """A metric, and how many metrics of its device were counted up to and with it."""

    device_id: str
    sequence: int
    name: str
    seen: int


@runnel.streamlet
def to_metrics(reading: SensorData) -> list[Metric]:
    """Splits a reading into its three metrics (as the Rust ``to-metrics`` does)."""
    measured = reading.measurements
    return [
        Metric(reading.device_id, reading.timestamp, reading.sequence, name, value)
        for name, value in (
            ("power", measured.power),
            ("rotor-speed", measured.rotor_speed),
            ("wind-speed", measured.wind_speed),
        )
    ]


@runnel.streamlet
class DeviceCounts:
    """Counts each device's metrics, keeping the counts across restarts: each metric goes out
    with its device's count so far."""

    metrics = runnel.Inlet(Metric)
    counts = runnel.Outlet(MetricCount)

    def __init__(self):
        self.seen: dict[str, int] = {}

    def process(self, metric: Metric) -> None:
        seen = self.seen.get(metric.device_id, 0) + 1
        self.seen[metric.device_id] = seen
        self.counts.emit(
            MetricCount(metric.device_id, metric.sequence, metric.name, seen),
            key=metric.device_id,
        )

    def snapshot(self) -> dict:
        return self.seen

    def restore(self, snapshot: dict) -> None:
        self.seen = snapshot

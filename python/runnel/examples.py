"""Small streamlets the documentation and tests use."""

from __future__ import annotations

from dataclasses import dataclass

import runnel


@dataclass
class Reading:
    """A sensor's temperature reading."""

    sensor: str
    celsius: float

    __avro_namespace__ = "runnel.examples"


@dataclass
class Total:
    """How many readings a sensor sent, and their sum."""

    sensor: str
    count: int
    sum: float

    __avro_namespace__ = "runnel.examples"


@runnel.streamlet
def too_hot(reading: Reading, limit: float = 30.0) -> Reading | None:
    """Passes the readings above the limit."""
    if reading.celsius != reading.celsius:  # NaN: bad data
        raise ValueError(f"sensor {reading.sensor} sent NaN")
    return reading if reading.celsius > limit else None


@runnel.streamlet(batch=True)
def too_hot_batch(readings: list[Reading], limit: float = 30.0) -> list[Reading]:
    """``too_hot`` in batch form."""
    return [reading for reading in readings if reading.celsius > limit]


@runnel.streamlet
class Totals:
    """A running count and sum per sensor, kept across restarts."""

    readings = runnel.Inlet(Reading)
    totals = runnel.Outlet(Total)
    minimum = runnel.Parameter(float, default=-273.15, description="readings below are dropped")

    def __init__(self):
        self.by_sensor: dict[str, tuple[int, float]] = {}

    def process(self, reading: Reading) -> None:
        if reading.celsius < self.minimum:
            return
        count, total = self.by_sensor.get(reading.sensor, (0, 0.0))
        self.by_sensor[reading.sensor] = (count + 1, total + reading.celsius)
        self.totals.emit(Total(reading.sensor, count + 1, total + reading.celsius), key=reading.sensor)

    def snapshot(self) -> dict:
        return self.by_sensor

    def restore(self, snapshot: dict) -> None:
        self.by_sensor = snapshot


@runnel.streamlet
def warmer(reading: Reading) -> Reading:
    """A trivial map: the reading a degree warmer (the benchmarks' Python map)."""
    return Reading(reading.sensor, reading.celsius + 1.0)


@runnel.streamlet(batch=True)
def warmer_batch(readings: list[Reading]) -> list[Reading]:
    """``warmer`` in batch form."""
    return [Reading(reading.sensor, reading.celsius + 1.0) for reading in readings]

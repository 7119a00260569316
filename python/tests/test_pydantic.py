"""Pydantic models as port types: the same Avro schemas as dataclasses, and their validation
on every record decoded."""

import dataclasses
import datetime
import enum
from typing import Optional

import pytest

pydantic = pytest.importorskip("pydantic")  # scripts/test installs it

import runnel  # noqa: E402
from runnel import Codec, avro_schema, testkit  # noqa: E402


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


class Point(pydantic.BaseModel):
    x: int
    y: int


class Everything(pydantic.BaseModel):
    name: str
    count: int
    ratio: float
    flag: bool
    blob: bytes
    at: datetime.datetime
    level: Level
    points: list[Point]
    tags: dict[str, float]
    maybe: Optional[int]
    origin: Point
    other: Optional[Point] = None
    unit: str = "celsius"
    seen: list[int] = pydantic.Field(default_factory=list)


@dataclasses.dataclass
class PointRecord:
    x: int
    y: int


@dataclasses.dataclass
class EverythingRecord:
    name: str
    count: int
    ratio: float
    flag: bool
    blob: bytes
    at: datetime.datetime
    level: Level
    points: list[PointRecord]
    tags: dict[str, float]
    maybe: Optional[int]
    origin: PointRecord
    other: Optional[PointRecord] = None
    unit: str = "celsius"
    seen: list[int] = dataclasses.field(default_factory=list)


def test_a_model_has_the_schema_of_the_same_dataclass():
    def named(schema, name):
        # The two differ only in their record names.
        text = str(schema).replace("EverythingRecord", "Everything")
        return text.replace("PointRecord", "Point")

    assert named(avro_schema(Everything), "Everything") == named(
        avro_schema(EverythingRecord), "Everything"
    )
    fields = {field["name"]: field for field in avro_schema(Everything)["fields"]}
    assert fields["maybe"] == {"name": "maybe", "type": ["null", "long"], "default": None}
    assert fields["unit"] == {"name": "unit", "type": "string", "default": "celsius"}
    assert fields["seen"]["default"] == []


def test_a_model_round_trips_and_reads_what_a_dataclass_wrote():
    value = Everything(
        name="n", count=-3, ratio=0.25, flag=True, blob=b"\x00\x01",
        at=datetime.datetime(2026, 12, 5, 10, 30, tzinfo=datetime.timezone.utc),
        level=Level.HIGH, points=[Point(x=1, y=2)], tags={"a": 1.5}, maybe=None,
        origin=Point(x=0, y=0), other=Point(x=3, y=4),
    )
    codec = Codec(Everything)
    assert codec.decode(codec.encode(value)) == value
    written = Codec(EverythingRecord).encode(
        EverythingRecord(
            name="n", count=-3, ratio=0.25, flag=True, blob=b"\x00\x01",
            at=value.at, level=Level.HIGH, points=[PointRecord(1, 2)], tags={"a": 1.5},
            maybe=None, origin=PointRecord(0, 0), other=PointRecord(3, 4),
        )
    )
    assert codec.decode(written) == value


class Reading(pydantic.BaseModel):
    sensor: str
    celsius: float

    @pydantic.field_validator("celsius")
    @classmethod
    def physical(cls, celsius: float) -> float:
        if celsius < -273.15:
            raise ValueError("below absolute zero")
        return celsius


@dataclasses.dataclass
class UncheckedReading:
    sensor: str
    celsius: float


@runnel.streamlet
def warmer(reading: Reading) -> Reading:
    return Reading(sensor=reading.sensor, celsius=reading.celsius + 1.0)


def test_a_streamlet_of_models_dead_letters_what_the_model_refuses():
    impossible = Codec(UncheckedReading).encode(UncheckedReading("s-2", -300.0))
    result = testkit.run(
        warmer,
        [
            Reading(sensor="s-1", celsius=20.0),
            testkit.Raw(impossible),
            Reading(sensor="s-3", celsius=-5.0),
        ],
    )
    assert result.outputs["out"] == [
        Reading(sensor="s-1", celsius=21.0),
        Reading(sensor="s-3", celsius=-4.0),
    ]
    [(inlet, offset, error)] = [
        (letter.inlet, letter.offset, letter.error) for letter in result.dead_letters
    ]
    assert (inlet, offset) == ("in", 1)
    assert "below absolute zero" in error, error


def test_a_streamlet_of_models_describes_its_ports():
    described = warmer.__runnel__.describe()
    assert described["inlets"][0]["name"] == "in"
    assert described["outlets"][0]["schema"]["definition"] == avro_schema(Reading)

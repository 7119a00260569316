"""Avro schemas of dataclasses, and records through them."""

import dataclasses
import datetime
import enum
import io
from typing import Optional

import fastavro
import pytest

from runnel import Codec, SchemaError, avro_schema


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@dataclasses.dataclass
class Point:
    x: int
    y: int


@dataclasses.dataclass
class Everything:
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


def test_every_supported_type_maps_to_its_avro_type():
    fields = {field["name"]: field["type"] for field in avro_schema(Everything)["fields"]}
    assert fields["name"] == "string"
    assert fields["count"] == "long"
    assert fields["ratio"] == "double"
    assert fields["flag"] == "boolean"
    assert fields["blob"] == "bytes"
    assert fields["at"] == {"type": "long", "logicalType": "timestamp-millis"}
    assert fields["level"]["symbols"] == ["LOW", "HIGH"]
    assert fields["points"]["items"]["name"] == "Point"
    assert fields["tags"] == {"type": "map", "values": "double"}
    assert fields["maybe"] == ["null", "long"]
    # A record type is defined once, then named.
    assert fields["origin"] == f"{Point.__module__}.Point"
    assert fields["other"] == ["null", f"{Point.__module__}.Point"]
    fastavro.parse_schema(avro_schema(Everything))  # a valid schema


def test_a_record_round_trips_through_its_datum():
    value = Everything(
        name="n", count=-3, ratio=0.25, flag=True, blob=b"\x00\x01",
        at=datetime.datetime(2026, 12, 5, 10, 30, tzinfo=datetime.timezone.utc),
        level=Level.HIGH, points=[Point(1, 2)], tags={"a": 1.5}, maybe=None,
        origin=Point(0, 0), other=Point(3, 4),
    )
    codec = Codec(Everything)
    assert codec.decode(codec.encode(value)) == value


def test_the_datum_is_what_another_avro_implementation_reads():
    codec = Codec(Point)
    read = fastavro.schemaless_reader(io.BytesIO(codec.encode(Point(7, -1))), avro_schema(Point), None)
    assert read == {"x": 7, "y": -1}


def test_a_datum_written_with_an_older_schema_resolves_to_the_new_type():
    @dataclasses.dataclass
    class Reading:
        sensor: str
        unit: str = "celsius"

    old = {"type": "record", "name": "Reading", "fields": [{"name": "sensor", "type": "string"}]}
    datum = io.BytesIO()
    fastavro.schemaless_writer(datum, fastavro.parse_schema(old), {"sensor": "s-1"})
    codec = Codec(Reading)
    codec.add_writer_schema(3, old)
    assert codec.decode(datum.getvalue(), writer=3) == Reading("s-1", "celsius")


def test_encoding_a_value_of_another_type_says_what_was_given():
    with pytest.raises(TypeError, match="expected a Point, got a str"):
        Codec(Point).encode("not a point")


def test_types_without_a_schema_name_the_field():
    @dataclasses.dataclass
    class Bad:
        fine: int
        odd: set[int]

    with pytest.raises(SchemaError, match="field 'odd' of Bad"):
        avro_schema(Bad)
    with pytest.raises(SchemaError, match="neither a dataclass nor a pydantic model"):
        avro_schema(int)

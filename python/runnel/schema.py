"""Avro schemas for the Python types of ports, and the conversions between records and values.

A port's type is a dataclass or a pydantic model (pydantic 2); its Avro schema is derived
from the field annotations, the way the Rust side derives one with ``#[derive(AvroSchema)]``:

========================  ==========================================
Python                    Avro
========================  ==========================================
``str``                   ``string``
``int``                   ``long``
``float``                 ``double``
``bool``                  ``boolean``
``bytes``                 ``bytes``
``datetime.datetime``     ``long`` with ``timestamp-millis`` (UTC)
``Optional[T]``           ``["null", T]`` (default ``null``)
``list[T]``               ``array`` of ``T``
``dict[str, T]``          ``map`` of ``T``
an ``enum.Enum``          ``enum`` of its member names
a dataclass              ``record`` (nested records are named once)
a pydantic model          ``record``, as a dataclass
========================  ==========================================

A pydantic model's validation runs on every record decoded for it: a record it refuses is
a bad record (a dead letter, with pydantic's message), as one that does not decode is.

The record's name is the class name; its namespace the class's ``__avro_namespace__`` if
set, else its module. ``avro_schema(Reading)`` gives the schema; ``Codec(Reading)``
encodes and decodes Avro datums (no header: the wire format of a port's records).
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import sys
import types
import typing
from typing import Any

import fastavro

_PRIMITIVES = {
    str: "string",
    int: "long",
    float: "double",
    bool: "boolean",
    bytes: "bytes",
}

_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)


class SchemaError(TypeError):
    """A type that has no Avro schema, with the field it was found at."""


def _is_pydantic_model(cls: Any) -> bool:
    """Whether ``cls`` is a pydantic model class (pydantic is imported only if the app did)."""
    pydantic = sys.modules.get("pydantic")
    return (
        pydantic is not None
        and isinstance(cls, type)
        and issubclass(cls, pydantic.BaseModel)
        and cls is not pydantic.BaseModel
    )


def is_record_type(cls: Any) -> bool:
    """Whether ``cls`` is a dataclass or a pydantic model (a type a port can carry)."""
    return (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or _is_pydantic_model(cls)


def _pydantic_fields(cls: type) -> list[tuple[str, Any, Any]]:
    fields = []
    for name, info in cls.model_fields.items():
        if info.default_factory is not None:
            default = info.default_factory()
        elif info.is_required():
            default = dataclasses.MISSING
        else:
            default = info.default
        fields.append((name, info.annotation, default))
    return fields


def _fields(cls: type) -> list[tuple[str, Any, Any]]:
    """The fields of a record type: (name, annotation, default or ``dataclasses.MISSING``)."""
    if _is_pydantic_model(cls):
        return _pydantic_fields(cls)
    hints = typing.get_type_hints(cls)
    fields = []
    for field in dataclasses.fields(cls):
        default = field.default
        if default is dataclasses.MISSING and field.default_factory is not dataclasses.MISSING:
            default = field.default_factory()
        fields.append((field.name, hints[field.name], default))
    return fields


def _namespace(cls: type) -> str:
    return getattr(cls, "__avro_namespace__", None) or cls.__module__


def avro_schema(cls: type) -> dict:
    """The Avro schema (as JSON-like data) of a record type.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Reading:
    ...     sensor: str
    ...     celsius: float
    >>> avro_schema(Reading)["fields"]
    [{'name': 'sensor', 'type': 'string'}, {'name': 'celsius', 'type': 'double'}]
    """
    if not is_record_type(cls):
        raise SchemaError(
            f"{cls!r} is neither a dataclass nor a pydantic model, so has no Avro record schema"
        )
    return _record(cls, set())


def _record(cls: type, named: set[str]) -> Any:
    full_name = f"{_namespace(cls)}.{cls.__name__}"
    if full_name in named:
        return full_name
    named.add(full_name)
    fields = []
    for name, annotation, default in _fields(cls):
        try:
            schema = _schema(annotation, named)
        except SchemaError as error:
            raise SchemaError(f"field '{name}' of {cls.__name__}: {error}") from None
        field: dict[str, Any] = {"name": name, "type": schema}
        optional = isinstance(schema, list) and schema[0] == "null"
        if optional and default in (None, dataclasses.MISSING):
            field["default"] = None
        elif default is not dataclasses.MISSING:
            # The field's default is the schema's, so records written before the field was
            # added resolve to it. A union's default is of its first branch.
            if optional:
                field["type"] = schema = [schema[1], "null"]
            field["default"] = _json_default(annotation, default, name, cls)
        fields.append(field)
    return {
        "type": "record",
        "name": cls.__name__,
        "namespace": _namespace(cls),
        "fields": fields,
    }


def _json_default(annotation: Any, default: Any, name: str, cls: type) -> Any:
    """A field's default as the schema's JSON writes it."""
    value = _to_avro(annotation, default)
    if isinstance(value, bytes):
        return value.decode("latin-1")  # Avro's JSON for bytes: one code point per byte
    if isinstance(value, datetime.datetime):
        return int((value - _EPOCH).total_seconds() * 1000)
    if isinstance(value, (str, int, float, bool, list, dict)) or value is None:
        return value
    raise SchemaError(f"field '{name}' of {cls.__name__}: its default {default!r} has no Avro form")


def _optional_of(annotation: Any) -> Any | None:
    """``T`` when ``annotation`` is ``Optional[T]`` (or ``T | None``), else ``None``."""
    origin = typing.get_origin(annotation)
    if origin is typing.Union or (sys.version_info >= (3, 10) and origin is types.UnionType):
        arguments = [argument for argument in typing.get_args(annotation) if argument is not type(None)]
        if len(arguments) == 1 and len(typing.get_args(annotation)) == 2:
            return arguments[0]
        raise SchemaError(f"{annotation!r}: only unions with None (Optional) have a schema")
    return None


def _schema(annotation: Any, named: set[str]) -> Any:
    if annotation in _PRIMITIVES:
        return _PRIMITIVES[annotation]
    if annotation is datetime.datetime:
        return {"type": "long", "logicalType": "timestamp-millis"}
    inner = _optional_of(annotation)
    if inner is not None:
        return ["null", _schema(inner, named)]
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list and len(arguments) == 1:
        return {"type": "array", "items": _schema(arguments[0], named)}
    if origin is dict and len(arguments) == 2:
        if arguments[0] is not str:
            raise SchemaError(f"{annotation!r}: Avro maps have string keys")
        return {"type": "map", "values": _schema(arguments[1], named)}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        full_name = f"{_namespace(annotation)}.{annotation.__name__}"
        if full_name in named:
            return full_name
        named.add(full_name)
        return {
            "type": "enum",
            "name": annotation.__name__,
            "namespace": _namespace(annotation),
            "symbols": [member.name for member in annotation],
        }
    if is_record_type(annotation):
        return _record(annotation, named)
    raise SchemaError(f"{annotation!r} has no Avro schema (see runnel.schema for the types that do)")


def _to_avro(annotation: Any, value: Any) -> Any:
    """A Python value of ``annotation`` as fastavro writes it."""
    if value is None:
        return None
    inner = _optional_of(annotation)
    if inner is not None:
        return _to_avro(inner, value)
    if annotation is datetime.datetime:
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.timezone.utc)
        return value
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return [_to_avro(arguments[0], item) for item in value]
    if origin is dict:
        return {key: _to_avro(arguments[1], item) for key, item in value.items()}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return value.name
    if is_record_type(annotation):
        return {
            name: _to_avro(field_type, getattr(value, name))
            for name, field_type, _ in _plan(annotation)
        }
    return value


def _from_avro(annotation: Any, value: Any) -> Any:
    """The Python value of ``annotation`` for what fastavro read."""
    if value is None:
        return None
    inner = _optional_of(annotation)
    if inner is not None:
        return _from_avro(inner, value)
    origin, arguments = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is list:
        return [_from_avro(arguments[0], item) for item in value]
    if origin is dict:
        return {key: _from_avro(arguments[1], item) for key, item in value.items()}
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return annotation[value]
    if is_record_type(annotation):
        return annotation(
            **{name: _from_avro(field_type, value[name]) for name, field_type, _ in _plan(annotation)}
        )
    return value


_PLANS: dict[type, list[tuple[str, Any, Any]]] = {}


def _plan(cls: type) -> list[tuple[str, Any, Any]]:
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _fields(cls)
    return plan


def _is_flat(cls: type) -> bool:
    """Whether every field is a primitive: records convert with one dict then."""
    return all(annotation in _PRIMITIVES for _, annotation, _ in _plan(cls))


class Codec:
    """Encodes values of a record type as Avro datums and decodes them, resolving datums
    written with other (compatible) schemas by Avro's rules.

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Reading:
    ...     sensor: str
    ...     celsius: float
    >>> codec = Codec(Reading)
    >>> codec.decode(codec.encode(Reading("s-1", 21.5)))
    Reading(sensor='s-1', celsius=21.5)
    """

    def __init__(self, cls: type):
        self.cls = cls
        self.schema = avro_schema(cls)
        self._parsed = fastavro.parse_schema(self.schema)
        self._flat = _is_flat(cls)
        # A flat dataclass's instance dict is the record fastavro writes (extra keys are
        # ignored); one with slots has none.
        self._flat_dict = self._flat and dataclasses.is_dataclass(cls) and not hasattr(cls, "__slots__")
        self._names = [name for name, _, _ in _plan(cls)]
        self._writers: dict[int, Any] = {}
        self._out = io.BytesIO()

    def add_writer_schema(self, index: int, schema: dict) -> None:
        """Learns a schema producers of the port wrote with, under ``index``."""
        self._writers[index] = fastavro.parse_schema(schema)

    def encode(self, value: Any) -> bytes:
        """The Avro datum of ``value`` (an instance of the record type)."""
        if not isinstance(value, self.cls):
            raise TypeError(
                f"expected a {self.cls.__name__}, got a {type(value).__name__}: {value!r}"
            )
        out = self._out
        out.seek(0)
        out.truncate()
        fastavro.schemaless_writer(out, self._parsed, self.to_record(value))
        return out.getvalue()

    def to_record(self, value: Any) -> dict:
        """``value`` as the dict fastavro writes."""
        if self._flat_dict:
            return value.__dict__
        if self._flat:
            return {name: getattr(value, name) for name in self._names}
        return _to_avro(self.cls, value)

    def from_record(self, record: dict) -> Any:
        """The value of the record type that fastavro read as ``record``."""
        if self._flat:
            return self.cls(**record)
        return _from_avro(self.cls, record)

    def decode(self, datum: bytes, writer: int | None = None) -> Any:
        """The value of ``datum``, written with the schema learnt as ``writer`` (the
        port's own schema when ``None``)."""
        if writer is None:
            record = fastavro.schemaless_reader(io.BytesIO(datum), self._parsed, None)
        else:
            record = fastavro.schemaless_reader(io.BytesIO(datum), self._writers[writer], self._parsed)
        return self.cls(**record) if self._flat else _from_avro(self.cls, record)

"""Runnel streamlets in Python.

A streamlet is a function or class decorated with :func:`streamlet`, with typed inlets and
outlets (dataclasses or pydantic models, mapped to Avro schemas by :mod:`runnel.schema`) and
parameters. The Runnel host runs it in a process of its own (:mod:`runnel.worker`, speaking
:mod:`runnel.protocol`) and keeps the log, offsets, dead letters and restarts;
:mod:`runnel.testkit` runs it in pytest. Start with docs/python.md.

>>> from dataclasses import dataclass
>>> import runnel
>>> @dataclass
... class Reading:
...     sensor: str
...     celsius: float
>>> @runnel.streamlet
... def too_hot(reading: Reading, limit: float = 30.0) -> Reading | None:
...     return reading if reading.celsius > limit else None
>>> from runnel import testkit
>>> testkit.run(too_hot, [Reading("a", 31.0), Reading("b", 12.0)]).outputs["out"]
[Reading(sensor='a', celsius=31.0)]
"""

from .runner import current_key, now_millis
from .schema import Codec, SchemaError, avro_schema
from .definition import DefinitionError, Inlet, Outlet, Parameter, streamlet

__all__ = [
    "Codec",
    "DefinitionError",
    "Inlet",
    "Outlet",
    "Parameter",
    "SchemaError",
    "avro_schema",
    "current_key",
    "now_millis",
    "streamlet",
]

__version__ = "0.1.0"

"""Runs Python streamlets in tests, in-process, through the same encoding and handling the
host's worker uses: inputs are encoded with the inlets' Avro schemas, outputs decoded with
the outlets', failures become dead letters, and time is whatever the test says.

>>> from dataclasses import dataclass
>>> import runnel
>>> @dataclass
... class Word:
...     text: str
>>> @runnel.streamlet
... class Counter:
...     words = runnel.Inlet(Word)
...     counts = runnel.Outlet(Word)
...     def __init__(self):
...         self.seen = 0
...     def process(self, word):
...         self.seen += 1
...         self.counts.emit(Word(f"{word.text}:{self.seen}"))
...     def snapshot(self):
...         return self.seen
...     def restore(self, seen):
...         self.seen = seen
>>> run = TestRun(Counter)
>>> run.send([Word("a")]).outputs["counts"]
[Word(text='a:1')]
>>> TestRun(Counter, restore=run.checkpoint()).send([Word("b")]).outputs["counts"]
[Word(text='b:2')]
"""

from __future__ import annotations

import dataclasses
from typing import Any

from . import protocol
from .runner import Runner
from .definition import Definition


@dataclasses.dataclass
class Keyed:
    """An input with a key (``keyed("k", record)``)."""

    key: bytes | None
    value: Any


def keyed(key: str | bytes, value: Any) -> Keyed:
    """``value`` sent with ``key``."""
    return Keyed(key.encode() if isinstance(key, str) else key, value)


@dataclasses.dataclass
class Raw:
    """An input given as the bytes of its Avro datum, such as bad data."""

    datum: bytes


@dataclasses.dataclass
class DeadLetter:
    """An input the streamlet failed on (or that did not decode), with the error."""

    inlet: str
    offset: int
    error: str


@dataclasses.dataclass
class Result:
    """What a batch produced: values per outlet (in order), their keys, and dead letters."""

    outputs: dict[str, list[Any]]
    keys: dict[str, list[bytes | None]]
    dead_letters: list[DeadLetter]


def _definition(streamlet: Any) -> Definition:
    definition = getattr(streamlet, "__runnel__", None)
    if definition is None:
        raise TypeError(f"{streamlet!r} is not decorated with @runnel.streamlet")
    return definition


class TestRun:
    """One instance of a streamlet, fed batches by the test; ``now`` is the time (milliseconds
    since the epoch) :func:`runnel.now_millis` returns, moved by :meth:`advance`."""

    __test__ = False  # not a pytest test class

    def __init__(self, streamlet: Any, parameters: dict[str, Any] | None = None, *,
                 now: int = 0, restore: bytes | None = None):
        self.definition = _definition(streamlet)
        texts = {key: _text(value) for key, value in (parameters or {}).items()}
        self.runner = Runner(self.definition, texts)
        self.now = now
        self.offsets = [0] * len(self.definition.inlets)
        if restore is not None:
            self.runner.restore(restore)

    def advance(self, milliseconds: int) -> None:
        """Moves the clock forward."""
        self.now += milliseconds

    def send(self, records: list[Any], inlet: str | None = None) -> Result:
        """Hands ``records`` (values, :func:`keyed` values or :class:`Raw` datums) to
        ``inlet`` (the only one, if not named) as one batch."""
        names = [port.name for port in self.definition.inlets]
        if inlet is None:
            if len(names) != 1:
                raise ValueError(f"name the inlet: the streamlet has {names}")
            inlet = names[0]
        index = names.index(inlet)
        codec = self.runner.inlets[index]
        encoded = []
        for record in records:
            key = None
            if isinstance(record, Keyed):
                key, record = record.key, record.value
            datum = record.datum if isinstance(record, Raw) else codec.encode(record)
            encoded.append(protocol.InputRecord(0, self.offsets[index], key, protocol.OWN_SCHEMA, datum))
            self.offsets[index] += 1
        outcomes = self.runner.process(index, self.now, encoded)
        outlets = self.definition.outlets
        result = Result({o.name: [] for o in outlets}, {o.name: [] for o in outlets}, [])
        for record, outcome in zip(encoded, outcomes):
            if outcome.error is not None:
                result.dead_letters.append(DeadLetter(inlet, record.offset, outcome.error))
            for outlet, key, datum in outcome.outputs:
                name = outlets[outlet].name
                result.outputs[name].append(self.runner.outlets[outlet].decode(datum))
                result.keys[name].append(key)
        return result

    def checkpoint(self) -> bytes:
        """The snapshot the host would checkpoint now (hand it to ``restore``)."""
        return self.runner.snapshot()


def run(streamlet: Any, records: list[Any], parameters: dict[str, Any] | None = None, *,
        inlet: str | None = None, now: int = 0) -> Result:
    """Runs ``records`` through a fresh instance of ``streamlet`` as one batch."""
    return TestRun(streamlet, parameters, now=now).send(records, inlet)


def _text(value: Any) -> str:
    """A parameter value in the blueprint's syntax."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)

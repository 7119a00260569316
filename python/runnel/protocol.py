"""The protocol between the Runnel host and a Python streamlet's process (version 2).

The host starts ``python -m runnel.worker module:attribute`` and speaks over the child's
stdin (host to streamlet) and stdout (streamlet to host); stderr is the streamlet's log.
Everything is a **frame**: a 4-byte big-endian length of what follows, a 1-byte kind, then
the body. Integers are big-endian; ``bytes`` is a u32 length and the bytes; an optional
``key`` is an i32 length (-1: no key) and the bytes. docs/python.md has the full table.

Host to streamlet:

* ``HELLO`` (1): JSON ``{"protocol": 2, "instance": ..., "parameters": {key: text}}``.
  Answered by ``READY`` (the descriptor entry as JSON, with ``form``: ``record``,
  ``batch`` or ``arrow``) or ``FAILED``.
* ``SCHEMA`` (2): u16 inlet, u16 writer id, JSON Avro schema: a schema producers of the
  inlet's topic wrote with; records name it by its id (0xFFFF: the inlet's own schema).
* ``RESTORE`` (3): the snapshot a ``SNAPSHOT`` returned before. No answer.
* ``BATCH`` (4): u16 inlet, i64 now (milliseconds since the epoch, the host's clock),
  u32 count, then per record u32 partition, u64 offset, u16 writer id, i32 key length (-1:
  no key), u32 datum length; then each record's key bytes and Avro datum, in order.
  Answered by ``OUTPUTS``.
* ``CHECKPOINT`` (5): answered by ``SNAPSHOT``.
* ``QUIT`` (6): the process exits 0.
* ``ARROW_BATCH`` (7), to a streamlet of the ``arrow`` form instead of ``BATCH``: u16
  inlet, i64 now, u32 count, then per record u32 partition, u64 offset, i32 key length;
  then the keys; then bytes: the records, decoded by the host, as an Arrow IPC stream (one
  row per record, a column per field of the inlet's record). Answered by ``OUTPUTS``.

Streamlet to host:

* ``READY`` (129), ``FAILED`` (132): UTF-8 text (a traceback); the process exits after it.
* ``OUTPUTS`` (130): u32 count (the batch's), then per input record a u8 status: 0, then
  u32 outputs, each u16 outlet, key, bytes (an Avro datum of the outlet's schema); or 1 (the
  record failed: dead letter it), then bytes (UTF-8: the error and its traceback); or 2
  (the arrow form's outputs), then u32 tables, each u16 outlet, key (the name of the column
  holding each row's key), bytes (an Arrow IPC stream of rows of the outlet's record).
* ``SNAPSHOT`` (131): the pickled state (empty for a stateless streamlet).
"""

from __future__ import annotations

import struct
from typing import BinaryIO

#: The protocol version this package speaks.
VERSION = 2

HELLO, SCHEMA, RESTORE, BATCH, CHECKPOINT, QUIT, ARROW_BATCH = 1, 2, 3, 4, 5, 6, 7
READY, OUTPUTS, SNAPSHOT, FAILED = 129, 130, 131, 132

#: A record's writer id when it was written with the inlet's own schema.
OWN_SCHEMA = 0xFFFF

_HEADER = struct.Struct(">IB")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_I32 = struct.Struct(">i")
_BATCH_HEADER = struct.Struct(">HqI")


class ProtocolError(Exception):
    """A frame that does not follow the protocol."""


def read_frame(stream: BinaryIO) -> tuple[int, bytes] | None:
    """The next frame's kind and body; ``None`` when the stream ended between frames."""
    header = stream.read(_HEADER.size)
    if not header:
        return None
    if len(header) < _HEADER.size:
        raise ProtocolError("the stream ended inside a frame header")
    length, kind = _HEADER.unpack(header)
    body = stream.read(length - 1) if length > 1 else b""
    if len(body) != length - 1:
        raise ProtocolError(f"the stream ended inside a frame of kind {kind}")
    return kind, body


def write_frame(stream: BinaryIO, kind: int, body: bytes = b"") -> None:
    """Writes one frame (the caller flushes)."""
    stream.write(_HEADER.pack(len(body) + 1, kind))
    stream.write(body)


class Writer:
    """Builds a frame body."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def u8(self, value: int) -> None:
        self.parts.append(bytes((value,)))

    def u16(self, value: int) -> None:
        self.parts.append(_U16.pack(value))

    def u32(self, value: int) -> None:
        self.parts.append(_U32.pack(value))

    def bytes(self, value: bytes) -> None:
        self.parts.append(_U32.pack(len(value)))
        self.parts.append(value)

    def key(self, value: bytes | None) -> None:
        if value is None:
            self.parts.append(_I32.pack(-1))
        else:
            self.parts.append(_I32.pack(len(value)))
            self.parts.append(value)

    def body(self) -> bytes:
        return b"".join(self.parts)


class Reader:
    """Reads a frame body."""

    def __init__(self, body: bytes) -> None:
        self.body = memoryview(body)
        self.at = 0

    def u16(self) -> int:
        (value,) = _U16.unpack_from(self.body, self.at)
        self.at += 2
        return value

    def u32(self) -> int:
        (value,) = _U32.unpack_from(self.body, self.at)
        self.at += 4
        return value

    def bytes(self) -> bytes:
        length = self.u32()
        value = bytes(self.body[self.at : self.at + length])
        self.at += length
        return value

    def key(self) -> bytes | None:
        (length,) = _I32.unpack_from(self.body, self.at)
        self.at += 4
        if length < 0:
            return None
        value = bytes(self.body[self.at : self.at + length])
        self.at += length
        return value

    def rest(self) -> bytes:
        return bytes(self.body[self.at :])


class InputRecord:
    """A record of a ``BATCH``: where it is in the log, its key, and its datum."""

    __slots__ = ("partition", "offset", "key", "writer", "datum")

    def __init__(self, partition: int, offset: int, key: bytes | None, writer: int, datum: bytes):
        self.partition = partition
        self.offset = offset
        self.key = key
        self.writer = writer
        self.datum = datum


#: A batch record's fixed part: partition, offset, writer id, key length (-1: no key), datum
#: length.
_RECORD = struct.Struct(">IQHiI")


def encode_batch(inlet: int, now: int, records: list[InputRecord]) -> bytes:
    """The body of a ``BATCH`` frame (what the host sends; the test kit uses it)."""
    parts = [_BATCH_HEADER.pack(inlet, now, len(records))]
    for record in records:
        key_length = -1 if record.key is None else len(record.key)
        parts.append(_RECORD.pack(record.partition, record.offset, record.writer, key_length, len(record.datum)))
    for record in records:
        if record.key is not None:
            parts.append(record.key)
        parts.append(record.datum)
    return b"".join(parts)


def decode_batch(body: bytes) -> tuple[int, int, list[InputRecord]]:
    """The inlet, time and records of a ``BATCH`` frame's body."""
    inlet, now, count = _BATCH_HEADER.unpack_from(body, 0)
    start = _BATCH_HEADER.size
    at = start + _RECORD.size * count
    if len(body) < at:
        raise ProtocolError(f"a BATCH of {count} records is cut short in its record headers")
    view = memoryview(body)
    records = []
    for partition, offset, writer, key_length, datum_length in _RECORD.iter_unpack(view[start:at]):
        key = None
        if key_length >= 0:
            key = bytes(view[at : at + key_length])
            at += key_length
        records.append(InputRecord(partition, offset, key, writer, view[at : at + datum_length]))
        at += datum_length
    if at != len(body):
        raise ProtocolError(f"a BATCH of {count} records has {len(body) - at} bytes too few or many")
    return inlet, now, records


#: An Arrow batch record's fixed part: partition, offset, key length (-1: no key).
_ARROW_RECORD = struct.Struct(">IQi")


def encode_arrow_batch(inlet: int, now: int, records: list[InputRecord], ipc: bytes) -> bytes:
    """The body of an ``ARROW_BATCH`` frame: where each record was and its key, then the
    records themselves as an Arrow IPC stream (what the host sends; tests use it)."""
    parts = [_BATCH_HEADER.pack(inlet, now, len(records))]
    for record in records:
        key_length = -1 if record.key is None else len(record.key)
        parts.append(_ARROW_RECORD.pack(record.partition, record.offset, key_length))
    for record in records:
        if record.key is not None:
            parts.append(record.key)
    parts.append(_U32.pack(len(ipc)))
    parts.append(ipc)
    return b"".join(parts)


def decode_arrow_batch(body: bytes) -> tuple[int, int, ArrowRecords, memoryview]:
    """The inlet, time, records (where each came from, read when asked) and Arrow IPC stream
    of an ``ARROW_BATCH`` frame's body."""
    inlet, now, count = _BATCH_HEADER.unpack_from(body, 0)
    start = _BATCH_HEADER.size
    at = start + _ARROW_RECORD.size * count
    if len(body) < at:
        raise ProtocolError(f"an ARROW_BATCH of {count} records is cut short in its record headers")
    view = memoryview(body)
    headers = view[start:at]
    keys = sum(max(key_length, 0) for _, _, key_length in _ARROW_RECORD.iter_unpack(headers))
    at += keys
    if len(body) < at + 4:
        raise ProtocolError(f"an ARROW_BATCH of {count} records has no Arrow stream")
    (length,) = _U32.unpack_from(body, at)
    if at + 4 + length != len(body):
        raise ProtocolError(
            f"an ARROW_BATCH of {count} records has {len(body) - at - 4 - length} bytes too few or many"
        )
    return inlet, now, ArrowRecords(count, headers, view[start + _ARROW_RECORD.size * count : at]), view[at + 4 :]


class ArrowRecords:
    """The records of an ``ARROW_BATCH``: how many, and where each was (partition, offset,
    key), read only when asked (for an error message), since the rows carry the values."""

    def __init__(self, count: int, headers: memoryview, keys: memoryview) -> None:
        self.count = count
        self._headers = headers
        self._keys = keys

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: int) -> InputRecord:
        key_at = 0
        for at, (partition, offset, key_length) in enumerate(_ARROW_RECORD.iter_unpack(self._headers)):
            key = None
            if key_length >= 0:
                key = bytes(self._keys[key_at : key_at + key_length])
                key_at += key_length
            if at == index:
                return InputRecord(partition, offset, key, OWN_SCHEMA, b"")
        raise IndexError(index)

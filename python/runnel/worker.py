"""The process the Runnel host starts for a Python streamlet:
``python -m runnel.worker module:attribute``. It speaks :mod:`runnel.protocol` over stdin
and stdout until the host sends ``QUIT`` or closes stdin."""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import BinaryIO

from . import protocol
from .runner import NOTHING, Runner
from .definition import load


def serve(reference: str, incoming: BinaryIO, outgoing: BinaryIO) -> int:
    """Serves the streamlet ``reference`` to the host; returns the exit status."""
    frame = protocol.read_frame(incoming)
    if frame is None:
        return 0
    kind, body = frame
    if kind != protocol.HELLO:
        return _fail(outgoing, f"expected HELLO, got a frame of kind {kind}")
    hello = json.loads(body)
    if hello.get("protocol") != protocol.VERSION:
        return _fail(
            outgoing,
            f"the host speaks protocol {hello.get('protocol')}, this runnel package {protocol.VERSION}",
        )
    try:
        definition = load(reference)
        runner = Runner(definition, hello.get("parameters", {}))
    except Exception:  # noqa: BLE001 - reported to the host, which restarts with backoff
        return _fail(outgoing, f"starting streamlet '{reference}' failed:\n{traceback.format_exc()}")
    ready = definition.describe()
    ready["form"] = definition.form
    protocol.write_frame(outgoing, protocol.READY, json.dumps(ready).encode())
    outgoing.flush()
    while True:
        frame = protocol.read_frame(incoming)
        if frame is None:
            return 0
        kind, body = frame
        if kind == protocol.BATCH:
            inlet, now, records = protocol.decode_batch(body)
            outcomes = runner.process(inlet, now, records)
            protocol.write_frame(outgoing, protocol.OUTPUTS, _outputs(outcomes))
            outgoing.flush()
        elif kind == protocol.ARROW_BATCH:
            inlet, now, records, stream = protocol.decode_arrow_batch(body)
            outcomes = runner.process_arrow(inlet, now, records, stream)
            protocol.write_frame(outgoing, protocol.OUTPUTS, _outputs(outcomes))
            outgoing.flush()
        elif kind == protocol.SCHEMA:
            reader = protocol.Reader(body)
            inlet, writer = reader.u16(), reader.u16()
            runner.add_writer_schema(inlet, writer, json.loads(reader.rest()))
        elif kind == protocol.CHECKPOINT:
            protocol.write_frame(outgoing, protocol.SNAPSHOT, runner.snapshot())
            outgoing.flush()
        elif kind == protocol.RESTORE:
            runner.restore(body)
        elif kind == protocol.QUIT:
            return 0
        else:
            return _fail(outgoing, f"unknown frame kind {kind}")


#: How a record that produced nothing is written: status 0, no outputs.
_NOTHING = b"\x00\x00\x00\x00\x00"


def _outputs(outcomes: list) -> bytes:
    writer = protocol.Writer()
    writer.u32(len(outcomes))
    nothing = 0
    for outcome in outcomes:
        if outcome is NOTHING:
            nothing += 1
            continue
        if nothing:
            writer.parts.append(_NOTHING * nothing)
            nothing = 0
        if outcome.error is not None:
            writer.u8(1)
            writer.bytes(outcome.error.encode())
            continue
        if outcome.tables is not None:
            writer.u8(2)
            writer.u32(len(outcome.tables))
            for outlet, key_column, stream in outcome.tables:
                writer.u16(outlet)
                writer.key(None if key_column is None else key_column.encode())
                writer.bytes(stream)
            continue
        writer.u8(0)
        writer.u32(len(outcome.outputs))
        for outlet, key, datum in outcome.outputs:
            writer.u16(outlet)
            writer.key(key)
            writer.bytes(datum)
    if nothing:
        writer.parts.append(_NOTHING * nothing)
    return writer.body()


def _fail(outgoing: BinaryIO, message: str) -> int:
    protocol.write_frame(outgoing, protocol.FAILED, message.encode())
    outgoing.flush()
    return 1


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: python -m runnel.worker module:attribute", file=sys.stderr)
        return 2
    # The frames own the stdout the host reads: whatever the streamlet (or a library in C)
    # prints goes to stderr, the log.
    outgoing = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return serve(sys.argv[1], sys.stdin.buffer, outgoing)


if __name__ == "__main__":
    sys.exit(main())

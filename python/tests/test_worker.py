"""The worker process, driven over its pipes as the host drives it (runnel.protocol)."""

import io
import json
import subprocess
import sys
from pathlib import Path

import fastavro

from runnel import Codec, protocol
from runnel.examples import Reading, Total

PACKAGE = Path(__file__).resolve().parents[1]


class Host:
    """A test's side of the pipes: starts the worker and exchanges frames with it."""

    def __init__(self, reference, extra_path=None):
        environment = {"PYTHONPATH": str(PACKAGE) + (f":{extra_path}" if extra_path else "")}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "runnel.worker", reference],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            env=environment,
        )

    def send(self, kind, body=b""):
        protocol.write_frame(self.process.stdin, kind, body)
        self.process.stdin.flush()

    def receive(self):
        return protocol.read_frame(self.process.stdout)

    def hello(self, parameters=None):
        self.send(protocol.HELLO, json.dumps({"protocol": protocol.VERSION, "instance": "t", "parameters": parameters or {}}).encode())
        return self.receive()

    def batch(self, records, inlet=0, now=0):
        self.send(protocol.BATCH, protocol.encode_batch(inlet, now, records))
        kind, body = self.receive()
        assert kind == protocol.OUTPUTS
        return outcomes(body)

    def quit(self):
        self.send(protocol.QUIT)
        return self.process.wait(timeout=10)


def outcomes(body):
    """An ``OUTPUTS`` body as ("ok", outputs), ("error", text) or, in the arrow form,
    ("tables", [(outlet, key column, rows)])."""
    reader = protocol.Reader(body)
    answered = []
    for _ in range(reader.u32()):
        status = reader.body[reader.at]
        reader.at += 1
        if status == 1:
            answered.append(("error", reader.bytes().decode()))
            continue
        if status == 2:
            import pyarrow

            tables = []
            for _ in range(reader.u32()):
                outlet, key = reader.u16(), reader.key()
                table = pyarrow.ipc.open_stream(reader.bytes()).read_all()
                tables.append((outlet, key, table.to_pylist()))
            answered.append(("tables", tables))
            continue
        outputs = []
        for _ in range(reader.u32()):
            outputs.append((reader.u16(), reader.key(), reader.bytes()))
        answered.append(("ok", outputs))
    return answered


def records(values, start=0, writer=protocol.OWN_SCHEMA, codec=Codec(Reading)):
    return [
        protocol.InputRecord(2, start + index, None, writer, codec.encode(value) if writer == protocol.OWN_SCHEMA else value)
        for index, value in enumerate(values)
    ]


def test_the_worker_answers_hello_with_its_descriptor_and_each_batch_with_outcomes():
    host = Host("runnel.examples:too_hot")
    kind, body = host.hello({"limit": "20"})
    assert kind == protocol.READY
    assert json.loads(body)["type"] == "runnel.examples:too_hot"
    answered = host.batch(records([Reading("a", 25.0), Reading("b", float("nan")), Reading("c", 10.0)], start=40))
    assert answered[0] == ("ok", [(0, None, Codec(Reading).encode(Reading("a", 25.0)))])
    assert answered[1][0] == "error"
    assert "partition 2 offset 41" in answered[1][1] and "sensor b sent NaN" in answered[1][1]
    assert answered[2] == ("ok", [])
    assert host.quit() == 0


def test_state_goes_out_at_a_checkpoint_and_comes_back_in_a_new_process():
    host = Host("runnel.examples:Totals")
    assert host.hello()[0] == protocol.READY
    host.batch(records([Reading("a", 1.0), Reading("a", 2.0)]))
    host.send(protocol.CHECKPOINT)
    kind, snapshot = host.receive()
    assert kind == protocol.SNAPSHOT and snapshot
    host.process.kill()  # as kill -9 would
    host.process.wait()

    again = Host("runnel.examples:Totals")
    assert again.hello()[0] == protocol.READY
    again.send(protocol.RESTORE, snapshot)
    [(status, [(outlet, key, datum)])] = again.batch(records([Reading("a", 4.0)]))
    assert (status, outlet, key) == ("ok", 0, b"a")
    assert Codec(Total).decode(datum) == Total("a", 3, 7.0)
    assert again.quit() == 0


def test_records_written_with_an_older_schema_resolve_by_the_schema_the_host_sends():
    old = {"type": "record", "name": "Reading", "namespace": "runnel.examples",
           "fields": [{"name": "celsius", "type": "double"}, {"name": "sensor", "type": "string"}]}
    datum = io.BytesIO()
    fastavro.schemaless_writer(datum, fastavro.parse_schema(old), {"sensor": "s", "celsius": 50.0})
    host = Host("runnel.examples:too_hot")
    host.hello()
    writer = protocol.Writer()
    writer.u16(0)
    writer.u16(7)
    host.send(protocol.SCHEMA, writer.body() + json.dumps(old).encode())
    [(status, [(_, _, out)])] = host.batch([protocol.InputRecord(0, 0, None, 7, datum.getvalue())])
    assert Codec(Reading).decode(out) == Reading("s", 50.0)
    host.quit()


def test_what_the_streamlet_prints_goes_to_the_log_not_into_the_frames(tmp_path):
    (tmp_path / "chatty.py").write_text(
        "import dataclasses, runnel\n"
        "from runnel.examples import Reading\n"
        "@runnel.streamlet\n"
        "def chatty(reading: Reading) -> Reading:\n"
        "    print('hello from the streamlet')\n"
        "    return reading\n"
    )
    host = Host("chatty:chatty", extra_path=tmp_path)
    assert host.hello()[0] == protocol.READY
    assert host.batch(records([Reading("a", 1.0)]))[0][0] == "ok"
    assert host.quit() == 0
    assert b"hello from the streamlet" in host.process.stderr.read()


def test_a_streamlet_that_cannot_start_fails_with_the_traceback():
    host = Host("runnel.examples:too_hot")
    kind, body = host.hello({"limit": "warm"})
    assert kind == protocol.FAILED
    assert "starting streamlet 'runnel.examples:too_hot' failed" in body.decode()
    assert "'warm' is not a double" in body.decode()
    assert host.process.wait(timeout=10) == 1

    missing = Host("no_such_module:thing")
    kind, body = missing.hello()
    assert kind == protocol.FAILED and "No module named 'no_such_module'" in body.decode()


def test_a_host_of_another_protocol_version_is_refused():
    host = Host("runnel.examples:too_hot")
    host.send(protocol.HELLO, json.dumps({"protocol": 1}).encode())
    kind, body = host.receive()
    assert kind == protocol.FAILED
    assert body.decode() == "the host speaks protocol 1, this runnel package 2"


def test_the_worker_exits_when_the_host_closes_its_stdin():
    host = Host("runnel.examples:too_hot")
    assert host.hello()[0] == protocol.READY
    host.process.stdin.close()  # as a host killed with -9 would
    assert host.process.wait(timeout=10) == 0

"""The arrow form: a streamlet takes and emits pyarrow tables; the worker reads the host's
Arrow batches and answers with Arrow tables, and the test kit runs it over records."""

import json

import pyarrow

from runnel import protocol, testkit
from runnel.arrow_examples import HotArrow, WarmerArrow
from runnel.examples import Reading

from test_worker import Host, outcomes


def stream(table):
    sink = pyarrow.BufferOutputStream()
    with pyarrow.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def arrow_batch(host, readings, start=0):
    table = pyarrow.Table.from_pylist([{"sensor": s, "celsius": c} for s, c in readings])
    records = [protocol.InputRecord(1, start + index, None, protocol.OWN_SCHEMA, b"")
               for index in range(len(readings))]
    host.send(protocol.ARROW_BATCH, protocol.encode_arrow_batch(0, 0, records, stream(table)))
    kind, body = host.receive()
    assert kind == protocol.OUTPUTS
    return outcomes(body)


def test_an_arrow_streamlet_says_its_form_and_answers_a_batch_with_a_table():
    assert WarmerArrow.__runnel__.form == "arrow"
    host = Host("runnel.arrow_examples:WarmerArrow")
    kind, body = host.hello()
    assert kind == protocol.READY
    assert json.loads(body)["form"] == "arrow"
    answered = arrow_batch(host, [("a", 20.0), ("b", 21.5)])
    assert answered == [
        ("ok", []),
        ("tables", [(0, b"sensor", [{"sensor": "a", "celsius": 21.0}, {"sensor": "b", "celsius": 22.5}])]),
    ]
    assert host.quit() == 0


def test_a_failing_arrow_batch_is_run_row_by_row_to_find_the_bad_rows():
    host = Host("runnel.arrow_examples:HotArrow")
    host.hello({"limit": "20"})
    answered = arrow_batch(host, [("a", 25.0), ("b", float("nan")), ("c", 10.0)], start=7)
    assert answered[0] == ("tables", [(0, None, [{"sensor": "a", "celsius": 25.0}])])
    assert answered[1][0] == "error"
    assert "failed on the record at partition 1 offset 8" in answered[1][1]
    assert "ValueError: a reading is NaN" in answered[1][1]
    assert answered[2] == ("tables", [(0, None, [])])
    assert host.quit() == 0


def test_the_test_kit_runs_an_arrow_streamlet_over_records_with_the_keys_of_its_key_column():
    result = testkit.run(WarmerArrow, [Reading("a", 1.0), Reading("b", 2.0)])
    assert result.outputs["warmer"] == [Reading("a", 2.0), Reading("b", 3.0)]
    assert result.keys["warmer"] == [b"a", b"b"]

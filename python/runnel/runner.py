"""Runs a streamlet's instance on batches of Avro records: what the worker process does for
the host, and what the test kit does in-process, so both go through the same code."""

from __future__ import annotations

import contextvars
import io
import pickle
import traceback
from typing import Any

import fastavro

from . import protocol
from .schema import Codec
from .definition import Definition

_NOW: contextvars.ContextVar[int] = contextvars.ContextVar("runnel_now", default=0)
_KEY: contextvars.ContextVar[bytes | None] = contextvars.ContextVar("runnel_key", default=None)


def now_millis() -> int:
    """The host's time when it handed over the records being processed, in milliseconds
    since the epoch (the test kit's controlled clock in tests)."""
    return _NOW.get()


def current_key() -> bytes | None:
    """The key of the record being processed (``None`` in the batch forms, and for records
    without a key)."""
    return _KEY.get()


class Outcome:
    """What became of one input record: the outputs it produced (outlet index, key, datum),
    or in the arrow form the tables (outlet index, key column, Arrow IPC stream), or the
    error that sends it to the dead letters."""

    __slots__ = ("outputs", "tables", "error")

    def __init__(self, outputs: list[tuple[int, bytes | None, bytes]] | None = None,
                 error: str | None = None,
                 tables: list[tuple[int, str | None, bytes]] | None = None):
        self.outputs = outputs if outputs is not None else []
        self.tables = tables
        self.error = error


#: The outcome of a record that produced nothing (shared: never modified).
NOTHING = Outcome()


class Runner:
    """An instance of a streamlet with its codecs, fed batches of encoded records."""

    def __init__(self, definition: Definition, parameters: dict[str, str]):
        self.definition = definition
        self.instance = definition.make(definition.parameter_values(parameters))
        self.emitted: list = self.instance._runnel_emitted
        self.inlets = [Codec(inlet.record_type) for inlet in definition.inlets]
        self.outlets = [Codec(outlet.record_type) for outlet in definition.outlets]
        self.outlet_names = [outlet.name for outlet in definition.outlets]
        self.inlet_names = [inlet.name for inlet in definition.inlets]
        self._arrow = definition.form == "arrow"

    def add_writer_schema(self, inlet: int, writer: int, schema: dict) -> None:
        """Learns a schema the inlet's producers wrote with."""
        self.inlets[inlet].add_writer_schema(writer, schema)

    def process(self, inlet: int, now: int, records: list[protocol.InputRecord]) -> list[Outcome]:
        """Handles a batch of records of ``inlet``: an outcome per record, in order."""
        _NOW.set(now)
        if self.definition.form == "record":
            return self._records(inlet, records)
        return self._batch(inlet, records)

    def _records(self, inlet: int, records: list[protocol.InputRecord]) -> list[Outcome]:
        """The record-at-a-time form: the streamlet's call per record, with what the loop
        uses bound to locals (this loop is most of Python's time beside Avro)."""
        decode, process = self.inlets[inlet].decode, self.instance.process
        emitted, encode_emitted, set_key = self.emitted, self._encode_emitted, _KEY.set
        own = protocol.OWN_SCHEMA
        outcomes = []
        for record in records:
            try:
                value = decode(record.datum, None if record.writer == own else record.writer)
            except Exception as error:  # noqa: BLE001 - any decoding failure is bad data
                outcomes.append(self._undecodable(inlet, record, error))
                continue
            set_key(record.key)
            try:
                process(inlet, value)
            except Exception:  # noqa: BLE001 - the streamlet's failure goes to the dead letters
                emitted.clear()
                outcomes.append(Outcome(error=self._failure(inlet, record)))
                continue
            outcomes.append(encode_emitted())
        return outcomes

    def process_arrow(self, inlet: int, now: int, records: protocol.ArrowRecords,
                      stream: Any) -> list[Outcome]:
        """Handles a batch the host decoded into an Arrow IPC stream (the arrow form's
        ``ARROW_BATCH``): an outcome per record, the tables emitted answering the last."""
        import pyarrow

        _NOW.set(now)
        _KEY.set(None)
        table = pyarrow.ipc.open_stream(pyarrow.py_buffer(stream)).read_all()
        if table.num_rows != len(records):
            raise protocol.ProtocolError(
                f"an ARROW_BATCH of {len(records)} records holds {table.num_rows} rows"
            )
        count = len(records)
        if not count:
            return []
        # The records answered before the last have no outputs of their own: one shared
        # empty outcome, which the worker writes in bulk.
        outcomes = [NOTHING] * count
        try:
            self.instance.process_batch(inlet, table)
            outcomes[-1] = self._tables_emitted()
        except Exception:  # noqa: BLE001
            # One row at a time, to find the ones that fail.
            self.emitted.clear()
            for index in range(count):
                try:
                    self.instance.process_batch(inlet, table.slice(index, 1))
                    outcomes[index] = self._tables_emitted()
                except Exception:  # noqa: BLE001
                    self.emitted.clear()
                    outcomes[index] = Outcome(error=self._failure(inlet, records[index]))
        return outcomes

    def _tables_emitted(self) -> Outcome:
        """The tables emitted, as Arrow IPC streams for the host to encode."""
        import pyarrow

        tables = []
        try:
            for outlet, value, key in self.emitted:
                if not _is_table(value):
                    return Outcome(error=(
                        f"an arrow-form streamlet emits pyarrow tables, and it emitted "
                        f"{type(value).__name__} on outlet '{self.outlet_names[outlet]}'"
                    ))
                if key is not None and key not in value.column_names:
                    return Outcome(error=(
                        f"the table emitted on outlet '{self.outlet_names[outlet]}' has no "
                        f"key column '{key}' (its columns: {', '.join(value.column_names)})"
                    ))
                sink = pyarrow.BufferOutputStream()
                with pyarrow.ipc.new_stream(sink, value.schema) as writer:
                    writer.write_table(value)
                tables.append((outlet, key, sink.getvalue().to_pybytes()))
        finally:
            self.emitted.clear()
        return Outcome(tables=tables)

    def _decode(self, inlet: int, record: protocol.InputRecord) -> Any:
        codec = self.inlets[inlet]
        writer = None if record.writer == protocol.OWN_SCHEMA else record.writer
        if self.definition.form == "arrow":
            schema = codec._parsed if writer is None else codec._writers[writer]
            reader = None if writer is None else codec._parsed
            return fastavro.schemaless_reader(io.BytesIO(record.datum), schema, reader)
        return codec.decode(record.datum, writer)

    def _undecodable(self, inlet: int, record: protocol.InputRecord, error: Exception) -> Outcome:
        return Outcome(error=(
            f"the record at partition {record.partition} offset {record.offset} of inlet "
            f"'{self.inlet_names[inlet]}' does not decode as "
            f"{self.definition.inlets[inlet].record_type.__name__}: {error}"
        ))

    def _batch(self, inlet: int, records: list[protocol.InputRecord]) -> list[Outcome]:
        outcomes: list[Outcome | None] = [None] * len(records)
        values, good = [], []
        for index, record in enumerate(records):
            try:
                values.append(self._decode(inlet, record))
                good.append(index)
            except Exception as error:  # noqa: BLE001
                outcomes[index] = self._undecodable(inlet, record, error)
        _KEY.set(None)
        if good:
            try:
                self.instance.process_batch(inlet, self._batch_input(values))
                outcome = self._encode_emitted()
                for index in good[:-1]:
                    outcomes[index] = NOTHING
                outcomes[good[-1]] = outcome
            except Exception:  # noqa: BLE001
                # One record at a time, to find the ones that fail.
                self.emitted.clear()
                for index, value in zip(good, values):
                    try:
                        self.instance.process_batch(inlet, self._batch_input([value]))
                        outcomes[index] = self._encode_emitted()
                    except Exception:  # noqa: BLE001
                        self.emitted.clear()
                        outcomes[index] = Outcome(error=self._failure(inlet, records[index]))
        return outcomes  # type: ignore[return-value]

    def _batch_input(self, values: list) -> Any:
        if self.definition.form == "arrow":
            import pyarrow

            return pyarrow.Table.from_pylist(values)
        return values

    def _encode_emitted(self) -> Outcome:
        outputs = []
        try:
            for outlet, value, key in self.emitted:
                if isinstance(key, str):
                    key = key.encode()
                codec = self.outlets[outlet]
                if self._arrow and _is_table(value):
                    # An arrow-form key names the column holding each row's key.
                    for row in value.to_pylist():
                        out = io.BytesIO()
                        fastavro.schemaless_writer(out, codec._parsed, row)
                        row_key = None if key is None else row[key.decode()]
                        if isinstance(row_key, str):
                            row_key = row_key.encode()
                        outputs.append((outlet, row_key, out.getvalue()))
                else:
                    outputs.append((outlet, key, codec.encode(value)))
        except Exception as error:  # noqa: BLE001
            return Outcome(error=f"an output for outlet '{self.outlet_names[outlet]}' does not encode: {error}")
        finally:
            self.emitted.clear()
        return Outcome(outputs)

    def _failure(self, inlet: int, record: protocol.InputRecord) -> str:
        return (
            f"streamlet '{self.definition.type_name}' failed on the record at partition "
            f"{record.partition} offset {record.offset} of inlet '{self.inlet_names[inlet]}':\n"
            + traceback.format_exc()
        )

    def snapshot(self) -> bytes:
        """The instance's state, pickled (empty when it keeps none)."""
        if not self.definition.stateful:
            return b""
        return pickle.dumps(self.instance.snapshot(), protocol=5)

    def restore(self, snapshot: bytes) -> None:
        """Gives the instance the state of an earlier :meth:`snapshot`."""
        if self.definition.stateful and snapshot:
            self.instance.restore(pickle.loads(snapshot))


def _is_table(value: Any) -> bool:
    return type(value).__name__ == "Table" and type(value).__module__.startswith("pyarrow")

//! Avro records straight into Arrow batches: [`BatchDecoder`] reads each record's fields
//! into column builders, with no value in between.

use std::sync::Arc;

use datafusion_common::arrow::array::{
    ArrayRef, BinaryBuilder, BooleanBuilder, Float32Builder, Float64Builder, Int32Builder,
    Int64Builder, StringBuilder,
};
use datafusion_common::arrow::record_batch::RecordBatch;

use crate::table::{ColumnType, Table};

/// One field of one record, read but not yet appended: a record is appended only once all
/// its fields read, so a bad record leaves the builders as they were.
#[derive(Clone, Copy, Debug)]
enum Cell<'a> {
    Null,
    Boolean(bool),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    Text(&'a str),
    Bytes(&'a [u8]),
    /// An enum's symbol, by index.
    Symbol(usize),
}

enum Builder {
    Boolean(BooleanBuilder),
    Int(Int32Builder),
    Long(Int64Builder),
    Float(Float32Builder),
    Double(Float64Builder),
    Text(StringBuilder),
    Bytes(BinaryBuilder),
    Enum(StringBuilder, Vec<String>),
}

impl Builder {
    fn of(column_type: &ColumnType) -> Builder {
        match column_type {
            ColumnType::Boolean => Builder::Boolean(BooleanBuilder::new()),
            ColumnType::Int => Builder::Int(Int32Builder::new()),
            ColumnType::Long => Builder::Long(Int64Builder::new()),
            ColumnType::Float => Builder::Float(Float32Builder::new()),
            ColumnType::Double => Builder::Double(Float64Builder::new()),
            ColumnType::String => Builder::Text(StringBuilder::new()),
            ColumnType::Enum(symbols) => Builder::Enum(StringBuilder::new(), symbols.clone()),
            ColumnType::Bytes => Builder::Bytes(BinaryBuilder::new()),
        }
    }

    fn append(&mut self, cell: Cell<'_>) {
        match (self, cell) {
            (Builder::Boolean(builder), Cell::Boolean(value)) => builder.append_value(value),
            (Builder::Int(builder), Cell::Int(value)) => builder.append_value(value),
            (Builder::Long(builder), Cell::Long(value)) => builder.append_value(value),
            (Builder::Float(builder), Cell::Float(value)) => builder.append_value(value),
            (Builder::Double(builder), Cell::Double(value)) => builder.append_value(value),
            (Builder::Text(builder), Cell::Text(value)) => builder.append_value(value),
            (Builder::Bytes(builder), Cell::Bytes(value)) => builder.append_value(value),
            (Builder::Enum(builder, symbols), Cell::Symbol(index)) => {
                builder.append_value(&symbols[index]);
            }
            (builder, _) => builder.append_null(),
        }
    }

    fn append_null(&mut self) {
        match self {
            Builder::Boolean(builder) => builder.append_null(),
            Builder::Int(builder) => builder.append_null(),
            Builder::Long(builder) => builder.append_null(),
            Builder::Float(builder) => builder.append_null(),
            Builder::Double(builder) => builder.append_null(),
            Builder::Text(builder) | Builder::Enum(builder, _) => builder.append_null(),
            Builder::Bytes(builder) => builder.append_null(),
        }
    }

    fn finish(&mut self) -> ArrayRef {
        match self {
            Builder::Boolean(builder) => Arc::new(builder.finish()),
            Builder::Int(builder) => Arc::new(builder.finish()),
            Builder::Long(builder) => Arc::new(builder.finish()),
            Builder::Float(builder) => Arc::new(builder.finish()),
            Builder::Double(builder) => Arc::new(builder.finish()),
            Builder::Text(builder) | Builder::Enum(builder, _) => Arc::new(builder.finish()),
            Builder::Bytes(builder) => Arc::new(builder.finish()),
        }
    }
}

/// Decodes Avro records of one [`Table`] into Arrow [`RecordBatch`]es.
///
/// ```
/// use runnel_sql::{BatchDecoder, Column, ColumnType, Table};
/// let table = Table::new("numbers", vec![Column::new("n", ColumnType::Long)]);
/// let mut decoder = BatchDecoder::new(&table);
/// decoder.append(&[0x54]).unwrap(); // 42, zigzag encoded
/// assert!(decoder.append(&[0x54, 0x00]).is_err()); // a byte left over
/// let batch = decoder.finish();
/// assert_eq!(batch.num_rows(), 1);
/// ```
pub struct BatchDecoder {
    table: Table,
    builders: Vec<Builder>,
    rows: usize,
    /// The cells of the record being read, kept empty between records so their room is
    /// allocated once (see [`recycle`]).
    cells: Vec<Cell<'static>>,
}

impl std::fmt::Debug for BatchDecoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchDecoder")
            .field("table", &self.table.name())
            .field("rows", &self.rows)
            .finish()
    }
}

impl BatchDecoder {
    /// A decoder of records of `table`'s schema.
    pub fn new(table: &Table) -> Self {
        BatchDecoder {
            table: table.clone(),
            builders: table
                .columns()
                .iter()
                .map(|column| Builder::of(&column.column_type))
                .collect(),
            rows: 0,
            cells: Vec::with_capacity(table.columns().len()),
        }
    }

    /// Appends one record.
    ///
    /// # Errors
    ///
    /// Bytes that are not one value of the table's schema, saying which field failed; the
    /// batch is then as it was.
    pub fn append(&mut self, record: &[u8]) -> Result<(), crate::Error> {
        let mut cells = recycle(std::mem::take(&mut self.cells));
        let mut reader = Reader { bytes: record };
        let mut failure = None;
        for column in self.table.columns() {
            match reader.cell(column.null_branch, &column.column_type) {
                Ok(cell) => cells.push(cell),
                Err(message) => {
                    failure = Some(format!("field '{}': {message}", column.name));
                    break;
                }
            }
        }
        if failure.is_none() && !reader.bytes.is_empty() {
            failure = Some(format!(
                "{} bytes left over after the record",
                reader.bytes.len()
            ));
        }
        if failure.is_none() {
            for (builder, cell) in self.builders.iter_mut().zip(cells.drain(..)) {
                builder.append(cell);
            }
            self.rows += 1;
        }
        self.cells = recycle(cells);
        match failure {
            None => Ok(()),
            Some(message) => Err(crate::Error::Decode {
                table: self.table.name().to_owned(),
                message,
            }),
        }
    }

    /// How many records are appended since the last [`finish`](BatchDecoder::finish).
    pub fn len(&self) -> usize {
        self.rows
    }

    /// Whether no record is appended since the last [`finish`](BatchDecoder::finish).
    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// The batch of the records appended so far; the decoder starts a new one.
    pub fn finish(&mut self) -> RecordBatch {
        let columns = self.builders.iter_mut().map(Builder::finish).collect();
        self.rows = 0;
        RecordBatch::try_new(self.table.arrow_schema(), columns)
            .expect("one column of each field's type, each as long as the others")
    }
}

/// An empty vector of cells of another lifetime, in the same allocation: the standard
/// library collects a mapped `into_iter` in place when the element layouts match, so the
/// decoder keeps one vector of cells for every record without borrowing any across them.
fn recycle<'from, 'to>(mut cells: Vec<Cell<'from>>) -> Vec<Cell<'to>> {
    cells.clear();
    cells.into_iter().map(|_| Cell::Null).collect()
}

/// Reads Avro's binary encoding from the front of a slice.
struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn cell(
        &mut self,
        null_branch: Option<u8>,
        column_type: &ColumnType,
    ) -> Result<Cell<'a>, String> {
        if let Some(null_branch) = null_branch {
            let branch = self.long()?;
            if branch == i64::from(null_branch) {
                return Ok(Cell::Null);
            }
            if !(0..=1).contains(&branch) {
                return Err(format!("union branch {branch} of a two-branch union"));
            }
        }
        Ok(match column_type {
            ColumnType::Boolean => match self.take(1)?[0] {
                0 => Cell::Boolean(false),
                1 => Cell::Boolean(true),
                other => return Err(format!("boolean byte {other}")),
            },
            ColumnType::Int => {
                Cell::Int(i32::try_from(self.long()?).map_err(|_| "int out of range".to_owned())?)
            }
            ColumnType::Long => Cell::Long(self.long()?),
            ColumnType::Float => Cell::Float(f32::from_le_bytes(
                self.take(4)?.try_into().expect("4 bytes"),
            )),
            ColumnType::Double => Cell::Double(f64::from_le_bytes(
                self.take(8)?.try_into().expect("8 bytes"),
            )),
            ColumnType::String => {
                let bytes = self.length_prefixed()?;
                Cell::Text(
                    std::str::from_utf8(bytes).map_err(|_| "string is not UTF-8".to_owned())?,
                )
            }
            ColumnType::Bytes => Cell::Bytes(self.length_prefixed()?),
            ColumnType::Enum(symbols) => {
                let index = self.long()?;
                match usize::try_from(index) {
                    Ok(index) if index < symbols.len() => Cell::Symbol(index),
                    _ => return Err(format!("enum index {index} of {} symbols", symbols.len())),
                }
            }
        })
    }

    fn take(&mut self, count: usize) -> Result<&'a [u8], String> {
        if self.bytes.len() < count {
            return Err("the record ends early".to_owned());
        }
        let (taken, rest) = self.bytes.split_at(count);
        self.bytes = rest;
        Ok(taken)
    }

    fn length_prefixed(&mut self) -> Result<&'a [u8], String> {
        let length = self.long()?;
        let length = usize::try_from(length).map_err(|_| format!("negative length {length}"))?;
        self.take(length)
    }

    /// A zigzag varint.
    fn long(&mut self) -> Result<i64, String> {
        let mut value: u64 = 0;
        for shift in (0..64).step_by(7) {
            let [byte, rest @ ..] = self.bytes else {
                return Err("the record ends early".to_owned());
            };
            self.bytes = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok((value >> 1) as i64 ^ -((value & 1) as i64));
            }
        }
        Err("a varint longer than 10 bytes".to_owned())
    }
}

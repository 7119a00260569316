//! Every construct SQL streamlets run, and every class of error, through the public API:
//! records in Avro (written by apache-avro), results read back by apache-avro.

use apache_avro::Schema;
use apache_avro::types::Value;
use runnel_sql::{Error, Query, Table};
use serde_json::json;

fn readings_schema() -> serde_json::Value {
    json!({"type": "record", "name": "Reading", "fields": [
        {"name": "sensor", "type": "string"},
        {"name": "celsius", "type": "double"},
        {"name": "count", "type": "long"},
        {"name": "unit", "type": {"type": "enum", "name": "Unit", "symbols": ["C", "F"]}},
        {"name": "note", "type": ["null", "string"], "default": null},
    ]})
}

fn reading(sensor: &str, celsius: f64, count: i64, note: Option<&str>) -> Value {
    Value::Record(vec![
        ("sensor".into(), Value::String(sensor.into())),
        ("celsius".into(), Value::Double(celsius)),
        ("count".into(), Value::Long(count)),
        ("unit".into(), Value::Enum(0, "C".into())),
        (
            "note".into(),
            match note {
                Some(note) => Value::Union(1, Box::new(Value::String(note.into()))),
                None => Value::Union(0, Box::new(Value::Null)),
            },
        ),
    ])
}

fn plan(sql: &str) -> Result<Query, Error> {
    let readings = Table::from_avro("readings", &readings_schema())?;
    Query::plan(sql, &[readings], "Result")
}

/// Rejected records by input index, with their errors.
type Rejected = Vec<(usize, String)>;

/// Runs `sql` over `records`: the results as apache-avro reads them, by input index, and
/// the rejected indices with their errors.
fn run(sql: &str, records: &[Value]) -> (Vec<(usize, Value)>, Rejected) {
    let query = plan(sql).unwrap_or_else(|error| panic!("{sql}: {error}"));
    let input = Schema::parse(&readings_schema()).unwrap();
    let encoded: Vec<Vec<u8>> = records
        .iter()
        .map(|record| apache_avro::to_avro_datum(&input, record.clone()).unwrap())
        .collect();
    let slices: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
    let processed = query.process("readings", &slices);
    let output = Schema::parse(query.output_schema()).unwrap();
    let results = processed
        .results
        .into_iter()
        .map(|(index, bytes)| {
            let mut remaining = bytes.as_slice();
            let value = apache_avro::from_avro_datum(&output, &mut remaining, None).unwrap();
            assert!(remaining.is_empty(), "{index}: bytes left over");
            (index, value)
        })
        .collect();
    let rejected = processed
        .rejected
        .into_iter()
        .map(|(index, error)| (index, error.to_string()))
        .collect();
    (results, rejected)
}

fn record(fields: &[(&str, Value)]) -> Value {
    Value::Record(
        fields
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect(),
    )
}

fn some(value: Value) -> Value {
    Value::Union(1, Box::new(value))
}

fn none() -> Value {
    Value::Union(0, Box::new(Value::Null))
}

#[test]
fn projection_renames_and_computes() {
    let (results, rejected) = run(
        "SELECT sensor AS id, celsius * 9 / 5 + 32 AS fahrenheit, count / 2 AS half FROM readings",
        &[reading("a", 100.0, 7, None), reading("b", -40.0, -3, None)],
    );
    assert!(rejected.is_empty());
    assert_eq!(
        results,
        [
            (
                0,
                record(&[
                    ("id", Value::String("a".into())),
                    ("fahrenheit", Value::Double(212.0)),
                    ("half", Value::Long(3))
                ])
            ),
            (
                1,
                record(&[
                    ("id", Value::String("b".into())),
                    ("fahrenheit", Value::Double(-40.0)),
                    ("half", Value::Long(-1))
                ])
            ),
        ]
    );
}

#[test]
fn select_star_keeps_every_field_and_reads_enums_as_text() {
    let (results, _) = run("SELECT * FROM readings", &[reading("a", 1.5, 2, Some("x"))]);
    assert_eq!(
        results,
        [(
            0,
            record(&[
                ("sensor", Value::String("a".into())),
                ("celsius", Value::Double(1.5)),
                ("count", Value::Long(2)),
                ("unit", Value::String("C".into())),
                ("note", some(Value::String("x".into()))),
            ])
        )]
    );
}

#[test]
fn where_keeps_rows_that_are_true_not_null() {
    let records = [
        reading("a", 31.0, 1, Some("hot")),
        reading("b", 29.0, 1, Some("hot")),
        reading("c", 35.0, 1, None),
        reading("d", 40.0, 5, Some("cold")),
    ];
    let (results, _) = run(
        "SELECT sensor FROM readings WHERE celsius > 30 AND (note = 'hot' OR count > 4)",
        &records,
    );
    let kept: Vec<usize> = results.iter().map(|(index, _)| *index).collect();
    assert_eq!(kept, [0, 3], "c's note is null: null = 'hot' is not true");
}

/// DataFusion says a function's result may be null unless the function knows better, so
/// `upper` and `concat` give unions with null; `coalesce` with a literal does not.
#[test]
fn predicates_in_between_like_is_null_and_regular_expressions() {
    let records = [
        reading("alpha", 10.0, 1, None),
        reading("beta", 20.0, 2, Some("x")),
        reading("gamma", 30.0, 3, None),
        reading("alpine", 40.0, 4, Some("y")),
    ];
    let kept = |sql: &str| -> Vec<usize> {
        run(sql, &records)
            .0
            .iter()
            .map(|(index, _)| *index)
            .collect()
    };
    assert_eq!(
        kept("SELECT sensor FROM readings WHERE sensor IN ('beta', 'gamma')"),
        [1, 2]
    );
    assert_eq!(
        kept("SELECT sensor FROM readings WHERE celsius BETWEEN 15 AND 35"),
        [1, 2]
    );
    assert_eq!(
        kept("SELECT sensor FROM readings WHERE sensor LIKE 'al%'"),
        [0, 3]
    );
    assert_eq!(
        kept("SELECT sensor FROM readings WHERE note IS NULL"),
        [0, 2]
    );
    assert_eq!(
        kept("SELECT sensor FROM readings WHERE NOT (count > 1)"),
        [0]
    );
    assert_eq!(
        kept("SELECT sensor FROM readings WHERE regexp_like(sensor, '^a.p')"),
        [0, 3]
    );
    let (results, _) = run(
        "SELECT nullif(count, 2) AS count, encode(sensor, 'hex') AS hex FROM readings",
        &records[..2],
    );
    assert_eq!(
        results[1].1,
        record(&[
            ("count", none()),
            ("hex", some(Value::String("62657461".into()))),
        ])
    );
}

#[test]
fn flinks_mod_is_the_remainder() {
    let (results, _) = run(
        "SELECT sensor FROM readings WHERE MOD(count, 3) = 0 AND mod(count, 2) = 1",
        &[
            reading("a", 0.0, 3, None),
            reading("b", 0.0, 6, None),
            reading("c", 0.0, 9, None),
        ],
    );
    let kept: Vec<usize> = results.iter().map(|(index, _)| *index).collect();
    assert_eq!(kept, [0, 2]);
}

#[test]
fn scalar_functions_case_and_casts() {
    let (results, rejected) = run(
        "SELECT upper(sensor) AS sensor, \
                concat(sensor, '-', CAST(count AS VARCHAR)) AS label, \
                round(celsius) AS rounded, \
                CAST(celsius AS BIGINT) AS whole, \
                CASE WHEN celsius >= 30 THEN 'hot' WHEN celsius < 0 THEN 'freezing' ELSE 'mild' END AS feel, \
                coalesce(note, 'none') AS note \
         FROM readings",
        &[
            reading("a", 30.6, 3, None),
            reading("b", -1.2, 4, Some("n")),
        ],
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    assert_eq!(
        results[0].1,
        record(&[
            ("sensor", some(Value::String("A".into()))),
            ("label", some(Value::String("a-3".into()))),
            ("rounded", Value::Double(31.0)),
            ("whole", Value::Long(30)),
            ("feel", Value::String("hot".into())),
            ("note", Value::String("none".into())),
        ])
    );
    assert_eq!(
        results[1].1,
        record(&[
            ("sensor", some(Value::String("B".into()))),
            ("label", some(Value::String("b-4".into()))),
            ("rounded", Value::Double(-1.0)),
            ("whole", Value::Long(-1)),
            ("feel", Value::String("freezing".into())),
            ("note", Value::String("n".into())),
        ])
    );
}

#[test]
fn a_result_that_may_be_null_is_a_union_with_null() {
    let query =
        plan("SELECT CASE WHEN count > 1 THEN sensor END AS busy, note FROM readings").unwrap();
    assert_eq!(
        query.output_schema()["fields"],
        json!([
            {"name": "busy", "type": ["null", "string"], "default": null},
            {"name": "note", "type": ["null", "string"], "default": null},
        ])
    );
    let (results, _) = run(
        "SELECT CASE WHEN count > 1 THEN sensor END AS busy FROM readings",
        &[reading("a", 0.0, 2, None), reading("b", 0.0, 1, None)],
    );
    assert_eq!(
        results[0].1,
        record(&[("busy", some(Value::String("a".into())))])
    );
    assert_eq!(results[1].1, record(&[("busy", none())]));
}

#[test]
fn a_record_the_query_fails_on_is_rejected_alone() {
    let (results, rejected) = run(
        "SELECT sensor, 100 / count AS share FROM readings",
        &[
            reading("a", 0.0, 4, None),
            reading("b", 0.0, 0, None),
            reading("c", 0.0, 5, None),
        ],
    );
    let kept: Vec<usize> = results.iter().map(|(index, _)| *index).collect();
    assert_eq!(kept, [0, 2]);
    assert_eq!(rejected.len(), 1);
    assert_eq!(rejected[0].0, 1);
    assert!(
        rejected[0].1.contains("Divide by zero"),
        "{}",
        rejected[0].1
    );
}

#[test]
fn a_record_that_does_not_decode_is_rejected_with_the_field() {
    let query = plan("SELECT sensor FROM readings").unwrap();
    let processed = query.process("readings", &[&[0x02, b'a', 0, 0]]);
    assert!(processed.results.is_empty());
    assert_eq!(
        processed.rejected[0].1.to_string(),
        "invalid avro for table 'readings': field 'celsius': the record ends early"
    );
}

fn error(sql: &str) -> (String, Option<String>) {
    let error = plan(sql).expect_err(sql);
    (error.to_string(), error.position().map(|p| p.to_string()))
}

#[test]
fn syntax_errors_say_where() {
    let (message, position) = error("SELECT sensor\n  FORM readings");
    assert_eq!(message, "expected: end of statement, found: readings");
    assert_eq!(position.as_deref(), Some("2:8"));
    // The end of the query, where it ends too early.
    let (message, position) = error("SELECT sensor FROM readings\nWHERE");
    assert_eq!(message, "expected: an expression, found: EOF");
    assert_eq!(position.as_deref(), Some("2:6"));
}

#[test]
fn an_unknown_column_names_the_closest() {
    let (message, position) = error("SELECT sensor,\n       celsus FROM readings");
    assert!(message.contains("celsus"), "{message}");
    assert!(
        message.contains("Did you mean 'readings.celsius'?"),
        "{message}"
    );
    assert_eq!(position.as_deref(), Some("2:8"));
}

#[test]
fn an_unknown_table_names_the_inputs() {
    let (message, _) = error("SELECT * FROM reading");
    assert_eq!(
        message,
        "table 'reading' is not an input of this query; its inputs are 'readings'"
    );
}

#[test]
fn a_type_error_names_the_column() {
    let (message, _) = error("SELECT sensor + 1 AS next FROM readings");
    assert!(
        message.contains("Utf8") && message.contains("+"),
        "{message}"
    );
    let (message, _) = error("SELECT sensor FROM readings WHERE sensor");
    assert!(message.contains("readings.sensor"), "{message}");
}

#[test]
fn an_output_column_needs_a_field_name() {
    let (message, _) = error("SELECT celsius * 2 FROM readings");
    assert_eq!(
        message,
        "output column 1 is 'readings.celsius * Int64(2)', which is not a field name: name it with AS, as in `readings.celsius * Int64(2) AS readings_celsius_int64_2`"
    );
}

#[test]
fn a_result_avro_has_no_plain_type_for_asks_for_a_cast() {
    let (message, _) = error("SELECT CAST(celsius AS DECIMAL(10, 2)) AS exact FROM readings");
    assert_eq!(
        message,
        "output column 'exact' is of type Decimal128(10, 2), which has no Avro type here: CAST it to BIGINT, DOUBLE or VARCHAR"
    );
}

#[test]
fn constructs_not_run_yet_are_named() {
    for (sql, named) in [
        (
            "SELECT a.sensor FROM readings a LEFT SEMI JOIN readings b ON a.sensor = b.sensor",
            "left semi joins are not supported",
        ),
        (
            "SELECT a.sensor FROM readings a, readings b WHERE a.celsius > b.celsius",
            "a join without an equality between its inputs",
        ),
        ("SELECT sensor FROM readings ORDER BY celsius", "ORDER BY"),
        ("SELECT sensor FROM readings LIMIT 3", "LIMIT"),
        ("SELECT DISTINCT sensor FROM readings", "DISTINCT"),
        (
            "SELECT sensor, sum(celsius) OVER (ORDER BY count) AS n FROM readings",
            "OVER",
        ),
        ("SELECT 1 AS one", "without FROM"),
        (
            "SELECT sensor FROM readings; SELECT sensor FROM readings",
            "2 statements",
        ),
    ] {
        let error = plan(sql).expect_err(sql);
        assert!(
            matches!(error, Error::Unsupported { .. } | Error::Plan { .. }),
            "{sql}: {error:?}"
        );
        assert!(error.to_string().contains(named), "{sql}: {error}");
    }
}

#[test]
fn a_group_window_is_planned_with_its_bounds_as_columns() {
    let query = plan(
        "SELECT sensor, COUNT(*) AS readings, AVG(celsius) AS mean,\n\
                TUMBLE_START(count, INTERVAL '1' MINUTE) AS starts,\n\
                TUMBLE_ROWTIME(count, INTERVAL '1' MINUTE) AS rowtime\n\
         FROM readings GROUP BY sensor, TUMBLE(count, INTERVAL '1' MINUTE)",
    )
    .unwrap();
    assert!(query.is_stateful());
    let fields = &query.output_schema()["fields"];
    assert_eq!(fields[1], json!({"name": "readings", "type": "long"}));
    assert_eq!(fields[2]["type"], json!(["null", "double"]));
    assert_eq!(fields[3], json!({"name": "starts", "type": "long"}));
    assert_eq!(fields[4], json!({"name": "rowtime", "type": "long"}));
    // Flink's windowing table functions name the bounds window_start and window_end.
    let query = plan(
        "SELECT window_start, window_end, COUNT(DISTINCT sensor) AS sensors FROM readings \
         GROUP BY HOP(count, INTERVAL '30 seconds', INTERVAL '2' MINUTE)",
    )
    .unwrap();
    assert_eq!(query.output_schema()["fields"][0]["name"], "window_start");
    // Expressions over aggregates.
    let query = plan(
        "SELECT SUM(count) / COUNT(*) AS mean FROM readings \
         GROUP BY SESSION(count, INTERVAL '5' SECOND) HAVING MAX(celsius) > 0",
    )
    .unwrap();
    assert_eq!(
        query.output_schema()["fields"][0]["type"],
        json!(["null", "long"])
    );
}

#[test]
fn group_window_mistakes_say_where() {
    let (message, position) = error(
        "SELECT sensor, TUMBLE_END(count, INTERVAL '2' MINUTE) AS ends FROM readings\n\
         GROUP BY sensor, TUMBLE(count, INTERVAL '1' MINUTE)",
    );
    assert_eq!(
        message,
        "TUMBLE_END must name the window grouped by: TUMBLE(count, INTERVAL '1' MINUTE)"
    );
    assert_eq!(position.as_deref(), Some("1:16"));

    let (message, position) =
        error("SELECT SESSION_START(count, INTERVAL '1' MINUTE) AS s FROM readings");
    assert_eq!(
        message,
        "SESSION_START reads the window of a GROUP BY SESSION(...), which this SELECT does not have"
    );
    assert_eq!(position.as_deref(), Some("1:8"));

    let (message, position) =
        error("SELECT sensor FROM readings\nGROUP BY sensor, TUMBLE(sensor, INTERVAL '1' MINUTE)");
    assert_eq!(
        message,
        "the event-time column 'sensor' is Utf8: it must hold milliseconds since the epoch, as BIGINT"
    );
    assert_eq!(position.as_deref(), Some("2:18"));

    let (message, _) =
        error("SELECT sensor FROM readings GROUP BY sensor, TUMBLE(time, INTERVAL '1' MINUTE)");
    assert!(
        message.starts_with("the event-time column 'time' is not a column of the input (its columns: sensor, celsius,"),
        "{message}"
    );

    let (message, position) =
        error("SELECT sensor FROM readings GROUP BY sensor, HOP(count, INTERVAL '1' MINUTE)");
    assert_eq!(
        message,
        "HOP takes 3 arguments: HOP(<event-time column>, INTERVAL '<slide>' SECOND, INTERVAL '<size>' SECOND)"
    );
    assert_eq!(position.as_deref(), Some("1:46"));

    let (message, position) =
        error("SELECT sensor FROM readings GROUP BY sensor, TUMBLE(count, 60)");
    assert_eq!(
        message,
        "the size of TUMBLE: expected an interval, as INTERVAL '10' SECOND or INTERVAL '1.5 minutes', found 60"
    );
    assert_eq!(position.as_deref(), Some("1:60"));

    let (message, _) = error(
        "SELECT sensor FROM readings GROUP BY sensor, TUMBLE(count, INTERVAL '0.5' MILLISECOND)",
    );
    assert_eq!(
        message,
        "the size of TUMBLE: INTERVAL '0.5' MILLISECOND is not a whole, positive number of milliseconds"
    );
}

#[test]
fn aggregates_windows_do_not_run_are_named() {
    for (sql, named) in [
        (
            "SELECT median(celsius) AS middle FROM readings GROUP BY TUMBLE(count, INTERVAL '1' SECOND)",
            "the aggregate function median: it keeps",
        ),
        (
            "SELECT SUM(DISTINCT count) AS n FROM readings GROUP BY TUMBLE(count, INTERVAL '1' SECOND)",
            "sum(DISTINCT)",
        ),
        (
            "SELECT COUNT(*) FILTER (WHERE celsius > 1) AS n FROM readings GROUP BY TUMBLE(count, INTERVAL '1' SECOND)",
            "FILTER on count",
        ),
        (
            "SELECT sensor FROM readings WHERE window_start > 0 GROUP BY sensor, TUMBLE(count, INTERVAL '1' SECOND)",
            "WHERE reads window_start",
        ),
        (
            "SELECT COUNT(*) AS n FROM readings GROUP BY TUMBLE(count, INTERVAL '1' SECOND), SESSION(count, INTERVAL '1' SECOND)",
            "a second group window (SESSION)",
        ),
    ] {
        let error = plan(sql).expect_err(sql);
        assert!(error.to_string().contains(named), "{sql}: {error}");
    }
}

#[test]
fn groupings_that_do_not_run_are_named() {
    let counts = "(SELECT sensor, COUNT(*) AS n, TUMBLE_START(count, INTERVAL '1' SECOND) AS starts \
                  FROM readings GROUP BY sensor, TUMBLE(count, INTERVAL '1' SECOND)) c";
    for (sql, named) in [
        // A group window over a window's results.
        (
            format!(
                "SELECT SUM(n) AS total FROM {counts} GROUP BY TUMBLE(starts, INTERVAL '1' MINUTE)"
            ),
            "a group window (TUMBLE) over a subquery or a join",
        ),
        // A group window over a join's results.
        (
            "SELECT COUNT(*) AS n FROM readings a JOIN readings b ON a.sensor = b.sensor \
             GROUP BY TUMBLE(a.count, INTERVAL '1' SECOND)"
                .to_owned(),
            "a group window (TUMBLE) over a subquery or a join",
        ),
    ] {
        let error = plan(&sql).expect_err(&sql);
        assert!(error.to_string().contains(named), "{sql}: {error}");
    }
    // Without a window, aggregates update; grouping a window's results by its start
    // alone is one of those. A join of rows that update updates too.
    for sql in [
        "SELECT sensor, COUNT(*) AS n FROM readings GROUP BY sensor".to_owned(),
        format!("SELECT MAX(n) AS most FROM {counts} GROUP BY starts"),
        "SELECT a.sensor, a.n, b.celsius FROM \
           (SELECT sensor, COUNT(*) AS n FROM readings GROUP BY sensor) a \
         JOIN readings b ON a.sensor = b.sensor"
            .to_owned(),
    ] {
        assert!(plan(&sql).unwrap().is_updating(), "{sql}");
    }
}

#[test]
fn emit_clauses_that_do_not_run_are_named() {
    let (message, position) =
        error("SELECT sensor FROM readings\nEMIT WITHOUT DELAY BEFORE WATERMARK");
    assert_eq!(
        message,
        "EMIT says when group windows send results, and the query groups by none (TUMBLE, HOP or SESSION)"
    );
    assert_eq!(position.as_deref(), Some("2:1"));
    let counts = "SELECT COUNT(*) AS n, TUMBLE_END(count, INTERVAL '1' SECOND) AS ends \
                  FROM readings GROUP BY sensor, TUMBLE(count, INTERVAL '1' SECOND)";
    let (message, _) = error(&format!(
        "SELECT MAX(n) AS most, ends FROM ({counts}) c GROUP BY ends EMIT WITHOUT DELAY BEFORE WATERMARK"
    ));
    assert!(
        message.starts_with("grouping the results of windows with early or late results (EMIT"),
        "{message}"
    );
    // An aggregate without a window over early results takes back what they replace.
    let query = plan(&format!(
        "SELECT SUM(n) AS total FROM ({counts}) c EMIT WITH DELAY '1' SECOND BEFORE WATERMARK"
    ))
    .unwrap();
    assert!(query.is_updating());
}

#[test]
fn window_table_functions_that_do_not_run_are_named() {
    for (sql, named) in [
        (
            "SELECT * FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(count), INTERVAL '1' SECOND))",
            "a window table function without GROUP BY window_start, window_end",
        ),
        (
            "SELECT COUNT(*) AS n FROM TABLE(SESSION(TABLE readings, DESCRIPTOR(count), INTERVAL '1' SECOND)) \
             GROUP BY window_start, window_end",
            "the window table function SESSION",
        ),
        (
            "SELECT COUNT(*) AS n FROM TABLE(TUMBLE(TABLE readings, count, INTERVAL '1' SECOND)) \
             GROUP BY window_start, window_end",
            "the time column of TUMBLE is DESCRIPTOR(<event-time column>), not count",
        ),
        (
            "SELECT COUNT(*) AS n FROM TABLE(TUMBLE(TABLE readings, DESCRIPTOR(count))) \
             GROUP BY window_start, window_end",
            "TUMBLE takes TABLE(TUMBLE(TABLE <table>, DESCRIPTOR(<event-time column>), INTERVAL '<size>' SECOND))",
        ),
    ] {
        let error = plan(sql).expect_err(sql);
        assert!(error.to_string().contains(named), "{sql}: {error}");
        assert!(error.position().is_some(), "{sql}: {error}");
    }
}

#[test]
fn json_functions_read_json_text_as_flink_s_do() {
    let (results, rejected) = run(
        "SELECT JSON_VALUE(note, '$.user.name') AS name, \
                JSON_VALUE(note, '$.tags[1]') AS second_tag, \
                JSON_QUERY(note, '$.tags') AS tags, \
                JSON_EXISTS(note, 'lax $.user.age') AS has_age \
         FROM readings WHERE JSON_VALUE(note, '$.user.age') IS NULL OR \
                             CAST(JSON_VALUE(note, '$.user.age') AS BIGINT) > 20",
        &[
            reading(
                "a",
                1.0,
                1,
                Some(r#"{"user": {"name": "ada", "age": 36}, "tags": ["x", 7]}"#),
            ),
            reading("b", 2.0, 2, Some(r#"{"user": {"name": "bo", "age": 9}}"#)),
            reading("c", 3.0, 3, Some("not json")),
            reading("d", 4.0, 4, None),
        ],
    );
    assert!(rejected.is_empty(), "{rejected:?}");
    let text = |text: &str| some(Value::String(text.into()));
    let null = Value::Union(0, Box::new(Value::Null));
    assert_eq!(results.len(), 3, "b is 9: {results:?}");
    assert_eq!(
        results[0],
        (
            0,
            record(&[
                ("name", text("ada")),
                ("second_tag", text("7")),
                ("tags", text(r#"["x",7]"#)),
                ("has_age", some(Value::Boolean(true))),
            ])
        )
    );
    // Not JSON: nulls, and false for JSON_EXISTS; a null document: nulls throughout.
    assert_eq!(
        results[1],
        (
            2,
            record(&[
                ("name", null.clone()),
                ("second_tag", null.clone()),
                ("tags", null.clone()),
                ("has_age", some(Value::Boolean(false))),
            ])
        )
    );
    assert_eq!(results[2].0, 3);

    // A path that is not one fails the row, saying which.
    let (_, rejected) = run(
        "SELECT JSON_VALUE(note, 'user.name') AS name FROM readings",
        &[reading("a", 1.0, 1, Some("{}"))],
    );
    assert!(
        rejected[0]
            .1
            .contains("the JSON path 'user.name' does not start with $"),
        "{rejected:?}"
    );
}

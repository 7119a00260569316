//! Streamlets declared in the blueprint rather than registered in code: SQL and Python
//! streamlets.
//!
//! A SQL streamlet is planned against the schemas of the topics it reads (their producers'
//! outlet schemas, a SQL producer's inferred output included, so SQL streamlets chain), and
//! registered as the type `sql:<instance>` beside the app's own types. A Python streamlet
//! is described by its own process (`python -m runnel describe`) and registered as
//! `python:<instance>`. What planning or describing finds wrong goes to verification as
//! [`QueryProblem`]s, reported at their place in the blueprint.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use runnel_blueprint::descriptor::{AppDescriptor, Format};
use runnel_blueprint::{Blueprint, PythonSource, QueryProblem, StreamletInstance};
use runnel_python::{PythonCommand, PythonStreamlet};
use runnel_runtime::Registry;

/// The app's types with the blueprint's SQL streamlets added, and the problems found
/// planning them.
#[derive(Debug)]
pub(crate) struct Declared {
    pub(crate) registry: Registry,
    pub(crate) problems: Vec<QueryProblem>,
}

/// The functions queries may call, with the `sql` feature.
#[cfg(feature = "sql")]
pub(crate) type Functions = runnel_sql::Functions;
/// Without the `sql` feature there are none, and no value of this type.
#[cfg(not(feature = "sql"))]
pub(crate) type Functions = std::convert::Infallible;

/// How the app plans queries: with its SQL functions, or `None` when it cannot (built
/// without the `sql` feature).
pub(crate) type Planner = Option<Functions>;

/// The planner of an app: DataFusion's functions where it is built with SQL.
pub(crate) fn default_planner() -> Planner {
    #[cfg(feature = "sql")]
    return Some(runnel_sql::Functions::standard());
    #[cfg(not(feature = "sql"))]
    None
}

/// Plans the SQL streamlets of the blueprint `text` (read from `path`).
pub(crate) fn declare(
    app: &str,
    registry: &Registry,
    planner: &Planner,
    path: &Path,
    text: &str,
) -> Declared {
    let mut declared = Declared {
        registry: registry.clone(),
        problems: Vec::new(),
    };
    // A blueprint that does not parse gets its problems from verification first.
    let files = runnel_blueprint::BlueprintFiles::beside(path, text);
    let Some(blueprint) = runnel_blueprint::parse_with_files(path, text, &files).blueprint else {
        return declared;
    };
    // Python streamlets first: a SQL streamlet may read what one writes.
    let directory = path.parent().unwrap_or(Path::new("."));
    for instance in &blueprint.streamlets {
        if let Some(python) = &instance.python {
            match describe_python(directory, &instance.name, python) {
                Ok(register) => declared.registry = register(declared.registry.clone()),
                Err(message) => declared.problems.push(QueryProblem {
                    instance: instance.name.clone(),
                    message,
                    position: None,
                }),
            }
        }
    }
    let mut pending: Vec<&StreamletInstance> = blueprint
        .streamlets
        .iter()
        .filter(|streamlet| streamlet.sql.is_some())
        .collect();
    if pending.is_empty() {
        return declared;
    }
    let descriptor = declared.registry.descriptor(app);
    let mut outputs: HashMap<&str, serde_json::Value> = HashMap::new();
    loop {
        let mut waiting = Vec::new();
        let before = pending.len();
        for instance in pending {
            let problem = |message: String| QueryProblem {
                instance: instance.name.clone(),
                message,
                position: None,
            };
            match inputs(
                &blueprint,
                &descriptor,
                &outputs,
                &declared.problems,
                instance,
            ) {
                Inputs::Waiting => waiting.push(instance),
                Inputs::Unresolved => {}
                Inputs::Problem(message) => declared.problems.push(problem(message)),
                Inputs::Ready(tables) => match plan(planner, instance, &tables) {
                    Ok((output, register)) => {
                        outputs.insert(&instance.name, output);
                        declared.registry = register(declared.registry.clone());
                    }
                    Err(found) => declared.problems.push(found),
                },
            }
        }
        pending = waiting;
        if pending.is_empty() || pending.len() == before {
            break;
        }
    }
    for instance in pending {
        declared.problems.push(QueryProblem {
            instance: instance.name.clone(),
            message: "its input is the output of a SQL streamlet that reads this one's output, in a cycle; SQL streamlets plan in the order data flows".to_owned(),
            position: None,
        });
    }
    declared
}

/// What a SQL streamlet reads, as far as known.
enum Inputs {
    /// Each table (inlet) with its topic's Avro schema.
    Ready(Vec<(String, serde_json::Value)>),
    /// A table's topic is written by a SQL streamlet not planned yet.
    Waiting,
    /// A producer's type or port does not resolve: verification reports that.
    Unresolved,
    /// Something the user must fix.
    Problem(String),
}

fn inputs(
    blueprint: &Blueprint,
    descriptor: &AppDescriptor,
    outputs: &HashMap<&str, serde_json::Value>,
    problems: &[QueryProblem],
    instance: &StreamletInstance,
) -> Inputs {
    let mut tables = Vec::new();
    for topic in &blueprint.topics {
        for consumer in topic
            .consumers
            .iter()
            .filter(|consumer| consumer.streamlet == instance.name)
        {
            let table = &consumer.port;
            if let Some(schema) = &topic.schema {
                tables.push((table.clone(), schema.clone()));
                continue;
            }
            let Some(producer) = topic.producers.first() else {
                return Inputs::Problem(format!(
                    "table '{table}' reads topic '{}', which has no producer in the blueprint to take its schema from; declare the schema its writers use with the topic's 'schema'",
                    topic.id
                ));
            };
            let Some(writer) = blueprint.streamlet(&producer.streamlet) else {
                return Inputs::Unresolved;
            };
            let schema = if writer.sql.is_some() {
                match outputs.get(writer.name.as_str()) {
                    Some(schema) => schema.clone(),
                    None if problems.iter().any(|p| p.instance == writer.name) => {
                        return Inputs::Problem(format!(
                            "table '{table}' is the output of SQL streamlet '{}', whose query has problems",
                            writer.name
                        ));
                    }
                    None => return Inputs::Waiting,
                }
            } else {
                let Some(outlet) = descriptor
                    .streamlet_type(&writer.type_name)
                    .and_then(|streamlet| streamlet.outlet(&producer.port))
                else {
                    return Inputs::Unresolved;
                };
                if outlet.schema.format != Format::Avro {
                    return Inputs::Problem(format!(
                        "table '{table}' reads topic '{}', whose producer '{producer}' writes JSON; SQL streamlets read Avro",
                        topic.id
                    ));
                }
                outlet.schema.definition.clone()
            };
            tables.push((table.clone(), schema));
        }
    }
    if tables.is_empty() {
        return Inputs::Problem(format!(
            "it reads no topic: list '{0}.<table>' among the consumers of each topic it reads, the table being the name in FROM",
            instance.name
        ));
    }
    Inputs::Ready(tables)
}

/// Adds a planned SQL streamlet's type to a registry.
type Registration = Box<dyn FnOnce(Registry) -> Registry>;

/// The command that runs the Python streamlet `python` declares: its interpreter (a path
/// relative to the blueprint's `directory`, or a command on the `PATH`; `RUNNEL_PYTHON`
/// when set, as in images), with the blueprint's directory on its module path.
pub(crate) fn python_command(directory: &Path, python: &PythonSource) -> PythonCommand {
    let over = std::env::var_os(crate::python_image::INTERPRETER_VARIABLE)
        .filter(|value| !value.is_empty());
    python_command_with(directory, python, over.as_deref().map(Path::new))
}

/// [`python_command`] with the interpreter that overrides the blueprint's, if any.
fn python_command_with(
    directory: &Path,
    python: &PythonSource,
    over: Option<&Path>,
) -> PythonCommand {
    let interpreter = python.interpreter.as_deref().unwrap_or("python3");
    let interpreter = if let Some(over) = over {
        over.to_owned()
    } else if interpreter.contains(std::path::MAIN_SEPARATOR) {
        directory.join(interpreter)
    } else {
        PathBuf::from(interpreter)
    };
    let directory = if directory.as_os_str().is_empty() {
        Path::new(".")
    } else {
        directory
    };
    PythonCommand::new(&python.reference)
        .interpreter(interpreter)
        .module_path(directory)
}

/// Describes the Python streamlet `instance` by running it, and returns its registration
/// as `python:<instance>`; or what went wrong, in Python's words.
fn describe_python(
    directory: &Path,
    instance: &str,
    python: &PythonSource,
) -> Result<Registration, String> {
    let command = python_command(directory, python);
    let descriptor =
        runnel_python::describe_blocking(&command).map_err(|error| error.to_string())?;
    let type_name = runnel_blueprint::python_type_name(instance);
    let delivery = python.delivery;
    Ok(Box::new(move |registry: Registry| {
        registry.register(&type_name, move || {
            PythonStreamlet::new(command.clone(), descriptor.clone()).delivery(delivery)
        })
    }))
}

/// Plans the query of `instance` over `tables`: its output schema and its registration.
/// Without a planner, every SQL streamlet is a problem that says how to get one.
fn plan(
    planner: &Planner,
    instance: &StreamletInstance,
    tables: &[(String, serde_json::Value)],
) -> Result<(serde_json::Value, Registration), QueryProblem> {
    #[cfg(not(feature = "sql"))]
    let _ = tables;
    match planner {
        #[cfg(feature = "sql")]
        Some(functions) => plan_sql(functions, instance, tables),
        #[cfg(not(feature = "sql"))]
        Some(never) => match *never {},
        None => Err(QueryProblem {
            instance: instance.name.clone(),
            message:
                "this app is built without SQL: enable the `sql` feature of its `runnel` dependency"
                    .to_owned(),
            position: None,
        }),
    }
}

/// Plans the query of `instance` over `tables` with DataFusion.
#[cfg(feature = "sql")]
fn plan_sql(
    functions: &runnel_sql::Functions,
    instance: &StreamletInstance,
    tables: &[(String, serde_json::Value)],
) -> Result<(serde_json::Value, Registration), QueryProblem> {
    use std::sync::Arc;
    let problem = |error: runnel_sql::Error| QueryProblem {
        instance: instance.name.clone(),
        message: error.to_string(),
        position: error.position().map(|at| (at.line, at.column)),
    };
    let sql = instance
        .sql
        .as_ref()
        .expect("only SQL streamlets are planned");
    let tables = tables
        .iter()
        .map(|(name, schema)| runnel_sql::Table::from_avro(name, schema))
        .collect::<Result<Vec<_>, _>>()
        .map_err(problem)?;
    let record_name = sql
        .record_name
        .clone()
        .unwrap_or_else(|| runnel_sql::record_name(&instance.name));
    let query = runnel_sql::Query::plan_with_lateness(
        &sql.query,
        &tables,
        &record_name,
        functions,
        sql.allowed_lateness.unwrap_or_default(),
    )
    .map_err(problem)?;
    let output = query.output_schema().clone();
    let query = Arc::new(query);
    let type_name = runnel_blueprint::sql_type_name(&instance.name);
    let delivery = sql.delivery;
    let watermarks = sql_watermarks(sql);
    let register: Registration = Box::new(move |registry: Registry| {
        registry.register(&type_name, move || {
            runnel_sql::SqlStreamlet::new(query.clone())
                .delivery(delivery)
                .watermarks(watermarks)
        })
    });
    Ok((output, register))
}

/// The watermarks a SQL streamlet's declaration asks for: its `out-of-orderness`,
/// `idle-after` and `max-drift`, each the SQL streamlets' default (5 seconds, a minute, 10
/// seconds) when not set.
#[cfg(feature = "sql")]
fn sql_watermarks(sql: &runnel_blueprint::SqlQuery) -> runnel_streamlet::watermark::Watermarks {
    use runnel_streamlet::watermark::Watermarks;
    let watermarks = sql
        .out_of_orderness
        .map_or_else(Watermarks::default, Watermarks::bounded);
    let watermarks = match sql.idle_after {
        Some(timeout) => watermarks.idle_after(timeout),
        None => watermarks,
    };
    match sql.max_drift {
        Some(drift) => watermarks.max_drift(drift),
        None => watermarks,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLUEPRINT: &str = "name = \"demo\"\n[streamlets]\nprinter = \"printer\"\n\
        [streamlets.hot]\nsql = \"SELECT * FROM readings\"\n\
        [topics.readings]\nconsumers = [\"hot.readings\"]\n";

    #[test]
    fn the_interpreter_is_the_blueprints_unless_overridden() {
        let mut python = PythonSource {
            reference: "scoring:Score".into(),
            interpreter: None,
            delivery: Default::default(),
        };
        let interpreter = |python: &PythonSource, over: Option<&str>| {
            python_command_with(Path::new("app"), python, over.map(Path::new))
                .interpreter_path()
                .to_owned()
        };
        assert_eq!(interpreter(&python, None), Path::new("python3"));
        python.interpreter = Some(".venv/bin/python".into());
        assert_eq!(
            interpreter(&python, None),
            Path::new("app/.venv/bin/python")
        );
        assert_eq!(
            interpreter(&python, Some("/usr/local/bin/python3")),
            Path::new("/usr/local/bin/python3")
        );
    }

    #[test]
    fn an_app_without_sql_says_how_to_get_it() {
        let declared = declare(
            "demo",
            &Registry::new(),
            &None,
            Path::new("b.toml"),
            BLUEPRINT,
        );
        assert_eq!(
            declared.problems,
            [QueryProblem {
                instance: "hot".into(),
                message: "table 'readings' reads topic 'readings', which has no producer in the blueprint to take its schema from; declare the schema its writers use with the topic's 'schema'".into(),
                position: None,
            }]
        );
        let with_producer = BLUEPRINT.replace(
            "[topics.readings]\n",
            "[topics.readings]\nproducers = [\"printer.out\"]\n",
        );
        let registry = Registry::new().register("printer", || {
            use runnel_streamlet::prelude::*;
            Processor::new(Inlet::<String>::new("in"), Outlet::new("out"), Some)
        });
        let declared = declare(
            "demo",
            &registry,
            &None,
            Path::new("b.toml"),
            &with_producer,
        );
        assert_eq!(
            declared.problems[0].message,
            "this app is built without SQL: enable the `sql` feature of its `runnel` dependency"
        );
        assert!(
            declared.registry.factory("sql:hot").is_none(),
            "nothing is registered for it"
        );
    }

    #[cfg(feature = "sql")]
    #[test]
    fn a_sql_streamlet_s_watermarks_are_its_declaration_s_or_the_defaults() {
        use runnel_streamlet::watermark::Watermarks;
        use std::time::Duration;

        let declared = |text: &str| {
            let blueprint = runnel_blueprint::parse(Path::new("b.toml"), text)
                .blueprint
                .expect("it parses");
            let sql = blueprint.streamlets[0]
                .sql
                .clone()
                .expect("a SQL streamlet");
            sql_watermarks(&sql)
        };
        let query = "name = \"demo\"\n[streamlets.hot]\nsql = \"SELECT * FROM t\"\n";
        assert_eq!(declared(query), Watermarks::default());
        assert_eq!(
            declared(&format!(
                "{query}out-of-orderness = \"1s\"\nidle-after = \"10s\"\n"
            )),
            Watermarks::bounded(Duration::from_secs(1)).idle_after(Duration::from_secs(10))
        );
        assert_eq!(
            declared(&format!("{query}idle-after = \"2 minutes\"\n")),
            Watermarks::default().idle_after(Duration::from_secs(120))
        );
        assert_eq!(
            declared(&format!("{query}max-drift = \"1 minute\"\n")),
            Watermarks::default().max_drift(Duration::from_secs(60))
        );
    }
}

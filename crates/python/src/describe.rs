//! Learning a Python streamlet's ports, parameters and state from the streamlet itself
//! (`python -m runnel describe`), so the verifier checks blueprints against them.

use runnel_blueprint::descriptor::{SchemaDescriptor, StreamletDescriptor};
use runnel_streamlet::avro_schema_descriptor;

use crate::command::PythonCommand;
use crate::error::PythonError;

/// The descriptor entry of the streamlet `command` runs, as `python -m runnel describe`
/// prints it (its type is the streamlet reference).
///
/// # Errors
///
/// When the interpreter cannot run, the module does not import, or the reference is not a
/// streamlet: the error says which, with what Python said.
pub async fn describe(command: &PythonCommand) -> Result<StreamletDescriptor, PythonError> {
    let output = command
        .command("runnel", &["describe", command.reference()])
        .map_err(|error| failed(command, error.to_string()))?
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|source| spawn_failed(command, source))?;
    descriptor(command, &output)
}

/// As [`describe`], waiting for the process on this thread: for callers without a runtime,
/// such as an app declaring a blueprint's Python streamlets before it runs them.
///
/// # Errors
///
/// As [`describe`].
pub fn describe_blocking(command: &PythonCommand) -> Result<StreamletDescriptor, PythonError> {
    let output = command
        .std_command("runnel", &["describe", command.reference()])
        .map_err(|error| failed(command, error.to_string()))?
        .output()
        .map_err(|source| spawn_failed(command, source))?;
    descriptor(command, &output)
}

fn failed(command: &PythonCommand, reason: String) -> PythonError {
    PythonError::Describe {
        streamlet: command.reference().to_owned(),
        reason,
    }
}

fn spawn_failed(command: &PythonCommand, source: std::io::Error) -> PythonError {
    PythonError::Spawn {
        streamlet: command.reference().to_owned(),
        interpreter: command.interpreter_path().display().to_string(),
        source,
    }
}

/// The descriptor entry `python -m runnel describe` printed, or what it said went wrong.
fn descriptor(
    command: &PythonCommand,
    output: &std::process::Output,
) -> Result<StreamletDescriptor, PythonError> {
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        // `describe` names the streamlet itself; the error names it once.
        let prefix = format!("error: streamlet '{}': ", command.reference());
        let said = stderr.trim();
        let said = said.strip_prefix(&prefix).unwrap_or(said);
        return Err(failed(command, format!("{said} ({})", output.status)));
    }
    #[derive(serde::Deserialize)]
    struct Described {
        streamlets: Vec<StreamletDescriptor>,
    }
    let described: Described = serde_json::from_slice(&output.stdout).map_err(|error| {
        failed(
            command,
            format!("it printed something else than a descriptor: {error}"),
        )
    })?;
    let mut descriptor = described
        .streamlets
        .into_iter()
        .next()
        .ok_or_else(|| failed(command, "it described no streamlet".to_owned()))?;
    // Named and fingerprinted as the host names a schema, so the topics keep it as any
    // other writer's.
    let fingerprinted = |port: &str, schema: &SchemaDescriptor| {
        avro_schema_descriptor(&schema.definition).map_err(|error| {
            failed(
                command,
                format!("port '{port}' has a schema Avro refuses: {error}"),
            )
        })
    };
    for inlet in &mut descriptor.inlets {
        inlet.schema = fingerprinted(&inlet.name, &inlet.schema)?;
    }
    for outlet in &mut descriptor.outlets {
        outlet.schema = fingerprinted(&outlet.name, &outlet.schema)?;
    }
    Ok(descriptor)
}

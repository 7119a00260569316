//! Learning a Python streamlet's ports, parameters and state from the streamlet itself
//! (`python -m runnel describe`), so the verifier checks blueprints against them.

use runnel_blueprint::descriptor::StreamletDescriptor;

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
    let failed = |reason: String| PythonError::Describe {
        streamlet: command.reference().to_owned(),
        reason,
    };
    let output = command
        .command("runnel", &["describe", command.reference()])
        .map_err(|error| failed(error.to_string()))?
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|source| PythonError::Spawn {
            streamlet: command.reference().to_owned(),
            interpreter: command.interpreter_path().display().to_string(),
            source,
        })?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(failed(format!("{} ({})", stderr.trim(), output.status)));
    }
    #[derive(serde::Deserialize)]
    struct Described {
        streamlets: Vec<StreamletDescriptor>,
    }
    let described: Described = serde_json::from_slice(&output.stdout).map_err(|error| {
        failed(format!(
            "it printed something else than a descriptor: {error}"
        ))
    })?;
    described
        .streamlets
        .into_iter()
        .next()
        .ok_or_else(|| failed("it described no streamlet".to_owned()))
}

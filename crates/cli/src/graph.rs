//! `runnel graph`: draw a blueprint as text, dot or mermaid.

use std::io::Write;

use runnel_blueprint::{Verification, graph, parse, render_human, verify};

use crate::args::{GraphArgs, GraphFormat};
use crate::{Outcome, read, read_descriptor};

/// Prints the graph on standard output and any warnings on standard error; a blueprint with
/// errors is not drawn, its report goes to standard error instead.
pub(crate) fn run(
    args: &GraphArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> anyhow::Result<Outcome> {
    let descriptor = args
        .descriptor
        .as_deref()
        .map(read_descriptor)
        .transpose()?;
    let text = read(&args.blueprint, "blueprint")?;
    let Verification {
        diagnostics,
        blueprint,
    } = match &descriptor {
        Some(descriptor) => verify(&args.blueprint, &text, descriptor),
        None => parse(&args.blueprint, &text),
    };
    if !diagnostics.is_empty() {
        err.write_all(render_human(&diagnostics, &text).as_bytes())?;
    }
    let Some(blueprint) = blueprint else {
        return Ok(Outcome::Failed);
    };
    let drawing = match args.format {
        GraphFormat::Text => graph::render_text(&blueprint),
        GraphFormat::Dot => graph::render_dot(&blueprint),
        GraphFormat::Mermaid => graph::render_mermaid(&blueprint),
    };
    out.write_all(drawing.as_bytes())?;
    Ok(Outcome::Passed)
}

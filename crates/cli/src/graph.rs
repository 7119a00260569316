//! `runnel graph`: draw a blueprint as text, dot or mermaid.

use std::io::Write as _;

use runnel_blueprint::{Verification, graph, parse, render_human, verify};

use crate::args::{GraphArgs, GraphFormat};
use crate::{Outcome, read, read_descriptor};

/// Prints the graph on standard output and any warnings on standard error; a blueprint with
/// errors is not drawn, its report goes to standard error instead.
pub(crate) fn run(args: &GraphArgs) -> anyhow::Result<Outcome> {
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
        std::io::stderr().write_all(render_human(&diagnostics, &text).as_bytes())?;
    }
    let Some(blueprint) = blueprint else {
        return Ok(Outcome::Failed);
    };
    let drawing = match args.format {
        GraphFormat::Text => graph::render_text(&blueprint),
        GraphFormat::Dot => graph::render_dot(&blueprint),
        GraphFormat::Mermaid => graph::render_mermaid(&blueprint),
    };
    std::io::stdout().write_all(drawing.as_bytes())?;
    Ok(Outcome::Passed)
}

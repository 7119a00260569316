//! `runnel graph`: draw a blueprint as text, dot or mermaid.

use std::io::Write;

use runnel_blueprint::{
    BlueprintFiles, Verification, graph, parse_with_files, render_human_with_files,
    verify_with_queries,
};

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
    let files = BlueprintFiles::beside(&args.blueprint, &text);
    let Verification {
        diagnostics,
        blueprint,
    } = match &descriptor {
        Some(descriptor) => {
            verify_with_queries(&args.blueprint, &text, descriptor, None, &[], &files)
        }
        None => parse_with_files(&args.blueprint, &text, &files),
    };
    if !diagnostics.is_empty() {
        err.write_all(render_human_with_files(&diagnostics, &text, &files).as_bytes())?;
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

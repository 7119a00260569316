//! `runnel verify`: check a blueprint against an app descriptor, without building anything.

use std::io::Write;

use runnel_blueprint::{BlueprintFiles, render_human_with_files, render_json, verify_with_queries};

use crate::args::{ReportFormat, VerifyArgs};
use crate::{Outcome, read, read_descriptor};

/// Prints the report on standard output; fails on errors, and on warnings when denied.
pub(crate) fn run(args: &VerifyArgs, out: &mut dyn Write) -> anyhow::Result<Outcome> {
    let descriptor = read_descriptor(&args.descriptor)?;
    let text = read(&args.blueprint, "blueprint")?;
    let files = BlueprintFiles::beside(&args.blueprint, &text);
    let verification = verify_with_queries(&args.blueprint, &text, &descriptor, None, &[], &files);
    let report = match args.format {
        ReportFormat::Human => render_human_with_files(&verification.diagnostics, &text, &files),
        ReportFormat::Json => render_json(&verification.diagnostics),
    };
    out.write_all(report.as_bytes())?;
    let failed = verification.has_errors() || (args.deny_warnings && verification.has_warnings());
    Ok(if failed {
        Outcome::Failed
    } else {
        Outcome::Passed
    })
}

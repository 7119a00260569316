//! `nexmark-events`: writes the generator's events as JSON lines (Flink's Nexmark layout),
//! for engines that read the same events from a file in a side-by-side run.

use std::io::BufWriter;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Parser;
use runnel_nexmark::events_file::write_events;
use runnel_nexmark::generator::{Generator, GeneratorConfig};

/// Writes Nexmark events 0..COUNT as JSON lines.
#[derive(Debug, Parser)]
#[command(version, about)]
struct Arguments {
    /// How many events to write.
    #[arg(long)]
    count: u64,
    /// The file to write.
    #[arg(long)]
    output: PathBuf,
    /// Events per second of event time.
    #[arg(long, default_value_t = 10_000)]
    events_per_second: i64,
    /// Events are shuffled within consecutive groups of this many; 1 is in order.
    #[arg(long, default_value_t = 1)]
    out_of_order_group_size: i64,
}

fn main() -> anyhow::Result<()> {
    let arguments = Arguments::parse();
    let generator = Generator::new(GeneratorConfig {
        events_per_second: arguments.events_per_second,
        out_of_order_group_size: arguments.out_of_order_group_size,
        ..GeneratorConfig::default()
    })?;
    let file = std::fs::File::create(&arguments.output)
        .with_context(|| format!("cannot create {}", arguments.output.display()))?;
    write_events(
        &generator,
        arguments.count,
        &mut BufWriter::with_capacity(1 << 20, file),
    )
    .with_context(|| format!("cannot write {}", arguments.output.display()))?;
    Ok(())
}

//! [`Console`]: one writer for log lines and the live view, so log lines scroll above a
//! table that stays at the bottom of the terminal.
//!
//! Install it as the `tracing` writer (`tracing_subscriber::fmt().with_writer(console)`);
//! the live view calls [`Console::show`] with the table. On a terminal, every log line first
//! erases the table, is written, and the table is drawn again below it. Elsewhere nothing is
//! ever erased: the table is not shown and log lines are written as they come.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, PoisonError};

use tracing_subscriber::fmt::MakeWriter;

#[derive(Debug, Default)]
struct State {
    /// The table currently at the bottom of the screen.
    table: String,
    /// How many lines of the screen it occupies.
    drawn_lines: usize,
}

/// Standard output shared by log lines and the live view.
#[derive(Clone, Debug)]
pub struct Console {
    state: Arc<Mutex<State>>,
    interactive: bool,
}

impl Console {
    /// Standard output; `interactive` says whether it is a terminal that understands cursor
    /// movement (see [`std::io::IsTerminal`]).
    pub fn stdout(interactive: bool) -> Self {
        Console {
            state: Arc::default(),
            interactive,
        }
    }

    /// Whether the live table is drawn.
    pub fn is_interactive(&self) -> bool {
        self.interactive
    }

    /// Replaces the table at the bottom of the terminal (no-op when not interactive).
    pub fn show(&self, table: &str) {
        if !self.interactive {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = io::stdout().lock();
        let _ = erase(&mut out, state.drawn_lines);
        let _ = out.write_all(table.as_bytes());
        let _ = out.flush();
        state.drawn_lines = table.lines().count();
        table.clone_into(&mut state.table);
    }

    /// Leaves the last table on screen and stops redrawing it.
    pub fn release(&self) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.drawn_lines = 0;
        state.table.clear();
    }

    /// Writes text (a log line, a banner) above the table.
    pub fn print(&self, text: &str) {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut out = io::stdout().lock();
        let _ = erase(&mut out, state.drawn_lines);
        let _ = out.write_all(text.as_bytes());
        let _ = out.write_all(state.table.as_bytes());
        let _ = out.flush();
    }
}

/// Moves the cursor to the start of the table and clears to the end of the screen.
fn erase(out: &mut impl Write, lines: usize) -> io::Result<()> {
    if lines > 0 {
        write!(out, "\x1b[{lines}F\x1b[J")?;
    }
    Ok(())
}

/// A log line being formatted; written above the table when dropped.
#[derive(Debug)]
pub struct ConsoleLine {
    console: Console,
    buffer: Vec<u8>,
}

impl Write for ConsoleLine {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for ConsoleLine {
    fn drop(&mut self) {
        if !self.buffer.is_empty() {
            self.console.print(&String::from_utf8_lossy(&self.buffer));
        }
    }
}

impl<'a> MakeWriter<'a> for Console {
    type Writer = ConsoleLine;

    fn make_writer(&'a self) -> Self::Writer {
        ConsoleLine {
            console: self.clone(),
            buffer: Vec::new(),
        }
    }
}

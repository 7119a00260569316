//! Printing a command's output to standard output, where a reader that stops early (`describe
//! | head`) ends the process quietly instead of making `println!` panic.

use std::fmt;
use std::io::{ErrorKind, Write as _};

/// Prints one line (what `print_line!` formats) to standard output. A closed pipe ends the
/// process with success, as it ends Unix tools: the reader has what it wanted. Any other
/// failure to write ends it with an error naming the cause.
pub(crate) fn line(text: fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    let written = out
        .write_fmt(text)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    ended(written);
}

/// Prints `text` as it is (no newline added), as [`line`] does.
pub(crate) fn text(text: &str) {
    let mut out = std::io::stdout().lock();
    ended(out.write_all(text.as_bytes()).and_then(|()| out.flush()));
}

/// Ends the process unless `written` succeeded: quietly for a closed pipe.
fn ended(written: std::io::Result<()>) {
    match written {
        Ok(()) => {}
        Err(error) if error.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(error) => {
            eprintln!("error: writing to standard output failed: {error}");
            std::process::exit(1);
        }
    }
}

/// `println!` for command output: see [`line`].
macro_rules! print_line {
    () => {
        $crate::output::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::output::line(format_args!($($arg)*))
    };
}
pub(crate) use print_line;

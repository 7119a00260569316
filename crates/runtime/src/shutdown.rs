//! Stopping on SIGINT and SIGTERM: the first signal drains and commits, a second one exits
//! at once.

use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use crate::console::Console;

/// The exit code after a second signal (128 + SIGINT), as shells report an interrupt.
pub const INTERRUPTED_EXIT_CODE: i32 = 130;

/// Cancels `shutdown` on the first SIGINT or SIGTERM and exits the process on the second.
///
/// # Panics
///
/// If the signal handlers cannot be installed (outside a Tokio runtime with signals).
pub fn stop_on_signals(shutdown: CancellationToken, console: Console) {
    let mut interrupt = signal(SignalKind::interrupt()).expect("installing the SIGINT handler");
    let mut terminate = signal(SignalKind::terminate()).expect("installing the SIGTERM handler");
    tokio::spawn(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        console.print(
            "stopping: draining in-flight records and committing offsets (signal again to exit at once)\n",
        );
        shutdown.cancel();
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
        console.print("exiting at once; uncommitted records will be read again on the next run\n");
        std::process::exit(INTERRUPTED_EXIT_CODE);
    });
}

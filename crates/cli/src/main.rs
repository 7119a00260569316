//! `runnel` (and, installed under that name, the kubectl plugin `kubectl-runnel`).

fn main() -> std::process::ExitCode {
    runnel_cli::main_with_args(
        std::env::args_os(),
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}

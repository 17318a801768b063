//! `loopbench`: options -> shapes -> arms -> schedule -> stats -> report.
//! Errors print as one line and exit non-zero; a broken pipe exits quietly.

use clap::Parser;

// Lets a worker pad its heap blocks by random cache lines (layout
// randomisation); without `enable` it only adds a 16-byte header.
#[global_allocator]
static ALLOC: loopbench::workers::heap::PaddingAllocator =
    loopbench::workers::heap::PaddingAllocator;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = loopbench::cli::Cli::parse();
    match cli.execute() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(loopbench::error::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e @ loopbench::error::Error::Interrupted { signal, .. }) => {
            loopbench::diag!("error: {e}");
            // The shell's convention for death by a signal: 130 for
            // SIGINT, 143 for SIGTERM.
            ExitCode::from(u8::try_from(128 + signal).unwrap_or(130))
        }
        Err(e) => {
            // A name the user gave (a shape, a file, an arm) may carry
            // control characters: they show as escapes, never act.
            let text = loopbench::report::markup::Text.page(&e.to_string());
            loopbench::diag!("error: {text}");
            ExitCode::from(2)
        }
    }
}

//! `loopbench`: options -> shapes -> arms -> schedule -> stats -> report.
//! Errors print as one line and exit non-zero; a broken pipe exits quietly.

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Results go to stdout; when a reader such as `head` closes the pipe,
    // stop quietly like other Unix tools instead of panicking in println!.
    #[cfg(target_os = "linux")]
    // SAFETY: restoring the default disposition of SIGPIPE before any
    // other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = loopbench::cli::Cli::parse();
    match cli.execute() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(loopbench::error::Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::BrokenPipe =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}

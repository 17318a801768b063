//! `loopbench-worker ENGINE`: one of loopbench's compiled-in engines served
//! to a session over stdin/stdout, from a binary linked in a code layout of
//! its own ([`loopbench::workers::own_build`]).

fn main() {
    let engine = std::env::args().nth(1).unwrap_or_default();
    std::process::exit(loopbench::workers::server::serve_compiled_in(&engine))
}

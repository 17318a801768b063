#!/usr/bin/env bash
# The main job: the default comparison (all shapes on wasmi, tinywasm and
# wasm3, wasmi as baseline, with its null control) in 60 s: what the decided
# shapes leave narrows every interval. Extra arguments go to `loopbench run`,
# e.g. scripts/bench.sh --json session.json
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --build
cargo run --release -q -p loopbench -- run --session-budget 60 "$@"

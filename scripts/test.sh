#!/usr/bin/env bash
# Runs every test in the workspace, after installing what the tests need.
# This is the command CI runs (.ci/run) and the README's second command.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
# Sessions the tests run are recorded in a throw-away history database, not
# the user's own.
history_dir=$(mktemp -d)
trap 'rm -rf "$history_dir"' EXIT
export LOOPBENCH_DB="$history_dir/history.sqlite"
# Release builds: the engines run shapes inside the tests, and the counting
# property tests execute hundreds of generated modules.
# The wasmtime feature is on so the shared-memory shapes are exercised too.
# loopbench alone first: a workspace build would unify its dependencies'
# features with the other crates' dev-dependencies, and the engines it
# relinks in layout variants must be the ones `cargo build` makes.
status=0
cargo test -p loopbench --release --no-fail-fast --features wasmtime || status=$?
cargo test --workspace --exclude loopbench --release --no-fail-fast || status=$?
# The probe crate's tests run both ways: probes compiled out and in.
cargo test -p loopbench-probe --release --features enabled
exit "$status"

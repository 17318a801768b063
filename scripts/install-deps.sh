#!/usr/bin/env bash
# Installs the Debian packages loopbench's build and tests need; with
# --build, only what building loopbench needs (the main job, scripts/bench.sh).
# Idempotent: packages already present are not touched, so a warm machine
# pays nothing.
#   libclang-dev  wasm3's bindings are generated with bindgen, which needs libclang
#   valgrind      `--counters callgrind` and its tests
#   hyperfine     the side-by-side calibration benchmark
#   chromium      renders the HTML report headless in its test (tests/exporters.rs)
#   postgresql    the history and fleet tests start a private server (initdb, pg_ctl)
set -euo pipefail
want=(libclang-dev)
build_only=false
[ "${1:-}" = --build ] && build_only=true
$build_only || want+=(valgrind hyperfine chromium postgresql)
missing=()
for p in "${want[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq >/dev/null || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# The real-application recipes bring their own toolchain list.
if ! $build_only && [ -x "$(dirname "$0")/apps/install-deps.sh" ]; then
  "$(dirname "$0")/apps/install-deps.sh"
fi

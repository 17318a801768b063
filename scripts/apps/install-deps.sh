#!/usr/bin/env bash
# Install what the app recipes (apps/*/build.sh) need: clang with the wasm32
# target, wasm-ld, wasi-libc and compiler-rt for wasm32 (the C apps), node
# and npm (the npm apps), zstd (the zstd app's input). Idempotent: when
# everything is present it only checks and exits, in well under a second.
set -euo pipefail
missing=()
have() { command -v "$1" >/dev/null 2>&1; }
have clang || missing+=(clang)
have wasm-ld || missing+=(lld)
[ -f /usr/lib/wasm32-wasi/libc.a ] || missing+=(wasi-libc)
rt="$(clang --target=wasm32-wasi -print-libgcc-file-name 2>/dev/null || true)"
{ [ -n "$rt" ] && [ -f "$rt" ]; } || missing+=(libclang-rt-dev-wasm32)
have node || missing+=(nodejs)
have npm || missing+=(npm)
have zstd || missing+=(zstd)
have flock || missing+=(util-linux)
python3 -c 'import sqlite3' 2>/dev/null || missing+=(python3)
if [ ${#missing[@]} -eq 0 ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "error: missing ${missing[*]}; install with: sudo apt-get install ${missing[*]}" >&2
    exit 1
fi
echo "installing for the app recipes: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${missing[@]}" >/dev/null

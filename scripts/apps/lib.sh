# Helpers shared by the app recipes (apps/<name>/build.sh). Sourced, not run.
#
# Every recipe builds one import-free-or-stubbable wasm module into
# $LOOPBENCH_APPS_OUT (default: <workspace>/target/apps), from sources fetched
# with the registries' ordinary clients (cargo fetch, npm pack). Nothing is
# committed; a missing tool stops the recipe with a one-line install hint.

set -euo pipefail

APPS_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${LOOPBENCH_APPS_OUT:-$APPS_ROOT/target/apps}"
WORK="$OUT/work"
mkdir -p "$OUT" "$WORK"

# The one line to print when a C toolchain piece is missing.
C_TOOLS_HINT="apt-get install clang lld wasi-libc libclang-rt-dev-wasm32 (or run scripts/apps/install-deps.sh)"
NPM_HINT="apt-get install nodejs npm (or run scripts/apps/install-deps.sh)"

die() {
    echo "error: $*" >&2
    exit 1
}

# need TOOL HINT: stop with the install hint when TOOL is not on PATH.
need() {
    command -v "$1" >/dev/null 2>&1 || die "$1 not found; install it with: $2"
}

CLANG="${LOOPBENCH_CLANG:-clang}"
WASI_SYSROOT="${LOOPBENCH_WASI_SYSROOT:-/usr}"

# need_c_toolchain: clang with the wasm32 target, wasm-ld, wasi-libc and the
# wasm32 compiler-rt builtins.
need_c_toolchain() {
    need "$CLANG" "$C_TOOLS_HINT"
    need wasm-ld "$C_TOOLS_HINT"
    [ -f "$WASI_SYSROOT/lib/wasm32-wasi/libc.a" ] || die "wasi-libc not found at $WASI_SYSROOT/lib/wasm32-wasi; install it with: $C_TOOLS_HINT"
    local rt
    rt="$("$CLANG" --target=wasm32-wasi -print-libgcc-file-name 2>/dev/null || true)"
    [ -n "$rt" ] && [ -f "$rt" ] || die "compiler-rt builtins for wasm32 not found; install them with: $C_TOOLS_HINT"
}

# fetch_crate NAME VERSION: download a crates.io source crate with cargo and
# print the directory it was unpacked into.
fetch_crate() {
    local name="$1" version="$2" dir="$WORK/fetch-$1-$2"
    need cargo "rustup (https://rustup.rs) or apt-get install cargo"
    mkdir -p "$dir"
    cat >"$dir/Cargo.toml" <<TOML
[package]
name = "loopbench-app-fetch"
version = "0.0.0"
edition = "2021"
publish = false
[lib]
path = "lib.rs"
[dependencies]
$name = { version = "=$version", default-features = false }
[workspace]
TOML
    : >"$dir/lib.rs"
    (cd "$dir" && cargo fetch --quiet) >&2 || die "cargo fetch of $name $version failed"
    local manifest
    manifest="$(cd "$dir" && cargo metadata --format-version 1 --offline 2>/dev/null |
        grep -o "\"manifest_path\":\"[^\"]*/$name-$version/Cargo.toml\"" | head -1 |
        sed -e 's/^"manifest_path":"//' -e 's/"$//')"
    [ -n "$manifest" ] || die "cargo fetched $name $version but its source directory was not found"
    dirname "$manifest"
}

# npm_unpack PACKAGE VERSION: `npm pack` the package and print the directory
# holding its unpacked `package/` tree.
npm_unpack() {
    local name="$1" version="$2" dir="$WORK/npm-$1-$2"
    need npm "$NPM_HINT"
    if [ ! -f "$dir/package/package.json" ]; then
        rm -rf "$dir" && mkdir -p "$dir"
        (cd "$dir" && npm pack --silent "$name@$version" >/dev/null) || die "npm pack $name@$version failed"
        tar xzf "$dir"/*.tgz -C "$dir" || die "could not unpack $name@$version"
    fi
    echo "$dir"
}

# wasm_cc OUTPUT SOURCES... -- compile C to a freestanding wasm32 module that
# exports run() and memory. MVP features only (no bulk memory, no sign-ext),
# so every engine, wasm3 included, runs it.
wasm_cc() {
    local out="$1"
    shift
    "$CLANG" --target=wasm32-wasi --sysroot="$WASI_SYSROOT" -O2 \
        -mcpu=mvp -mno-bulk-memory -mno-sign-ext \
        -nostartfiles -Wl,--no-entry -Wl,--export=run -Wl,--gc-sections \
        -Wl,-z,stack-size=262144 -Wl,--strip-debug \
        -o "$out.tmp" "$@" || die "compiling $(basename "$out") failed"
    mv "$out.tmp" "$out"
}

# Recipe: the Zstandard decoder that npm's zstddec ships base64-encoded in
# dist/zstddec.mjs (one import, env.emscripten_notify_memory_growth, which
# the stub host serves as a no-op), plus its input: make-input.js writes 1 MiB
# of deterministic bytes and the zstd CLI compresses them (level 19).
# Run through scripts/apps/build.sh.
source "$(dirname "$0")/../../scripts/apps/lib.sh"
need node "$NPM_HINT"
need zstd "apt-get install zstd (or run scripts/apps/install-deps.sh)"
here="$(cd "$(dirname "$0")" && pwd)"
pkg="$(npm_unpack zstddec 0.3.4)/package"
node "$here/make-input.js" "$OUT/zstd-input.bin" || die "generating the zstd input failed"
zstd -q -f -19 --no-check "$OUT/zstd-input.bin" -o "$OUT/zstd-input.zst" || die "zstd compression failed"
node "$APPS_ROOT/scripts/apps/extract-base64-wasm.js" "$pkg/dist/zstddec.mjs" \
    'const wasm = "([A-Za-z0-9+/=]+)"' "$OUT/zstd.wasm" || die "extracting the module from zstddec failed"

# Recipe: the SHA-256 module that npm's hash-wasm ships base64-encoded in
# dist/sha256.umd.min.js (zero imports). Run through scripts/apps/build.sh.
source "$(dirname "$0")/../../scripts/apps/lib.sh"
need node "$NPM_HINT"
pkg="$(npm_unpack hash-wasm 4.13.0)/package"
node "$APPS_ROOT/scripts/apps/extract-base64-wasm.js" "$pkg/dist/sha256.umd.min.js" \
    'name:"sha256",data:"([A-Za-z0-9+/=]+)"' "$OUT/sha256.wasm" || die "extracting sha256 from hash-wasm failed"

# Recipe: zlib from the crates.io source crate libz-sys (which vendors zlib's
# C sources under src/zlib), compiled to wasm32 behind wrapper.c.
# Run through scripts/apps/build.sh, which sets LOOPBENCH_APPS_OUT.
source "$(dirname "$0")/../../scripts/apps/lib.sh"
need_c_toolchain
src="$(fetch_crate libz-sys 1.1.33)/src/zlib"
here="$(cd "$(dirname "$0")" && pwd)"
wasm_cc "$OUT/zlib.wasm" -I"$src" -DHAVE_UNISTD_H=0 -DZ_SOLO_NO \
    "$here/wrapper.c" "$src"/{adler32,crc32,deflate,inflate,inftrees,inffast,trees,zutil,compress,uncompr}.c

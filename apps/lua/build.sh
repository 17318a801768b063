# Recipe: Lua 5.4 from the crates.io source crate lua-src (which carries the
# Lua sources under lua-5.4.9), compiled to wasm32 behind wrapper.c, with
# setjmp/longjmp replaced by ./setjmp.h (errors trap) and workload.lua
# embedded as a C array. Run through scripts/apps/build.sh.
source "$(dirname "$0")/../../scripts/apps/lib.sh"
need_c_toolchain
need od "apt-get install coreutils"
src="$(fetch_crate lua-src 551.1.0)/lua-5.4.9"
here="$(cd "$(dirname "$0")" && pwd)"
gen="$WORK/lua-gen"
mkdir -p "$gen"
{
    echo "static const unsigned char workload_lua[] = {"
    od -An -v -tx1 "$here/workload.lua" | sed -e 's/ \([0-9a-f][0-9a-f]\)/0x\1,/g'
    echo "};"
    echo "static const unsigned long workload_lua_len = sizeof workload_lua;"
} >"$gen/workload.h"
core="lapi lcode lctype ldebug ldo ldump lfunc lgc llex lmem lobject lopcodes lparser lstate lstring ltable ltm lundump lvm lzio lauxlib lbaselib lstrlib ltablib lmathlib"
files=()
for f in $core; do files+=("$src/$f.c"); done
wasm_cc "$OUT/lua.wasm" -I"$here" -I"$gen" -I"$src" -Dl_signalT=int -Wno-deprecated-declarations \
    "$here/wrapper.c" "${files[@]}"

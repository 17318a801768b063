# Recipe: SQLite from the amalgamation the crates.io crate libsqlite3-sys
# bundles (sqlite3/sqlite3.c), compiled to wasm32 behind wrapper.c with no
# OS layer (SQLITE_OS_OTHER): wrapper.c registers a VFS that opens no files,
# so the workload runs on a `:memory:` database. Run through
# scripts/apps/build.sh.
source "$(dirname "$0")/../../scripts/apps/lib.sh"
need_c_toolchain
src="$(fetch_crate libsqlite3-sys 0.40.0)/sqlite3"
here="$(cd "$(dirname "$0")" && pwd)"
wasm_cc "$OUT/sqlite.wasm" -I"$src" \
    -DSQLITE_OS_OTHER=1 -DSQLITE_THREADSAFE=0 -DSQLITE_TEMP_STORE=3 \
    -DSQLITE_OMIT_LOAD_EXTENSION -DSQLITE_OMIT_WAL -DSQLITE_OMIT_SHARED_CACHE \
    -DSQLITE_OMIT_DEPRECATED -DSQLITE_DEFAULT_MEMSTATUS=0 -DSQLITE_OMIT_PROGRESS_CALLBACK \
    -DSQLITE_MAX_EXPR_DEPTH=0 -DSQLITE_DQS=0 \
    -Wno-unused-function \
    "$here/wrapper.c" "$src/sqlite3.c"

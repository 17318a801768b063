#!/usr/bin/env bash
# Build (or extract) app workloads into target/apps/.
#
#   scripts/apps/build.sh            # every app
#   scripts/apps/build.sh zlib lua   # some
#
# Each app's recipe is apps/<name>/build.sh. Builds are cached: an app whose
# artifact exists is skipped unless --force is given. A lock keeps concurrent
# callers (parallel tests) from building the same app twice.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${LOOPBENCH_APPS_OUT:-$ROOT/target/apps}"
mkdir -p "$OUT"
force=0
names=()
for a in "$@"; do
    case "$a" in
    --force) force=1 ;;
    all) ;;
    *) names+=("$a") ;;
    esac
done
if [ ${#names[@]} -eq 0 ]; then
    for d in "$ROOT"/apps/*/; do
        [ -f "$d/build.sh" ] && names+=("$(basename "$d")")
    done
fi
for n in "${names[@]}"; do
    recipe="$ROOT/apps/$n/build.sh"
    [ -f "$recipe" ] || { echo "error: no recipe apps/$n/build.sh" >&2; exit 1; }
    (
        flock 9
        if [ "$force" = 1 ] || [ ! -f "$OUT/$n.wasm" ]; then
            echo "building app $n" >&2
            LOOPBENCH_APPS_OUT="$OUT" bash "$recipe"
        fi
    ) 9>"$OUT/.$n.lock"
done

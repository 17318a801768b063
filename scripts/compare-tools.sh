#!/usr/bin/env bash
# Side by side: the same known +1% and +2% effects (exactly that many more
# iterations of the same loop, same shape, engine and iteration count),
# measured by
#   - criterion, the usual way: the baseline arm, saved, then each candidate
#     arm compared against it (benches/calibration_tools.rs);
#   - hyperfine, on two whole processes (`loopbench calibrate --one-shot`),
#     also the usual way: all runs of one command, then all of the other;
#   - loopbench's interleaved session with its null control (`calibrate
#     --repeat 1`).
# Per tool and effect: measured effect, error against the truth, interval
# width and wall time, as a Markdown table on stdout and in $OUT/table.md.
#
# Usage: scripts/compare-tools.sh            (environment overrides below)
#   SHAPE=add_chain ENGINE=wasmi BYTES=8m ITERS=524200 CALLS=10 REPEAT=3
#   OUT=target/compare-tools CARGO_TARGET_DIR=target LB=path/to/loopbench
# Needs hyperfine (Debian: apt-get install hyperfine), python3, and a
# Rust toolchain. Takes about a minute and a half per repeat.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
SHAPE=${SHAPE:-add_chain}
ENGINE=${ENGINE:-wasmi}
BYTES=${BYTES:-8m}
ITERS=${ITERS:-524200}
CALLS=${CALLS:-10}
REPEAT=${REPEAT:-3}
EFFECTS=${EFFECTS:-"1 2"}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=${OUT:-$CARGO_TARGET_DIR/compare-tools}

command -v hyperfine >/dev/null || { echo "error: hyperfine not found (apt-get install hyperfine)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "error: python3 not found" >&2; exit 2; }

cd "$ROOT"
rm -rf "$OUT"
mkdir -p "$OUT"
cargo build --release -q -p loopbench
# Run the bench executable itself (as `cargo bench` does, with --bench), so
# no cargo invocation sits inside the timed wall clock.
CRIT=$(cargo bench -q -p loopbench --bench calibration_tools --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("executable") and m.get("target", {}).get("name") == "calibration_tools": print(m["executable"])')
LB=${LB:-$CARGO_TARGET_DIR/release/loopbench}
export CRITERION_HOME=$OUT/criterion

now() { date +%s.%N; }
load1() { cut -d' ' -f1 /proc/loadavg; }
note() { echo "compare-tools: $*" >&2; }

crit() { # effect, extra criterion args...
  local x=$1; shift
  LOOPBENCH_CAL_EFFECT=$x LOOPBENCH_CAL_SHAPE=$SHAPE LOOPBENCH_CAL_ENGINE=$ENGINE \
    LOOPBENCH_CAL_BYTES=$BYTES LOOPBENCH_CAL_ITERS=$ITERS \
    "$CRIT" --bench "$@"
}

oneshot() { # effect calls
  echo "$LB calibrate --one-shot $1 --shape $SHAPE --engine $ENGINE --bytes $BYTES --iters $ITERS --calls $2"
}

# The fixed cost of a hyperfine process (start, compile, instantiate,
# initialise, no call): hyperfine's truth is x * (T - c_proc) / T.
note "pricing the process without calls"
hyperfine -N --warmup 2 --export-json "$OUT/hf-setup.json" "$(oneshot 0 0)" >"$OUT/hf-setup.txt"

for r in $(seq 1 "$REPEAT"); do
  for x in $EFFECTS; do
    note "repeat $r, effect +$x%: criterion"
    rm -rf "$CRITERION_HOME"
    l0=$(load1); t0=$(now)
    crit 0 --save-baseline cal0 >"$OUT/crit-$r-$x-base.txt" 2>&1
    crit "$x" --baseline cal0 >"$OUT/crit-$r-$x.txt" 2>&1
    t1=$(now)
    est=$(find "$CRITERION_HOME" -path '*/change/estimates.json' | head -n1)
    cp "$est" "$OUT/crit-$r-$x.json"
    echo "{\"wall\": $(echo "$t1 - $t0" | bc), \"load\": $l0}" >"$OUT/crit-$r-$x.meta.json"

    note "repeat $r, effect +$x%: hyperfine"
    l0=$(load1); t0=$(now)
    hyperfine -N --warmup 2 --export-json "$OUT/hf-$r-$x.json" "$(oneshot 0 "$CALLS")" "$(oneshot "$x" "$CALLS")" \
      >"$OUT/hf-$r-$x.txt"
    t1=$(now)
    echo "{\"wall\": $(echo "$t1 - $t0" | bc), \"load\": $l0}" >"$OUT/hf-$r-$x.meta.json"

    note "repeat $r, effect +$x%: loopbench"
    l0=$(load1); t0=$(now)
    "$LB" calibrate -q --shape "$SHAPE" --engine "$ENGINE" --bytes "$BYTES" --iters "$ITERS" --effects "$x" \
      --repeat 1 --no-toggle --json "$OUT/lb-$r-$x.json" >"$OUT/lb-$r-$x.txt"
    t1=$(now)
    echo "{\"wall\": $(echo "$t1 - $t0" | bc), \"load\": $l0}" >"$OUT/lb-$r-$x.meta.json"
  done
done

python3 - "$OUT" "$REPEAT" "$EFFECTS" "$CALLS" <<'PY' | tee "$OUT/table.md"
import json, math, statistics as st, sys
out, repeat, effects, calls = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), int(sys.argv[4])
load = lambda p: json.load(open(f"{out}/{p}"))
setup = load("hf-setup.json")["results"][0]
c_proc = st.median(setup["times"])
rows = []
for r in range(1, repeat + 1):
    for x in effects:
        t = float(x)
        # criterion: the change in the mean, with its 95% bootstrap interval.
        c, m = load(f"crit-{r}-{x}.json")["mean"], load(f"crit-{r}-{x}.meta.json")
        ci = c["confidence_interval"]
        rows.append(("criterion", x, t, c["point_estimate"] * 100, ci["lower_bound"] * 100, ci["upper_bound"] * 100,
                     "95% bootstrap CI of the mean change", m["wall"], m["load"]))
        # hyperfine: ratio of means; interval from the two samples (Welch, normal 95%).
        h, m = load(f"hf-{r}-{x}.json")["results"], load(f"hf-{r}-{x}.meta.json")
        b, k = h[0]["times"], h[1]["times"]
        mb, mk = st.mean(b), st.mean(k)
        se = math.sqrt(st.variance(b) / len(b) + st.variance(k) / len(k))
        truth = t * (mb - c_proc) / mb
        rows.append(("hyperfine", x, truth, (mk / mb - 1) * 100, (mk - mb - 1.96 * se) / mb * 100,
                     (mk - mb + 1.96 * se) / mb * 100, f"Welch 95% from {len(b)}+{len(k)} runs", m["wall"], m["load"]))
        # loopbench: the paired median change and its order-statistics interval.
        l, m = load(f"lb-{r}-{x}.json"), load(f"lb-{r}-{x}.meta.json")
        row = next(w for w in l["rows"] if w["true_pct"] == t)
        null = next(w for w in l["rows"] if w["true_pct"] == 0)
        rows.append(("loopbench", x, row["true_time_pct"], row["median_pct"], row["ci_pct"][0], row["ci_pct"][1],
                     f"95% order-statistics CI of the paired median ({row['pairs']} rounds); null {null['median_pct']:+.2f}% [{null['ci_pct'][0]:+.2f}, {null['ci_pct'][1]:+.2f}]",
                     m["wall"], m["load"]))
        # The same loopbench session by thread CPU time (same reps).
        cpu = [w for w in l["rows"] if w.get("metric") == "thread_cpu"]
        if cpu:
            row = next(w for w in cpu if w["true_pct"] == t)
            null = next(w for w in cpu if w["true_pct"] == 0)
            rows.append(("loopbench (CPU time)", x, row["true_time_pct"], row["median_pct"], row["ci_pct"][0],
                         row["ci_pct"][1], f"as above, thread CPU time; null {null['median_pct']:+.2f}% [{null['ci_pct'][0]:+.2f}, {null['ci_pct'][1]:+.2f}]",
                         m["wall"], m["load"]))
print(f"process without calls (hyperfine): {c_proc*1e3:.1f} ms; a hyperfine run does {calls} calls\n")
print("| tool | rep | true % | measured % | error (points) | 95% interval | width | covers truth | wall s | load1m | interval |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
per_rep = len(rows) // repeat
for i, (tool, x, truth, meas, lo, hi, kind, wall, ld) in enumerate(rows):
    rep = i // per_rep + 1
    print(f"| {tool} | {rep} | {truth:+.3f} | {meas:+.3f} | {meas - truth:+.3f} | [{lo:+.2f}, {hi:+.2f}] | {hi - lo:.2f} | "
          f"{'yes' if lo <= truth <= hi else 'NO'} | {wall:.1f} | {ld:.2f} | {kind} |")
print()
print("| tool | effect | mean abs error (points) | median width | covered | median wall s |")
print("|---|---|---|---|---|---|")
for tool in dict.fromkeys(w[0] for w in rows):
    for x in effects:
        sel = [w for w in rows if w[0] == tool and w[1] == x]
        err = st.mean(abs(w[3] - w[2]) for w in sel)
        width = st.median(w[5] - w[4] for w in sel)
        cov = sum(w[4] <= w[2] <= w[5] for w in sel)
        print(f"| {tool} | +{x}% | {err:.3f} | {width:.2f} | {cov}/{len(sel)} | {st.median(w[7] for w in sel):.1f} |")
PY

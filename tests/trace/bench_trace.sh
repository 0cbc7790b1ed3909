#!/bin/sh
# bench_trace.sh -- libheapdom-trace.so's overhead on a malloc-bound loop
# (not a test): bench_trace run without the tracer, with it loaded but off,
# and with it on (LD_PRELOAD, HEAPDOM_TRACE=1), REPS times each,
# interleaved so that drift hits all three alike. Prints every run, the
# median ns per op of each way and the ratios off/none and on/none
# (targets: off <= 1.02, on <= 1.3).
#
#   tests/trace/bench_trace.sh [REPS [ITERATIONS [SLOTS]]]
#
# Environment: BENCH (default build/tests/trace/bench_trace), TRACELIB
# (default build/core/trace/libheapdom-trace.so). `ninja bench-trace` in a
# build directory sets both.
set -eu

REPS=${1:-7}
ITERS=${2:-20000000}
SLOTS=${3:-4096}
BENCH=${BENCH:-build/tests/trace/bench_trace}
TRACELIB=${TRACELIB:-build/core/trace/libheapdom-trace.so}

for v in "$REPS" "$ITERS" "$SLOTS"; do
    case $v in ''|*[!0-9]*) echo "bench_trace.sh: REPS, ITERATIONS and SLOTS are numbers" >&2; exit 2;; esac
done
[ -x "$BENCH" ] || { echo "bench_trace.sh: no benchmark at $BENCH (set BENCH)" >&2; exit 2; }
[ -f "$TRACELIB" ] || { echo "bench_trace.sh: no library at $TRACELIB (set TRACELIB)" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/heapdom-bench-trace.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

one() { # WAY: run once, append ns/op to $TMP/WAY
    case $1 in
    none) out=$(env -u LD_PRELOAD -u HEAPDOM_TRACE "$BENCH" "$ITERS" "$SLOTS") ;;
    off) out=$(env -u HEAPDOM_TRACE LD_PRELOAD="$TRACELIB" "$BENCH" "$ITERS" "$SLOTS") ;;
    on) out=$(env LD_PRELOAD="$TRACELIB" HEAPDOM_TRACE=1 "$BENCH" "$ITERS" "$SLOTS") ;;
    esac
    ns=$(printf '%s\n' "$out" | awk '$1 == "ns_per_op" { print $2 }')
    [ -n "$ns" ] || { echo "bench_trace.sh: no result from the $1 run" >&2; exit 1; }
    echo "$ns" >> "$TMP/$1"
    printf '%s' " $1=$ns"
}

median() { sort -n "$TMP/$1" | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

echo "bench_trace: $ITERS iterations, $SLOTS slots, $REPS repetitions (ns per malloc+free)"
i=1
while [ "$i" -le "$REPS" ]; do
    printf 'run %d:' "$i"
    one none; one off; one on
    echo
    i=$((i + 1))
done
none=$(median none); off=$(median off); on=$(median on)
echo "median ns/op: none $none  off $off  on $on"
awk -v n="$none" -v f="$off" -v o="$on" 'BEGIN {
    printf "ratio off/none %.3f (target <= 1.02)\nratio on/none  %.3f (target <= 1.30)\n", f / n, o / n }'

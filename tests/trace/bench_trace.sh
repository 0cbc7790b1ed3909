#!/bin/sh
# bench_trace.sh -- libheapdom-trace.so's overhead on a malloc-bound loop
# (not a test): bench_trace run without the tracer, with it loaded but off,
# and with it on (LD_PRELOAD, HEAPDOM_TRACE=1), REPS times each,
# interleaved so that drift hits all three alike. Prints every run, the
# median and the fastest ns per op of each way, the ratios off/none and
# on/none of both, and the median (with quartiles) of the ratios within
# each round (targets: off <= 1.02, on <= 1.3). The fastest run is the one
# least disturbed by the rest of the machine (interference only adds
# time); the median is the figure the targets are read against. On a
# machine whose neighbours load the shared caches (a cloud VM) the level
# drifts within seconds; the three runs of one round share their
# conditions, so the per-round ratios are the steadier figure.
#
#   tests/trace/bench_trace.sh [REPS [ITERATIONS [SLOTS [THREADS]]]]
#
# THREADS (bench_trace.c): 0, the default, runs the loop in a process with
# one thread; N >= 1 runs it in N threads at once (the threaded paths).
#
# Environment: BENCH (default build/tests/trace/bench_trace), TRACELIB
# (default build/core/trace/libheapdom-trace.so). `ninja bench-trace` in a
# build directory sets both.
set -eu

REPS=${1:-7}
ITERS=${2:-20000000}
SLOTS=${3:-4096}
THREADS=${4:-0}
BENCH=${BENCH:-build/tests/trace/bench_trace}
TRACELIB=${TRACELIB:-build/core/trace/libheapdom-trace.so}

for v in "$REPS" "$ITERS" "$SLOTS" "$THREADS"; do
    case $v in ''|*[!0-9]*) echo "bench_trace.sh: REPS, ITERATIONS, SLOTS and THREADS are numbers" >&2; exit 2;; esac
done
[ -x "$BENCH" ] || { echo "bench_trace.sh: no benchmark at $BENCH (set BENCH)" >&2; exit 2; }
[ -f "$TRACELIB" ] || { echo "bench_trace.sh: no library at $TRACELIB (set TRACELIB)" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/heapdom-bench-trace.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

one() { # WAY: run once, append ns/op to $TMP/WAY
    case $1 in
    none) out=$(env -u LD_PRELOAD -u HEAPDOM_TRACE "$BENCH" "$ITERS" "$SLOTS" "$THREADS") ;;
    off) out=$(env -u HEAPDOM_TRACE LD_PRELOAD="$TRACELIB" "$BENCH" "$ITERS" "$SLOTS" "$THREADS") ;;
    on) out=$(env LD_PRELOAD="$TRACELIB" HEAPDOM_TRACE=1 "$BENCH" "$ITERS" "$SLOTS" "$THREADS") ;;
    esac
    ns=$(printf '%s\n' "$out" | awk '$1 == "ns_per_op" { print $2 }')
    [ -n "$ns" ] || { echo "bench_trace.sh: no result from the $1 run" >&2; exit 1; }
    echo "$ns" >> "$TMP/$1"
    echo "$ns" > "$TMP/last_$1"
    printf '%s' " $1=$ns"
}

# This round's WAY/none, appended to $TMP/round_WAY.
round_ratio() { awk -v n="$(cat "$TMP/last_none")" -v w="$(cat "$TMP/last_$1")" 'BEGIN { print w / n }' >> "$TMP/round_$1"; }
# Lower quartile, median and upper quartile (nearest rank).
quartiles() { sort -n "$TMP/$1" | awk '{ a[NR] = $1 } END { q1 = int((NR + 3) / 4); q3 = int((3 * NR + 3) / 4); printf "%.3f %.3f %.3f", a[q1], (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, a[q3] }'; }
median() { set -- $(quartiles "$1"); echo "$2"; }
fastest() { sort -n "$TMP/$1" | head -n 1; }

echo "bench_trace: $ITERS iterations, $SLOTS slots, $THREADS threads, $REPS repetitions (ns per malloc+free)"
i=1
while [ "$i" -le "$REPS" ]; do
    printf 'run %d:' "$i"
    one none; one off; one on
    echo
    round_ratio off; round_ratio on
    i=$((i + 1))
done
none=$(median none); off=$(median off); on=$(median on)
echo "median ns/op: none $none  off $off  on $on"
fnone=$(fastest none); foff=$(fastest off); fon=$(fastest on)
echo "fastest ns/op: none $fnone  off $foff  on $fon"
awk -v n="$none" -v f="$off" -v o="$on" -v fn="$fnone" -v ff="$foff" -v fo="$fon" 'BEGIN {
    printf "ratio off/none %.3f (fastest runs %.3f; target <= 1.02)\n", f / n, ff / fn
    printf "ratio on/none  %.3f (fastest runs %.3f; target <= 1.30)\n", o / n, fo / fn }'
set -- $(quartiles round_off) $(quartiles round_on)
echo "per-round ratio off/none median $2 (quartiles $1 .. $3)"
echo "per-round ratio on/none  median $5 (quartiles $4 .. $6)"

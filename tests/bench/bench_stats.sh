#!/bin/sh
# bench_stats.sh -- benchmark `heapdom stats CORE` on a large heap (not a test).
#
#   tests/bench/bench_stats.sh [N]        N list blocks (default 11000000)
#
# Environment: HEAPDOM (default build/core/heapdom), FIXTURE (default
# build/tests/fixtures/heap_fixture; compiled from tests/fixtures/heap_fixture.c
# into the temp dir if missing), TMPDIR (where the core goes; it is large:
# roughly 60 bytes per block plus ~230 MB), KEEP=1 keeps the temp dir.
#
# Prints the core size, wall time and peak RSS of `heapdom stats CORE`,
# blocks per second and peak bytes per block.
set -eu

N=${1:-11000000}
HEAPDOM=${HEAPDOM:-build/core/heapdom}
FIXTURE=${FIXTURE:-build/tests/heap_fixture}
SRCDIR=$(CDPATH= cd -- "$(dirname -- "$0")/../.." && pwd)

case $N in ''|*[!0-9]*) echo "bench_stats.sh: N must be a number, got '$N'" >&2; exit 2;; esac
if [ ! -x "$HEAPDOM" ]; then
    echo "bench_stats.sh: heapdom not found at $HEAPDOM (set HEAPDOM)" >&2
    exit 2
fi
command -v gdb >/dev/null || { echo "bench_stats.sh: gdb is required" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/heapdom-bench.XXXXXX")
cleanup() { [ "${KEEP:-0}" = 1 ] && echo "kept $TMP" || rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

if [ ! -x "$FIXTURE" ]; then
    echo "building fixture from $SRCDIR/tests/fixtures/heap_fixture.c"
    gcc -g -O1 -pthread -o "$TMP/heap_fixture" "$SRCDIR/tests/fixtures/heap_fixture.c"
    FIXTURE=$TMP/heap_fixture
fi

CORE=$TMP/heap.core
TRUTH=$TMP/heap.truth
echo "making core: $FIXTURE --blocks $N"
t0=$(date +%s.%N)
DEBUGINFOD_URLS= gdb -q -nx -batch -ex 'break hd_fixture_stop' -ex 'run' \
    -ex "gcore $CORE" -ex 'kill' --args "$FIXTURE" "$TRUTH" --blocks "$N" >"$TMP/gdb.log" 2>&1 || true
t1=$(date +%s.%N)
if [ ! -s "$CORE" ]; then
    echo "bench_stats.sh: gdb produced no core; log:" >&2
    tail -20 "$TMP/gdb.log" >&2
    exit 1
fi
# "end NLIVE NFREED": every allocation the fixture knows about
BLOCKS=$(tail -n 1 "$TRUTH" | awk '$1 == "end" { print $2 + $3 }')
rm -f "$TRUTH"
[ -n "$BLOCKS" ] || { echo "bench_stats.sh: truth file incomplete" >&2; exit 1; }
CORE_BYTES=$(stat -c %s "$CORE")

# run `heapdom stats CORE`: wall seconds and peak RSS (KiB)
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
    TOOL="/usr/bin/time -v"
    /usr/bin/time -v -o "$TMP/time.txt" "$HEAPDOM" stats --profile "$CORE" >"$TMP/stats.out" 2>"$TMP/stats.err" \
        && RC=0 || RC=$?
    WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
              for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$TMP/time.txt")
    RSS_KB=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time.txt")
else
    TOOL="python3 resource"
    set -- $(python3 - "$HEAPDOM" "$CORE" "$TMP/stats.out" "$TMP/stats.err" <<'EOF'
import resource, subprocess, sys, time
t0 = time.monotonic()
with open(sys.argv[3], "wb") as out, open(sys.argv[4], "wb") as err:
    rc = subprocess.call([sys.argv[1], "stats", "--profile", sys.argv[2]], stdout=out, stderr=err)
wall = time.monotonic() - t0
print(rc, "%.3f" % wall, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
EOF
)
    RC=$1 WALL=$2 RSS_KB=$3
fi
if [ "$RC" != 0 ]; then
    echo "bench_stats.sh: heapdom stats failed (status $RC):" >&2
    cat "$TMP/stats.err" >&2
    exit 1
fi

awk -v n="$N" -v blocks="$BLOCKS" -v core="$CORE_BYTES" -v wall="$WALL" -v rss="$RSS_KB" \
    -v gcore="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')" -v tool="$TOOL" 'BEGIN {
    printf "list blocks (N)          %d\n", n
    printf "blocks in the heap       %d (fixture allocations incl. freed)\n", blocks
    printf "core size                %d bytes (%.1f MiB), made in %s s\n", core, core / 1048576, gcore
    printf "heapdom stats wall time  %.2f s   (%s)\n", wall, tool
    printf "heapdom stats peak RSS   %d KiB (%.1f MiB)\n", rss, rss / 1024
    printf "blocks per second        %.0f\n", (wall > 0 ? blocks / wall : 0)
    printf "peak bytes per block     %.1f\n", rss * 1024 / blocks
}'
# heapdom's own account: phase times, block-table bytes per block, and the
# anonymous memory (the core file's mapped pages are page cache, not ours).
grep '^profile:' "$TMP/stats.err" || true

# The same core through the whole pipeline: walk, index + roots + scan,
# dominators, report.
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
    /usr/bin/time -v -o "$TMP/time-dom.txt" "$HEAPDOM" dominators --profile --top 5 "$CORE" \
        >"$TMP/dom.out" 2>"$TMP/dom.err" || { cat "$TMP/dom.err" >&2; exit 1; }
    DWALL=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
              for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$TMP/time-dom.txt")
    DRSS=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time-dom.txt")
    echo "heapdom dominators wall time  $DWALL s, peak RSS $DRSS KiB (with the core's mapped pages)"
else
    "$HEAPDOM" dominators --profile --top 5 "$CORE" >"$TMP/dom.out" 2>"$TMP/dom.err" \
        || { cat "$TMP/dom.err" >&2; exit 1; }
fi
grep '^profile:' "$TMP/dom.err" | sed 's/^/dominators /'

# The same without DWARF typing, for the cost of typing.
"$HEAPDOM" dominators --profile --untyped --top 5 "$CORE" >/dev/null 2>"$TMP/dom-untyped.err" \
    || { cat "$TMP/dom-untyped.err" >&2; exit 1; }
grep '^profile:' "$TMP/dom-untyped.err" | sed 's/^/dominators --untyped /'

# The semantic tree (framework modules: glibc here), for its cost over the
# plain dominators.
if [ -x /usr/bin/time ] && /usr/bin/time -v true >/dev/null 2>&1; then
    /usr/bin/time -v -o "$TMP/time-sem.txt" "$HEAPDOM" dominators --semantic --profile --top 5 "$CORE" \
        >/dev/null 2>"$TMP/sem.err" || { cat "$TMP/sem.err" >&2; exit 1; }
    SWALL=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, p, ":"); s = 0;
              for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s }' "$TMP/time-sem.txt")
    SRSS=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$TMP/time-sem.txt")
    echo "heapdom dominators --semantic wall time  $SWALL s, peak RSS $SRSS KiB (with the core's mapped pages)"
else
    "$HEAPDOM" dominators --semantic --profile --top 5 "$CORE" >/dev/null 2>"$TMP/sem.err" \
        || { cat "$TMP/sem.err" >&2; exit 1; }
fi
grep '^profile:' "$TMP/sem.err" | sed 's/^/dominators --semantic /'

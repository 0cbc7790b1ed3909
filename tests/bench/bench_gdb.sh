#!/bin/sh
# bench_gdb.sh -- benchmark the gdb front-end at one stop (not a test: it
# prints figures and asserts nothing).
#
#   tests/bench/bench_gdb.sh [N]          N list blocks (default 1000000)
#
# Environment: HEAPDOM_PLUGIN (default gdb-plugin/heapdom.py), FIXTURE
# (default build/tests/fixtures/heap_fixture, else build/tests/heap_fixture;
# nothing is built here), HEAPDOM_LIB (passed on to the plugin: the
# libheapdom.so it loads; by default the plugin's ../build/core/libheapdom.so),
# GDB_MEMORY=0 skips the `set heapdom memory gdb` figures, KEEP=1 keeps the
# temp dir, INDEX_CACHE: which type index cache (docs/index-cache.md) the
# run has: `user` (default: the user's, whatever earlier runs left in it),
# `empty` (a new empty one: the first process ever on a machine, libc's
# DWARF read and the cache written) or `off` (HEAPDOM_INDEX_CACHE=0).
#
# Runs `FIXTURE TRUTH --blocks N` under gdb to hd_fixture_stop and times, with
# time.monotonic() around gdb.execute(..., to_string=True):
#   heap-dominators --top 5   cold (first command at the stop: memory, walk,
#                             graph, dominator tree, report; also the CPU
#                             time of gdb's process, all its threads, over
#                             it), then repeated at the same stop (the
#                             analysis is reused)
#   heap-stats                at the same stop, then cold after a register
#                             write discards the analysis, then warm
#   heap-dominators --top 5   after that cold heap-stats (graph built lazily?)
#   the same two cold, with `set heapdom memory gdb` (gdb's memory reads, the
#   gdbserver path)
# and prints gdb's peak RSS.
set -eu

N=${1:-1000000}
SRCDIR=$(CDPATH='' cd -- "$(dirname -- "$0")/../.." && pwd)
PLUGIN=${HEAPDOM_PLUGIN:-gdb-plugin/heapdom.py}
FIXTURE=${FIXTURE:-build/tests/fixtures/heap_fixture}

case $N in ''|*[!0-9]*) echo "bench_gdb.sh: N must be a number, got '$N'" >&2; exit 2;; esac
command -v gdb >/dev/null || { echo "bench_gdb.sh: gdb is required" >&2; exit 2; }
if [ ! -x "$FIXTURE" ]; then
    for f in build/tests/heap_fixture "$SRCDIR/build/tests/heap_fixture"; do
        if [ -x "$f" ]; then FIXTURE=$f; break; fi
    done
fi
[ -x "$FIXTURE" ] || { echo "bench_gdb.sh: no fixture at $FIXTURE (set FIXTURE; build with ninja -C build)" >&2; exit 2; }
[ -f "$PLUGIN" ] || PLUGIN=$SRCDIR/gdb-plugin/heapdom.py
[ -f "$PLUGIN" ] || { echo "bench_gdb.sh: no plugin at $PLUGIN (set HEAPDOM_PLUGIN)" >&2; exit 2; }
PLUGIN=$(CDPATH='' cd -- "$(dirname -- "$PLUGIN")" && pwd)/$(basename -- "$PLUGIN")

TMP=$(mktemp -d "${TMPDIR:-/tmp}/heapdom-bench-gdb.XXXXXX")
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT INT TERM

case ${INDEX_CACHE:-user} in
    user) ;;
    empty) mkdir -m 700 "$TMP/cache"; XDG_CACHE_HOME=$TMP/cache; export XDG_CACHE_HOME ;;
    off) HEAPDOM_INDEX_CACHE=0; export HEAPDOM_INDEX_CACHE ;;
    *) echo "bench_gdb.sh: INDEX_CACHE is user, empty or off, not '$INDEX_CACHE'" >&2; exit 2 ;;
esac

SCRIPT=$TMP/bench.gdb
{
    echo "set pagination off"
    echo "set confirm off"
    echo "source $PLUGIN"
    echo "break hd_fixture_stop"
    echo "python import time; _bench_t0 = time.monotonic()"
    echo "run"
    cat <<'EOF'
python
import os, resource, time

def _t(cmd):
    t0 = time.monotonic()
    out = gdb.execute(cmd, to_string=True)
    return time.monotonic() - t0, out

def _row(label, secs):
    print("  %-52s %9.3f s" % (label, secs))

print("BENCH reached the stop in %.1f s (fixture run under gdb)" % (time.monotonic() - _bench_t0))
print("BENCH")
_r0 = resource.getrusage(resource.RUSAGE_SELF)
secs, out = _t("heap-dominators --top 5")
_r1 = resource.getrusage(resource.RUSAGE_SELF)
print("BENCH " + out.splitlines()[0] if out else "BENCH (no output)")
_row("heap-dominators --top 5, cold (first at the stop)", secs)
_row("  its CPU time (user+sys, gdb's threads)",
     _r1.ru_utime - _r0.ru_utime + _r1.ru_stime - _r0.ru_stime)
warm = [_t("heap-dominators --top 5")[0] for _ in range(5)]
_row("heap-dominators --top 5, repeated (best of 5)", min(warm))
_row("heap-dominators --top 5, repeated (worst of 5)", max(warm))
_row("heap-stats at the same stop", _t("heap-stats")[0])
gdb.execute("set var $rax = $rax")          # discards the analysis
_row("heap-stats, cold (after a register write)", _t("heap-stats")[0])
_row("heap-stats, repeated", _t("heap-stats")[0])
_row("heap-dominators --top 5 after heap-stats", _t("heap-dominators --top 5")[0])
if os.environ.get("GDB_MEMORY", "1") != "0":
    gdb.execute("set heapdom memory gdb")
    gdb.execute("set var $rax = $rax")
    secs, out = _t("heap-stats --json")
    _row("heap-stats, cold, set heapdom memory gdb", secs)
    target = out.split('"target": "', 1)[1].split('"', 1)[0] if '"target": "' in out else "?"
    _row("heap-dominators --top 5 after it (memory gdb)", _t("heap-dominators --top 5")[0])
    print("BENCH   (memory gdb: target %r)" % target)
print("BENCH gdb peak RSS %.1f MiB" % (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
end
kill
EOF
} >"$SCRIPT"

echo "fixture: $FIXTURE --blocks $N"
echo "plugin:  $PLUGIN"
echo "index cache: ${INDEX_CACHE:-user}"
DEBUGINFOD_URLS='' gdb -q -nx -batch -x "$SCRIPT" --args "$FIXTURE" "$TMP/heap.truth" --blocks "$N" \
    >"$TMP/gdb.out" 2>"$TMP/gdb.err" || true
if ! grep -q '^BENCH gdb peak RSS' "$TMP/gdb.out"; then
    echo "bench_gdb.sh: the gdb script did not finish; stdout and stderr:" >&2
    tail -20 "$TMP/gdb.out" >&2
    tail -20 "$TMP/gdb.err" >&2
    exit 1
fi
BLOCKS=$(tail -n 1 "$TMP/heap.truth" | awk '$1 == "end" { print $2 + $3 }')
echo "blocks the fixture made: ${BLOCKS:-?} (incl. freed)"
sed -n 's/^BENCH //p; /^  .* s$/p' "$TMP/gdb.out"

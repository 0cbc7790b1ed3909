#!/bin/sh
# bench_musl.sh -- the musl (mallocng) heap walk against glibc's on the
# same program (not a test).
#
#   tests/bench/bench_musl.sh [N]     N list blocks (default 2000000)
#
# Builds one small program twice, with gcc (glibc malloc) and musl-gcc
# -static (mallocng): it allocates N list nodes of 24-64 bytes, frees every
# tenth, and stops; gdb's gcore saves each, and `heapdom stats --profile`
# reports the walk's time (for glibc it includes reading libc's DWARF, a
# fixed cost of ~0.2 s). Prints per allocator the blocks walked, the walk
# time, nanoseconds per block and the block table's bytes per block.
# Environment: HEAPDOM (default build/core/heapdom), TMPDIR, KEEP=1.
set -eu

N=${1:-2000000}
HEAPDOM=${HEAPDOM:-build/core/heapdom}
case $N in ''|*[!0-9]*) echo "bench_musl.sh: N must be a number" >&2; exit 2;; esac
[ -x "$HEAPDOM" ] || { echo "bench_musl.sh: no heapdom at $HEAPDOM" >&2; exit 2; }
command -v musl-gcc >/dev/null || { echo "bench_musl.sh: musl-gcc is required (musl-tools)" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/heapdom-bench-musl.XXXXXX")
cleanup() { [ "${KEEP:-0}" = 1 ] && echo "kept $TMP" || rm -rf "$TMP"; }
trap cleanup EXIT INT TERM

cat >"$TMP/list.c" <<'EOF'
#include <stdlib.h>
struct node { struct node *next; long v; };
struct node *g_list;
__attribute__((noinline)) void stop(void) { __asm__ volatile(""); }
int main(int argc, char **argv) {
  long n = atol(argv[1]);
  struct node **tail = &g_list, *drop = NULL;
  for (long i = 0; i < n; i++) {
    struct node *p = malloc(24 + (i * 7) % 41);
    p->v = i;
    if (i % 10 == 9) { p->next = drop; drop = p; continue; }
    *tail = p; tail = &p->next;
  }
  *tail = NULL;
  while (drop) { struct node *d = drop; drop = d->next; free(d); }
  stop();
  return 0;
}
EOF
gcc -g -O1 -o "$TMP/list_glibc" "$TMP/list.c"
musl-gcc -g -O1 -static -o "$TMP/list_musl" "$TMP/list.c"

for a in glibc musl; do
    gdb -q -nx -batch -ex 'break stop' -ex run -ex "gcore $TMP/$a.core" -ex kill \
        --args "$TMP/list_$a" "$N" >"$TMP/gdb-$a.log" 2>&1 || true
    [ -s "$TMP/$a.core" ] || { echo "bench_musl.sh: no core for $a" >&2; tail "$TMP/gdb-$a.log" >&2; exit 1; }
    "$HEAPDOM" stats --profile "$TMP/$a.core" >"$TMP/$a.out" 2>"$TMP/$a.err"
    # "profile: open S, walk S, ..." and "profile: N blocks, R M blocks/s
    # walked; block table B bytes/block; ..."
    grep '^profile:' "$TMP/$a.err" | awk -v a="$a" '
        / walk / { for (i = 1; i <= NF; i++) if ($i == "walk") w = $(i + 1) }
        /blocks\/s walked/ { n = $2; t = $0; sub(/.*block table /, "", t); sub(/;.*/, "", t) }
        END { printf "%-6s %9d blocks  walk %.3f s  %.0f ns/block  table %s\n", a, n, w, w * 1e9 / n, t }'
done

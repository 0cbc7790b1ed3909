#!/usr/bin/env python3
"""bench_allocators.py -- the heap walk of every allocator backend against
glibc's on the same program (issue 22; not a test).

    tests/bench/bench_allocators.py [--heapdom PATH] [--nodes N] [--runs R]
                                     [--keep]

Builds one ordinary program (a linked list of N nodes of 24-64 bytes,
every tenth freed; tests/bench/bench_musl.sh's) four times: gcc (glibc's
malloc), gcc -ljemalloc, gcc -lmimalloc, musl-gcc -static -- each
allocator that is installed. It runs each with N and N/10 nodes under gdb,
gcores it where it stops, and times `heapdom stats --profile CORE` R times
(the walk phase, best of R). Per allocator it prints the blocks walked, the
walk time, the nanoseconds per block all in (walk / blocks at N) and at the
margin ((walk(N) - walk(N/10)) / (blocks(N) - blocks(N/10)): fixed costs
such as reading libc's DWARF aside), and each one's ratio to glibc's.
Environment: TMPDIR (the cores: ~100 MiB each at N = 2M).
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

PROGRAM = r"""
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
"""

BUILDS = (("glibc", ["gcc", "-g", "-O1"], []),
          ("jemalloc", ["gcc", "-g", "-O1"], ["-ljemalloc"]),
          ("mimalloc", ["gcc", "-g", "-O1"], ["-lmimalloc"]),
          ("musl", ["musl-gcc", "-g", "-O1", "-static"], []))


def build(tmp, name, cc, libs):
    exe = os.path.join(tmp, "list_" + name)
    r = subprocess.run(cc + ["-o", exe, os.path.join(tmp, "list.c")] + libs,
                       capture_output=True, text=True)
    return exe if r.returncode == 0 else None


def gcore(exe, n, core):
    subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "break stop", "-ex", "run",
                    "-ex", "gcore " + core, "-ex", "kill", "--args", exe, str(n)],
                   capture_output=True, text=True, env=dict(os.environ, DEBUGINFOD_URLS=""))
    if not os.path.isfile(core) or not os.path.getsize(core):
        raise SystemExit("bench_allocators: gdb made no core of %s" % exe)


def walk(heapdom, core, runs):
    """(blocks, best and median walk seconds, the allocator named) of
    `stats --profile`."""
    times, blocks, name = [], None, None
    for _ in range(runs):
        r = subprocess.run([heapdom, "stats", "--profile", core], capture_output=True, text=True)
        if r.returncode != 0:
            raise SystemExit("bench_allocators: heapdom stats %s: %s" % (core, r.stderr[-500:]))
        m = re.search(r"^profile: open [\d.]+ s, walk ([\d.]+) s", r.stderr, re.M)
        b = re.search(r"^profile: (\d+) blocks", r.stderr, re.M)
        if not m or not b:
            raise SystemExit("bench_allocators: no walk profile in\n" + r.stderr[-800:])
        times.append(float(m.group(1)))
        blocks = int(b.group(1))
        a = re.search(r"^allocator: (\S+)", r.stdout, re.M)
        name = a.group(1).rstrip(",") if a else None
    return blocks, min(times), statistics.median(times), name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", default="build/core/heapdom")
    ap.add_argument("--nodes", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if not os.access(a.heapdom, os.X_OK):
        raise SystemExit("bench_allocators: no heapdom at %s" % a.heapdom)
    tmp = tempfile.mkdtemp(prefix="heapdom-bench-alloc.")
    try:
        with open(os.path.join(tmp, "list.c"), "w") as f:
            f.write(PROGRAM)
        rows = []
        small = max(a.nodes // 10, 1)
        for name, cc, libs in BUILDS:
            if not shutil.which(cc[0]):
                print("%-9s skipped: no %s" % (name, cc[0]))
                continue
            exe = build(tmp, name, cc, libs)
            if not exe:
                print("%-9s skipped: cannot link %s" % (name, " ".join(libs) or cc[0]))
                continue
            res = {}
            for n in (a.nodes, small):
                core = os.path.join(tmp, "%s-%d.core" % (name, n))
                gcore(exe, n, core)
                res[n] = walk(os.path.abspath(a.heapdom), core, a.runs)
                if res[n][3] != name:
                    raise SystemExit("bench_allocators: %s walked as %r" % (core, res[n][3]))
                if not a.keep:
                    os.unlink(core)
            (bn, tn, mn, _), (bs, ts, _, _) = res[a.nodes], res[small]
            allin = tn * 1e9 / bn
            margin = (tn - ts) * 1e9 / (bn - bs) if bn > bs else float("nan")
            rows.append((name, bn, tn, mn, allin, margin))
            sys.stdout.flush()
        base = {r[0]: r for r in rows}.get("glibc")
        print("N = %d nodes (and %d for the margin), best of %d walks" % (a.nodes, small, a.runs))
        print("%-9s %10s %9s %9s %10s %8s %10s %8s" % (
            "allocator", "blocks", "walk s", "median s", "ns/block", "x glibc", "margin ns", "x glibc"))
        for name, bn, tn, mn, allin, margin in rows:
            print("%-9s %10d %9.3f %9.3f %10.0f %8s %10.0f %8s" % (
                name, bn, tn, mn, allin, "%.2f" % (allin / base[4]) if base else "-",
                margin, "%.2f" % (margin / base[5]) if base and base[5] > 0 else "-"))
    finally:
        if a.keep:
            print("kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Time and peak memory of heapdom on each hostile heap (issue 21).

    hostile_bench.py --heapdom PATH [--hostile tests/synth/hostile.py]
                     [--workdir DIR]
                     [--cases a,b] [--versions 28,35] [--repeat 3]
                     [--extra N]

For each case tests/synth/hostile.py writes (on each glibc layout it
fits), and for the same process undamaged ("clean"), runs `heapdom
blocks --json`, `stats` and `leaks` and prints the best wall time of
--repeat runs and the peak resident memory of heapdom (GNU time's %M,
/usr/bin/time). A damaged heap should cost about what the
clean one does: the walker's loops are bounded by the blocks walked, the
arena ring by MAX_ARENAS, heap_info chains by the heaps seen, never by a
count or a list the damage wrote. --extra N grows every main heap by N
used chunks (1000000: a 48 MiB heap), to see that the cost follows the
heap's size, damaged or not. The figures are printed, not asserted
(docs/heap-walk.md records runs).
"""
import argparse
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(cmd, workdir):
    """(seconds, peak RSS in KiB, exit status) of one run. The peak is
    GNU time's %M: a child of Python would count the interpreter it was
    forked from."""
    out = os.path.join(workdir, "rss")
    t0 = time.perf_counter()
    rc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out] + cmd,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL).returncode
    secs = time.perf_counter() - t0
    with open(out) as f:
        kib = int(f.read().split()[-1])
    return secs, kib, rc


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--hostile", default=os.path.join(HERE, "..", "synth",
                                                      "hostile.py"))
    ap.add_argument("--workdir", default="/tmp/hostile-bench")
    ap.add_argument("--cases")
    ap.add_argument("--versions")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--extra", type=int, default=0)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    listing = subprocess.run([sys.executable, a.hostile, "--list"],
                             capture_output=True, text=True, check=True).stdout
    cases = [(l.split()[0], [int(v.split(".")[1]) for v in l.split()[1].split(",")])
             for l in listing.splitlines()]
    if a.cases:
        cases = [c for c in cases if c[0] in a.cases.split(",")]
    only = {int(v) for v in a.versions.split(",")} if a.versions else None
    minors = sorted({m for _, ms in cases for m in ms})
    rows = [("clean", m) for m in minors] + [(c, m) for c, ms in cases for m in ms]
    cmds = (["blocks", "--json"], ["stats"], ["leaks"])
    print("%-22s %-5s %9s" % ("case", "glibc", "core") +
          "".join(" %17s" % " ".join(c)[:17] for c in cmds))
    print("%-22s %-5s %9s" % ("", "", "MiB") +
          "".join(" %17s" % "ms  peak MiB" for _ in cmds))
    for case, minor in rows:
        if only and minor not in only:
            continue
        core = os.path.join(a.workdir, "%s-2.%d.core" % (case, minor))
        gen = [sys.executable, a.hostile, "--version", "2.%d" % minor,
               "--case", case, "--extra", str(a.extra), core]
        if case == "clean":
            gen = [sys.executable, a.hostile, "--version", "2.%d" % minor,
                   "--clean", "--extra", str(a.extra), core]
        subprocess.run(gen, check=True)
        line = "%-22s 2.%-3d %9.1f" % (case, minor,
                                       os.path.getsize(core) / 2**20)
        for cmd in cmds:
            best, rss, rc = None, 0, 0
            for _ in range(a.repeat):
                secs, kib, rc = measure([a.heapdom] + cmd + [core], a.workdir)
                best = secs if best is None else min(best, secs)
                rss = max(rss, kib)
            line += " %8.0f %6.1f%s" % (best * 1000, rss / 1024,
                                        "" if rc == 0 else "!%d" % rc)
        print(line, flush=True)
        os.unlink(core)
        os.unlink(core + ".json")


if __name__ == "__main__":
    main()

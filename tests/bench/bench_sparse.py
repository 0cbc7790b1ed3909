#!/usr/bin/env python3
"""Benchmark (issue 21): `heapdom leaks` on a live process holding memory it
never touched, in each front-end. Prints figures; asserts nothing (the
verdicts are checked by tests/integration/test_sparse.py).

    bench_sparse.py --heapdom PATH --lib LIBHEAPDOM --fixture live_fixture
        --gdb-plugin PATH [--lldb-plugin PATH] [--mib 4096] [--full]

The fixture runs twice: with --big MIB (a malloc'd block and an anonymous
mapping of MIB MiB each, never touched but for one pointer) and without
(the same program otherwise: the baseline). For each front-end the wall
time of the whole command (the debugger's attach included) is printed for
both, and their difference: what the untouched memory costs. --full adds
the runs with HEAPDOM_SPARSE=0 (every byte read: minutes through lldb's SB
API for 4 GiB).
"""
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import heaptest  # noqa: E402


def start(fixture, truth, args):
    try:
        return heaptest.start_live_fixture(fixture, truth, args)
    except heaptest.HarnessError as e:
        sys.exit(str(e))


def main():
    ap = heaptest.live_arguments(workdir=False)
    ap.add_argument("--mib", type=int, default=4096)
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    def argv(front, pid):
        if front == "cli":
            return [a.heapdom, "leaks", "--pid", str(pid)]
        if front.startswith("gdb"):
            mode = front.split()[1]
            return ["gdb", "-batch", "-nx", "-ex", "source " + a.gdb_plugin,
                    "-ex", "set heapdom memory " + mode, "-ex", "attach %d" % pid,
                    "-ex", "heap-leaks", "-ex", "detach"]
        return [shutil.which("lldb-14") or "lldb-14", "-x", "-b", "-o",
                "plugin load " + a.lldb_plugin, "-o", "process attach -p %d" % pid,
                "-o", "heapdom leaks", "-o", "detach"]

    def run(front, pid, sparse):
        env = heaptest.debugger_env(sparse, HEAPDOM_LIB=a.lib)
        if front == "lldb sb":
            env["HEAPDOM_LLDB_MEMORY"] = "lldb"
        best = None
        for _ in range(a.repeat if sparse else 1):
            t0 = time.monotonic()
            r = subprocess.run(argv(front, pid), capture_output=True, text=True,
                               env=env, stdin=subprocess.DEVNULL)
            secs = time.monotonic() - t0
            if r.returncode != 0 or "leaked" not in r.stdout:
                return "failed (rc %d)" % r.returncode
            best = secs if best is None else min(best, secs)
        return best

    fronts = ["cli", "gdb proc", "gdb gdb"]
    if a.lldb_plugin:
        fronts += ["lldb proc", "lldb sb"]
    work = "/tmp/bench_sparse.%d" % os.getpid()
    big = start(a.fixture, work + ".big", ["--big", str(a.mib)])
    base = start(a.fixture, work + ".base", [])
    try:
        print("heapdom leaks on a live process with a %d MiB block and a %d MiB mapping "
              "never touched (best of %d; whole command, attach included)"
              % (a.mib, a.mib, a.repeat))
        print("%-10s %10s %10s %10s%s" % ("front-end", "baseline", "untouched", "cost",
                                          "   HEAPDOM_SPARSE=0" if a.full else ""))
        for f in fronts:
            b = run(f, base.pid, True)
            s = run(f, big.pid, True)
            full = run(f, big.pid, False) if a.full else None
            fmt = lambda v: ("%9.2fs" % v) if isinstance(v, float) else "%10s" % v
            cost = fmt(s - b) if isinstance(s, float) and isinstance(b, float) else "%10s" % "-"
            print("%-10s %s %s %s%s" % (f, fmt(b), fmt(s), cost,
                                        ("   " + fmt(full)) if a.full else ""))
            sys.stdout.flush()
    finally:
        for p in (big, base):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        for s in (".big", ".base"):
            if os.path.exists(work + s):
                os.unlink(work + s)


if __name__ == "__main__":
    main()

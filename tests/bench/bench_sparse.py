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

Then the same on cores of both processes (gdb's gcore, which writes the
zeros out, made sparse in place with `fallocate --dig-holes`, as the kernel
writes them): the CLI and gdb open the core file themselves; lldb reads
through its API, and the library finds the core among lldb's files to skip
its holes. --no-cores leaves them out (gcore writes 2 x MIB MiB).

The bound: the untouched memory may cost at most --bound seconds (1 by
default) in each line; the last line says whether every line kept it, and
the exit status is 1 if one did not.
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
    ap.add_argument("--bound", type=float, default=1.0)
    ap.add_argument("--no-cores", action="store_true")
    a = ap.parse_args()

    def argv(front, pid):
        if isinstance(pid, str):  # a core file
            if front == "cli core":
                return [a.heapdom, "leaks", pid, "--exe", a.fixture]
            if front == "gdb core":
                return ["gdb", "-batch", "-nx", "-ex", "source " + a.gdb_plugin,
                        "-ex", "file " + a.fixture, "-ex", "core-file " + pid,
                        "-ex", "heap-leaks"]
            return [shutil.which("lldb-14") or "lldb-14", "-x", "-b", "-o",
                    "plugin load " + a.lldb_plugin, "-o",
                    "target create -c %s %s" % (pid, a.fixture), "-o", "heapdom leaks"]
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
        over = []

        def line(f, b_target, s_target):
            b = run(f, b_target, True)
            s = run(f, s_target, True)
            full = run(f, s_target, False) if a.full else None
            fmt = lambda v: ("%9.2fs" % v) if isinstance(v, float) else "%10s" % v
            ok = isinstance(s, float) and isinstance(b, float)
            cost = fmt(s - b) if ok else "%10s" % "-"
            if not ok or s - b > a.bound:
                over.append(f)
            print("%-10s %s %s %s%s" % (f, fmt(b), fmt(s), cost,
                                        ("   " + fmt(full)) if a.full else ""))
            sys.stdout.flush()

        for f in fronts:
            line(f, base.pid, big.pid)
        if not a.no_cores:
            cores = []
            for p, name in ((base, ".base.core"), (big, ".big.core")):
                c = work + name
                subprocess.run(["gdb", "-batch", "-nx", "-ex", "attach %d" % p.pid,
                                "-ex", "gcore " + c, "-ex", "detach"],
                               capture_output=True, stdin=subprocess.DEVNULL)
                subprocess.run(["fallocate", "--dig-holes", c], check=True)
                cores.append(c)
            st = os.stat(cores[1])
            print("cores (gcore, holes dug): %.1f MiB on disk of %.1f MiB"
                  % (st.st_blocks * 512 / 1048576, st.st_size / 1048576))
            core_fronts = ["cli core", "gdb core"] + (["lldb core"] if a.lldb_plugin else [])
            for f in core_fronts:
                line(f, cores[0], cores[1])
        print("bound %.2f s on the cost: %s" % (
            a.bound, "kept by every line" if not over else "exceeded by " + ", ".join(over)))
        return 1 if over else 0
    finally:
        for p in (big, base):
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        for s in (".big", ".base", ".big.core", ".base.core"):
            if os.path.exists(work + s):
                os.unlink(work + s)


if __name__ == "__main__":
    sys.exit(main())

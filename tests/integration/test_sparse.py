#!/usr/bin/env python3
"""heapdom integration test: never read what was never populated (issue 21).

    test_sparse.py --heapdom PATH --lib LIBHEAPDOM --fixture live_fixture
        --gdb-plugin PATH [--lldb-plugin PATH] --workdir DIR [--mib N]

live_fixture --big N keeps a malloc'd block of N MiB and an anonymous
mapping of N MiB, both never touched but for one pointer in their middle
(to "hidden" and "mapheld", blocks only those pointers keep), a list, and a
leaked block; its truth file records them. Every front-end analyses it:
the CLI (--pid), gdb (memory through /proc and through gdb), lldb (through
/proc and through the SB API). For each:

  - the verdicts are the fixture's: exactly its leaked block leaked;
    hidden, mapheld and the list held; the big block used, with its size;
  - the verdicts (leaked set, big block's state and size) are the same
    with skipping on and with HEAPDOM_SPARSE=0 (every byte read);
  - with skipping on, the analysis leaves the big block's pages untouched
    (read from /proc/PID/pagemap by this script: reading a page through
    /proc/PID/mem or a debugger maps it); with HEAPDOM_SPARSE=0 the CLI
    does map them (the check can fail);
  - the CLI's --profile says the never-populated words were skipped, and
    none with HEAPDOM_SPARSE=0.

Then a core (gdb's gcore, which writes the zeros out) and a sparse copy of
it (cp --sparse=always: the zero blocks become holes, as in a core the
kernel writes): the same verdicts as the live process, with and without
skipping, and the sparse copy's words skipped. The same cores in lldb 14,
whose API does not give the core's path: the library finds the file among
lldb's own (--profile names it) and skips the sparse copy's holes; with the
file removed after loading, or two copies loaded, it says so and reads
every byte through lldb; the verdicts are the fixture's every time.

Exit status 0 when every check passed; the last line is "N passed, N failed".
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
parse_truth = heaptest.parse_live_truth
start_fixture = heaptest.start_live_fixture


def touched_pages(pid, start, size):
    """Pages of [start, start + size) with a page table entry (present or
    swapped): those the process or a reader mapped."""
    n = 0
    with open("/proc/%d/pagemap" % pid, "rb") as f:
        first, last = start // PAGE, (start + size - 1) // PAGE
        p = first
        while p <= last:
            k = min(65536, last - p + 1)
            f.seek(p * 8)
            data = f.read(k * 8)
            for i in range(0, len(data), 8):
                e = int.from_bytes(data[i:i + 8], "little")
                if e >> 62:
                    n += 1
            p += k
    return n


env_for = heaptest.debugger_env


class Test(heaptest.LiveTest):
    # -------------------------------------------------------- front-ends
    def cli(self, target, out, sparse, extra=()):
        r = subprocess.run([self.a.heapdom, "leaks"] + list(target) +
                           ["--json", "--profile", "--output", out + ".leaks"]
                           + list(extra), capture_output=True, text=True,
                           env=env_for(sparse), timeout=900)
        r2 = subprocess.run([self.a.heapdom, "blocks"] + list(target) +
                            ["--json", "--output", out + ".blocks"],
                            capture_output=True, text=True, env=env_for(sparse), timeout=900)
        return r.returncode or r2.returncode, r.stderr + r2.stderr

    def gdb(self, pid, out, sparse, mode):
        cmds = ["source " + self.a.gdb_plugin, "set heapdom memory " + mode,
                "attach %d" % pid, "heap-leaks --json --output " + out + ".leaks",
                "heap-blocks --json --output " + out + ".blocks", "detach"]
        argv = ["gdb", "-batch", "-nx"]
        for c in cmds:
            argv += ["-ex", c]
        env = env_for(sparse)
        env["HEAPDOM_LIB"] = self.a.lib
        r = subprocess.run(argv, capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL, timeout=900)
        return r.returncode, r.stdout[-2000:] + r.stderr[-2000:]

    def lldb(self, pid, out, sparse, mode):
        cmds = ["plugin load " + self.a.lldb_plugin, "process attach -p %d" % pid,
                "heapdom leaks --json --output " + out + ".leaks",
                "heapdom blocks --json --output " + out + ".blocks", "detach"]
        argv = [shutil.which("lldb-14") or "lldb-14", "-x", "-b"]
        for c in cmds:
            argv += ["-o", c]
        env = env_for(sparse)
        if mode == "lldb":
            env["HEAPDOM_LLDB_MEMORY"] = "lldb"
        r = subprocess.run(argv, capture_output=True, text=True, env=env,
                           stdin=subprocess.DEVNULL, timeout=900)
        return r.returncode, r.stdout[-2000:] + r.stderr[-2000:]

    # ----------------------------------------------------------- verdicts
    def verdict(self, out, what, log):
        try:
            with open(out + ".leaks") as f:
                leaks = json.load(f)
            with open(out + ".blocks") as f:
                blocks = json.load(f)
        except (OSError, ValueError) as e:
            self.check(False, what + ": no JSON output (%s)" % e, log)
            return None
        big = self.truth["big"][0]
        bigb = [b for b in blocks["blocks"] if int(b["addr"], 16) == big]
        return {
            "leaked": sorted(int(b["addr"], 16) for b in leaks["leaks"]),
            "big": (bigb[0]["state"], bigb[0]["size"]) if bigb else None,
            "problems": len(blocks.get("problems", [])),
        }

    def check_truth(self, v, what):
        t = self.truth
        self.check(v["leaked"] == [t["leak"]], what + ": leaked blocks %s, the fixture leaked 0x%x"
                   % ([hex(x) for x in v["leaked"]], t["leak"]))
        for name in ("hidden", "mapheld", "list"):
            self.check(t[name] not in v["leaked"], what + ": %s 0x%x reported leaked"
                       % (name, t[name]))
        size = t["big"][1]
        self.check(v["big"] is not None and v["big"][0] == "used" and v["big"][1] >= size
                   and v["big"][1] < size + PAGE,
                   what + ": the never-touched block 0x%x of %d bytes is %s"
                   % (t["big"][0], size, v["big"]))

    def skipped_words(self, stderr):
        for line in stderr.splitlines():
            if " words never populated, skipped" in line:
                w = line.split(" words never populated, skipped")[0].split("(")[-1]
                return int(w)
        return None

    # ------------------------------------------------------- lldb on cores
    def lldb_on_core(self, cores, out, sparse, before=()):
        """lldb-14 with each of cores loaded (the last one selected), then
        heapdom leaks --profile and blocks; before: lldb commands run
        after loading."""
        cmds = ["plugin load " + self.a.lldb_plugin]
        cmds += ["target create -c %s %s" % (c, self.a.fixture) for c in cores]
        cmds += list(before)
        cmds += ["heapdom leaks --json --profile --output " + out + ".leaks",
                 "heapdom blocks --json --output " + out + ".blocks"]
        for ext in (".leaks", ".blocks"):
            if os.path.exists(out + ext):
                os.unlink(out + ext)
        argv = [shutil.which("lldb-14") or "lldb-14", "-x", "-b"]
        for c in cmds:
            argv += ["-o", c]
        t0 = time.monotonic()
        r = subprocess.run(argv, capture_output=True, text=True, env=env_for(sparse),
                           stdin=subprocess.DEVNULL, timeout=900)
        print("  %-22s %-6s %.2f s" % ("lldb " + os.path.basename(cores[-1]),
                                       "sparse" if sparse else "full", time.monotonic() - t0))
        return r.returncode, r.stdout[-4000:] + r.stderr[-2000:]

    def other_core(self):
        """A core of another live_fixture process (its own pid and threads)."""
        truth = self.path("other.truth")
        other = self.path("other.core")
        proc = start_fixture(self.a.fixture, truth, [])
        try:
            subprocess.run(["gdb", "-batch", "-nx", "-ex", "attach %d" % proc.pid,
                            "-ex", "gcore " + other, "-ex", "detach"],
                           capture_output=True, text=True, env=env_for(True),
                           stdin=subprocess.DEVNULL, timeout=900)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if not os.path.exists(other):
            self.check(False, "gcore of a second fixture failed")
            return None
        return other

    def sparse_source(self, log):
        for line in log.splitlines():
            if line.startswith("profile: never-populated memory: "):
                return line[len("profile: never-populated memory: "):]
        return None

    def lldb_core(self, core, sparse_core, holes):
        """lldb 14 does not give the core's path: the library finds the file
        among lldb's own and skips its holes (the sparse copy), reading the
        rest through lldb; the verdicts are the fixture's and the CLI's."""
        big = self.truth["big"][1]
        for name, path in (("core", core), ("sparse core", sparse_core)):
            results = {}
            for sparse in (True, False):
                what = "lldb on the %s (skipping %s)" % (name, "on" if sparse else "off")
                out = self.path("lldb_%s.%s" % (name.replace(" ", "_"), sparse))
                rc, log = self.lldb_on_core([path], out, sparse)
                self.check(rc == 0, what + ": exit status %d" % rc, log)
                v = self.verdict(out, what, log)
                if not v:
                    continue
                self.check_truth(v, what)
                results[sparse] = v
                w = self.skipped_words(log)
                src = self.sparse_source(log) or ""
                if sparse:
                    self.check(src.startswith("core holes (%s," % path),
                               what + ": the core file lldb loaded was not found: %s" % src, log)
                if name == "sparse core" and sparse and holes:
                    self.check(w is not None and w >= big // 8,
                               what + ": %s words skipped, the core has %d in holes"
                               % (w, big // 8), log)
                else:
                    self.check(w == 0, what + ": %s words skipped in a file without holes "
                               "or with skipping off" % w, log)
            if len(results) == 2:
                self.check(results[True] == results[False],
                           "lldb on the %s: verdicts differ with and without skipping: %s / %s"
                           % (name, results[True], results[False]))
                if self.live_verdict:
                    self.check(results[True]["leaked"] == self.live_verdict["leaked"],
                               "lldb on the %s: leaked %s, live %s"
                               % (name, results[True]["leaked"], self.live_verdict["leaked"]))
        # Fallbacks, each said in --profile, every byte read through lldb:
        # the file lldb loaded removed (its mapping remains, its path
        # leads nowhere), and two cores of the same memory loaded at once.
        # A core of another process loaded before: refused (its threads
        # differ), so the fixture's is still the one match.
        other = self.other_core()
        if other:
            what = "lldb with another process's core loaded first"
            out = self.path("lldb_other")
            rc, log = self.lldb_on_core([other, sparse_core], out, True)
            self.check(rc == 0, what + ": exit status %d" % rc, log)
            v = self.verdict(out, what, log)
            if v:
                self.check_truth(v, what)
            src = self.sparse_source(log) or ""
            self.check(src.startswith("core holes (%s," % sparse_core),
                       what + ": --profile says %r" % src, log)
            os.unlink(other)
        gone = self.path("gone.core")
        shutil.copyfile(sparse_core, gone)
        for what, cores, before, says in (
                ("lldb on a core removed after loading", [gone],
                 ["platform shell rm " + gone],
                 "none: the debugger does not say which core file it loaded"),
                ("lldb with the core and its sparse copy loaded", [core, sparse_core], [],
                 "none: two core files loaded in this process match the target")):
            out = self.path("lldb_fallback")
            rc, log = self.lldb_on_core(cores, out, True, before)
            self.check(rc == 0, what + ": exit status %d" % rc, log)
            v = self.verdict(out, what, log)
            if v:
                self.check_truth(v, what)
            src = self.sparse_source(log) or ""
            self.check(src.startswith(says), what + ": --profile says %r" % src, log)
            self.check(self.skipped_words(log) == 0, what + ": words skipped", log)
        if os.path.exists(gone):
            os.unlink(gone)

    def run(self):
        a = self.a
        truth_p = self.path("truth")
        proc = start_fixture(a.fixture, truth_p, ["--big", str(a.mib)])
        try:
            self.truth = parse_truth(truth_p)
            self.live_verdict = None
            if not a.cores_only:
                self.live(proc.pid)
            self.core(proc.pid)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def fronts(self):
        f = [("cli", None), ("gdb proc", "proc"), ("gdb gdb", "gdb")]
        if self.a.lldb_plugin:
            f += [("lldb proc", "proc"), ("lldb sb", "lldb")]
        return f

    def analyse(self, front, mode, pid, sparse):
        out = self.path("%s.%s" % (front.replace(" ", "_"), "sparse" if sparse else "full"))
        for ext in (".leaks", ".blocks"):
            if os.path.exists(out + ext):
                os.unlink(out + ext)
        t0 = time.monotonic()
        if front == "cli":
            rc, log = self.cli(["--pid", str(pid)], out, sparse)
        elif front.startswith("gdb"):
            rc, log = self.gdb(pid, out, sparse, mode)
        else:
            rc, log = self.lldb(pid, out, sparse, mode)
        secs = time.monotonic() - t0
        print("  %-10s %-6s %.2f s" % (front, "sparse" if sparse else "full", secs))
        self.check(rc == 0, "%s (%s): exit status %d" % (front, "sparse" if sparse else "full", rc), log)
        return self.verdict(out, front, log), log

    def live(self, pid):
        big, size = self.truth["big"]
        mp, msize = self.truth["map"]
        before = touched_pages(pid, big, size), touched_pages(pid, mp, msize)
        self.check(before[0] <= 3 and before[1] <= 2,
                   "the fixture's big block and mapping should be untouched but for a page "
                   "or two: %s pages" % (before,))
        sparse = {}
        for front, mode in self.fronts():
            v, log = self.analyse(front, mode, pid, True)
            if v:
                self.check_truth(v, front)
                sparse[front] = v
            if front == "cli":
                w = self.skipped_words(log)
                self.check(w is not None and w >= (size + msize) // 8 - 2 * PAGE,
                           "cli: --profile says %s words skipped, the fixture has %d never touched"
                           % (w, (size + msize) // 8), log)
            now = touched_pages(pid, big, size), touched_pages(pid, mp, msize)
            self.check(now == before, "%s: the analysis touched the never-populated pages "
                       "(%s pages mapped, %s before)" % (front, now, before))
        for front, mode in self.fronts():
            v, log = self.analyse(front, mode, pid, False)
            if front == "cli":
                w = self.skipped_words(log)
                self.check(w == 0, "cli with HEAPDOM_SPARSE=0: %s words skipped" % w, log)
                # Reading everything maps every page: what skipping avoids.
                self.check(touched_pages(pid, big, size) > size // PAGE // 2,
                           "cli with HEAPDOM_SPARSE=0 did not map the block's pages: "
                           "the pagemap check above proves nothing")
            if v and front in sparse:
                self.check(v == sparse[front], "%s: verdicts differ without skipping: %s, with: %s"
                           % (front, v, sparse[front]))
        self.live_verdict = sparse.get("cli")

    def core(self, pid):
        core = self.path("fixture.core")
        sparse_core = self.path("fixture.sparse.core")
        for p in (core, sparse_core):
            if os.path.exists(p):
                os.unlink(p)
        r = subprocess.run(["gdb", "-batch", "-nx", "-ex", "attach %d" % pid,
                            "-ex", "gcore " + core, "-ex", "detach"],
                           capture_output=True, text=True, env=env_for(True),
                           stdin=subprocess.DEVNULL, timeout=900)
        if not os.path.exists(core):
            self.check(False, "gcore failed", r.stdout + r.stderr)
            return
        subprocess.run(["cp", "--sparse=always", core, sparse_core], check=True)
        st = os.stat(sparse_core)
        holes = st.st_blocks * 512 < st.st_size - self.truth["big"][1]
        try:
            for name, path in (("core", core), ("sparse core", sparse_core)):
                results = {}
                for sparse in (True, False):
                    out = self.path("%s.%s" % (name.replace(" ", "_"), sparse))
                    rc, log = self.cli([path, "--exe", self.a.fixture], out, sparse)
                    self.check(rc == 0, "%s: exit status %d" % (name, rc), log)
                    v = self.verdict(out, name, log)
                    if not v:
                        continue
                    self.check_truth(v, name)
                    results[sparse] = v
                    w = self.skipped_words(log)
                    if name == "sparse core" and sparse and holes:
                        self.check(w is not None and w >= self.truth["big"][1] // 8,
                                   "sparse core: %s words skipped" % w, log)
                    if name == "core" or not sparse:
                        self.check(w == 0, "%s (skipping %s): %s words skipped in a file "
                                   "without holes" % (name, sparse, w), log)
                if len(results) == 2:
                    self.check(results[True] == results[False],
                               "%s: verdicts differ with and without skipping: %s / %s"
                               % (name, results[True], results[False]))
                    if self.live_verdict:
                        self.check(results[True]["leaked"] == self.live_verdict["leaked"],
                                   "%s: leaked %s, live %s" % (name, results[True]["leaked"],
                                                               self.live_verdict["leaked"]))
            if self.a.lldb_plugin:
                self.lldb_core(core, sparse_core, holes)
            if not holes:
                print("  note: this file system kept no holes in the sparse copy")
        finally:
            for p in (core, sparse_core):
                if os.path.exists(p):
                    os.unlink(p)


def main():
    ap = heaptest.live_arguments()
    ap.add_argument("--mib", type=int, default=256)
    ap.add_argument("--cores-only", action="store_true",
                    help="only the core cases (for a quicker run by hand)")
    a = ap.parse_args()
    t = Test(a)
    try:
        t.run()
    except Exception as e:  # a crash of the test itself is a failure
        import traceback
        traceback.print_exc()
        t.check(False, "test raised %s" % e)
    print("%d passed, %d failed" % (t.passed, t.failed))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())

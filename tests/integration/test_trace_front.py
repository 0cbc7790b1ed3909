#!/usr/bin/env python3
"""heapdom integration test: the tracer's reports and the debugger commands
of issue 8 — `heapdom trace`, `heap-trace start|on|off|epoch|report` in gdb
and lldb, `heap-watch` — against the fixtures' ground truth.

    test_trace_front.py --heapdom PATH --lib LIBHEAPDOM --trace-lib PATH
        --trace-fixture PATH --growth-fixture PATH --gdb-plugin PATH
        [--lldb-plugin PATH] --workdir DIR [--only a,b,...]

Cases:
  a core     (also: `heapdom blocks`, `leaks` and `why` on the core name
             every block's site and birth epoch as the fixture recorded them,
             and exactly the fixture's leaked blocks, by site)
             trace_fixture under LD_PRELOAD (HEAPDOM_TRACE=1), stopped by gdb
             at exit, after it dumped the tracer's table (d1 of its truth):
             `heap-trace report --json --all` in gdb and `heapdom trace CORE
             --json --all` on the core gdb saved there both report exactly
             d1: every site pc with its counts and bytes per op, calls per
             op, size classes, ages; every site inside a site function of
             the fixture is named with that function and trace_fixture.c
             (the function's extent from the fixture's symbol table); the
             blocks the fixture left allocated are live at their site with
             their birth epoch; the text reports name the site functions
  b lldb     the same report from `heapdom trace report` in lldb, with the
             fixture's --big blocks (4 GiB: sizes past 32 bits in their
             tags; not in case a, whose core would hold them)
  c inject   the fixture without LD_PRELOAD, stopped at hd_inject_point:
             gdb's `heap-trace start` loads the tracer and switches it on
             (no gdb inferior call: they fail on this machine), `heap-trace
             epoch` advances the epoch; the report at exit equals the
             fixture's d1; `heap-trace off` then `on` round-trips
  e lldb inject  the same as c with lldb's `heapdom trace start` (lldb's
             expression evaluator calls dlopen and the injector)
  f lldb watch   d with lldb's `heapdom watch` (alias heap-watch)
  g snapshot diff  gdb's heap-snapshot at both stops of growth_fixture and
             heap-diff of the two files (after the process is gone) give
             exactly the fixture's growth
  d watch    growth_fixture: `heap-watch hd_fixture_stop` records a snapshot
             at each of its two stops and goes on; `heap-watch report
             --json` shows exactly the growth the fixture recorded (the
             snapshot test's checks)
  h watch threaded  d on growth_fixture --thread (two threads at each stop),
             the tracer injected at main by `heap-trace start`, then
             `continue`: both stops recorded (gdb runs a breakpoint's stop()
             before the other threads are stopped: the snapshot is taken by
             the breakpoint's commands), the exact growth, one epoch per hit
  i start refused  gdb's `heap-trace start` stopped in the middle of main
             and at an inlined function's start: refused both times, the
             tracer not loaded
  j watch deleted  a watch whose breakpoint gdb's `delete` removed: listed
             as such, `heap-watch delete` still removes it
  k lldb quit  issue 18: lldb's `heapdom trace start`, at exit
             `heapdom trace report`, then quit with the process still there,
             four times: lldb exits 0 every time, with no crash (lldb 14
             crashed at quit about one run in five: a heapdom thread still
             reading libc's DWARF ran on while the plugin was unloaded; the
             deterministic check is the unit test `threads`)
Exit status 0 when every case passed; the last line is "N passed, N failed".
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "trace"))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402
import test_snapshot  # noqa: E402
import test_trace  # noqa: E402

OPS = ("malloc", "calloc", "realloc", "memalign", "free")
LLDB_PYTHON = "/usr/lib/llvm-14/lib/python3.11/dist-packages"


def check_report(doc, truth, ext, label):
    """The reader's JSON against the fixture's final dump d1."""
    p = []
    d1 = truth.dumps["d1"]
    tr = doc.get("tracer", {})
    if tr.get("epoch") != d1.state["epoch"]:
        p.append("%s: epoch %s, dump %s" % (label, tr.get("epoch"), d1.state["epoch"]))
    calls = [tr["calls"][op]["count"] for op in OPS]
    if calls != d1.calls:
        p.append("%s: calls %s, dump %s" % (label, calls, d1.calls))
    sites = {int(s["pc"], 16): s for s in doc["sites"]}
    if set(sites) != set(d1.sites):
        p.append("%s: %d sites, dump has %d (only in report: %s; only in dump: %s)"
                 % (label, len(sites), len(d1.sites),
                    [hex(x) for x in sorted(set(sites) - set(d1.sites))][:5],
                    [hex(x) for x in sorted(set(d1.sites) - set(sites))][:5]))
    for pc, (counts, nbytes) in d1.sites.items():
        s = sites.get(pc)
        if not s:
            continue
        got_c = [s["ops"][op]["count"] for op in OPS]
        got_b = [s["ops"][op]["bytes"] for op in OPS]
        if got_c != counts or got_b != nbytes:
            p.append("%s: site 0x%x counts %s bytes %s, dump %s %s"
                     % (label, pc, got_c, got_b, counts, nbytes))
        fn = test_trace.fn_of(ext, pc)
        if fn and (s["function"] != fn or not (s["file"] or "").endswith("trace_fixture.c")
                   and not (s["file"] or "").endswith("trace_fixture_cxx.cpp")
                   or not s["line"]):
            p.append("%s: site 0x%x in %s is named %s (%s:%s)"
                     % (label, pc, fn, s["function"], s["file"], s["line"]))
    classes = {(c["min"], c["max"]): (c["count"], c["bytes"]) for c in doc["sizes"]}
    want = {}
    for k, v in d1.classes.items():
        if v[0]:
            lo = 0 if k == 0 else 1 << (k - 1)
            hi = 0 if k == 0 else (1 << k) - 1
            want[(lo, hi)] = v
    if classes != want:
        p.append("%s: size classes differ from the dump" % label)
    ages = {a["age"]: (a["count"], a["bytes"]) for a in doc["ages"]}
    if ages != {k: v for k, v in d1.ages.items() if v[0]}:
        p.append("%s: ages %s, dump %s" % (label, ages, d1.ages))
    # The blocks the fixture left allocated: live at their site function,
    # counted in their birth epoch.
    by_fn = {}
    for ptr, size, fn, birth in truth.live:
        by_fn.setdefault(fn, [0, 0])
        by_fn[fn][0] += 1
        by_fn[fn][1] += size
    got_fn = {}
    for pc, s in sites.items():
        fn = test_trace.fn_of(ext, pc)
        if fn:
            got_fn.setdefault(fn, [0, 0])
            got_fn[fn][0] += s["live"]["count"]
            got_fn[fn][1] += s["live"]["bytes"]
    # Every site function of the fixture: exactly its blocks left allocated
    # (site_stale's were freed while tracing was off: their tags went
    # with their memory).
    for fn in ext:
        if got_fn.get(fn, [0, 0]) != by_fn.get(fn, [0, 0]):
            p.append("%s: live at %s: %s, truth %s" % (label, fn, got_fn.get(fn),
                                                       by_fn.get(fn, [0, 0])))
    births = {}
    for ptr, size, fn, birth in truth.live:
        births[birth] = births.get(birth, 0) + 1
    got_births = {b["epoch"]: b["count"] for b in doc["live_by_birth"]}
    for b, n in births.items():
        if got_births.get(b, 0) < n:
            p.append("%s: %d live blocks born in epoch %d, report has %s"
                     % (label, n, b, got_births.get(b)))
    return p


def site_fn(ext, site):
    """The fixture function a report's "site" object lies in, or None."""
    if not site or not site.get("pc"):
        return None
    return test_trace.fn_of(ext, int(site["pc"], 16))


def check_blocks(doc, truth, ext, label):
    """`heapdom blocks --json`: every block the fixture left allocated has
    the site and birth epoch the fixture recorded."""
    p = []
    if not doc.get("tracer") or "epoch" not in doc["tracer"]:
        return ["%s: blocks report has no tracer: %r" % (label, doc.get("tracer"))]
    blocks = {int(b["addr"], 16): b for b in doc["blocks"]}
    for ptr, size, fn, birth in truth.live:
        b = blocks.get(ptr)
        if not b or b["state"] != "used":
            p.append("%s: no used block at 0x%x (%s)" % (label, ptr, fn))
            continue
        got = site_fn(ext, b.get("site"))
        if got != fn or b["site"].get("birth") != birth:
            p.append("%s: block 0x%x allocated at %s in epoch %d, report says %s / %r"
                     % (label, ptr, fn, birth, got, b.get("site")))
    return p


def check_leaks(doc, truth, ext, label):
    """`heapdom leaks --json`: exactly the fixture's leaked blocks among
    its live ones, each at its site, and grouped by site."""
    p = []
    if not truth.leaks:
        return ["%s: the fixture recorded no leaked blocks" % label]
    leaks = {int(b["addr"], 16): b for b in doc["leaks"]}
    live = {ptr: (fn, birth) for ptr, size, fn, birth in truth.live}
    for ptr, (fn, birth) in live.items():
        b = leaks.get(ptr)
        if ptr not in truth.leaks:
            if b:
                p.append("%s: 0x%x (%s) reported leaked; the fixture holds it" % (label, ptr, fn))
            continue
        if not b:
            p.append("%s: leaked block 0x%x (%s) not reported" % (label, ptr, fn))
            continue
        got = site_fn(ext, b.get("site"))
        if got != fn or b["site"].get("birth") != birth:
            p.append("%s: leaked block 0x%x allocated at %s in epoch %d, report says %s / %r"
                     % (label, ptr, fn, birth, got, b.get("site")))
    want = {}
    for ptr in truth.leaks:
        fn = live[ptr][0]
        want[fn] = want.get(fn, 0) + 1
    got = {}
    for g in doc.get("sites", []):
        fn = site_fn(ext, g)
        if fn in want:
            got[fn] = got.get(fn, 0) + g["count"]
    if got != want:
        p.append("%s: leaked blocks by site %s, truth %s" % (label, got, want))
    return p


class Runner(heaptest.CaseRunner):
    def __init__(self, a):
        super().__init__(a.workdir, a.only)
        self.a = a

    def gdb(self, cmds, args, env=None, timeout=600):
        e = dict(os.environ, HEAPDOM_LIB=self.a.lib, HEAPDOM_TRACE_LIB=self.a.trace_lib,
                 DEBUGINFOD_URLS="")
        if env:
            e.update(env)
        argv = ["gdb", "-q", "-nx", "-batch", "-ex", "set python print-stack full",
                "-ex", "set breakpoint pending on",
                "-ex", "source " + self.a.gdb_plugin]
        for c in cmds:
            argv += ["-ex", c]
        argv += ["--args"] + list(args)
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                              env=e, stdin=subprocess.DEVNULL)

    @staticmethod
    def fresh(*paths):
        """Removes what an earlier run left at paths."""
        for f in paths:
            if os.path.exists(f):
                os.unlink(f)

    def load(self, path, r):
        if not os.path.exists(path):
            raise HarnessError("no %s: gdb said\n%s\n%s" % (path, r.stdout[-2000:],
                                                            r.stderr[-2000:]))
        with open(path) as f:
            return json.load(f)

    def preload_env(self):
        return {"LD_PRELOAD": self.a.trace_lib, "HEAPDOM_TRACE": "1"}

    def case_core(self):
        truth_p, out, core = self.path("a.truth"), self.path("a.json"), self.path("a.core")
        txt = self.path("a.txt")
        self.fresh(truth_p, out, core, txt)
        r = self.gdb(["set exec-wrapper env LD_PRELOAD=%s HEAPDOM_TRACE=1" % self.a.trace_lib,
                      "break exit", "run",
                      "heap-trace report --json --all --output " + out,
                      "heap-trace report --output " + txt,
                      "gcore " + core, "kill"],
                     [self.a.trace_fixture, truth_p, "--lib", self.a.trace_lib])
        truth = test_trace.parse_truth(truth_p)
        ext = test_trace.function_extents(self.a.trace_fixture, truth)
        heaptest.check_core(core, self.a.trace_fixture)
        p = check_report(self.load(out, r), truth, ext, "gdb")
        doc = heaptest.heapdom_json(self.a.heapdom, ["trace", core, "--json", "--all"])
        p += check_report(doc, truth, ext, "core")
        p += check_blocks(heaptest.heapdom_json(self.a.heapdom, ["blocks", core, "--json"]),
                          truth, ext, "core blocks")
        p += check_leaks(heaptest.heapdom_json(self.a.heapdom, ["leaks", core, "--json"]),
                         truth, ext, "core leaks")
        # `heapdom why` names the queried block's site: a held block and a
        # leaked one.
        held = next(x for x in truth.live if x[0] not in truth.leaks)
        leaked = next(x for x in truth.live if x[0] in truth.leaks)
        for ptr, size, fn, birth in (held, leaked):
            w = heaptest.heapdom_json(self.a.heapdom, ["why", core, hex(ptr), "--json"])
            got = site_fn(ext, w["block"].get("site"))
            if got != fn or w["block"]["site"].get("birth") != birth \
                    or w["reachable"] != (ptr not in truth.leaks):
                p.append("why 0x%x: allocated at %s in epoch %d, %s; report says %s / %r, "
                         "reachable %s" % (ptr, fn, birth,
                                           "leaked" if ptr in truth.leaks else "held",
                                           got, w["block"].get("site"), w["reachable"]))
        with open(txt) as f:
            text = f.read()
        for fn in ("site_a", "site_b"):
            if fn not in text:
                p.append("text report does not name %s" % fn)
        self.cache["a"] = (truth, ext)
        return p

    def lldb(self, cmds, args):
        env = dict(os.environ, DEBUGINFOD_URLS="", LC_ALL="C",
                   PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""),
                   HEAPDOM_TRACE_LIB=self.a.trace_lib)
        if os.path.isdir(LLDB_PYTHON):
            env["PYTHONPATH"] = LLDB_PYTHON
        argv = [shutil.which("lldb-14") or "lldb-14", "-x", "-b",
                "-o", "plugin load " + self.a.lldb_plugin]
        for c in cmds:
            argv += ["-o", c]
        argv += ["--"] + list(args)
        return subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env,
                              stdin=subprocess.DEVNULL)

    def case_lldb_inject(self):
        if not self.a.lldb_plugin:
            return []
        truth_p, out = self.path("e.truth"), self.path("e.json")
        self.fresh(truth_p, out)
        # (a bare `breakpoint delete` asks to confirm, which ends lldb's batch)
        r = self.lldb(["b hd_inject_point", "run", "heapdom trace start",
                       "breakpoint delete 1", "b exit", "continue",
                       "heapdom trace report --json --all --output " + out, "kill"],
                      [self.a.trace_fixture, truth_p, "--lib", self.a.trace_lib, "--inject"])
        p = []
        if "redirected" not in r.stdout:
            p.append("heapdom trace start did not load the tracer:\n%s\n%s"
                     % (r.stdout[-1500:], r.stderr[-1500:]))
        truth = test_trace.parse_truth(truth_p)
        ext = test_trace.function_extents(self.a.trace_fixture, truth)
        return p + check_report(self.load(out, r), truth, ext, "lldb inject")

    def case_lldb(self):
        if not self.a.lldb_plugin:
            return []
        truth_p, out = self.path("b.truth"), self.path("b.json")
        leaks = self.path("b.leaks.json")
        self.fresh(truth_p, out, leaks)
        r = self.lldb(["settings set target.env-vars LD_PRELOAD=%s HEAPDOM_TRACE=1"
                       % self.a.trace_lib, "b exit", "run",
                       "heapdom trace report --json --all --output " + out,
                       "heapdom leaks --json --output " + leaks, "kill"],
                      [self.a.trace_fixture, truth_p, "--lib", self.a.trace_lib, "--big"])
        truth = test_trace.parse_truth(truth_p)
        ext = test_trace.function_extents(self.a.trace_fixture, truth)
        # With --big, a leaked 4 GiB - 1 block: its tag names its site.
        p = check_report(self.load(out, r), truth, ext, "lldb")
        return p + check_leaks(self.load(leaks, r), truth, ext, "lldb leaks")

    def case_inject(self):
        truth_p, out = self.path("c.truth"), self.path("c.json")
        self.fresh(truth_p, out)
        status = self.path("c.status")
        r = self.gdb(["break hd_inject_point", "run", "heap-trace start",
                      "heap-trace off", "heap-trace on",
                      "pipe heap-trace status | cat > " + status,
                      "delete", "break exit", "continue",
                      "heap-trace report --json --all --output " + out, "kill"],
                     [self.a.trace_fixture, truth_p, "--lib", self.a.trace_lib, "--inject"])
        p = []
        if "redirected" not in r.stdout:
            p.append("heap-trace start did not load the tracer:\n%s\n%s"
                     % (r.stdout[-1500:], r.stderr[-1500:]))
        truth = test_trace.parse_truth(truth_p)
        ext = test_trace.function_extents(self.a.trace_fixture, truth)
        p += check_report(self.load(out, r), truth, ext, "inject")
        with open(status) as f:
            st = f.read()
        if ", on," not in st:
            p.append("heap-trace status after off/on: %r" % st)
        return p

    def case_watch(self):
        truth_p, wdir = self.path("d.truth"), self.path("d.watch")
        out = self.path("d.json")
        self.fresh(truth_p, out)
        shutil.rmtree(wdir, ignore_errors=True)
        r = self.gdb(["heap-watch hd_fixture_stop --dir " + wdir, "run",
                      "heap-watch list",
                      "heap-watch report --json --output " + out],
                     [self.a.growth_fixture, truth_p])
        p = []
        snaps = sorted(os.listdir(wdir)) if os.path.isdir(wdir) else []
        if len(snaps) != 2:
            p.append("heap-watch recorded %s, expected 2 snapshots:\n%s\n%s"
                     % (snaps, r.stdout[-1500:], r.stderr[-1500:]))
            return p
        if "2 hits, 2 snapshots" not in r.stdout:
            p.append("heap-watch list: %r" % r.stdout[-500:])
        truth = test_snapshot.parse_truth(truth_p)
        p += test_snapshot.check_diff(self.load(out, r), truth)
        return p

    def case_watch_threaded(self):
        # A process with two threads: gdb calls a breakpoint's stop() before
        # it has stopped the other threads, so the snapshot must wait for
        # the stop. The tracer is injected at main first: the `continue`
        # after `heap-trace start` must go on, not report main's breakpoint
        # again (the watch then sees no hit at all).
        truth_p, wdir = self.path("h.truth"), self.path("h.watch")
        out = self.path("h.json")
        self.fresh(truth_p, out)
        shutil.rmtree(wdir, ignore_errors=True)
        r = self.gdb(["heap-watch hd_fixture_stop --dir " + wdir, "break *main", "run",
                      "heap-trace start", "break exit", "continue", "heap-watch list",
                      "heap-trace status",
                      "heap-watch report --json --output " + out, "kill"],
                     [self.a.growth_fixture, truth_p, "--thread"])
        p = []
        if "redirected" not in r.stdout:
            p.append("heap-trace start did not load the tracer:\n%s\n%s"
                     % (r.stdout[-1500:], r.stderr[-1500:]))
        if "2 hits, 2 snapshots" not in r.stdout:
            p.append("heap-watch list in a threaded process: %r\n%s"
                     % (r.stdout[-1500:], r.stderr[-1500:]))
            return p
        # Each snapshot starts a new epoch.
        if "epoch 2" not in r.stdout:
            p.append("heap-trace status after two watch hits: %r" % r.stdout[-500:])
        truth = test_snapshot.parse_truth(truth_p)
        return p + test_snapshot.check_diff(self.load(out, r), truth)

    def case_start_refused(self):
        # heap-trace start calls into the process only at a call boundary:
        # not in the middle of main, not at an inlined function's start.
        truth_p = self.path("i.truth")
        self.fresh(truth_p)
        status = self.path("i.status")
        r = self.gdb(["break *main+4", "break hd_inline_point", "run",
                      "heap-trace start", "continue", "heap-trace start",
                      "pipe info sharedlibrary | cat > " + status, "kill"],
                     [self.a.trace_fixture, truth_p, "--lib", self.a.trace_lib, "--inject"])
        p = []
        refusals = r.stdout.count("which is safe at a function's first instruction") + \
            r.stderr.count("which is safe at a function's first instruction")
        if refusals != 2:
            p.append("heap-trace start refused %d times, expected 2 (main+4, the inlined "
                     "hd_inline_point):\n%s\n%s" % (refusals, r.stdout[-1500:], r.stderr[-1500:]))
        with open(status) as f:
            libs = f.read()
        if "libheapdom-trace" in libs:
            p.append("the tracer was loaded although heap-trace start refused:\n" + libs)
        return p

    def case_watch_deleted(self):
        # A watch whose breakpoint the user deleted with gdb's own `delete`.
        r = self.gdb(["heap-watch main", "delete", "heap-watch list", "heap-watch delete 1",
                      "heap-watch list"], [self.a.growth_fixture, self.path("j.truth")])
        p = []
        if "(breakpoint deleted)" not in r.stdout:
            p.append("heap-watch list after gdb's delete: %r" % r.stdout[-500:])
        if "No heap watches." not in r.stdout or "Python Exception" in r.stdout + r.stderr:
            p.append("heap-watch delete after gdb's delete:\n%s\n%s"
                     % (r.stdout[-800:], r.stderr[-800:]))
        return p

    def case_lldb_watch(self):
        if not self.a.lldb_plugin:
            return []
        truth_p, wdir, out = self.path("f.truth"), self.path("f.watch"), self.path("f.json")
        self.fresh(truth_p, out)
        shutil.rmtree(wdir, ignore_errors=True)
        r = self.lldb(["heap-watch hd_fixture_stop --dir " + wdir, "run", "heap-watch list",
                       "heap-watch report --json --output " + out],
                      [self.a.growth_fixture, truth_p])
        p = []
        if "2 hits, 2 snapshots" not in r.stdout:
            p.append("heap-watch list in lldb: %r" % r.stdout[-800:])
        truth = test_snapshot.parse_truth(truth_p)
        return p + test_snapshot.check_diff(self.load(out, r), truth)

    def case_lldb_quit(self):
        if not self.a.lldb_plugin:
            return []
        p = []
        for i in range(4):
            truth_p, out = self.path("k%d.truth" % i), self.path("k%d.json" % i)
            self.fresh(truth_p, out)
            # No `kill`: batch lldb quits with the process stopped at exit.
            r = self.lldb(["b hd_inject_point", "run", "heapdom trace start",
                           "breakpoint delete 1", "b exit", "continue",
                           "heapdom trace report --json --output " + out],
                          [self.a.trace_fixture, truth_p, "--lib", self.a.trace_lib,
                           "--inject"])
            if "redirected" not in r.stdout or not os.path.exists(out):
                p.append("run %d: the tracer or the reports did not run:\n%s\n%s"
                         % (i, r.stdout[-1500:], r.stderr[-1500:]))
            if r.returncode != 0:
                p.append("run %d: lldb exited with %s%s:\n%s" % (
                    i, r.returncode,
                    " (signal %d)" % (-r.returncode if r.returncode < 0
                                      else r.returncode - 128)
                    if r.returncode < 0 or r.returncode > 128 else "",
                    r.stderr[-1500:]))
        return p

    def case_snapshot_diff(self):
        truth_p = self.path("g.truth")
        s1, s2, out = self.path("g1.json"), self.path("g2.json"), self.path("g.json")
        self.fresh(truth_p, s1, s2, out)
        r = self.gdb(["break hd_fixture_stop", "run", "heap-snapshot --output " + s1,
                      "continue", "heap-snapshot --output " + s2, "kill",
                      "heap-diff %s %s --json --output %s" % (s1, s2, out)],
                     [self.a.growth_fixture, truth_p])
        truth = test_snapshot.parse_truth(truth_p)
        return test_snapshot.check_diff(self.load(out, r), truth)

    def run(self):
        os.makedirs(self.work, exist_ok=True)
        self.case("a core", self.case_core)
        self.case("b lldb", self.case_lldb)
        self.case("c inject", self.case_inject)
        self.case("d watch", self.case_watch)
        self.case("e lldb inject", self.case_lldb_inject)
        self.case("f lldb watch", self.case_lldb_watch)
        self.case("g snapshot diff", self.case_snapshot_diff)
        self.case("h watch threaded", self.case_watch_threaded)
        self.case("i start refused", self.case_start_refused)
        self.case("j watch deleted", self.case_watch_deleted)
        self.case("k lldb quit", self.case_lldb_quit)
        # The core of case a is some 300 MiB: not left behind after a pass.
        return self.finish((".core", ".truth", ".json", ".txt"), kept="cores and outputs")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for opt in ("--heapdom", "--lib", "--trace-lib", "--trace-fixture",
                "--growth-fixture", "--gdb-plugin", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--only")
    a = ap.parse_args()
    for k in ("heapdom", "lib", "trace_lib", "trace_fixture", "growth_fixture",
              "gdb_plugin", "lldb_plugin"):
        v = getattr(a, k)
        if v:
            setattr(a, k, os.path.abspath(v))
    return Runner(a).run()


if __name__ == "__main__":
    sys.exit(main())

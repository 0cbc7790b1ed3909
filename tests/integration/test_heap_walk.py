#!/usr/bin/env python3
"""heapdom integration test: heap walk verdicts against the fixture's truth.

    test_heap_walk.py --heapdom PATH --fixture PATH --workdir DIR
                      [--only a,b,...] [--keep]

Cores (~230 MB and ~290 MB) and truth files are made in DIR and deleted
after a fully passing run unless --keep is given.

Cases:
  a  core, default debug info (method "debuginfo")
  b  core, --debug-dir EMPTYDIR (method "heuristic")
  c  live --pid, default debug info
  d  live --pid, empty debug dir
  e  the two core modes give identical arenas and blocks
  f  core of `heap_fixture --blocks 1000000`, both modes
  g  error cases (missing file, non-ELF, non-core ELF, truncated core);
     a wrong --exe is a warning and changes no block
After every live run the fixture must not be left stopped or traced.

The fixture (tests/fixtures/heap_fixture.c) writes a truth file; its format
(one space-separated record per line; ADDR = pointer malloc returned):
    heap_fixture-truth 1 | pid PID | pagesize N
    live ADDR USABLE main|nonmain|mmap ARENA|- KIND
    freed ADDR tcache|fastbin|unsorted|small|large|top|any main|nonmain
    unmapped ADDR | tcache ADDR AREA live|freed | threads_malloced N
    mallinfo2 FIELD VALUE | end NLIVE NFREED
See heaptest.py for the exact semantics of each check.

Exit status 0 when every case passed, 1 otherwise; the last line is
"N passed, N failed".
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

BIG_BLOCKS = 1000000


class Runner(heaptest.CaseRunner):
    def __init__(self, args):
        super().__init__(args.workdir, args.only, args.keep)
        self.heapdom = os.path.abspath(args.heapdom)
        self.fixture = os.path.abspath(args.fixture)
        self.empty = os.path.join(self.work, "empty-debug-dir")

    # ---------------------------------------------------------- plumbing
    def core(self, tag, fixture_args=()):
        """(core path, Truth) for a fixture run, made once."""
        if tag not in self.cache:
            core, truth = self.path(tag + ".core"), self.path(tag + ".truth")
            heaptest.make_core(self.fixture, truth, core, fixture_args)
            self.cache[tag] = (core, heaptest.parse_truth(truth))
        return self.cache[tag]

    def blocks(self, target_args, debug_dir=False):
        args = ["blocks"] + list(target_args) + ["--json"]
        if debug_dir:
            args += ["--debug-dir", self.empty]
        key = tuple(args)
        if key not in self.cache:
            self.cache[key] = heaptest.heapdom_json(self.heapdom, args)
        return self.cache[key]

    @staticmethod
    def verdict(doc, truth, method):
        mm = heaptest.compare(doc, truth, expect_method=method)
        if not mm:
            return []
        return ["%d mismatch(es) against the truth (first 10 per check):\n%s"
                % (mm.count(), mm.format(indent=""))]

    # ------------------------------------------------------------- cases
    def case_core(self, debug_dir):
        core, truth = self.core("heap")
        doc = self.blocks([core], debug_dir)
        out = self.verdict(doc, truth, "heuristic" if debug_dir else "debuginfo")
        out += self.version(doc, debug_dir)
        if not debug_dir:
            out += self.state_filters(core, doc)
            out += self.stats_smoke(core)
        return out

    @staticmethod
    def version(doc, debug_dir):
        """The glibc version reported contains this machine's (getconf),
        and says where the layout came from (docs/glibc-versions.md)."""
        have = subprocess.run(["getconf", "GNU_LIBC_VERSION"], capture_output=True,
                              text=True).stdout.split()
        m = re.fullmatch(r"2\.(\d+)(?:-2\.(\d+))?", doc.get("allocator", {}).get("version") or "")
        src = doc.get("allocator", {}).get("version_source") or ""
        out = []
        if not have or not m:
            return ["glibc_version %r, getconf says %r" % (doc.get("allocator", {}).get("version"), have)]
        here = int(have[-1].split(".")[1])
        if not int(m.group(1)) <= here <= int(m.group(2) or m.group(1)):
            out.append("glibc_version %s does not contain this machine's %s"
                       % (m.group(0), have[-1]))
        want = "layout from the data" if debug_dir else "layout from libc's DWARF"
        if not src.startswith(want):
            out.append("glibc_version_source %r does not start %r" % (src, want))
        return out

    def state_filters(self, core, full):
        """--state S lists exactly the blocks of that state."""
        out = []
        for st in ("used", "free", "internal"):
            doc = heaptest.heapdom_json(self.heapdom, ["blocks", core, "--state", st, "--json"])
            want = [b for b in full["blocks"] if b["state"] == st]
            if doc.get("blocks") != want:
                d = heaptest.diff_docs({"blocks": want}, {"blocks": doc.get("blocks", [])})
                out.append("--state %s: %d blocks, expected the %d %s blocks of the full list; "
                           "first differences:\n%s" % (st, len(doc.get("blocks", [])), len(want),
                                                       st, "\n".join(d[:10])))
        return out

    def stats_smoke(self, core):
        doc = heaptest.heapdom_json(self.heapdom, ["stats", core, "--json"])
        missing = [k for k in ("totals", "allocator", "size_classes") if k not in doc]
        return ["stats --json lacks %s" % ", ".join(missing)] if missing else []

    FREE_NODES = {"tcache": "free: tcache", "fastbin": "free: fastbins",
                  "unsorted": "free: unsorted bin", "small": "free: small bins",
                  "large": "free: large bins", "top": "free: top chunks"}

    def case_glibc_module(self, debug_dir):
        """The glibc framework module: every freed block of the truth under
        the node of its list, tcache structures under the allocator's
        bookkeeping, no live block of the application in the allocator's
        nodes, free memory never counted as used, and the free bytes equal
        to mallinfo2's fordblks (tcache chunks count as in use there)."""
        core, truth = self.core("heap")
        args = ["dominators", "--framework", "glibc", "--json", "--all", core]
        if debug_dir:
            args += ["--debug-dir", self.empty]
        doc = heaptest.heapdom_json(self.heapdom, args)
        out = []
        nodes = {n["label"]: n for n in doc["nodes"]}
        by_id = {n["id"]: n for n in doc["nodes"]}
        blocks = {int(b["address"], 16): b for b in doc["blocks"]}
        if "glibc malloc" not in nodes or nodes["glibc malloc"]["idom"] != "super":
            return ["no glibc malloc node under the super-root: %s" % sorted(nodes)]

        def node_of(addr):
            b = blocks.get(addr)
            return by_id[b["node"]]["label"] if b and b["node"] is not None else None
        for addr, lst, _area in truth.freed:
            if lst == "any":
                continue
            want = self.FREE_NODES[lst]
            got = node_of(addr)
            if got != want:
                out.append("freed 0x%x (%s) is under %r, expected %r" % (addr, lst, got, want))
        for addr, _area, state in truth.tcache:
            if state != "live":
                continue
            b = blocks.get(addr)
            if node_of(addr) != "tcache structures and fenceposts" or \
                    b["type"] != "struct tcache_perthread_struct":
                out.append("tcache struct 0x%x: %s" % (addr, b))
        glibc_ids = {n["id"] for n in doc["nodes"] if n["framework"] == "glibc"}
        for addr, usable, _area, _arena, _kind in truth.live:
            b = blocks.get(addr)
            if b and b["node"] in glibc_ids:
                out.append("live block 0x%x is in the allocator's node %s" % (addr, b["node"]))
            elif b and b["object"]["used"] != usable:
                out.append("live block 0x%x: used %d, usable %d" % (addr, b["object"]["used"], usable))
        for label, n in nodes.items():
            if n["kind"] == "free" and n["bound"]["used"] != 0:
                out.append("%s counts %d free bytes as used" % (label, n["bound"]["used"]))
            if n["framework"] == "glibc" and n["bound"]["framework"] != n["bound"]["alloc"]:
                out.append("%s: not all framework memory" % label)
        free = nodes["free chunks"]["bound"]["alloc"]
        tcache = nodes.get("free: tcache", {"bound": {"alloc": 0}})["bound"]["alloc"]
        if free - tcache != truth.mallinfo["fordblks"]:
            out.append("free chunks %d - tcache %d != mallinfo2 fordblks %d"
                       % (free, tcache, truth.mallinfo["fordblks"]))
        arena = nodes["arena state and heap headers"]
        types = sorted(b["type"] for b in doc["blocks"] if b["node"] == arena["id"])
        want = []
        for a in heaptest.glibc_arenas(doc):
            if not a["main"]:
                want += ["heap_info + struct malloc_state"] + ["heap_info"] * (a["heaps"] - 1)
        if not debug_dir:
            want += ["struct malloc_par (mp_)", "struct malloc_state (main_arena)"]
        else:
            want += ["struct malloc_state (main_arena)"]
        if types != sorted(want):
            out.append("arena state blocks %s, expected %s" % (types, sorted(want)))
        return out

    def case_identical(self):
        core, _ = self.core("heap")
        d1 = self.blocks([core], False)
        d2 = self.blocks([core], True)
        diff = heaptest.diff_docs(d1, d2)
        if diff:
            return ["debuginfo and heuristic modes differ (%d differences, first 10):\n%s"
                    % (len(diff), "\n".join(diff[:10]))]
        return []

    def case_live(self):
        """(c) and (d) on one fixture process."""
        truth_p, ready = self.path("live.truth"), self.path("live.ready")
        proc = heaptest.start_fixture(self.fixture, truth_p, ready)
        results = {}
        try:
            truth = heaptest.parse_truth(truth_p)
            if truth.pid != proc.pid:
                raise HarnessError("truth pid %s != fixture pid %d" % (truth.pid, proc.pid))
            for debug_dir in (False, True):
                out = []
                try:
                    doc = self.blocks(["--pid", str(proc.pid)], debug_dir)
                    out += self.verdict(doc, truth, "heuristic" if debug_dir else "debuginfo")
                    results[debug_dir] = doc
                except HarnessError as e:
                    out.append("harness: %s" % e)
                if proc.poll() is not None:
                    out.append("the fixture died (status %s) while heapdom inspected it"
                               % proc.returncode)
                else:
                    bad = heaptest.stopped_threads(proc.pid)
                    if bad:
                        out.append("heapdom left the fixture stopped/traced: %s" % ", ".join(
                            "tid %d state %s tracer %d" % (t, s, tr) for t, (s, tr) in sorted(bad.items())))
                self.live_results[debug_dir] = out
            if len(results) == 2:
                diff = heaptest.diff_docs(results[False], results[True])
                if diff:
                    self.live_results[True].append(
                        "live: debuginfo and heuristic modes differ (first 10):\n" + "\n".join(diff[:10]))
        finally:
            heaptest.stop_fixture(proc)

    def case_big(self):
        core, truth = self.core("big", ["--blocks", str(BIG_BLOCKS)])
        n = sum(1 for r in truth.live if r[4] == "list")
        if n != BIG_BLOCKS:
            return ["truth has %d list blocks, expected %d" % (n, BIG_BLOCKS)]
        out = []
        for debug_dir in (False, True):
            args = ["blocks", core, "--json"] + (["--debug-dir", self.empty] if debug_dir else [])
            t0 = time.monotonic()
            doc = heaptest.heapdom_json(self.heapdom, args)
            secs = time.monotonic() - t0
            v = self.verdict(doc, truth, "heuristic" if debug_dir else "debuginfo")
            out += ["%s: %s" % ("--debug-dir" if debug_dir else "default", x) for x in v]
            print("    %s mode: %d blocks in %.1fs" % ("heuristic" if debug_dir else "debuginfo",
                                                      len(doc.get("blocks", [])), secs))
            del doc
        return out

    def expect_error(self, args, paths, extra_words=()):
        """Non-zero exit (not a signal), one stderr line naming one of paths."""
        if isinstance(paths, str):
            paths = (paths,)
        r = heaptest.run_heapdom(self.heapdom, args, timeout=120)
        out = []
        if r.rc == "timeout":
            return ["%s: timed out" % " ".join(args)]
        if r.rc == 0:
            out.append("exit status 0, expected an error")
        elif r.rc < 0 or r.rc >= 128:
            out.append("crashed / killed by a signal (status %d)" % r.rc)
        lines = r.err.splitlines()
        if len(lines) != 1:
            out.append("stderr has %d lines, expected exactly 1" % len(lines))
        if not any(p in r.err for p in paths):
            out.append("stderr does not mention %s" % " or ".join(paths))
        if extra_words and not any(w in r.err.lower() for w in extra_words):
            out.append("stderr mentions none of %s" % ", ".join(extra_words))
        if out:
            out = ["%s:\n  %s" % (r.describe(), "\n  ".join(out))]
        return out

    def case_errors(self):
        core, truth = self.core("heap")
        missing = self.path("no-such.core")
        trunc = self.path("truncated.core")
        with open(core, "rb") as src, open(trunc, "wb") as dst:
            dst.write(src.read(1 << 20))
        out = []
        out += self.expect_error(["blocks", missing, "--json"], missing)
        out += self.expect_error(["blocks", self.path("heap.truth"), "--json"], self.path("heap.truth"))
        out += self.expect_error(["blocks", self.fixture, "--json"], self.fixture)
        out += self.expect_error(["blocks", trunc, "--json"], trunc)
        out += self.expect_error(["stats", trunc, "--json"], trunc)
        # a wrong --exe is one warning naming it and its build-id, and the
        # heap is walked all the same (issue 18); the right one is accepted
        try:
            doc = heaptest.heapdom_json(self.heapdom, ["blocks", core, "--exe", "/bin/ls", "--json"])
            warns = doc.get("warnings", [])
            if len(warns) != 1 or "/bin/ls" not in warns[0] or "build-id" not in warns[0]:
                out.append("wrong --exe: expected one warning naming /bin/ls and its build-id, got %r"
                           % warns)
            # Types may go (they came from the executable's DWARF).
            untyped = lambda d: dict(d, blocks=[{k: v for k, v in b.items() if k != "type"}
                                                for b in d["blocks"]])
            diff = heaptest.diff_docs(untyped(doc), untyped(self.blocks([core], False)))
            if diff:
                out.append("wrong --exe changes the blocks (first 10):\n" + "\n".join(diff[:10]))
        except HarnessError as e:
            out.append("wrong --exe: %s" % e)
        try:
            doc = heaptest.heapdom_json(self.heapdom, ["blocks", core, "--exe", self.fixture, "--json"])
            diff = heaptest.diff_docs(doc, self.blocks([core], False))
            if diff:
                out.append("--exe FIXTURE changes the result (first 10):\n" + "\n".join(diff[:10]))
        except HarnessError as e:
            out.append("correct --exe: %s" % e)
        return out

    # -------------------------------------------------------------- main
    def run(self):
        os.makedirs(self.work, exist_ok=True)
        if os.path.isdir(self.empty):
            shutil.rmtree(self.empty)
        os.makedirs(self.empty)
        for tool in ("gdb",):
            if not shutil.which(tool):
                print("FAIL setup: %s not found" % tool)
                self.failed += 1
        for p in (self.heapdom, self.fixture):
            if not os.access(p, os.X_OK):
                print("FAIL setup: %s is not executable" % p)
                self.failed += 1
        if not self.failed:
            self.live_results = {False: ["live case did not run"], True: ["live case did not run"]}
            self.case("a core, default debug info", lambda: self.case_core(False))
            self.case("b core, empty --debug-dir", lambda: self.case_core(True))
            if not self.only or self.only & {"c", "d"}:
                try:
                    self.case_live()
                except HarnessError as e:
                    self.live_results = {False: ["harness: %s" % e], True: ["harness: %s" % e]}
                except Exception:
                    tb = "exception:\n" + traceback.format_exc()
                    self.live_results = {False: [tb], True: [tb]}
            self.case("c live --pid, default debug info", lambda: self.live_results.get(False, []))
            self.case("d live --pid, empty --debug-dir", lambda: self.live_results.get(True, []))
            self.case("e core modes identical", self.case_identical)
            self.case("f core with %d list blocks" % BIG_BLOCKS, self.case_big)
            self.case("g error cases", self.case_errors)
            self.case("h glibc framework module", lambda: self.case_glibc_module(False))
            self.case("i glibc framework module, empty --debug-dir",
                      lambda: self.case_glibc_module(True))
        return self.finish((".core", ".truth", ".ready"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated case letters, e.g. a,b,e")
    ap.add_argument("--keep", action="store_true", help="keep cores and truth files")
    return Runner(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())

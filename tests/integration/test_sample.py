#!/usr/bin/env python3
"""heapdom integration test: `heapdom sample --pid PID` against a fixture
whose threads each touch one known object (tests/fixtures/sample_fixture.c,
truth format at its top): three threads hammer their own heap array, a
fourth only an array on its own stack.

    test_sample.py --heapdom PATH --fixture PATH --workdir DIR
                   [--only a,b,...] [--keep]

Cases (first word for --only):
  a samples   `sample --json --duration 2 --hz 200 --output SVG`: per heap
              thread, more than 60% of its samples with an access land in
              its own block (by block address, and the block's size covers
              the array); the stack thread's land in its own stack region;
              the cost members add up (samples = the threads' stops,
              rounds, time stopped, wall time near --duration); the process
              still runs, untraced, with all its threads; the SVG is one
              well-formed picture with a panel per sampled thread
  b text      the text report: the cost line and a section per thread
  c addr      --addr-range over one heap thread's array: every kept access
              lies in the range, that thread keeps accesses, the other
              threads keep none (their samples are counted as filtered)
  d threads   --threads TID: only that thread is sampled
  e errors    a pid that does not exist, and `sample` without --pid: exit
              status non-zero, one line on stderr saying what is wrong
Exit status 0 when every case passed; the last line is "N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

MIN_SHARE = 0.60
# Fewer accesses than this make a share meaningless (7 threads share 2 CPUs
# here: rounds are slow, and only part of a loop's stops land on its
# memory instructions).
MIN_ACCESSES = 10
DURATION = 3
HZ = 200


LLDB_PYTHON = "/usr/lib/llvm-14/lib/python3.11/dist-packages"


class Truth:
    def __init__(self):
        self.pid = None
        self.heap = []   # (tid, addr, size)
        self.stack = []  # (tid, addr, size)
        self.globl = []  # (tid, addr, size): the global g_counters
        self.mapping = []  # (tid, addr, size): a read-only anonymous mapping


def parse_truth(path):
    t = Truth()

    def record(w, line):
        if w[0] == "pid":
            t.pid = int(w[1])
        elif w[0] in ("heap", "stack", "global", "mapping"):
            getattr(t, "globl" if w[0] == "global" else w[0]).append(
                (int(w[1]), int(w[2], 16), int(w[3])))
        else:
            raise ValueError("unknown record")
    heaptest.read_truth(path, "sample_fixture", record)
    if len(t.heap) != 3 or len(t.stack) != 1 or len(t.globl) != 1 or len(t.mapping) != 1:
        raise HarnessError("%s: truncated or inconsistent" % path)
    return t


class Fixture:
    """The fixture running with --wait, and its truth."""

    def __init__(self, args, name):
        self.truth_path = os.path.join(args.workdir, name + ".truth")
        ready = os.path.join(args.workdir, name + ".ready")
        self.proc = heaptest.start_fixture(args.fixture, self.truth_path, ready)
        self.truth = parse_truth(self.truth_path)
        if self.truth.pid != self.proc.pid:
            raise HarnessError("truth pid %s is not the fixture's %d" % (self.truth.pid, self.proc.pid))
        self.tids = set(heaptest.thread_states(self.proc.pid))

    def stop(self):
        heaptest.stop_fixture(self.proc)


def scope(doc, tid):
    for t in doc.get("threads", []):
        if t.get("tid") == tid:
            return t
    return None


def check_released(fx):
    """The process runs on, untraced, with every thread it had."""
    problems = []
    if fx.proc.poll() is not None:
        return ["the fixture exited (%s) after sampling" % fx.proc.returncode]
    bad = heaptest.stopped_threads(fx.proc.pid)
    if bad:
        problems.append("threads still stopped or traced after sampling: %r" % bad)
    now = set(heaptest.thread_states(fx.proc.pid))
    if now != fx.tids:
        problems.append("threads before %s, after %s" % (sorted(fx.tids), sorted(now)))
    return problems


def check_cost(doc, duration):
    problems = []
    c = doc.get("cost")
    if not isinstance(c, dict):
        return ["no \"cost\" object"]
    taken = sum(t.get("taken", 0) for t in doc["threads"])
    if c.get("samples") != taken or taken == 0:
        problems.append("cost.samples %r, the threads' stops add up to %d" % (c.get("samples"), taken))
    if c.get("samples") != doc["overall"].get("taken"):
        problems.append("cost.samples %r != overall.taken %r" % (c.get("samples"), doc["overall"].get("taken")))
    rounds = c.get("rounds", 0)
    if not rounds or any(t["taken"] > rounds for t in doc["threads"]):
        problems.append("rounds %r: each round stops a thread at most once" % rounds)
    if not 0.8 * duration * 1e9 <= c.get("wall_ns", 0) <= duration * 1e9 + 2e9:
        problems.append("wall_ns %r for --duration %s" % (c.get("wall_ns"), duration))
    if not 0 < c.get("stopped_ns", 0) < c.get("wall_ns", 0):
        problems.append("stopped_ns %r not in (0, wall_ns)" % c.get("stopped_ns"))
    if not 0 < c.get("effective_hz", 0) <= HZ * 1.1:
        problems.append("effective_hz %r for --hz %d" % (c.get("effective_hz"), HZ))
    return problems


def check_regions(doc, truth):
    """The global thread's accesses land on the global g_counters (by its
    symbol), the mapping thread's on its read-only anonymous mapping."""
    problems = []
    for label, rows, want_kind, name_ok in (
            ("global", truth.globl, "global", lambda n, a: n.endswith(":g_counters")),
            ("mapping", truth.mapping, "mapping",
             lambda n, a: n.startswith("anonymous 0x") and
             int(n.split()[1].split("-")[0], 16) <= a < int(n.split()[1].split("-")[1], 16))):
        for tid, addr, _size in rows:
            sc = scope(doc, tid)
            if sc is None:
                problems.append("%s thread %d: not in the report" % (label, tid))
                continue
            acc = sc["accesses"]
            own = sum(r["samples"] for r in sc["regions"]
                      if r["kind"] == want_kind and name_ok(r["name"], addr))
            if acc < MIN_ACCESSES or own <= MIN_SHARE * acc:
                problems.append("%s thread %d: %d of %d accesses on its %s (regions %r)"
                                % (label, tid, own, acc, label, sc["regions"][:4]))
    return problems


def check_threads(doc, truth):
    """Each heap thread's accesses land on its object, the stack thread's on
    its stack, the global and mapping threads' on theirs; the cost adds
    up."""
    problems = check_regions(doc, truth)
    if not doc.get("mapped"):
        problems.append("the addresses were not mapped: %r" % doc.get("mapping_note"))
    problems += check_cost(doc, DURATION)
    for tid, addr, size in truth.heap:
        sc = scope(doc, tid)
        if sc is None:
            problems.append("heap thread %d: not in the report" % tid)
            continue
        acc = sc["accesses"]
        mine = [b for b in sc["blocks"] if int(b["addr"], 16) == addr]
        hits = sum(b["samples"] for b in mine)
        if acc < MIN_ACCESSES:
            problems.append("heap thread %d: only %d samples with an access" % (tid, acc))
        elif hits <= MIN_SHARE * acc:
            problems.append("heap thread %d: %d of %d accesses on its block 0x%x (blocks %r)"
                            % (tid, hits, acc, addr, sc["blocks"][:5]))
        for b in mine:
            if b["size"] < size or b["state"] != "used" or not b.get("type") or not b.get("subtree"):
                problems.append("heap thread %d: block entry %r (array of %d bytes)" % (tid, b, size))
        # The overall view has the same block with at least these samples.
        ov = [b for b in doc["overall"]["blocks"] if int(b["addr"], 16) == addr]
        if not ov or ov[0]["samples"] < hits:
            problems.append("overall: block 0x%x has %r, thread %d alone %d" % (addr, ov, tid, hits))
    for tid, addr, size in truth.stack:
        sc = scope(doc, tid)
        if sc is None:
            problems.append("stack thread %d: not in the report" % tid)
            continue
        acc = sc["accesses"]
        own = sum(r["samples"] for r in sc["regions"]
                  if r["kind"] == "stack" and r["name"] == "thread %d stack" % tid)
        if acc < MIN_ACCESSES or own <= MIN_SHARE * acc:
            problems.append("stack thread %d: %d of %d accesses on its stack (regions %r)"
                            % (tid, own, acc, sc["regions"]))
        near = sum(h["samples"] for h in sc["histogram"]
                   if addr - 64 <= int(h["addr"], 16) < addr + size)
        if near <= MIN_SHARE * acc:
            problems.append("stack thread %d: %d of %d accesses in its array's buckets" % (tid, near, acc))
        if sc["blocks"] and sum(b["samples"] for b in sc["blocks"]) > (1 - MIN_SHARE) * acc:
            problems.append("stack thread %d: heap blocks %r" % (tid, sc["blocks"]))
    return problems


def case_samples(args):
    fx = Fixture(args, "samples")
    svg = os.path.join(args.workdir, "samples.svg")
    if os.path.exists(svg):
        os.unlink(svg)
    try:
        doc = heaptest.heapdom_json(args.heapdom, [
            "sample", "--pid", str(fx.proc.pid), "--duration", str(DURATION),
            "--hz", str(HZ), "--max-stopped", "100", "--json", "--output", svg], timeout=120)
        problems = check_released(fx)
    finally:
        fx.stop()
    problems += check_threads(doc, fx.truth)
    # The picture: one panel (a title text "thread TID: ...") per thread.
    try:
        root = ET.parse(svg).getroot()
        texts = [e.text or "" for e in root.iter("{http://www.w3.org/2000/svg}text")]
        panels = {int(m.group(1)) for t in texts for m in [re.match(r"thread (\d+):", t)] if m}
        want = {t["tid"] for t in doc["threads"]}
        if panels != want:
            problems.append("SVG panels for threads %s, sampled %s" % (sorted(panels), sorted(want)))
        if not list(root.iter("{http://www.w3.org/2000/svg}rect")):
            problems.append("SVG has no bars")
    except (OSError, ET.ParseError) as e:
        problems.append("SVG %s: %s" % (svg, e))
    return problems


def case_text(args):
    fx = Fixture(args, "text")
    try:
        r = heaptest.run_heapdom(args.heapdom, ["sample", "--pid", str(fx.proc.pid),
                                                "--duration", "1", "--hz", "100", "--max-stopped", "100", "--max-stopped", "100"], timeout=120)
        problems = check_released(fx)
    finally:
        fx.stop()
    if r.rc != 0:
        return [r.describe()]
    if not re.search(r"^cost: \d+ samples in \d+ rounds over [\d.]+ s .* process stopped [\d.]+ ms",
                     r.out, re.M):
        problems.append("no cost line in:\n" + r.out[:1500])
    for tid, _, _ in fx.truth.heap + fx.truth.stack:
        if not re.search(r"^thread %d$" % tid, r.out, re.M):
            problems.append("no section for thread %d" % tid)
    if not re.search(r"^all threads$", r.out, re.M):
        problems.append("no overall section")
    return problems


def case_addr(args):
    fx = Fixture(args, "addr")
    tid0, addr, size = fx.truth.heap[0]
    try:
        doc = heaptest.heapdom_json(args.heapdom, [
            "sample", "--pid", str(fx.proc.pid), "--duration", "1", "--hz", "100", "--max-stopped", "100",
            "--addr-range", "0x%x-0x%x" % (addr, addr + size), "--json"], timeout=120)
        problems = check_released(fx)
    finally:
        fx.stop()
    for h in doc["overall"]["histogram"]:
        a = int(h["addr"], 16)
        if not addr - 64 < a < addr + size:
            problems.append("bucket %s outside --addr-range" % h["addr"])
    for t in doc["threads"]:
        if t["tid"] == tid0:
            if t["accesses"] == 0:
                problems.append("thread %d kept no access in its own array" % tid0)
            if any(int(b["addr"], 16) != addr for b in t["blocks"]):
                problems.append("thread %d: blocks %r" % (tid0, t["blocks"]))
        elif t["accesses"] or t["no_access"]:
            problems.append("thread %d kept %d accesses, %d without, outside the range"
                            % (t["tid"], t["accesses"], t["no_access"]))
        elif t["tid"] != fx.proc.pid and t["filtered"] == 0:
            problems.append("thread %d: nothing counted as filtered" % t["tid"])
    return problems


def case_threads(args):
    fx = Fixture(args, "threads")
    tid = fx.truth.heap[1][0]
    try:
        doc = heaptest.heapdom_json(args.heapdom, [
            "sample", "--pid", str(fx.proc.pid), "--duration", "1", "--hz", "100", "--max-stopped", "100",
            "--threads", str(tid), "--json"], timeout=120)
        problems = check_released(fx)
    finally:
        fx.stop()
    got = [t["tid"] for t in doc["threads"]]
    if got != [tid]:
        problems.append("--threads %d sampled %r" % (tid, got))
    return problems


def gone_pid():
    """A pid that existed a moment ago and has been reaped."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def case_errors(args):
    problems = []
    pid = gone_pid()
    r = heaptest.run_heapdom(args.heapdom, ["sample", "--pid", str(pid), "--duration", "1"])
    lines = r.err.strip().splitlines()
    if r.rc in (0, "timeout") or len(lines) != 1 or "process %d does not exist" % pid not in lines[0]:
        problems.append("missing pid: " + r.describe())
    r = heaptest.run_heapdom(args.heapdom, ["sample", "--duration", "1"])
    lines = r.err.strip().splitlines()
    if r.rc in (0, "timeout") or len(lines) != 1 or "--pid" not in lines[0]:
        problems.append("no --pid: " + r.describe())
    r = heaptest.run_heapdom(args.heapdom, ["sample", "--pid", "1", "--addr-range", "5-3"])
    lines = r.err.strip().splitlines()
    if r.rc in (0, "timeout") or len(lines) != 1 or "--addr-range" not in lines[0]:
        problems.append("bad range: " + r.describe())
    return problems


def front_json(text):
    """The JSON document in a debugger's output (between its own lines)."""
    at = 0 if text.startswith("{") else text.find("\n{") + 1
    if at <= 0 and not text.startswith("{"):
        raise HarnessError("no JSON in the debugger's output:\n" + text[-2000:])
    try:
        doc, _end = json.JSONDecoder().raw_decode(text, at)
    except ValueError as e:
        raise HarnessError("bad JSON in the debugger's output (%s):\n%s" % (e, text[-2000:]))
    return doc


def case_gdb(args):
    """gdb's heap-sample: gdb detaches, samples, attaches again, reports."""
    fx = Fixture(args, "gdb")
    try:
        env = dict(os.environ, HEAPDOM_LIB=args.lib)
        r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "source " + args.gdb_plugin,
                            "-ex", "heap-sample --duration %s --hz %d --max-stopped 100 --json" % (DURATION, HZ),
                            "-ex", "info inferiors", "-p", str(fx.proc.pid)],
                           capture_output=True, text=True, timeout=120, env=env,
                           stdin=subprocess.DEVNULL)
        doc = front_json(r.stdout)
        problems = check_threads(doc, fx.truth)
        if "process %d" % fx.proc.pid not in r.stdout:
            problems.append("gdb is not attached again after sampling: %r" % r.stdout[-300:])
        problems += check_released(fx)
    finally:
        fx.stop()
    return problems


def case_lldb(args):
    """lldb's heapdom sample, the same way."""
    if not args.lldb_plugin:
        return []
    fx = Fixture(args, "lldb")
    try:
        env = dict(os.environ, LC_ALL="C", PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))
        if os.path.isdir(LLDB_PYTHON):
            env["PYTHONPATH"] = LLDB_PYTHON
        r = subprocess.run(["lldb-14", "-x", "-b", "-o", "plugin load " + args.lldb_plugin,
                            "-o", "process attach --pid %d" % fx.proc.pid,
                            "-o", "heapdom sample --duration %s --hz %d --max-stopped 100 --json" % (DURATION, HZ),
                            "-o", "process detach"],
                           capture_output=True, text=True, timeout=120, env=env,
                           stdin=subprocess.DEVNULL)
        doc = front_json(r.stdout)
        problems = check_threads(doc, fx.truth) + check_released(fx)
    finally:
        fx.stop()
    return problems


def function_range(exe, pid, name):
    """[start, end) of function name in the running process pid."""
    r = subprocess.run(["nm", "-S", exe], capture_output=True, text=True, check=True)
    value = size = None
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[3] == name:
            value, size = int(w[0], 16), int(w[1], 16)
    if value is None:
        raise HarnessError("%s: no symbol %s" % (exe, name))
    real = os.path.realpath(exe)
    with open("/proc/%d/maps" % pid) as f:
        for line in f:
            w = line.split()
            if len(w) >= 6 and os.path.realpath(w[5]) == real and int(w[2], 16) == 0:
                bias = int(w[0].split("-")[0], 16)
                return bias + value, bias + value + size
    raise HarnessError("%s is not mapped in %d" % (exe, pid))


def case_pc_nearest(args):
    """--pc-range keeps only the samples stopped in heap_worker (the stack
    thread's are all filtered out); --nearest 8 still finds each heap
    thread's object."""
    fx = Fixture(args, "pc")
    try:
        lo, hi = function_range(args.fixture, fx.proc.pid, "heap_worker")
        doc = heaptest.heapdom_json(args.heapdom, [
            "sample", "--pid", str(fx.proc.pid), "--duration", "1", "--hz", "100",
            "--max-stopped", "100", "--pc-range", "0x%x-0x%x" % (lo, hi), "--json"], timeout=120)
        near = heaptest.heapdom_json(args.heapdom, [
            "sample", "--pid", str(fx.proc.pid), "--duration", str(DURATION), "--hz", str(HZ),
            "--max-stopped", "100", "--nearest", "8", "--json"], timeout=120)
        problems = check_released(fx)
    finally:
        fx.stop()
    for tid, _addr, _size in fx.truth.stack:
        sc = scope(doc, tid)
        if sc and (sc["accesses"] or sc["no_access"] or not sc["filtered"]):
            problems.append("--pc-range: the stack thread kept %r" % sc)
    for tid, addr, _size in fx.truth.heap:
        sc = scope(doc, tid)
        if not sc or not sc["accesses"]:
            problems.append("--pc-range: heap thread %d kept nothing: %r" % (tid, sc))
        ns = scope(near, tid)
        if not ns or ns["accesses"] < MIN_ACCESSES:
            problems.append("--nearest 8: heap thread %d: %r" % (tid, ns))
            continue
        hits = sum(b["samples"] for b in ns["blocks"] if int(b["addr"], 16) == addr)
        if hits <= MIN_SHARE * ns["accesses"]:
            problems.append("--nearest 8: heap thread %d: %d of %d accesses on its block"
                            % (tid, hits, ns["accesses"]))
    return problems


def case_cap(args):
    """--max-stopped lowers the rate until the process runs most of the
    time; --live prints a view of each thread per second on stderr; %p in
    --output is the pid."""
    fx = Fixture(args, "cap")
    svg = os.path.join(args.workdir, "cap-%p.svg")
    try:
        r = subprocess.run([args.heapdom, "sample", "--pid", str(fx.proc.pid), "--duration", "2.5",
                            "--hz", "500", "--max-stopped", "5", "--live", "--json",
                            "--output", svg], capture_output=True, text=True, timeout=120)
        problems = check_released(fx)
    finally:
        fx.stop()
    if r.returncode != 0:
        return problems + ["rc %d: %s" % (r.returncode, r.stderr[-500:])]
    doc = json.loads(r.stdout)
    notes = doc.get("notes") or doc.get("cost", {}).get("notes") or ""
    text = json.dumps(doc)
    if "--max-stopped 5%" not in text:
        problems.append("no note of the rate lowered for --max-stopped: %r" % notes)
    views = r.stderr.count("pid %d, " % fx.proc.pid)
    if views < 1:
        problems.append("--live printed no view on stderr: %r" % r.stderr[:300])
    for tid, _addr, _size in fx.truth.heap:
        if "thread %d: " % tid not in r.stderr:
            problems.append("--live view lacks thread %d" % tid)
    if not os.path.exists(svg.replace("%p", str(fx.proc.pid))):
        problems.append("--output %s: no file named with the pid" % svg)
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.workdir = os.path.abspath(args.workdir)
    os.makedirs(args.workdir, exist_ok=True)
    cr = heaptest.CaseRunner(args.workdir, args.only, args.keep)
    cr.case("samples - per-thread accesses land on each thread's object", lambda: case_samples(args))
    cr.case("text - cost line and a section per thread", lambda: case_text(args))
    cr.case("addr - --addr-range keeps only accesses inside it", lambda: case_addr(args))
    cr.case("threads - --threads samples only the listed thread", lambda: case_threads(args))
    cr.case("errors - missing process, missing --pid, bad range", lambda: case_errors(args))
    cr.case("cap - --max-stopped, --live, --output naming", lambda: case_cap(args))
    cr.case("pc - --pc-range and --nearest", lambda: case_pc_nearest(args))
    cr.case("gdb - heap-sample detaches, samples, attaches again", lambda: case_gdb(args))
    cr.case("lldb - heapdom sample the same way", lambda: case_lldb(args))
    if not args.keep and cr.failed == 0:
        shutil.rmtree(args.workdir, ignore_errors=True)
    print("%d passed, %d failed" % (cr.passed, cr.failed))
    return 1 if cr.failed else 0


if __name__ == "__main__":
    sys.exit(main())

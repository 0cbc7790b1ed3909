"""Helpers for heapdom's integration tests (standard library only).

- make_core():      run the fixture under gdb up to hd_fixture_stop and gcore it
- start_fixture():  run the fixture with --wait and wait for its READY file
- run_heapdom() / heapdom_json():  run the CLI, parse `--json` output
- parse_truth():    read the fixture's truth file
- compare():        check a `heapdom blocks --json` document against a truth
- thread_states():  /proc view of a process (is it stopped / traced?)
- core_invariants(): what must hold on every core the suite makes (typed and
                    untyped leak sets equal; the top-level holders of
                    `dominators` partition the used heap); make_core()
                    checks it itself
- holder_problems(): that partition check on one `dominators --json`
- Checks:           one "ok"/"FAIL" line a check, "N passed, N failed" last
- arguments():      the argument parser of a test taking --heapdom, --workdir
- synth_core(), check_synth_blocks(), synth_heaps():  a core written by
                    tests/synth (mkcore.py, hostile.py) and its truth
- start_live_fixture(), parse_live_truth(), debugger_env():  live_fixture
                    (tests/fixtures/live_fixture.c) and the debuggers on it

TRUTH FILE FORMAT (written by tests/fixtures/heap_fixture.c; one record per
line, fields separated by single spaces, ADDR = "0x.." hex of the pointer
malloc returned (chunk + 16), integers decimal):

    heap_fixture-truth 1          first line
    pid PID
    pagesize N
    live ADDR USABLE AREA ARENA KIND
        AREA main|nonmain|mmap; ARENA "0x.." (nonmain: its malloc_state) or "-";
        USABLE = malloc_usable_size(); KIND is a tag ("list" = --blocks nodes)
    freed ADDR LIST AREA
        LIST tcache|fastbin|unsorted|small|large|top|any; except for "any" ADDR
        is exactly the start of a free block in that list ("top": the top chunk)
    unmapped ADDR                 freed mmapped chunk: no block may contain it
    tcache ADDR AREA live|freed   a thread's tcache_perthread_struct
    threads_malloced N            live threads owning a tcache
    mallinfo2 FIELD VALUE         arena ordblks smblks hblks hblkhd uordblks
                                  fordblks fsmblks
    end NLIVE NFREED              last line
"""
import argparse
import bisect
import glob
import json
import os
import signal
import subprocess
import sys
import time
import traceback

HEAP_MAX = 64 << 20           # alignment/size limit of non-main heaps, x86-64
TCACHE_CHUNK = 0x290
STATES = ("used", "free", "internal")
LISTS = ("tcache", "fastbin", "unsorted", "small", "large", "top", "unknown")
EXPECT_LISTS = ("tcache", "fastbin", "unsorted", "small", "large", "top", "any")


class HarnessError(Exception):
    """The harness could not produce its inputs (gdb, fixture, heapdom ...)."""


def _env():
    env = dict(os.environ)
    env["DEBUGINFOD_URLS"] = ""          # never let gdb go to the network
    env.setdefault("LC_ALL", "C")
    return env


def _cmd(prog):
    """heapdom may be given as a Python script (e.g. the gdb oracle)."""
    if prog.endswith(".py"):
        return [sys.executable, prog]
    return [prog]


# ------------------------------------------------------------- processes
def make_core(fixture, truth, core, fixture_args=(), timeout=600):
    """Run FIXTURE TRUTH ARGS under gdb, stop at hd_fixture_stop, gcore."""
    for p in (truth, core):
        if os.path.exists(p):
            os.unlink(p)
    cmd = ["gdb", "-q", "-nx", "-batch",
           "-ex", "break hd_fixture_stop", "-ex", "run",
           "-ex", "gcore " + core, "-ex", "kill",
           "--args", fixture, truth] + list(fixture_args)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env())
    except subprocess.TimeoutExpired:
        raise HarnessError("gdb timed out after %ds: %s" % (timeout, " ".join(cmd)))
    if not os.path.isfile(core) or os.path.getsize(core) == 0:
        raise HarnessError("gdb produced no core %s (rc %d)\n%s%s"
                           % (core, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    if not os.path.isfile(truth):
        raise HarnessError("fixture wrote no truth file %s" % truth)
    return check_core(core, fixture)


def core_invariants(core, exe=None, heapdom=None, extra=()):
    """Problems with what must hold on any core, whatever made it: the
    leaked set is the same typed and --untyped (types name blocks and
    edges; they never decide reachability); the top-level holders of
    `dominators --json` partition the used heap (holder_problems); one
    thread and two give the same `dominators --json`, `blocks --json`
    (the walk's blocks and problems) and `types --json` (the typing). heapdom defaults to
    $HEAPDOM_INVARIANTS (set by meson for every test); without either,
    nothing is checked. extra: more arguments (--sysroot ...)."""
    heapdom = heapdom or os.environ.get("HEAPDOM_INVARIANTS")
    if not heapdom:
        return []
    base = ["leaks", core, "--json"] + (["--exe", exe] if exe else []) + list(extra)
    sets = []
    for args in (base, base + ["--untyped"]):
        r = run_heapdom(heapdom, args)
        if r.rc != 0:
            return ["invariant: %s" % r.describe()]
        try:
            sets.append({b["addr"] for b in json.loads(r.out)["leaks"]})
        except (ValueError, KeyError, TypeError) as e:
            return ["invariant: heapdom %s: bad JSON (%s)" % (" ".join(args), e)]
    typed, untyped = sets
    problems = []
    if typed != untyped:
        problems.append("invariant broken on %s: typed and untyped leak sets differ: "
                        "%d leaked typed, %d untyped; typed only %s; untyped only %s"
                        % (core, len(typed), len(untyped), sorted(typed - untyped)[:5],
                           sorted(untyped - typed)[:5]))
    # One thread and two give the same report, byte for byte (the scan
    # splits the heap between threads when asked, whatever its size).
    out, probs = same_with_threads(heapdom, "dominators", core, exe, extra)
    problems += probs
    if out is None:
        return problems
    try:
        doc = json.loads(out)
    except ValueError as e:
        return problems + ["invariant: heapdom dominators %s --json: bad JSON (%s)" % (core, e)]
    problems += ["invariant broken on %s: %s" % (core, p) for p in holder_problems(doc)]
    # The walk too: every block and problem the same with 1 and 2 threads
    # (asked for, a heap of any size is split between them).
    problems += same_with_threads(heapdom, "blocks", core, exe, extra)[1]
    # And the typing: every type's blocks and bytes (asked for, threads
    # follow the propagation's levels of a heap of any size).
    problems += same_with_threads(heapdom, "types", core, exe, extra)[1]
    return problems


def same_with_threads(heapdom, command, core, exe, extra):
    """`command CORE --json` with --jobs 1 and 2: (the first output, or
    None when a run failed; the problems)."""
    args = [command, core, "--json"] + (["--exe", exe] if exe else []) + list(extra)
    outs = []
    for threads in ("1", "2"):
        r = run_heapdom(heapdom, args + ["--jobs", threads])
        if r.rc != 0:
            return None, ["invariant: %s" % r.describe()]
        outs.append(r.out)
    if outs[0] == outs[1]:
        return outs[0], []
    a, b = outs[0].splitlines(), outs[1].splitlines()
    first = next((i for i in range(min(len(a), len(b))) if a[i] != b[i]), min(len(a), len(b)))
    return outs[0], ["invariant broken on %s: %s --json differs with 1 and 2 threads from "
                     "line %d: %r / %r" % (core, command, first + 1,
                                           a[first] if first < len(a) else None,
                                           b[first] if first < len(b) else None)]


HOLDER_KINDS = ("root", "joint", "block")
ROOT_RANKS = ("globals", "tls", "locals", "stack", "registers")


def holder_problems(doc, require=False):
    """What is wrong with the top-level holders of a `dominators --json`
    document (issue 19): they partition the used heap (retained bytes and
    blocks add up to heap.used_bytes / used_blocks exactly), each holds
    something, names are unique per kind, a joint holder names two or more
    member roots, a root holder its rank class. A document without
    "holders" is a problem only with require."""
    if "holders" not in doc:
        return ["dominators --json has no \"holders\""] if require else []
    out = []
    try:
        heap = doc["heap"]
        holders = doc["holders"]
        seen = set()
        tb = tn = 0
        for h in holders:
            what = "holder %s %r" % (h.get("kind"), h.get("name"))
            if h["kind"] not in HOLDER_KINDS:
                out.append("%s: unknown kind" % what)
            if not isinstance(h["name"], str) or not h["name"]:
                out.append("%s: no name" % what)
            if (h["kind"], h["name"]) in seen:
                out.append("%s: name not unique among its kind" % what)
            seen.add((h["kind"], h["name"]))
            if not (isinstance(h["retained"], int) and h["retained"] > 0
                    and isinstance(h["retained_blocks"], int) and h["retained_blocks"] > 0):
                out.append("%s: retained %r bytes, %r blocks (must be > 0)"
                           % (what, h["retained"], h["retained_blocks"]))
                continue
            if h["kind"] == "joint":
                m = h.get("members")
                if (not isinstance(m, list) or len(m) < 2 or len(set(m)) != len(m)
                        or not all(isinstance(x, str) and x for x in m)):
                    out.append("%s: members %r (want two or more distinct root names)"
                               % (what, m))
            if h["kind"] == "root" and h.get("rank") not in ROOT_RANKS:
                out.append("%s: rank %r not one of %s" % (what, h.get("rank"), ROOT_RANKS))
            tb += h["retained"]
            tn += h["retained_blocks"]
        if tb != heap["used_bytes"] or tn != heap["used_blocks"]:
            out.append("holders do not partition the used heap: they add up to %d bytes in "
                       "%d blocks, the heap has %d used bytes in %d blocks"
                       % (tb, tn, heap["used_bytes"], heap["used_blocks"]))
    except (KeyError, TypeError, AttributeError) as e:
        out.append("malformed holders (%s: %s)" % (type(e).__name__, e))
    return out


def check_core(core, exe=None, extra=()):
    """Raises HarnessError when a core breaks core_invariants()."""
    problems = core_invariants(core, exe, extra=extra)
    if problems:
        raise HarnessError("\n".join(problems))
    return core


def start_fixture(fixture, truth, ready, fixture_args=(), timeout=120):
    """Start the fixture with --wait READY; return the Popen once READY exists."""
    for p in (truth, ready):
        if os.path.exists(p):
            os.unlink(p)
    proc = subprocess.Popen([fixture, truth, "--wait", ready] + list(fixture_args),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=_env())
    deadline = time.monotonic() + timeout
    while not os.path.exists(ready):
        if proc.poll() is not None:
            raise HarnessError("fixture exited with %d before becoming ready: %s"
                               % (proc.returncode, proc.stderr.read().decode(errors="replace")))
        if time.monotonic() > deadline:
            stop_fixture(proc)
            raise HarnessError("fixture not ready after %ds" % timeout)
        time.sleep(0.02)
    return proc


def stop_fixture(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    if proc.stderr:
        proc.stderr.close()


def thread_states(pid):
    """{tid: (state_letter, tracer_pid)} for every thread of pid (a tracer
    the status does not give is -1: it counts as traced)."""
    out = {}
    for st in glob.glob("/proc/%d/task/*/status" % pid):
        tid = int(st.split("/")[4])
        state, tracer = "?", -1
        try:
            with open(st) as f:
                for line in f:
                    if line.startswith("State:"):
                        state = line.split()[1]
                    elif line.startswith("TracerPid:"):
                        tracer = int(line.split()[1])
        except OSError:
            continue
        out[tid] = (state, tracer)
    return out


def stopped_threads(pid, grace=1.0):
    """Threads that are stopped (t/T) or traced, after up to `grace` seconds."""
    deadline = time.monotonic() + grace
    while True:
        bad = {t: s for t, s in thread_states(pid).items() if s[0] in "tT" or s[1] != 0}
        if not bad or time.monotonic() > deadline:
            return bad
        time.sleep(0.05)


class Result:
    def __init__(self, args, rc, out, err, secs):
        self.args, self.rc, self.out, self.err, self.secs = args, rc, out, err, secs

    def describe(self):
        return "heapdom %s -> rc %s (%.1fs)\n  stderr: %s%s" % (
            " ".join(self.args), self.rc, self.secs, self.err.strip()[:2000] or "(empty)",
            "\n  stdout: " + self.out[-1500:] if self.rc != 0 and self.out else "")


def run_heapdom(heapdom, args, timeout=600):
    t0 = time.monotonic()
    try:
        r = subprocess.run(_cmd(heapdom) + list(args), capture_output=True, text=True,
                           timeout=timeout, env=_env(), errors="replace",
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return Result(args, "timeout", "", "timed out after %ds" % timeout, time.monotonic() - t0)
    return Result(args, r.returncode, r.stdout, r.stderr, time.monotonic() - t0)


def heapdom_json(heapdom, args, timeout=600):
    """Run heapdom, require exit 0 and exactly one JSON object on stdout."""
    r = run_heapdom(heapdom, args, timeout)
    if r.rc != 0:
        raise HarnessError(r.describe())
    try:
        doc = json.loads(r.out)
    except ValueError as e:
        raise HarnessError("%s\n  stdout is not one JSON document: %s; starts %r"
                           % (r.describe(), e, r.out[:200]))
    if not isinstance(doc, dict):
        raise HarnessError("heapdom %s: JSON output is not an object" % " ".join(args))
    return doc


# ----------------------------------------------------------------- truth
class Truth:
    def __init__(self):
        self.pid = None
        self.pagesize = 4096
        self.live = []        # (addr, usable, area, arena|None, kind)
        self.freed = []       # (addr, list, area)
        self.unmapped = []    # addr
        self.tcache = []      # (addr, area, state)
        self.threads_malloced = 0
        self.mallinfo = {}


def read_truth(path, fixture, record):
    """Reads a fixture's truth file: a first line "FIXTURE-truth 1", records
    of words, and "end N", N the number of records before it. record(words,
    line) takes one record (line without its newline, for fields holding
    spaces) and raises ValueError, IndexError or KeyError on a bad one;
    anything wrong is a HarnessError naming the file and line."""
    nrec, end = 0, None
    with open(path) as f:
        if f.readline().split() != [fixture + "-truth", "1"]:
            raise HarnessError("%s: not a %s truth file (v1)" % (path, fixture))
        for n, line in enumerate(f, 2):
            line = line.rstrip("\n")
            w = line.split()
            if not w:
                continue
            if end is not None:
                raise HarnessError("%s:%d: record after end" % (path, n))
            try:
                if w[0] == "end":
                    end = int(w[1])
                    continue
                nrec += 1
                record(w, line)
            except (ValueError, IndexError, KeyError) as e:
                raise HarnessError("%s:%d: bad line %r (%s)" % (path, n, line.strip(), e))
    if end != nrec:
        raise HarnessError("%s: truncated or inconsistent (end %r, %d records)"
                           % (path, end, nrec))


def parse_truth(path):
    t = Truth()
    end = None
    with open(path) as f:
        first = f.readline().split()
        if first != ["heap_fixture-truth", "1"]:
            raise HarnessError("%s: not a heap_fixture truth file (v1)" % path)
        for n, line in enumerate(f, 2):
            w = line.split()
            if not w:
                continue
            try:
                k = w[0]
                if k == "live":
                    t.live.append((int(w[1], 16), int(w[2]), w[3],
                                   None if w[4] == "-" else int(w[4], 16), w[5]))
                elif k == "freed":
                    t.freed.append((int(w[1], 16), w[2], w[3]))
                elif k == "unmapped":
                    t.unmapped.append(int(w[1], 16))
                elif k == "tcache":
                    t.tcache.append((int(w[1], 16), w[2], w[3]))
                elif k == "threads_malloced":
                    t.threads_malloced = int(w[1])
                elif k == "mallinfo2":
                    t.mallinfo[w[1]] = int(w[2])
                elif k == "pid":
                    t.pid = int(w[1])
                elif k == "pagesize":
                    t.pagesize = int(w[1])
                elif k == "end":
                    end = (int(w[1]), int(w[2]))
                else:
                    raise ValueError("unknown record")
            except (ValueError, IndexError) as e:
                raise HarnessError("%s:%d: bad line %r (%s)" % (path, n, line.strip(), e))
    if end != (len(t.live), len(t.freed)):
        raise HarnessError("%s: truncated or inconsistent (end %r, have %d live %d freed)"
                           % (path, end, len(t.live), len(t.freed)))
    return t


# --------------------------------------------------------------- compare
class Mismatches:
    """Mismatches grouped by check; prints the first `limit` of each."""

    def __init__(self):
        self.groups = {}

    def add(self, check, msg):
        self.groups.setdefault(check, []).append(msg)

    def __bool__(self):
        return bool(self.groups)

    def count(self):
        return sum(len(v) for v in self.groups.values())

    def format(self, limit=10, indent="    "):
        lines = []
        for check, msgs in self.groups.items():
            lines.append("%s%s: %d mismatch(es)" % (indent, check, len(msgs)))
            for m in msgs[:limit]:
                lines.append("%s  - %s" % (indent, m))
            if len(msgs) > limit:
                lines.append("%s  ... %d more" % (indent, len(msgs) - limit))
        return "\n".join(lines)


def _hex(v):
    return "0x%x" % v


def _blk(b):
    s = "%s chunk %s size %s %s" % (b["addr"], hex(b["chunk"]), b["size"], b["state"])
    if "list" in b:
        s += "/" + str(b["list"])
    s += " arena " + str(b.get("arena")) + (" mmapped" if b.get("mmapped") else "")
    return s


def glibc_arenas(doc):
    """The arenas of a document's allocator object (docs/json-format.md):
    each region with its glibc facts, as {addr, main, heaps, system_mem,
    top}."""
    out = []
    for r in (doc.get("allocator") or {}).get("regions", []):
        out.append({"addr": r.get("addr"), "main": r.get("primary"),
                    "heaps": r.get("segments"), "system_mem": r.get("system_bytes"),
                    "top": (r.get("facts") or {}).get("top")})
    return out


def method_of(doc):
    """How the walk found the heap: allocator.method."""
    return (doc.get("allocator") or {}).get("method")


class Index:
    """Blocks of a document, checked for shape and indexed by address."""

    def __init__(self, doc, mm):
        self.blocks = []
        self.by_addr = {}
        self.starts = []
        self.main_arena = None
        self.arenas = {}
        for a in glibc_arenas(doc):
            try:
                self.arenas[int(a["addr"], 16)] = a
                if a["main"] is True:
                    if self.main_arena is not None:
                        mm.add("schema", "two arenas with main: true")
                    self.main_arena = int(a["addr"], 16)
                if not isinstance(a["system_mem"], int):
                    mm.add("schema", "arena %s: system_mem not an int" % a["addr"])
                int(a["top"], 16)
            except (KeyError, TypeError, ValueError) as e:
                mm.add("schema", "bad arena entry %r (%s)" % (a, e))
        if self.main_arena is None:
            mm.add("schema", "no arena has \"main\": true")
        prev = None
        for b in doc.get("blocks", []):
            try:
                addr = int(b["addr"], 16)
                ok = (isinstance(b["size"], int) and isinstance(b["chunk"], int)
                      and b["state"] in STATES and isinstance(b["mmapped"], bool)
                      and ("list" in b) == (b["state"] == "free")
                      and (b["state"] != "free" or b["list"] in LISTS)
                      and (b["arena"] is None or isinstance(b["arena"], str)))
                arena = None if b["arena"] is None else int(b["arena"], 16)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                mm.add("schema", "bad block %r (%s)" % (b, e))
                continue
            if not ok:
                mm.add("schema", "bad block %r" % (b,))
                continue
            if b["mmapped"] != (arena is None):
                mm.add("schema", "block %s: mmapped=%s but arena=%s" % (b["addr"], b["mmapped"], b["arena"]))
            if arena is not None and arena not in self.arenas:
                mm.add("schema", "block %s: arena %s is not in \"arenas\"" % (b["addr"], b["arena"]))
            if prev is not None and addr <= prev:
                mm.add("sorted", "block %s does not follow %s" % (b["addr"], _hex(prev)))
            prev = addr
            rec = (addr, b, arena)
            self.blocks.append(rec)
            self.by_addr[addr] = b
        self.blocks.sort(key=lambda r: r[0])
        self.starts = [r[0] - 16 for r in self.blocks]

    def containing(self, addr):
        """The block whose chunk [addr-16, addr-16+chunk) contains addr."""
        i = bisect.bisect_right(self.starts, addr) - 1
        # a few candidates back in case of (reported) overlaps
        for j in range(i, max(i - 3, -1), -1):
            a, b, _ = self.blocks[j]
            if a - 16 <= addr < a - 16 + b["chunk"]:
                return b
        return None


def compare(doc, truth, expect_method=None):
    """Compare a `blocks --json` document with a Truth; return Mismatches."""
    mm = Mismatches()
    for key, typ in (("target", str), ("allocator", dict), ("partial", bool),
                     ("problems", list), ("blocks", list)):
        if not isinstance(doc.get(key), typ):
            mm.add("schema", "top-level %r missing or not %s" % (key, typ.__name__))
    if mm:
        return mm
    al = doc["allocator"]
    for key, typ in (("name", str), ("method", str), ("facts", dict), ("regions", list)):
        if not isinstance(al.get(key), typ):
            mm.add("schema", "allocator.%s missing or not %s" % (key, typ.__name__))
    if al.get("name") != "glibc":
        mm.add("schema", "allocator.name is %r, expected 'glibc'" % al.get("name"))
    if mm:
        return mm
    if expect_method and al["method"] != expect_method:
        mm.add("method", "method is %r, expected %r" % (al["method"], expect_method))
    if doc["partial"]:
        mm.add("partial", "partial is true on a consistent heap")
    for p in doc["problems"]:
        mm.add("problems", "%s: %s" % (p.get("addr"), p.get("message")))

    ix = Index(doc, mm)
    main = ix.main_arena
    page = truth.pagesize

    # -- blocks never overlap; each arena's blocks tile its heaps
    for (a1, b1, _), (a2, b2, _) in zip(ix.blocks, ix.blocks[1:]):
        if a1 - 16 + b1["chunk"] > a2 - 16:
            mm.add("overlap", "%s overlaps %s" % (_blk(b1), _blk(b2)))
    per_arena = {}
    for a, b, ar in ix.blocks:
        if ar is not None:
            per_arena.setdefault(ar, []).append((a, b))
    for ar, lst in per_arena.items():
        tops = [(a, b) for a, b in lst if b["state"] == "free" and b["list"] == "top"]
        if len(tops) != 1:
            mm.add("top", "arena %s has %d top blocks" % (_hex(ar), len(tops)))
        for (a1, b1), (a2, b2) in zip(lst, lst[1:]):
            end = a1 - 16 + b1["chunk"]
            if end == a2 - 16:
                if b1["state"] == "free" and b1["list"] == "top":
                    mm.add("top", "top block %s is followed by %s" % (_blk(b1), _blk(b2)))
                if (b1["state"] == b2["state"] == "free" and b1["list"] not in ("tcache", "fastbin")
                        and b2["list"] not in ("tcache", "fastbin")):
                    mm.add("coalesce", "adjacent free blocks were not merged: %s, %s"
                           % (_blk(b1), _blk(b2)))
                continue
            same_heap = (ar == main) or ((a1 - 16) // HEAP_MAX == (a2 - 16) // HEAP_MAX)
            if same_heap:
                mm.add("tiling", "arena %s: gap/overlap between %s (ends %s) and %s"
                       % (_hex(ar), _blk(b1), _hex(end), _blk(b2)))
        if ar == main and lst and lst[-1][1].get("list") != "top":
            mm.add("top", "main arena's last block is not top: %s" % _blk(lst[-1][1]))
        if tops and ar in ix.arenas:
            t = int(ix.arenas[ar]["top"], 16)
            if t not in (tops[0][0] - 16, tops[0][0]):
                mm.add("top", "arena %s: \"top\" %s is not the top block %s"
                       % (_hex(ar), ix.arenas[ar]["top"], _blk(tops[0][1])))

    # -- live allocations
    for addr, usable, area, arena, kind in truth.live:
        b = ix.by_addr.get(addr)
        if b is None:
            c = ix.containing(addr)
            mm.add("live", "%s (%s, usable %d, %s) not reported as a block%s"
                   % (_hex(addr), kind, usable, area, "; inside " + _blk(c) if c else ""))
            continue
        if b["state"] != "used":
            mm.add("live-state", "%s (%s) expected used: %s" % (_hex(addr), kind, _blk(b)))
        if b["size"] != usable:
            mm.add("live-size", "%s (%s) size %d, malloc_usable_size %d"
                   % (_hex(addr), kind, b["size"], usable))
        if b["mmapped"] != (area == "mmap"):
            mm.add("live-mmapped", "%s (%s) expected mmapped=%s: %s"
                   % (_hex(addr), kind, area == "mmap", _blk(b)))
        barena = None if b["arena"] is None else int(b["arena"], 16)
        if area == "main" and barena != main:
            mm.add("live-arena", "%s (%s) expected main arena: %s" % (_hex(addr), kind, _blk(b)))
        elif area == "nonmain" and (barena is None or barena == main
                                    or (arena is not None and barena != arena)):
            mm.add("live-arena", "%s (%s) expected non-main arena %s: %s"
                   % (_hex(addr), kind, _hex(arena) if arena else "?", _blk(b)))
        elif area == "mmap" and barena is not None:
            mm.add("live-arena", "%s (%s) expected no arena: %s" % (_hex(addr), kind, _blk(b)))

    # -- freed chunks
    for addr, lst, area in truth.freed:
        c = ix.containing(addr)
        if c is None or c["state"] != "free":
            mm.add("freed", "%s (expected %s, %s) %s" % (
                _hex(addr), lst, area, "not inside any block" if c is None
                else "inside non-free " + _blk(c)))
            continue
        if lst != "any":
            b = ix.by_addr.get(addr)
            if b is None:
                mm.add("freed-start", "%s (expected %s) is not a block start; inside %s"
                       % (_hex(addr), lst, _blk(c)))
            elif b.get("list") != lst:
                mm.add("freed-list", "%s expected list %s: %s" % (_hex(addr), lst, _blk(b)))
        carena = None if c["arena"] is None else int(c["arena"], 16)
        if (area == "main") != (carena == main):
            mm.add("freed-arena", "%s expected %s arena: %s" % (_hex(addr), area, _blk(c)))

    # -- unmapped chunks must be gone
    for addr in truth.unmapped:
        c = ix.containing(addr)
        if c is not None:
            mm.add("unmapped", "%s was munmapped but is reported: %s" % (_hex(addr), _blk(c)))

    # -- tcache structs
    for addr, area, state in truth.tcache:
        b = ix.by_addr.get(addr)
        if state == "live" and (b is None or b["state"] != "internal" or b["chunk"] != TCACHE_CHUNK):
            mm.add("tcache", "%s tcache struct (%s) expected internal chunk 0x290: %s"
                   % (_hex(addr), area, _blk(b) if b else "no block"))
    n290 = sum(1 for _, b, _ in ix.blocks if b["state"] == "internal" and b["chunk"] == TCACHE_CHUNK)
    if n290 < truth.threads_malloced:
        mm.add("tcache", "%d internal 0x290 blocks < %d live threads that malloc'd"
               % (n290, truth.threads_malloced))

    # -- fenceposts: a non-main arena spanning several heaps has internal
    #    blocks other than tcache structs in its older heaps
    for ar, lst in per_arena.items():
        if ar == main:
            continue
        heaps = {(a - 16) // HEAP_MAX for a, _ in lst}
        if len(heaps) > 1:
            fp = [b for a, b in lst if b["state"] == "internal" and b["chunk"] != TCACHE_CHUNK]
            if not fp:
                mm.add("fencepost", "arena %s spans %d heaps but reports no fencepost (internal) blocks"
                       % (_hex(ar), len(heaps)))

    # -- mallinfo2 (glibc 2.36 int_mallinfo, summed over all arenas):
    #    fordblks = top + fastbin chunks + chunks in bins (tcache chunks count
    #    as in use); ordblks = number of those minus fastbin chunks (each
    #    arena's top counts 1); smblks/fsmblks = fastbin count/bytes;
    #    hblks/hblkhd = mp_.n_mmaps / mp_.mmapped_mem, i.e. whole mappings:
    #    an aligned mmapped chunk starts prev_size bytes into its mapping, so
    #    each mmapped chunk contributes chunk + ((addr - 16) % pagesize).
    mi = truth.mallinfo
    if mi:
        blocks = [b for _, b, _ in ix.blocks]
        mmapped = [b for b in blocks if b["mmapped"] and b["state"] == "used"]
        free_nt = [b for b in blocks if b["state"] == "free" and b["list"] != "tcache"]
        fast = [b for b in free_nt if b["list"] == "fastbin"]
        got = {
            "hblks": len(mmapped),
            "hblkhd": sum(b["chunk"] + (int(b["addr"], 16) - 16) % page for b in mmapped),
            "smblks": len(fast),
            "fsmblks": sum(b["chunk"] for b in fast),
            "fordblks": sum(b["chunk"] for b in free_nt),
            "ordblks": len(free_nt) - len(fast),
            "arena": sum(a["system_mem"] for a in ix.arenas.values()
                         if isinstance(a.get("system_mem"), int)),
        }
        got["uordblks"] = got["arena"] - got["fordblks"]
        for k, v in got.items():
            if k in mi and mi[k] != v:
                mm.add("mallinfo2", "%s: mallinfo2 says %d, blocks give %d (diff %+d)"
                       % (k, mi[k], v, v - mi[k]))
    return mm


def diff_docs(d1, d2, limit=10):
    """Differences between two documents' arenas and blocks (list of str)."""
    out = []
    a1 = sorted(json.dumps(a, sort_keys=True) for a in glibc_arenas(d1))
    a2 = sorted(json.dumps(a, sort_keys=True) for a in glibc_arenas(d2))
    if a1 != a2:
        out.append("arenas differ: %s vs %s" % (a1, a2))
    b1 = {b.get("addr"): b for b in d1.get("blocks", [])}
    b2 = {b.get("addr"): b for b in d2.get("blocks", [])}
    for addr in sorted(set(b1) | set(b2), key=lambda s: int(s, 16)):
        x, y = b1.get(addr), b2.get(addr)
        if x != y:
            out.append("%s: %s  vs  %s" % (addr, json.dumps(x, sort_keys=True),
                                           json.dumps(y, sort_keys=True)))
    if len(d1.get("blocks", [])) != len(d2.get("blocks", [])) and not out:
        out.append("block counts differ (%d vs %d; duplicates?)"
                   % (len(d1["blocks"]), len(d2["blocks"])))
    return out


class CaseRunner:
    """Runs named checks (each returns a list of problems), prints one
    PASS/FAIL line per check with its problems, and counts them; --only
    selects checks by the first word of their names."""

    def __init__(self, workdir, only=None, keep=False):
        self.work = os.path.abspath(workdir)
        self.only = set(only.split(",")) if only else None
        self.keep = keep
        self.passed = self.failed = 0
        self.cache = {}

    def case(self, name, fn):
        if self.only and name.split()[0] not in self.only:
            return
        t0 = time.monotonic()
        try:
            problems = fn() or []
        except HarnessError as e:
            problems = ["harness: %s" % e]
        except Exception:  # a bug in the test itself must still be reported
            problems = ["exception:\n" + traceback.format_exc()]
        secs = time.monotonic() - t0
        if problems:
            self.failed += 1
            print("FAIL %s (%.1fs)" % (name, secs))
            for p in problems:
                print("    " + str(p).replace("\n", "\n    "))
        else:
            self.passed += 1
            print("PASS %s (%.1fs)" % (name, secs))
        sys.stdout.flush()

    def path(self, name):
        return os.path.join(self.work, name)

    def finish(self, remove=(), kept="cores and truth files", require_pass=False):
        """Ends the run: when every case passed (and not --keep) removes the
        work files ending in remove, when one failed says they were kept;
        prints the "N passed, N failed" line and returns the exit status
        (1 on a failure, or with require_pass when no case passed)."""
        if self.failed == 0 and not self.keep and remove:
            for name in os.listdir(self.work):
                if name.endswith(tuple(remove)):
                    os.unlink(self.path(name))
        elif self.failed and remove:
            print("(%s kept in %s)" % (kept, self.work))
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 1 if self.failed or (require_pass and not self.passed) else 0


# ------------------------------------------------ checks, one line each
class Checks:
    """check(name, cond, detail) prints "ok  NAME", or "FAIL NAME" and the
    detail, and counts; finish() prints "N passed, N failed" last and
    returns the exit status."""

    def __init__(self):
        self.passed, self.failed = [], []

    def __call__(self, name, cond, detail=""):
        (self.passed if cond else self.failed).append(name)
        print("%s %s" % ("ok  " if cond else "FAIL", name))
        if not cond:
            print("     " + str(detail).replace("\n", "\n     ")[:3000])
        sys.stdout.flush()
        return cond

    def finish(self, remove=()):
        """Removes the files in remove when every check passed (they stay
        to look at a failure); prints the count; the exit status."""
        if not self.failed:
            for p in remove:
                if os.path.exists(p):
                    os.unlink(p)
        print("%d passed, %d failed" % (len(self.passed), len(self.failed)))
        return 1 if self.failed else 0


def files_ending(folder, endings):
    return [os.path.join(folder, n) for n in os.listdir(folder)
            if n.endswith(tuple(endings))]


def arguments(*required, doc=None):
    """A test's argument parser: --heapdom, the options in required, and
    --workdir, all required (more can be added to it)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0] if doc else None)
    for opt in ("--heapdom",) + required + ("--workdir",):
        ap.add_argument(opt, required=True)
    return ap


# ------------------------------------ synthetic cores (tests/synth/*.py)
def synth_core(script, core, *args):
    """Runs tests/synth's SCRIPT ARGS CORE; returns the truth it writes
    beside the core (CORE.json)."""
    subprocess.run([sys.executable, script] + list(args) + [core], check=True)
    with open(core + ".json") as f:
        return json.load(f)


def synth_verdicts(blocks, state, skip=()):
    """{(addr, list)} of the blocks in state, but those in skip."""
    return {(b["addr"], b.get("list")) for b in blocks
            if b["state"] == state and b["addr"] not in skip}


def check_synth_blocks(check, tag, truth, doc, skip=()):
    """The truth's used, free (with their lists) and internal blocks are
    exactly the document's, but the blocks in skip."""
    for state in STATES:
        want = synth_verdicts(truth["blocks"], state, skip)
        got = synth_verdicts(doc["blocks"], state, skip)
        check("%s: %s blocks (%d)" % (tag, state, len(want)), want == got,
              "missing %s\nextra %s" % (sorted(want - got)[:8],
                                        sorted(got - want)[:8]))


def synth_heaps(doc, arenas):
    """{arena: its heaps} of the document, for the arenas named."""
    return {a["addr"]: a["heaps"] for a in glibc_arenas(doc)
            if a["addr"] in arenas}


def foreign_cores(folder, workdir, names=None):
    """chap's cores from other machines (../shared/foreign-cores: NAME/
    core.xz), but the truncated one, or only those in names: yields
    (NAME, the core decompressed into workdir), which is removed when the
    caller moves on."""
    for name in sorted(os.listdir(folder)):
        xz = os.path.join(folder, name, "core.xz")
        if name == "Truncated" or not os.path.isfile(xz) or \
                (names is not None and name not in names):
            continue
        core = os.path.join(workdir, "foreign-%s.core" % name)
        with open(core, "wb") as f:
            subprocess.run(["xz", "-dc", xz], stdout=f, check=True)
        try:
            yield name, core
        finally:
            if os.path.exists(core):
                os.unlink(core)


# ---------------------------------- live_fixture (tests/fixtures/live_fixture.c)
LLDB_PYTHON = "/usr/lib/llvm-14/lib/python3.11/dist-packages"


def parse_live_truth(path):
    """live_fixture's truth: {"pid": N, "big"/"map": (ADDR, SIZE), NAME:
    ADDR} ("ready" lines left out)."""
    t = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) < 2 or w[0] == "ready":
                continue
            if w[0] in ("big", "map") and len(w) >= 3:
                t[w[0]] = (int(w[1], 16), int(w[2]))
            elif w[0] == "pid":
                t["pid"] = int(w[1])
            else:
                t[w[0]] = int(w[1], 16)
    return t


def start_live_fixture(fixture, truth, args, env=None, timeout=60):
    """Starts live_fixture TRUTH ARGS in a session of its own and returns
    it once its truth file is written. Without meson's MALLOC_PERTURB_,
    which makes malloc write every block it hands out (a block would not
    stay untouched); env: more variables."""
    if os.path.exists(truth):
        os.unlink(truth)
    e = dict(os.environ, **(env or {}))
    e.pop("MALLOC_PERTURB_", None)
    p = subprocess.Popen([fixture, truth] + list(args), stdin=subprocess.DEVNULL,
                         start_new_session=True, env=e)
    deadline = time.monotonic() + timeout
    while not os.path.exists(truth):
        if p.poll() is not None or time.monotonic() > deadline:
            raise HarnessError("live_fixture %s did not start (rc %s)"
                               % (" ".join(args), p.poll()))
        time.sleep(0.05)
    return p


def live_arguments(workdir=True):
    """The options of a test or benchmark on live_fixture: --heapdom, --lib
    (libheapdom, for the gdb plugin), --fixture, --gdb-plugin, --workdir
    (required) and --lldb-plugin (without it, no lldb)."""
    ap = argparse.ArgumentParser()
    for opt in ("--heapdom", "--lib", "--fixture", "--gdb-plugin"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--lldb-plugin")
    if workdir:
        ap.add_argument("--workdir", required=True)
    return ap


def debugger_env(sparse=True, **more):
    """The environment heapdom and the debuggers run in: no network for
    debug info, the C locale, lldb's Python module; HEAPDOM_SPARSE=0 when
    not sparse (every byte read)."""
    e = dict(os.environ, DEBUGINFOD_URLS="", LC_ALL="C", **more)
    e.pop("HEAPDOM_SPARSE", None)
    if not sparse:
        e["HEAPDOM_SPARSE"] = "0"
    if os.path.isdir(LLDB_PYTHON):
        e["PYTHONPATH"] = LLDB_PYTHON
    return e


class LiveTest:
    """The base of the live-process tests (test_live_safety.py,
    test_sparse.py): their options in self.a (a.workdir made), and
    check(ok, what, detail), which counts and prints a failure only."""

    def __init__(self, a):
        self.a = a
        self.passed = self.failed = 0
        os.makedirs(a.workdir, exist_ok=True)

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s%s" % (what, ("\n  " + detail[-3000:]) if detail else ""))
        sys.stdout.flush()
        return ok

    def path(self, name):
        return os.path.join(self.a.workdir, name)

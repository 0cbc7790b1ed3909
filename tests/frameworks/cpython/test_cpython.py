#!/usr/bin/env python3
"""heapdom integration test of the cpython framework module against a Python
program whose data is known by construction.

    test_cpython.py --heapdom PATH --workdir DIR [--python /usr/bin/python3]
                    [--only core,live] [--keep]

The fixture (cpython_fixture.py, its truth format at its top) runs under the
target Python (Debian 12's CPython 3.11), builds globals of __main__ whose
objects only their container refers to, and records every block they own
with its size as the allocator has it (pymalloc pool header or glibc chunk
header, read by the fixture itself through ctypes).

Cases:
  core   gdb gcore of the running fixture, then the CLI on the core
  live   the CLI with --pid on the running fixture; afterwards no thread of
         it may be left stopped or traced
Checks for each (one PASS/FAIL line each):
  - `frameworks --framework cpython --json`: cpython detected, no error,
    no warnings, the note names the fixture's exact version; pymalloc
    arenas and pools found
  - `dominators --semantic --framework cpython --json`: the "CPython" node
    (interpreter, framework) and under it "pymalloc" (allocator,
    framework; and "free lists" if present) whose bound is framework
    memory only; pymalloc holds one
    "pymalloc pool header" block of 48 bytes per pool found, each
    POOL_SIZE-aligned; the semantic analysis finds no more unreachable
    blocks than the plain `leaks` report (sub-allocator bookkeeping is no
    leak)
  - globals: exactly one node per truth global, label "TYPE 'NAME'
    (__main__)", kind global, owner application, under CPython; its bound
    alloc and blocks equal the truth (exact: the data is exclusively
    owned), its framework bytes are 16 per GC head
  - types: every truth block is in its global's subtree at its address,
    with its size and its type (tp_name, or "list items", "dict keys",
    "set table", "instance values"); per global, the count of each type in
    the subtree equals the truth's
  - agreement: `blocks --json` names every heap block the default
    `dominators --semantic --json` names (Python objects malloc'd whole,
    item arrays, key tables) exactly as the tree does, the truth's malloc'd
    blocks by their Python type, and `types --all --json` counts those
    names as `blocks` does (arrays as T[]) for its malloc'd instances
  - types on pymalloc: `types --all --json` counts at least every object
    the truth recorded per type, exactly for the fixture's own classes
    (Record, Slotted); the sum of its bytes is `blocks`' used chunks plus
    the used sub-allocator blocks of `dominators --semantic --all` (and its
    header says both); each truth type's retained is the union of its
    instances' subtrees in that semantic tree
  - why on pymalloc: `why --json` inside a recorded object in a pool gives
    a reachable chain from a root or node ending at that object, with its
    address, size and Python type; the text names it; a free pymalloc
    block is an error saying "free block"; a recorded malloc'd block is
    answered through the same semantic graph (no "region" root: the arena
    of the object referring to it)
  - --untyped: `types` counts malloc'd blocks only, none named, retained
    from the plain tree; `why` on a pymalloc object: in no heap block

Exit status 0 when every check passed, 1 otherwise, 77 (skipped) when the
target Python is not 3.11 (after checking the module says so); the last
line is "N passed, N failed".
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

FIXTURE = os.path.join(HERE, "cpython_fixture.py")
POOL_SIZE = 16384
GC_HEAD = 16


class Truth:
    def __init__(self):
        self.pid = None
        self.version = None
        self.globals = {}  # name -> (type, bound, blocks, gcheads)
        self.blocks = collections.defaultdict(list)  # name -> [(addr, size, type)]


def parse_truth(path):
    t = Truth()
    end = None
    with open(path) as f:
        lines = f.read().splitlines()
    if not lines or lines[0] != "cpython-fixture-truth 1":
        raise HarnessError("%s: not a cpython fixture truth file" % path)
    for line in lines[1:]:
        w = line.split()
        if w[0] == "pid":
            t.pid = int(w[1])
        elif w[0] == "version":
            t.version = w[1]
        elif w[0] == "global":
            t.globals[w[1]] = (w[2], int(w[3]), int(w[4]), int(w[5]))
        elif w[0] == "block":
            t.blocks[w[1]].append((int(w[2], 16), int(w[3]), w[4].replace("_", " ")))
        elif w[0] == "end":
            end = (int(w[1]), int(w[2]))
    if end != (len(t.globals), sum(len(b) for b in t.blocks.values())):
        raise HarnessError("%s: truncated or inconsistent (end %r)" % (path, end))
    return t


def start(python, workdir):
    truth = os.path.join(workdir, "truth")
    ready = os.path.join(workdir, "ready")
    for p in (truth, ready):
        if os.path.exists(p):
            os.unlink(p)
    proc = subprocess.Popen([python, "-I", FIXTURE, truth, ready],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not os.path.exists(ready):
        if proc.poll() is not None:
            raise HarnessError("fixture exited with %d: %s" % (
                proc.returncode, proc.stderr.read().decode(errors="replace")))
        if time.monotonic() > deadline:
            heaptest.stop_fixture(proc)
            raise HarnessError("fixture not ready after 120s")
        time.sleep(0.02)
    return proc, parse_truth(truth)


def gcore(pid, core):
    if os.path.exists(core):
        os.unlink(core)
    r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-p", str(pid),
                        "-ex", "gcore " + core, "-ex", "detach"],
                       capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, DEBUGINFOD_URLS=""))
    if not os.path.isfile(core) or os.path.getsize(core) == 0:
        raise HarnessError("gdb wrote no core (rc %d): %s" % (r.returncode, r.stderr[-2000:]))
    heaptest.check_core(core)


# ------------------------------------------------------------------ checks
def cpython_entry(doc):
    fws = [f for f in doc.get("frameworks", []) if f.get("name") == "cpython"]
    if len(fws) != 1:
        raise HarnessError("%d cpython entries in frameworks" % len(fws))
    return fws[0]


def check_frameworks(doc, truth):
    pb = []
    fw = cpython_entry(doc)
    if fw.get("detected") is not True:
        pb.append("cpython not detected; notes %r" % fw.get("notes"))
    if fw.get("error") is not None:
        pb.append("error: %s" % fw["error"])
    if fw.get("warnings") or fw.get("dropped_warnings"):
        pb.append("warnings: %r" % (fw.get("warnings")[:5],))
    notes = " | ".join(fw.get("notes") or [])
    if "CPython %s" % truth.version not in notes:
        pb.append("no note naming CPython %s: %s" % (truth.version, notes))
    m = re.search(r"pymalloc: (\d+) arenas, (\d+) pools", notes)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1:
        pb.append("no pymalloc arenas/pools found: %s" % notes)
    if fw.get("regions", 0) < 1 or fw.get("subblocks", 0) < 1:
        pb.append("regions %s, subblocks %s" % (fw.get("regions"), fw.get("subblocks")))
    return pb


def pools_in_notes(doc):
    notes = " | ".join(cpython_entry(doc).get("notes") or [])
    m = re.search(r"pymalloc: (\d+) arenas, (\d+) pools", notes)
    return int(m.group(2)) if m else None


def find_node(doc, label, kind):
    found = [n for n in doc.get("nodes", [])
             if n.get("label") == label and n.get("kind") == kind
             and n.get("framework") == "cpython"]
    return found[0] if len(found) == 1 else None


def tree_node(doc, node_id):
    stack = list(doc.get("tree", []))
    while stack:
        e = stack.pop()
        if e.get("kind") == "node" and e.get("node") == node_id:
            return e
        stack.extend(e.get("children", []))
    return None


def subtree_blocks(entry):
    """Every block/subblock entry below entry (not entry itself)."""
    out = []
    stack = list(entry.get("children", []))
    while stack:
        e = stack.pop()
        if e.get("kind") in ("block", "subblock"):
            out.append(e)
        stack.extend(e.get("children", []))
    return out


def check_nodes(doc, truth, plain_leaks):
    pb = []
    top = find_node(doc, "CPython", "interpreter")
    pm = find_node(doc, "pymalloc", "allocator")
    if not top or not pm:
        return ["nodes CPython/interpreter and pymalloc/allocator: %r"
                % [(n.get("label"), n.get("kind")) for n in doc.get("nodes", [])][:20]]
    if top.get("owner") != "framework" or top.get("parent") is not None:
        pb.append("CPython node: owner %s parent %s" % (top.get("owner"), top.get("parent")))
    if pm.get("owner") != "framework" or pm.get("parent") != top["id"]:
        pb.append("pymalloc node: owner %s parent %s" % (pm.get("owner"), pm.get("parent")))
    b = pm["bound"]
    if b["framework"] != b["alloc"] or b["application"] != 0 or b["alloc"] <= 0:
        pb.append("pymalloc bound is not all framework memory: %r" % b)
    entry = tree_node(doc, pm["id"])
    if entry is None:
        pb.append("pymalloc node not in the tree")
    else:
        blocks = subtree_blocks(entry)
        headers = [e for e in blocks if e.get("type") == "pymalloc pool header"]
        npools = pools_in_notes(doc)
        if len(headers) != npools:
            pb.append("%d pool headers under pymalloc, %s pools found" % (len(headers), npools))
        for e in headers:
            a = int(e["address"], 16)
            if a % POOL_SIZE or e["object"]["alloc"] != 48:
                pb.append("pool header %s: %r" % (e["address"], e["object"]))
        if len(blocks) != pm["bound"]["blocks"]:
            pb.append("pymalloc: %d blocks in the tree, bound says %d"
                      % (len(blocks), pm["bound"]["blocks"]))
    fl = find_node(doc, "free lists", "allocator")
    if fl and (fl.get("parent") != top["id"] or fl["bound"]["framework"] != fl["bound"]["alloc"]):
        pb.append("free lists node: parent %s, bound %r" % (fl.get("parent"), fl["bound"]))
    unreachable = doc.get("totals", {}).get("unreachable_blocks")
    if unreachable is not None and unreachable != plain_leaks:
        pb.append("semantic analysis: %s unreachable blocks, plain leaks report %d"
                  % (unreachable, plain_leaks))
    return pb


def global_label(name, typ):
    return "%s '%s' (__main__)" % (typ, name)


def check_globals(doc, truth):
    pb = []
    top = find_node(doc, "CPython", "interpreter")
    want = {global_label(n, g[0]) for n, g in truth.globals.items()}
    have = {n["label"] for n in doc.get("nodes", [])
            if n.get("kind") == "global" and n.get("framework") == "cpython"}
    if want != have:
        pb.append("global nodes: missing %s, unexpected %s"
                  % (sorted(want - have), sorted(have - want)))
    for name, (typ, bound, nblocks, gc) in sorted(truth.globals.items()):
        n = find_node(doc, global_label(name, typ), "global")
        if not n:
            continue
        if n.get("owner") != "application" or not top or n.get("parent") != top["id"]:
            pb.append("%s: owner %s, parent %s" % (name, n.get("owner"), n.get("parent")))
        b = n["bound"]
        got = (b["alloc"], b["blocks"], b["framework"])
        exp = (bound, nblocks, gc * GC_HEAD)
        if got != exp:
            pb.append("%s: bound alloc/blocks/framework %r, truth %r" % (name, got, exp))
    return pb


def check_types(doc, truth):
    pb = []
    for name, (typ, bound, nblocks, gc) in sorted(truth.globals.items()):
        n = find_node(doc, global_label(name, typ), "global")
        entry = tree_node(doc, n["id"]) if n else None
        if entry is None:
            pb.append("%s: no node in the tree" % name)
            continue
        blocks = {int(e["address"], 16): e for e in subtree_blocks(entry)}
        want = collections.Counter()
        for addr, size, t in truth.blocks[name]:
            want[t] += 1
            e = blocks.get(addr)
            if e is None:
                pb.append("%s: %s block 0x%x not in its subtree" % (name, t, addr))
            elif e.get("type") != t or e["object"]["alloc"] != size:
                pb.append("%s: block 0x%x is %r of %d bytes, truth %s of %d"
                          % (name, addr, e.get("type"), e["object"]["alloc"], t, size))
        got = collections.Counter(e.get("type") for e in blocks.values())
        if got != want:
            pb.append("%s: types in the subtree %r, truth %r"
                      % (name, dict(got), dict(want)))
    return pb


def check_agreement(sem, blocks, types, truth):
    """`types`, `blocks` and `dominators --semantic` (default modules) name
    every heap block alike, and the truth's malloc'd blocks by their
    Python type."""
    pb = []
    used = {int(b["addr"], 16): b for b in blocks.get("blocks", []) if b["state"] == "used"}
    stack, named = list(sem.get("tree", [])), 0
    while stack:
        e = stack.pop()
        stack.extend(e.get("children", []))
        a = int(e["address"], 16) if e.get("kind") == "block" else None
        if a in used and e.get("type") is not None:
            named += 1
            if used[a]["type"] != e["type"]:
                pb.append("block 0x%x: %r in `blocks`, %r in `dominators --semantic`"
                          % (a, used[a]["type"], e["type"]))
    if not named:
        pb.append("no heap block named in `dominators --semantic`")
    for name in truth.blocks:
        for addr, size, t in truth.blocks[name]:
            if addr in used and used[addr]["type"] != t:
                pb.append("%s: heap block 0x%x is %r in `blocks`, truth %s"
                          % (name, addr, used[addr]["type"], t))

    def row(t):
        return re.sub(r"\[\d+(\.\.\d+)?\]$", "[]", t)
    # The malloc'd instances of each row (its sub-allocator blocks apart).
    want = collections.Counter(row(b["type"]) for b in used.values() if b["type"] is not None)
    got = collections.Counter()
    for r in types.get("types", []):
        if r["type"] is not None and r["count"] - r["subblocks"]:
            got[r["type"]] += r["count"] - r["subblocks"]
    if got != want:
        bad = sorted(k for k in set(got) | set(want) if got[k] != want[k])
        pb.append("`types` rows differ from the blocks' types: %s"
                  % ", ".join("%s %d vs %d" % (k, got[k], want[k]) for k in bad[:10]))
    return pb


# Types the fixture alone creates: every instance is one it recorded.
OWN_TYPES = ("Record", "Slotted")


def used_subblocks(sem):
    """Address -> entry of every used sub-allocator block the default
    semantic tree (--all) lists."""
    return {int(b["address"], 16): b for b in sem.get("blocks", [])
            if b.get("kind") == "subblock" and b.get("state") == "used"}


def check_types_subblocks(sem, blocks, types, truth):
    """`types` counts pymalloc's objects as instances of their Python
    types, its bytes are the malloc'd used bytes plus the used sub-blocks'
    bytes, and its retained is the union of the instances' subtrees in the
    semantic dominator tree."""
    pb = []
    if sem.get("totals", {}).get("unreachable_blocks") != 0:
        raise HarnessError("semantic tree: %r unreachable blocks (the sums below need 0)"
                           % sem.get("totals", {}).get("unreachable_blocks"))
    subs = used_subblocks(sem)
    rows = {r["type"]: r for r in types.get("types", []) if r["type"] is not None}
    # Counts: at least the recorded instances; exactly for the fixture's
    # own classes.
    want = collections.Counter(t for name in truth.blocks for _, _, t in truth.blocks[name])
    in_pools = collections.Counter(t for name in truth.blocks
                                   for a, _, t in truth.blocks[name] if a in subs)
    if not in_pools:
        pb.append("no truth block is a used sub-allocator block of the semantic tree")
    for t, n in sorted(want.items()):
        r = rows.get(t)
        got = r["count"] if r else 0
        if got < n or (t in OWN_TYPES and got != n):
            pb.append("`types` counts %d %s, the fixture recorded %d%s"
                      % (got, t, n, " (all of them)" if t in OWN_TYPES else ""))
        if in_pools[t] and (r is None or r["subblocks"] < in_pools[t]):
            pb.append("`types` counts %s sub-allocator blocks of %s, %d recorded in pools"
                      % (r and r["subblocks"], t, in_pools[t]))
    for t in OWN_TYPES:
        if t not in want:
            pb.append("the fixture recorded no %s" % t)
    # Bytes: malloc'd used chunks (`blocks`) + used sub-blocks' sizes
    # (`dominators --semantic --all`); CPython's arenas are mmapped, so no
    # malloc'd block holds a pool.
    malloc_bytes = sum(b["chunk"] for b in blocks.get("blocks", []) if b["state"] == "used")
    sub_bytes = sum(b["object"]["alloc"] for b in subs.values())
    total = sum(r["bytes"] for r in types.get("types", []))
    if total != malloc_bytes + sub_bytes:
        pb.append("`types` bytes sum to %d, malloc'd used %d + used sub-blocks %d = %d"
                  % (total, malloc_bytes, sub_bytes, malloc_bytes + sub_bytes))
    head = (types.get("malloc_bytes"), types.get("subblock_bytes"), types.get("subblocks"),
            types.get("retained_tree"))
    if head != (malloc_bytes, sub_bytes, len(subs), "semantic"):
        pb.append("`types` header malloc_bytes/subblock_bytes/subblocks/retained_tree %r, "
                  "expected %r" % (head, (malloc_bytes, sub_bytes, len(subs), "semantic")))
    # Retained: the bytes below an instance of the row in the semantic
    # tree (nodes' idoms link the blocks' subtrees), each counted once.
    parent = {}
    for n in sem.get("nodes", []):
        parent["node:%d" % n["id"]] = n.get("idom")
    rowof = {}
    for b in sem.get("blocks", []):
        parent[b["address"]] = b.get("idom")
        if b.get("state") == "used" and b.get("type") in want:
            rowof[b["address"]] = b["type"]
    retained = collections.Counter()
    for b in sem.get("blocks", []):
        seen, v, hops = set(), b["address"], 0
        while v is not None and hops <= len(parent):
            if v in rowof:
                seen.add(rowof[v])
            v = parent.get(v)
            hops += 1
        for t in seen:
            retained[t] += b["object"]["alloc"]
    for t in sorted(want):
        if t in rows and rows[t]["retained"] != retained[t]:
            pb.append("%s: retained %d, the semantic tree gives %d"
                      % (t, rows[t]["retained"], retained[t]))
    return pb


def check_why_subblocks(heapdom, target, sem, truth):
    """`why` inside a recorded pymalloc object: a reachable chain through
    the semantic graph ending at that object, named by its Python type; in
    a free pymalloc block: says so, and fails."""
    pb = []
    subs = used_subblocks(sem)
    picked = {}
    for name in sorted(truth.blocks):
        for addr, size, t in truth.blocks[name]:
            if addr in subs and t not in picked:
                picked[t] = (addr, size)
    if len(picked) < 4:
        pb.append("only %d recorded types in pymalloc's pools: %r" % (len(picked), sorted(picked)))
    for t in sorted(picked)[:8]:
        addr, size = picked[t]
        q = addr + size // 2  # inside, not at its start
        doc = heaptest.heapdom_json(heapdom, ["why"] + target + ["0x%x" % q, "--json"])
        path = doc.get("path") or []
        last = path[-1] if path else {}
        first = path[0] if path else {}
        if (doc.get("reachable") is not True or len(path) < 2
                or last.get("addr") != "0x%x" % addr or last.get("type") != t
                or last.get("kind") != "subblock" or last.get("size") != size
                or not ("root" in first or "node" in first)):
            pb.append("why 0x%x (%s at 0x%x, %d bytes): reachable %r, path %r"
                      % (q, t, addr, size, doc.get("reachable"), path[:1] + path[-1:]))
    # A malloc'd block a Python object holds (a large bytes, a key table):
    # the same graph answers, not the plain graph's "region" root that the
    # arena holding its referrer is there.
    malloced = [(a, sz, t) for name in sorted(truth.blocks) for a, sz, t in truth.blocks[name]
                if a not in subs]
    if not malloced:
        pb.append("the fixture recorded no malloc'd block")
    for addr, size, t in malloced[:2]:
        doc = heaptest.heapdom_json(heapdom, ["why"] + target + ["0x%x" % (addr + 8), "--json"])
        path = doc.get("path") or []
        last = path[-1] if path else {}
        if (doc.get("graph") != "semantic" or doc.get("reachable") is not True
                or last.get("addr") != "0x%x" % addr or last.get("type") != t
                or last.get("kind") != "block" or last.get("chunk") != size
                or any("root" in e and e.get("kind") == "region" for e in path)):
            pb.append("why on malloc'd %s at 0x%x: graph %r, reachable %r, path %r"
                      % (t, addr, doc.get("graph"), doc.get("reachable"), path[:2] + path[-1:]))
    t = sorted(picked)[0] if picked else None
    if t:
        addr, size = picked[t]
        r = heaptest.run_heapdom(heapdom, ["why"] + target + ["0x%x" % (addr + 1)])
        if r.rc != 0 or ("0x%x (%s, " % (addr, t)) not in r.out or "kept alive" not in r.out:
            pb.append("why 0x%x as text: rc %r, %r" % (addr + 1, r.rc, r.out[:300]))
    free = [int(b["address"], 16) for b in sem.get("blocks", [])
            if b.get("kind") == "subblock" and b.get("state") == "free"]
    if free:
        r = heaptest.run_heapdom(heapdom, ["why"] + target + ["0x%x" % free[0]])
        if r.rc == 0 or "free block 0x%x" % free[0] not in r.err:
            pb.append("why on free pymalloc block 0x%x: rc %r, %r"
                      % (free[0], r.rc, (r.out + r.err)[:300]))
    else:
        pb.append("no free pymalloc block in the semantic tree to ask about")
    return pb


def check_untyped(heapdom, target, sem, blocks, truth):
    """--untyped keeps the framework modules out: `types` counts malloc'd
    blocks only, and a pymalloc object's address is in no heap block."""
    pb = []
    types = heaptest.heapdom_json(heapdom, ["types", "--untyped", "--all", "--json"] + target)
    malloc_bytes = sum(b["chunk"] for b in blocks.get("blocks", []) if b["state"] == "used")
    total = sum(r["bytes"] for r in types.get("types", []))
    named = [r["type"] for r in types.get("types", []) if r["type"] is not None]
    if (total != malloc_bytes or types.get("subblocks") != 0
            or types.get("retained_tree") != "dominators" or named):
        pb.append("types --untyped: bytes %d (malloc'd used %d), subblocks %r, tree %r, named %r"
                  % (total, malloc_bytes, types.get("subblocks"), types.get("retained_tree"),
                     named[:5]))
    subs = used_subblocks(sem)
    rec = [(a, t) for name in sorted(truth.blocks) for a, _, t in truth.blocks[name] if a in subs]
    if rec:
        a, t = rec[0]
        r = heaptest.run_heapdom(heapdom, ["why", "--untyped"] + target + ["0x%x" % a])
        if r.rc == 0 or "not inside any heap block" not in r.err:
            pb.append("why --untyped on %s at 0x%x: rc %r, %r" % (t, a, r.rc, (r.out + r.err)[:300]))
    return pb


class Run:
    def __init__(self):
        self.passed = self.failed = 0

    def result(self, case, check, problems):
        if problems:
            self.failed += 1
            print("FAIL %s: %s" % (case, check))
            for p in problems[:20]:
                print("    " + str(p))
            if len(problems) > 20:
                print("    ... %d more" % (len(problems) - 20))
        else:
            self.passed += 1
            print("PASS %s: %s" % (case, check))
        sys.stdout.flush()

    def guarded(self, case, check, fn, *args):
        try:
            self.result(case, check, fn(*args))
        except HarnessError as e:
            self.result(case, check, ["harness: %s" % e])
        except Exception as e:  # a bug in the test must still be reported
            import traceback
            self.result(case, check, ["exception: %s\n%s" % (e, traceback.format_exc())])


def analyse(run, case, heapdom, target, truth):
    fw_doc = heaptest.heapdom_json(heapdom, ["frameworks", "--framework", "cpython", "--json"] + target)
    run.guarded(case, "frameworks report", check_frameworks, fw_doc, truth)
    # --depth/--top large enough for every block of the globals' subtrees.
    doc = heaptest.heapdom_json(heapdom, ["dominators", "--semantic", "--framework", "cpython",
                                          "--json", "--depth", "8", "--top", "10000000"] + target)
    run.guarded(case, "frameworks entry of dominators", check_frameworks, doc, truth)
    leaks = heaptest.heapdom_json(heapdom, ["leaks", "--json"] + target)
    run.guarded(case, "CPython and pymalloc nodes", check_nodes, doc, truth,
                leaks.get("leaked_blocks", 0))
    run.guarded(case, "globals' bound memory", check_globals, doc, truth)
    run.guarded(case, "object types", check_types, doc, truth)
    # One naming for every view: the default modules' names.
    sem = heaptest.heapdom_json(heapdom, ["dominators", "--semantic", "--json", "--depth", "64",
                                          "--top", "10000000", "--all"] + target)
    blocks = heaptest.heapdom_json(heapdom, ["blocks", "--json"] + target)
    types = heaptest.heapdom_json(heapdom, ["types", "--all", "--json"] + target)
    run.guarded(case, "types, blocks and dominators --semantic agree", check_agreement,
                sem, blocks, types, truth)
    run.guarded(case, "types counts pymalloc's objects, bytes and retained as the semantic tree",
                check_types_subblocks, sem, blocks, types, truth)
    run.guarded(case, "why on pymalloc objects", check_why_subblocks, heapdom, target, sem, truth)
    run.guarded(case, "--untyped: malloc'd blocks only", check_untyped, heapdom, target, sem,
                blocks, truth)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated cases: core,live")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else {"core", "live"}
    if not os.access(args.python, os.X_OK):
        print("no %s: skipped" % args.python)
        return 77
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    run = Run()
    try:
        proc, truth = start(args.python, work)
    except HarnessError as e:
        run.result("fixture", "start", [str(e)])
        print("%d passed, %d failed" % (run.passed, run.failed))
        return 1
    try:
        print("fixture: pid %d, CPython %s, %d globals, %d blocks"
              % (truth.pid, truth.version, len(truth.globals),
                 sum(len(b) for b in truth.blocks.values())))
        for name, (typ, bound, nblocks, gc) in sorted(truth.globals.items()):
            print("  expect %-34s bound %6d bytes in %4d blocks, %3d GC heads"
                  % (global_label(name, typ), bound, nblocks, gc))
        if not truth.version.startswith("3.11."):
            # The module must say it found an unsupported version.
            doc = heaptest.heapdom_json(args.heapdom, ["frameworks", "--framework", "cpython",
                                                       "--json", "--pid", str(proc.pid)])
            fw = cpython_entry(doc)
            notes = " ".join(fw.get("notes") or [])
            run.result("live", "unsupported version reported",
                       [] if not fw.get("detected") and truth.version in notes
                       else ["detected %s, notes %r" % (fw.get("detected"), notes)])
            print("%d passed, %d failed (CPython %s: not 3.11, skipped)"
                  % (run.passed, run.failed, truth.version))
            return 1 if run.failed else 77
        if "core" in only:
            core = os.path.join(work, "cpython.core")
            try:
                gcore(proc.pid, core)
                analyse(run, "core", args.heapdom, [core], truth)
            except HarnessError as e:
                run.result("core", "analysis", [str(e)])
            if not args.keep and os.path.exists(core):
                os.unlink(core)
        if "live" in only:
            try:
                analyse(run, "live", args.heapdom, ["--pid", str(proc.pid)], truth)
                left = heaptest.stopped_threads(proc.pid)
                run.result("live", "process left running",
                           ["threads left stopped or traced: %r" % left] if left else [])
            except HarnessError as e:
                run.result("live", "analysis", [str(e)])
    finally:
        heaptest.stop_fixture(proc)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("%d passed, %d failed" % (run.passed, run.failed))
    return 1 if run.failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""heapdom integration test: the uikit framework module (examples/uikit)
against the ground truth notes_app records by construction.

    test_uikit.py --heapdom PATH --app NOTES_APP --module HEAPDOM_UIKIT_SO
                  --other SESSION_CACHE --workdir DIR [--only a,b,...] [--keep]

Cases:
  core      a core of `notes_app --truth FILE`, analysed with
            `dominators --semantic --framework MODULE --json`
  path      the same core, the module found through HEAPDOM_FRAMEWORK_PATH
            (no --framework: the built-in modules run too; and with
            --framework uikit: it alone); `frameworks --json` lists it as
            detected and no module of the path as failed; `types` counts
            every used pool slot as an instance of its kind and each pool
            (a malloc'd block) without its slots: bytes are the malloc'd
            used chunks minus the slots plus the used slots
  live      `dominators --pid PID --semantic --framework MODULE` on a running
            notes_app (--wait); afterwards none of its threads is stopped
  damaged   the core with a view's magic broken, a pool slot's header
            broken and a view listed as its own child (a cycle): the module
            warns at each of those addresses, leaves those views out (and the
            one the cycle replaced) and keeps every other node; exit 0
  version   the core with uk_version changed to 2.0: the module refuses it
            (not detected, a note naming the version), makes no node
  negative  a core of examples/session_cache (no uikit in it): the module
            runs, is not detected, makes no node; exit status 0
For core, path and live:
  - the uikit entry of "frameworks": detected, no error, no warning (the
    scene is clean: a warning means the module misread it), as many nodes,
    sub-allocator blocks (slots + pool headers) and assigned blocks as the
    truth
  - every node of the truth (matched by its label path app/window/view)
    and no other uikit node: kind, owner, object alloc/used/blocks, bound
    alloc/used/framework/application/blocks, exact
  - the app node hangs under the global uk_the_app; each window's idom is
    the app node, each view's its window node
  - application data shared by several views (the note store of two
    windows, the glyph cache of two views of one window) hangs directly
    under the node the truth names, in the semantic dominator tree
  - every used pool slot is a sub-block of the tree typed with its kind
    (uk_button, uk_label, uk_text_field), of the slot's size, directly
    under the node of its view; no free slot is anywhere in the tree

The truth format is described at the top of examples/uikit/notes_truth.c.
Exit status 0 when every case passed, 1 otherwise; the last line is
"N passed, N failed".
"""
import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "integration"))
import heaptest  # noqa: E402
import test_damaged  # noqa: E402  (core patching helpers)
from heaptest import HarnessError  # noqa: E402

TREE_ARGS = ["--depth", "1000", "--top", "1000000"]
ENV_PATH = "HEAPDOM_FRAMEWORK_PATH"


# ------------------------------------------------------------------ truth
class UkTruth:
    def __init__(self):
        self.pid = None
        self.nodes = []      # dicts, index = IDX
        self.expects = []    # (addr, idx, what)
        self.objects = {}    # idx -> address of its struct
        self.children = {}   # idx -> address of a view's child array
        self.version = None  # address of uk_version
        self.pools = []      # (addr, chunk, slot_size, nslots)
        self.slots = []      # (addr, size, state, kind, idx | None)

    def path(self, idx):
        parts = []
        while idx is not None and idx >= 0:
            parts.append(self.nodes[idx]["label"])
            idx = self.nodes[idx]["parent"]
        return " / ".join(reversed(parts))


def parse_truth(path):
    t = UkTruth()

    def record(w, line):
        k = w[0]
        if k == "pid":
            t.pid = int(w[1])
        elif k == "node":
            if int(w[1]) != len(t.nodes):
                raise ValueError("nodes out of order")
            parent = int(w[2])
            t.nodes.append({
                "parent": None if parent < 0 else parent,
                "kind": w[3],
                "object": {"alloc": int(w[4]), "used": int(w[5]), "blocks": int(w[6])},
                "bound": {"alloc": int(w[7]), "used": int(w[8]),
                          "framework": int(w[9]), "application": int(w[10]),
                          "blocks": int(w[11])},
                "label": line.split(" ", 12)[12],
            })
        elif k == "object":
            t.objects[int(w[1])] = int(w[2], 16)
        elif k == "version":
            t.version = int(w[1], 16)
        elif k == "children":
            t.children[int(w[1])] = int(w[2], 16)
        elif k == "expect":
            t.expects.append((int(w[1], 16), int(w[2]), w[3]))
        elif k == "pool":
            t.pools.append((int(w[1], 16), int(w[2]), int(w[3]), int(w[4])))
        elif k == "slot":
            if w[3] not in ("used", "free"):
                raise ValueError("bad state")
            t.slots.append((int(w[1], 16), int(w[2]), w[3],
                            None if w[4] == "-" else w[4],
                            None if w[5] == "-" else int(w[5])))
        else:
            raise ValueError("unknown record")
    heaptest.read_truth(path, "uikit", record)
    if not t.nodes or not t.pools or len(t.objects) != len(t.nodes) or t.version is None:
        raise HarnessError("%s: no nodes, no pools, no version or an object record missing" % path)
    return t


# -------------------------------------------------------------- processes
def gdb_core(argv, breakpoint, core, timeout=600):
    """Run argv under gdb up to breakpoint and gcore it."""
    if os.path.exists(core):
        os.unlink(core)
    cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "break " + breakpoint, "-ex", "run",
           "-ex", "gcore " + core, "-ex", "kill", "--args"] + list(argv)
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=heaptest._env())
    except subprocess.TimeoutExpired:
        raise HarnessError("gdb timed out: %s" % " ".join(cmd))
    if not os.path.isfile(core) or os.path.getsize(core) == 0:
        raise HarnessError("gdb produced no core %s (rc %d)\n%s%s"
                           % (core, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return heaptest.check_core(core, argv[0])


def start_app(app, truth, ready, timeout=120):
    for p in (truth, ready):
        if os.path.exists(p):
            os.unlink(p)
    proc = subprocess.Popen([app, "--truth", truth, "--wait", ready],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=heaptest._env())
    deadline = time.monotonic() + timeout
    while not os.path.exists(ready):
        if proc.poll() is not None:
            raise HarnessError("notes_app exited with %d before becoming ready: %s"
                               % (proc.returncode, proc.stderr.read().decode(errors="replace")))
        if time.monotonic() > deadline:
            heaptest.stop_fixture(proc)
            raise HarnessError("notes_app not ready after %ds" % timeout)
        time.sleep(0.02)
    return proc


class FrameworkPath:
    """HEAPDOM_FRAMEWORK_PATH set (or, with None, unset) for the runs inside."""

    def __init__(self, value):
        self.value = value

    def __enter__(self):
        self.saved = os.environ.get(ENV_PATH)
        if self.value is None:
            os.environ.pop(ENV_PATH, None)
        else:
            os.environ[ENV_PATH] = self.value

    def __exit__(self, *exc):
        if self.saved is None:
            os.environ.pop(ENV_PATH, None)
        else:
            os.environ[ENV_PATH] = self.saved


# ------------------------------------------------------------ the checks
def types_checks(types, blocks, truth, problems):
    """`types` with the module on the default path: every used pool slot is
    an instance of its kind, and a pool (a malloc'd block) counts without
    its slots, so no byte is counted twice: malloc'd used chunks minus the
    slots, plus the used slots."""
    used = [s for s in truth.slots if s[2] == "used"]
    chunks = sum(b["chunk"] for b in blocks.get("blocks", []) if b.get("state") == "used")
    inner = sum(s[1] for s in truth.slots)
    want = (chunks - inner, sum(s[1] for s in used), len(used), "semantic")
    got = (types.get("malloc_bytes"), types.get("subblock_bytes"), types.get("subblocks"),
           types.get("retained_tree"))
    if got != want:
        problems.append("types: malloc_bytes/subblock_bytes/subblocks/retained_tree %r, "
                        "truth %r" % (got, want))
    total = sum(r["bytes"] for r in types.get("types", []))
    if total != want[0] + want[1]:
        problems.append("types: bytes sum to %d, expected %d" % (total, want[0] + want[1]))
    kinds = collections.Counter(s[3] for s in used)
    rows = {r["type"]: r["subblocks"] for r in types.get("types", []) if r["type"]}
    for k, n in sorted(kinds.items()):
        if rows.get(k) != n:
            problems.append("types: %r sub-allocator instances of %s, truth %d"
                            % (rows.get(k), k, n))


def uikit_entry(doc, problems):
    fws = doc.get("frameworks")
    if not isinstance(fws, list):
        problems.append("no \"frameworks\" list")
        return None
    mine = [f for f in fws if isinstance(f, dict) and f.get("name") == "uikit"]
    if len(mine) != 1:
        problems.append("%d frameworks named uikit (of %s)"
                        % (len(mine), [f.get("name") for f in fws if isinstance(f, dict)]))
        return None
    return mine[0]


def check_entry(fw, truth, module, problems):
    """The uikit entry of a detected, clean analysis."""
    if fw is None:
        return
    want = {
        "detected": True,
        "error": None,
        "source": os.path.realpath(module),
        "nodes": len(truth.nodes),
        "subblocks": len(truth.slots) + len(truth.pools),
        "assigned": sum(n["object"]["blocks"] for n in truth.nodes),
        "dropped_warnings": 0,
    }
    for k, v in want.items():
        got = fw.get(k)
        if k == "source" and isinstance(got, str):
            got = os.path.realpath(got)
        if got != v:
            problems.append("frameworks[uikit].%s = %r, expected %r" % (k, fw.get(k), v))
    if fw.get("warnings"):
        problems.append("uikit warned on a clean scene: %s" % fw["warnings"][:5])
    if not any("libuikit 1.0" in str(n) for n in fw.get("notes") or []):
        problems.append("no note naming libuikit 1.0: %r" % fw.get("notes"))


def doc_paths(nodes):
    """id -> label path (app / window / view) over the document's nodes."""
    by_id = {n.get("id"): n for n in nodes}
    out = {}
    for n in nodes:
        parts, cur = [], n
        for _ in range(len(nodes) + 1):
            parts.append(str(cur.get("label")))
            p = cur.get("parent")
            if p is None or p not in by_id:
                break
            cur = by_id[p]
        out[n.get("id")] = " / ".join(reversed(parts))
    return out


def check_nodes(doc, truth, problems):
    """Every truth node, exact; returns truth idx -> document node id."""
    nodes = [n for n in doc.get("nodes") or [] if n.get("framework") == "uikit"]
    paths = doc_paths(doc.get("nodes") or [])
    by_path = {}
    for n in nodes:
        p = paths[n.get("id")]
        if p in by_path:
            problems.append("two uikit nodes %r" % p)
        by_path[p] = n
    ids = {}
    for i, tn in enumerate(truth.nodes):
        p = truth.path(i)
        n = by_path.pop(p, None)
        if n is None:
            problems.append("node %r missing" % p)
            continue
        ids[i] = n.get("id")
        if n.get("kind") != tn["kind"]:
            problems.append("%s: kind %r, expected %r" % (p, n.get("kind"), tn["kind"]))
        if n.get("owner") != "framework":
            problems.append("%s: owner %r, expected framework" % (p, n.get("owner")))
        for part in ("object", "bound"):
            got = n.get(part) or {}
            for k, v in tn[part].items():
                if got.get(k) != v:
                    problems.append("%s: %s.%s = %r, expected %d (diff %+d)"
                                    % (p, part, k, got.get(k), v,
                                       (got.get(k) or 0) - v if isinstance(got.get(k), int) else 0))
    for p in by_path:
        problems.append("unexpected uikit node %r" % p)
    # Where the nodes hang.
    for i, tn in enumerate(truth.nodes):
        if i not in ids:
            continue
        n = [x for x in nodes if x.get("id") == ids[i]][0]
        if tn["parent"] is None:
            for k in ("holder", "idom"):
                v = n.get(k)
                if not (isinstance(v, str) and v.startswith("root:") and v.endswith("uk_the_app")):
                    problems.append("%s: %s %r, expected the root of uk_the_app"
                                    % (truth.path(i), k, v))
        elif tn["parent"] in ids:
            want = "node:%d" % ids[tn["parent"]]
            if n.get("idom") != want:
                problems.append("%s: idom %r, expected %r (%s)"
                                % (truth.path(i), n.get("idom"), want, truth.path(tn["parent"])))
    return ids


def tree_parents(doc, problems):
    """address -> (entry, parent entry) for every block/subblock of the tree."""
    out = {}
    stack = [(e, None) for e in doc.get("tree") or []]
    seen = 0
    while stack:
        e, parent = stack.pop()
        seen += 1
        if seen > 10000000:
            problems.append("tree too large")
            break
        if e.get("kind") in ("block", "subblock"):
            try:
                a = int(e["address"], 16)
            except (KeyError, TypeError, ValueError):
                problems.append("tree entry without an address: %r" % {k: e.get(k) for k in ("kind", "label")})
                continue
            if a in out:
                problems.append("0x%x twice in the tree" % a)
            out[a] = (e, parent)
        for c in e.get("children") or []:
            stack.append((c, e))
    return out


def describe(e):
    if e is None:
        return "the super-root"
    if e.get("kind") == "node":
        return "node %s %r" % (e.get("node"), e.get("label"))
    return "%s %s" % (e.get("kind"), e.get("address") or e.get("label"))


def check_tree(doc, truth, ids, problems):
    where = tree_parents(doc, problems)
    for addr, idx, what in truth.expects:
        if addr not in where:
            problems.append("%s 0x%x: not in the tree" % (what, addr))
            continue
        _, parent = where[addr]
        if idx not in ids or parent is None or parent.get("kind") != "node" \
                or parent.get("node") != ids[idx]:
            problems.append("%s 0x%x hangs under %s, expected node %s (%s)"
                            % (what, addr, describe(parent), ids.get(idx), truth.path(idx)))
    used = free = 0
    for addr, size, state, kind, idx in truth.slots:
        if state == "free":
            free += 1
            if addr in where:
                e, parent = where[addr]
                problems.append("free slot 0x%x is in the tree (%s under %s)"
                                % (addr, e.get("kind"), describe(parent)))
            continue
        used += 1
        if addr not in where:
            problems.append("used slot 0x%x (%s) not in the tree" % (addr, kind))
            continue
        e, parent = where[addr]
        if e.get("kind") != "subblock" or e.get("type") != kind:
            problems.append("slot 0x%x: %s of type %r, expected a subblock %s"
                            % (addr, e.get("kind"), e.get("type"), kind))
        obj = e.get("object") or {}
        if obj.get("alloc") != size or obj.get("used") != size or obj.get("blocks") != 1:
            problems.append("slot 0x%x: object %r, expected %d bytes, 1 block" % (addr, obj, size))
        if idx not in ids or parent is None or parent.get("node") != ids[idx]:
            problems.append("slot 0x%x (%s) hangs under %s, expected %s"
                            % (addr, kind, describe(parent), truth.path(idx)))
    return used, free


def semantic_checks(doc, truth, module, problems, label):
    check_entry(uikit_entry(doc, problems), truth, module, problems)
    ids = check_nodes(doc, truth, problems)
    used, free = check_tree(doc, truth, ids, problems)
    if not problems:
        print("    %s: %d nodes exact (object, bound, split, blocks), %d shared blocks placed, "
              "%d used / %d free slots" % (label, len(ids), len(truth.expects), used, free))


# ------------------------------------------------------------------ cases
class Test:
    def __init__(self, args, runner):
        self.a = args
        self.r = runner
        self.module = os.path.abspath(args.module)

    def app_core(self):
        if "core" not in self.r.cache:
            truth = self.r.path("notes.truth")
            core = self.r.path("notes.core")
            gdb_core([self.a.app, "--truth", truth], "hd_fixture_stop", core)
            if not os.path.isfile(truth):
                raise HarnessError("notes_app wrote no truth file %s" % truth)
            self.r.cache["core"] = (core, parse_truth(truth))
        return self.r.cache["core"]

    def dominators(self, target, extra=()):
        return heaptest.heapdom_json(self.a.heapdom, ["dominators"] + list(target) +
                                     ["--semantic"] + list(extra) + ["--json"] + TREE_ARGS)

    def case_core(self):
        core, truth = self.app_core()
        problems = []
        with FrameworkPath(None):
            doc = self.dominators([core], ["--framework", self.module])
        semantic_checks(doc, truth, self.module, problems, "core")
        return problems

    def module_dir(self):
        """A directory holding the module alone (the build directory also
        holds libuikit.so, which is no module)."""
        d = self.r.path("modules")
        if not os.path.isdir(d):
            os.makedirs(d)
            os.symlink(self.module, os.path.join(d, os.path.basename(self.module)))
        return d

    def case_path(self):
        core, truth = self.app_core()
        problems = []
        with FrameworkPath(self.module_dir()):
            doc = self.dominators([core])
            semantic_checks(doc, truth, self.module, problems, "HEAPDOM_FRAMEWORK_PATH")
            # A name finds heapdom-NAME.so in the path, and only it runs.
            ndoc = self.dominators([core], ["--framework", "uikit"])
            names = [f.get("name") for f in ndoc.get("frameworks") or [] if isinstance(f, dict)]
            if names != ["uikit"]:
                problems.append("--framework uikit ran %r, expected ['uikit']" % names)
            semantic_checks(ndoc, truth, self.module, problems, "--framework uikit")
            fdoc = heaptest.heapdom_json(self.a.heapdom, ["frameworks", "--json", core])
            types = heaptest.heapdom_json(self.a.heapdom, ["types", core, "--all", "--json"])
            blocks = heaptest.heapdom_json(self.a.heapdom, ["blocks", core, "--json"])
        types_checks(types, blocks, truth, problems)
        for other in fdoc.get("frameworks") or []:
            if isinstance(other, dict) and other.get("error") is not None:
                problems.append("frameworks --json: module %r from %r failed: %s"
                                % (other.get("name"), other.get("source"), other.get("error")))
        fw = uikit_entry(fdoc, problems)
        if fw is not None:
            if fw.get("detected") is not True or fw.get("error") is not None:
                problems.append("frameworks --json: uikit detected %r error %r"
                                % (fw.get("detected"), fw.get("error")))
            if os.path.realpath(str(fw.get("source"))) != os.path.realpath(self.module):
                problems.append("frameworks --json: uikit source %r, expected %r"
                                % (fw.get("source"), self.module))
            else:
                print("    frameworks --json: uikit detected from %s" % fw.get("source"))
        return problems

    def case_live(self):
        truth_path = self.r.path("live.truth")
        ready = self.r.path("live.ready")
        proc = start_app(self.a.app, truth_path, ready)
        problems = []
        try:
            truth = parse_truth(truth_path)
            if truth.pid != proc.pid:
                raise HarnessError("truth pid %s, process %d" % (truth.pid, proc.pid))
            with FrameworkPath(None):
                doc = self.dominators(["--pid", str(proc.pid)], ["--framework", self.module])
            semantic_checks(doc, truth, self.module, problems, "live")
            bad = heaptest.stopped_threads(proc.pid)
            if bad:
                problems.append("threads left stopped or traced: %s" % bad)
        finally:
            heaptest.stop_fixture(proc)
        return problems

    def case_damaged(self):
        core, truth = self.app_core()
        idx = {truth.path(i): i for i in range(len(truth.nodes))}
        try:
            results = idx["app 'notes' / window 'Search' / view 'results'"]
            root = idx["app 'notes' / window 'Notes' / view 'root'"]
            sidebar = idx["app 'notes' / window 'Notes' / view 'sidebar'"]
        except KeyError as e:
            raise HarnessError("truth has no node %s" % e)
        if root not in truth.children:
            raise HarnessError("truth: Notes' root view has no child array")
        # a component of a view that stays: its view warns about it too
        slot = [x for x in truth.slots if x[2] == "used" and x[4] not in (results, sidebar)][0]
        segs = test_damaged.load_segments(core)
        damaged = self.r.path("damaged.core")
        edits = [
            # a view that is not a view any more
            (truth.objects[results], b"\xef\xbe\xad\xde"),
            # a pool slot with a bad header
            (slot[0], b"\x00\x11\x22\x33"),
            # Notes' root view lists itself as its first child: a cycle
            (truth.children[root], truth.objects[root].to_bytes(8, "little")),
        ]
        test_damaged.patch(core, damaged, [(test_damaged.file_offset(segs, a), d)
                                           for a, d in edits])
        problems = []
        with FrameworkPath(None):
            doc = self.dominators([damaged], ["--framework", self.module])
        fw = uikit_entry(doc, problems)
        if fw is None:
            return problems
        if fw.get("detected") is not True or fw.get("error") is not None:
            problems.append("uikit detected %r error %r" % (fw.get("detected"), fw.get("error")))
        warned = []
        for w in fw.get("warnings") or []:
            try:
                warned.append(int(w["address"], 16))
            except (KeyError, TypeError, ValueError):
                pass
        for what, a, n in (("the view with a bad magic", truth.objects[results], 1),
                           ("the slot with a bad header (pool walk, its view)", slot[0], 2),
                           ("the view listed as its own child", truth.objects[root], 1)):
            if warned.count(a) != n:
                problems.append("%d warnings at 0x%x (%s), expected %d; warnings: %s"
                                % (warned.count(a), a, what, n, fw.get("warnings")))
        where = tree_parents(doc, problems)
        if slot[0] in where and where[slot[0]][0].get("kind") == "subblock":
            problems.append("the slot with a bad header 0x%x is still a sub-block" % slot[0])
        paths = doc_paths(doc.get("nodes") or [])
        have = {paths[n.get("id")] for n in doc.get("nodes") or []
                if n.get("framework") == "uikit"}
        gone = {truth.path(results), truth.path(sidebar)}
        for i in range(len(truth.nodes)):
            p = truth.path(i)
            if p in gone and p in have:
                problems.append("node %r made from damaged memory" % p)
            elif p not in gone and p not in have:
                problems.append("node %r lost to damage elsewhere" % p)
        if not problems:
            print("    damaged core: %d warnings (bad magic, bad slot header twice, view cycle), "
                  "%d nodes kept, 2 left out" % (len(fw.get("warnings")), len(have)))
        return problems

    def case_version(self):
        core, truth = self.app_core()
        changed = self.r.path("version.core")
        segs = test_damaged.load_segments(core)
        test_damaged.patch(core, changed, [(test_damaged.file_offset(segs, truth.version),
                                            (0x0200).to_bytes(4, "little"))])
        problems = []
        with FrameworkPath(None):
            doc = self.dominators([changed], ["--framework", self.module])
        fw = uikit_entry(doc, problems)
        if fw is not None:
            notes = fw.get("notes") or []
            if fw.get("detected") is not False or fw.get("error") is not None:
                problems.append("uikit detected %r error %r in libuikit 2.0"
                                % (fw.get("detected"), fw.get("error")))
            if not any("libuikit 2.0" in str(n) for n in notes):
                problems.append("no note names libuikit 2.0: %r" % notes)
        if any(n.get("framework") == "uikit" for n in doc.get("nodes") or []):
            problems.append("uikit nodes made from an unknown version's memory")
        if not problems:
            print("    uk_version 2.0: not detected (%s)" % "; ".join(fw.get("notes")))
        return problems

    def case_negative(self):
        core = gdb_core([self.a.other], "demo_checkpoint", self.r.path("other.core"))
        problems = []
        with FrameworkPath(None):
            r = heaptest.run_heapdom(self.a.heapdom, ["dominators", core, "--semantic",
                                                      "--framework", self.module, "--json"])
        if r.rc != 0:
            return ["expected exit 0: " + r.describe()]
        try:
            doc = json.loads(r.out)
        except ValueError as e:
            return ["not JSON (%s): %r" % (e, r.out[:200])]
        fw = uikit_entry(doc, problems)
        if fw is not None:
            if fw.get("detected") is not False:
                problems.append("uikit detected %r in a program without libuikit" % fw.get("detected"))
            if fw.get("error") is not None:
                problems.append("uikit error %r" % fw.get("error"))
            if not fw.get("notes"):
                problems.append("no note says why uikit is not detected")
            for k in ("nodes", "subblocks", "assigned"):
                if fw.get(k) != 0:
                    problems.append("frameworks[uikit].%s = %r, expected 0" % (k, fw.get(k)))
        mine = [n for n in doc.get("nodes") or [] if n.get("framework") == "uikit"]
        if mine:
            problems.append("%d uikit nodes in session_cache" % len(mine))
        with FrameworkPath(self.module_dir()):
            fdoc = heaptest.heapdom_json(self.a.heapdom, ["frameworks", "--json", core])
        fw2 = uikit_entry(fdoc, problems)
        if fw2 is not None and fw2.get("detected") is not False:
            problems.append("frameworks --json: uikit detected %r" % fw2.get("detected"))
        if not problems:
            print("    session_cache: uikit not detected (%s), no uikit node, exit 0"
                  % "; ".join(fw.get("notes")))
        return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--app", required=True, help="examples/uikit/notes_app")
    ap.add_argument("--module", required=True, help="examples/uikit/heapdom-uikit.so")
    ap.add_argument("--other", required=True, help="a program without uikit (session_cache)")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated cases: core,path,live,damaged,version,negative")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    if os.path.isdir(args.workdir):
        shutil.rmtree(args.workdir)
    os.makedirs(args.workdir)
    runner = heaptest.CaseRunner(args.workdir, args.only, args.keep)
    t = Test(args, runner)
    runner.case("core - dominators --semantic --framework MODULE on a core", t.case_core)
    runner.case("path - module from HEAPDOM_FRAMEWORK_PATH; frameworks --json", t.case_path)
    runner.case("live - dominators --pid --semantic --framework MODULE", t.case_live)
    runner.case("damaged - a core with a broken view, slot header and view cycle",
                t.case_damaged)
    runner.case("version - a core whose libuikit says version 2.0", t.case_version)
    runner.case("negative - a core of session_cache", t.case_negative)
    print("%d passed, %d failed" % (runner.passed, runner.failed))
    if not args.keep and runner.failed == 0:
        shutil.rmtree(args.workdir, ignore_errors=True)
    return 1 if runner.failed else 0


if __name__ == "__main__":
    sys.exit(main())

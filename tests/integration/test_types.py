#!/usr/bin/env python3
"""heapdom integration test: DWARF typing of heap blocks against fixtures
whose types are known by construction.

    test_types.py --heapdom PATH --c-fixture PATH --cpp-fixture PATH
                  --workdir DIR [--only c,cpp,c-live,cpp-live] [--keep]

Fixtures (their truth file formats are documented at their tops):
  tests/fixtures/type_fixture.c       struct cache / struct entry lists with
        char[] names, a struct point[10] array, a void * (untyped) object,
        a union, the integer trap (a block whose address is only stored in
        the long fields of a typed struct: reachable, typed or not), an
        interior-only block
  tests/fixtures/type_fixture_cpp.cpp demo::Circle / demo::Square reached
        through Base pointers (vtable types), std::vector, std::map,
        std::list<std::string>, std::string

Cases:
  c        core of the C fixture (gdb gcore at hd_fixture_stop)
  cpp      core of the C++ fixture (skipped when it was not built)
  c-live   --pid on the C fixture started with --wait; afterwards no thread
           of it may be left stopped or traced
  cpp-live the same for the C++ fixture
Checks for each target (a check is one PASS/FAIL line):
  - `blocks --json`: every block has "type" (null for free/internal), the
    truth's `type ADDR NAME` / `untyped ADDR` records
  - `types --json --all`: the truth's `count` records (count, bytes,
    retained) exactly; no row with count 0; counts and bytes agree with an
    aggregation of `blocks` (arrays grouped as "T[]", untyped by usable
    size); retained recomputed from `dominators --all` (the union of the
    instances' dominator subtrees); num_types; `--sort count|retained`
    order; `--untyped` has only untyped rows
  - `dominators --json --all` with and without --untyped: node types equal
    the blocks' types (all null with --untyped), the truth's `idom MODE`
    records, and the two modes' idoms differ only where the truth says so
    (nowhere: types never decide reachability)
  - `why ADDR --json`: the truth's `why` records (root, length, member of
    each step); every step's type is its block's type
  - `leaks --json` (both modes): exactly the blocks the truth says are
    leaked in that mode, with their types
  - `dominators --profile`: typed edges > 0 with typing, 0 with --untyped;
    the same edges with and without --untyped (every word is scanned)
  - C++ containers (role records): map nodes are std::_Rb_tree_node<…>
    and list nodes std::_List_node<…> (never their node-base part, never
    arrays); the heap buffer of a string held in a list node is typed (its
    exact char[capacity + 1] is a type record); all list nodes have one
    type.

Exit status 0 when every check passed, 1 otherwise; the last line is
"N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

LIMIT = 10
EDGES_RE = re.compile(r"\((\d+) words, (\d+) edges: (\d+) typed, (\d+) conservative\)")
ARRAY_RE = re.compile(r"\[\d+(\.\.\d+)?\]$")


class ArrayOf:
    """The truth's type_array: N elements asked for. heapdom names the block
    ELEM[N], or ELEM[LO..HI] around N when its size allows several lengths
    (glibc's rounding: a chunk holds requests 16 bytes apart, the smallest
    any request up to 24 bytes)."""

    def __init__(self, elem, n):
        self.elem, self.n = elem, n

    def matches(self, got):
        m = re.match(r"^(.*)\[(\d+)(?:\.\.(\d+))?\]$", got or "")
        if not m or m.group(1) != self.elem:
            return False
        lo = int(m.group(2))
        hi = int(m.group(3) or lo)
        return lo <= self.n <= hi and hi - lo <= 24

    def __str__(self):
        return "%s[%d] (or a range around it)" % (self.elem, self.n)


def hx(a):
    return "0x%x" % a


# ------------------------------------------------------------------ truth
class TypeTruth:
    def __init__(self):
        self.pid = None
        self.module = None
        self.blocks = {}      # addr -> (role, chunk)
        self.types = {}       # addr -> expected name | None (untyped)
        self.counts = {}      # row name -> (count, bytes, retained | None)
        self.idom = {"typed": {}, "untyped": {}}   # mode -> addr -> expected
        self.why = []         # (addr, len, root, [members, root's first])
        self.roles = {}       # addr -> role

    def name(self, a):
        return "%s %s" % (self.blocks.get(a, ("?",))[0], hx(a))


def parse_truth(path):
    t = TypeTruth()

    def record(w, line):
        k = w[0]
        if k == "block":
            t.blocks[int(w[2], 16)] = (w[1], int(w[3]))
        elif k == "type":
            name = line.split(" ", 2)[2]
            if not name:
                raise ValueError("empty type name")
            t.types[int(w[1], 16)] = name
        elif k == "type_array":
            elem = line.split(" ", 3)[3]
            t.types[int(w[1], 16)] = ArrayOf(elem, int(w[2]))
        elif k == "untyped":
            t.types[int(w[1], 16)] = None
        elif k == "count":
            name = line.split(" ", 4)[4]
            t.counts[name] = (int(w[1]), int(w[2]), None if w[3] == "-" else int(w[3]))
        elif k == "idom":
            modes = ("typed", "untyped") if w[1] == "both" else (w[1],)
            for m in modes:
                t.idom[m][int(w[2], 16)] = w[3]
        elif k == "why":
            t.why.append((int(w[1], 16), int(w[2]), w[3], w[4:]))
            if len(w) < 5:
                raise ValueError("no root member")
        elif k == "role":
            t.roles[int(w[1], 16)] = w[2]
        elif k == "pid":
            t.pid = int(w[1])
        elif k == "module":
            t.module = w[1]
        else:
            raise ValueError("unknown record")
    heaptest.read_truth(path, "type_fixture", record)
    if t.module is None or t.pid is None:
        raise HarnessError("%s: pid/module record missing" % path)
    return t


# ----------------------------------------------------------------- checks
class Runner:
    """PASS/FAIL lines, one per check."""

    def __init__(self):
        self.passed = 0
        self.failed = 0

    def result(self, case, check, problems, note=""):
        if problems:
            self.failed += 1
            print("FAIL %s: %s: %d problem(s)" % (case, check, len(problems)))
            for p in problems[:LIMIT]:
                print("  - " + p)
            if len(problems) > LIMIT:
                print("  ... %d more" % (len(problems) - LIMIT))
        else:
            self.passed += 1
            print("PASS %s: %s%s" % (case, check, (" (" + note + ")") if note else ""))
        sys.stdout.flush()


def row_key(type_name, size):
    """The `types` row of a block: "T[]" for arrays, (None, size) untyped."""
    if type_name is None:
        return (None, size)
    return ARRAY_RE.sub("[]", type_name)


def idom_matches(expected, got):
    if expected == "leaked":
        return got is None
    if expected.startswith("0x"):
        return isinstance(got, str) and got.startswith("0x") and int(got, 16) == int(expected, 16)
    return got == expected


def index_blocks(doc, pb):
    out = {}
    for b in doc.get("blocks", []):
        try:
            a = int(b["addr"], 16)
        except (KeyError, TypeError, ValueError):
            pb.append("bad block %r" % (b,))
            continue
        if "type" not in b:
            pb.append("block %s has no \"type\"" % b["addr"])
        elif not (b["type"] is None or isinstance(b["type"], str) and b["type"]):
            pb.append("block %s: type %r is neither null nor a name" % (b["addr"], b["type"]))
        elif b.get("state") != "used" and b["type"] is not None:
            pb.append("%s block %s has type %r" % (b.get("state"), b["addr"], b["type"]))
        out[a] = b
    return out


def index_nodes(doc, pb):
    nodes = {}
    for nd in doc.get("nodes", []):
        try:
            nodes[int(nd["addr"], 16)] = nd
        except (KeyError, TypeError, ValueError):
            pb.append("bad node %r" % (nd,))
            continue
        if "type" not in nd:
            pb.append("node %s has no \"type\"" % nd["addr"])
    return nodes


def recompute_retained(nodes):
    """Row key -> bytes of reachable nodes that an instance of the row
    dominates (the union of the instances' dominator subtrees)."""
    parent = {}
    for a, nd in nodes.items():
        d = nd.get("idom")
        parent[a] = int(d, 16) if isinstance(d, str) and d.startswith("0x") else None
    out = {}
    for a, nd in nodes.items():
        if nd.get("idom") is None:
            continue
        rows = set()
        v, hops = a, 0
        while v is not None and hops <= len(nodes):
            n = nodes.get(v)
            if n is None:
                break
            rows.add(row_key(n.get("type"), n["size"]))
            v = parent.get(v)
            hops += 1
        for r in rows:
            out[r] = out.get(r, 0) + nd["chunk"]
    return out


def parse_edges(stderr):
    m = EDGES_RE.search(stderr)
    if not m:
        return None
    return tuple(int(x) for x in m.groups())


class Target:
    """One target (core or --pid) of a fixture and its truth."""

    def __init__(self, run, case, heapdom, target_args, truth, cpp, live=False):
        self.run, self.case, self.heapdom = run, case, heapdom
        self.t = target_args
        self.truth = truth
        self.cpp = cpp
        self.live = live

    def json(self, args):
        return heaptest.heapdom_json(self.heapdom, args[:1] + self.t + args[1:])

    def check(self, name, fn):
        pb = []
        note = ""
        try:
            note = fn(pb) or ""
        except HarnessError as e:
            pb.append(str(e))
        except Exception:  # noqa: BLE001 -- a broken check is a failure
            pb.append("exception:\n" + traceback.format_exc())
        self.run.result(self.case, name, pb, note)

    # ------------------------------------------------------------ steps
    def all_checks(self):
        tr = self.truth
        st = {}

        def blocks(pb):
            doc = self.json(["blocks", "--json"])
            st["blocks"] = index_blocks(doc, pb)
            bl = st["blocks"]
            for a, exp in tr.types.items():
                b = bl.get(a)
                if b is None:
                    pb.append("%s is not a block" % tr.name(a))
                elif b.get("state") != "used":
                    pb.append("%s is %s" % (tr.name(a), b.get("state")))
                elif isinstance(exp, ArrayOf):
                    if not exp.matches(b.get("type")):
                        pb.append("%s: type %r, expected %s" % (tr.name(a), b.get("type"), exp))
                elif b.get("type") != exp:
                    pb.append("%s: type %r, expected %r" % (tr.name(a), b.get("type"), exp))
            for a, (role, chunk) in tr.blocks.items():
                b = bl.get(a)
                if b is not None and b.get("chunk") != chunk:
                    pb.append("%s: chunk %r, expected %d" % (tr.name(a), b.get("chunk"), chunk))
            typed = sum(1 for b in bl.values() if b.get("type"))
            return "%d blocks, %d typed" % (len(bl), typed)
        self.check("blocks types", blocks)
        if "blocks" not in st:
            return
        used = {a: b for a, b in st["blocks"].items() if b.get("state") == "used"}

        def dominators(mode):
            def fn(pb):
                args = ["dominators", "--json", "--all"] + (["--untyped"] if mode == "untyped" else [])
                doc = self.json(args)
                nodes = index_nodes(doc, pb)
                st["nodes-" + mode] = nodes
                if set(nodes) != set(used):
                    pb.append("%d nodes, %d used blocks" % (len(nodes), len(used)))
                for a, nd in nodes.items():
                    b = used.get(a)
                    want = None if mode == "untyped" else (b or {}).get("type")
                    if nd.get("type") != want:
                        pb.append("%s: node type %r, %s" % (tr.name(a), nd.get("type"),
                                  "expected null (--untyped)" if mode == "untyped"
                                  else "blocks says %r" % want))
                for a, exp in tr.idom[mode].items():
                    nd = nodes.get(a)
                    if nd is None:
                        pb.append("%s is not a node" % tr.name(a))
                        continue
                    if not idom_matches(exp, nd.get("idom")):
                        got = nd.get("idom")
                        if isinstance(got, str) and got.startswith("0x"):
                            got += " (%s)" % tr.blocks.get(int(got, 16), ("?",))[0]
                        if exp.startswith("0x"):
                            exp += " (%s)" % tr.blocks.get(int(exp, 16), ("?",))[0]
                        pb.append("%s: idom %s, expected %s" % (tr.name(a), got, exp))
                    if nd.get("leaked") is not (exp == "leaked"):
                        pb.append("%s: leaked %r, expected %s" % (tr.name(a), nd.get("leaked"),
                                                                 exp == "leaked"))
                return "%d nodes, %d leaked" % (len(nodes), doc.get("heap", {}).get("leaked_blocks", -1))
            return fn
        self.check("dominators typed", dominators("typed"))
        self.check("dominators --untyped", dominators("untyped"))

        def modes_agree(pb):
            nt, nu = st.get("nodes-typed"), st.get("nodes-untyped")
            if nt is None or nu is None:
                raise HarnessError("a dominators run failed")
            differ = {a for a in tr.idom["typed"]
                      if a in tr.idom["untyped"] and tr.idom["typed"][a] != tr.idom["untyped"][a]}
            n = 0
            for a in nt:
                if a in differ or a not in nu:
                    continue
                n += 1
                if nt[a].get("idom") != nu[a].get("idom"):
                    pb.append("%s: idom %r with typing, %r with --untyped (the truth expects the same)"
                              % (tr.name(a), nt[a].get("idom"), nu[a].get("idom")))
            for a in differ:
                if a in nt and a in nu and nt[a].get("idom") == nu[a].get("idom"):
                    pb.append("%s: idom %r in both modes, expected a difference"
                              % (tr.name(a), nt[a].get("idom")))
            return "%d blocks same idom, %d differ by design" % (n, len(differ))
        self.check("typed vs --untyped idoms", modes_agree)

        def types(pb):
            doc = self.json(["types", "--json", "--all"])
            rows = doc.get("types")
            if not isinstance(rows, list) or not isinstance(doc.get("num_types"), int):
                raise HarnessError("types: no types list / num_types: %.300r" % doc)
            if doc["num_types"] != len(rows):
                pb.append("num_types %d, --all lists %d rows" % (doc["num_types"], len(rows)))
            got = {}
            for r in rows:
                ok = (isinstance(r.get("count"), int) and isinstance(r.get("bytes"), int)
                      and isinstance(r.get("retained"), int) and "type" in r)
                if ok and r["type"] is None:
                    ok = isinstance(r.get("size"), int)
                elif ok:
                    ok = isinstance(r["type"], str) and "size" not in r
                if not ok:
                    pb.append("bad row %r" % (r,))
                    continue
                key = r["type"] if r["type"] is not None else (None, r["size"])
                if key in got:
                    pb.append("row %r listed twice" % (key,))
                got[key] = r
                if r["count"] == 0:
                    pb.append("row %r has count 0 (bytes %d, retained %d): no block has this type"
                              % (key, r["bytes"], r["retained"]))
            # the truth
            for name, (count, nbytes, retained) in tr.counts.items():
                r = got.get(name)
                if r is None:
                    pb.append("no row %r (expected count %d)" % (name, count))
                    continue
                if (r["count"], r["bytes"]) != (count, nbytes):
                    pb.append("%r: count %d bytes %d, expected %d %d"
                              % (name, r["count"], r["bytes"], count, nbytes))
                if retained is not None and r["retained"] != retained:
                    pb.append("%r: retained %d, expected %d" % (name, r["retained"], retained))
            # aggregation of blocks
            agg = {}
            for b in used.values():
                k = row_key(b.get("type"), b["size"])
                c, s = agg.get(k, (0, 0))
                agg[k] = (c + 1, s + b["chunk"])
            for k, (c, s) in agg.items():
                r = got.get(k)
                if r is None:
                    pb.append("blocks has %d blocks of %r, types has no row" % (c, k))
                elif (r["count"], r["bytes"]) != (c, s):
                    pb.append("%r: count %d bytes %d, blocks gives %d %d" % (k, r["count"], r["bytes"], c, s))
            for k, r in got.items():
                if k not in agg and r["count"]:
                    pb.append("row %r (count %d) matches no block" % (k, r["count"]))
            # retained from the dominator tree
            nodes = st.get("nodes-typed")
            if nodes is not None:
                ret = recompute_retained(nodes)
                for k, r in got.items():
                    if r["retained"] != ret.get(k, 0):
                        pb.append("%r: retained %d, the dominator tree gives %d"
                                  % (k, r["retained"], ret.get(k, 0)))
            st["types"] = got
            return "%d rows" % len(rows)
        self.check("types --all", types)

        def sorts(pb):
            for key in ("count", "retained", "bytes"):
                doc = self.json(["types", "--json", "--all", "--sort", key])
                vals = [r.get(key) for r in doc.get("types", [])]
                if any(a < b for a, b in zip(vals, vals[1:])):
                    pb.append("--sort %s: not in decreasing order: %s" % (key, vals[:20]))
                if "types" in st and len(vals) != len(st["types"]):
                    pb.append("--sort %s: %d rows, %d by default" % (key, len(vals), len(st["types"])))
        self.check("types --sort", sorts)

        def types_untyped(pb):
            doc = self.json(["types", "--json", "--all", "--untyped"])
            rows = doc.get("types", [])
            for r in rows:
                if r.get("type") is not None:
                    pb.append("--untyped row %r" % (r,))
            if sum(r.get("count", 0) for r in rows) != len(used):
                pb.append("--untyped rows count %d blocks, %d used"
                          % (sum(r.get("count", 0) for r in rows), len(used)))
        self.check("types --untyped", types_untyped)

        def why(pb):
            for addr, length, root, members in tr.why:
                what = "why %s" % tr.name(addr)
                doc = self.json(["why", hx(addr), "--json"])
                path = doc.get("path")
                if not isinstance(path, list) or not path:
                    pb.append("%s: no path" % what)
                    continue
                if doc.get("reachable") is not True:
                    pb.append("%s: reachable %r" % (what, doc.get("reachable")))
                blk = doc.get("block") or {}
                want = used.get(addr, {}).get("type")
                if blk.get("type") != want:
                    pb.append("%s: block type %r, blocks says %r" % (what, blk.get("type"), want))
                if len(path) != length:
                    pb.append("%s: %d path entries, expected %d: %s"
                              % (what, len(path), length, [s.get("root") or s.get("addr") for s in path]))
                    continue
                if "root:" + str(path[0].get("root")) != root:
                    pb.append("%s: starts at %r, expected %s" % (what, path[0].get("root"), root))
                for i, step in enumerate(path):
                    if i + 1 == len(path):
                        if step.get("addr") != hx(addr):
                            pb.append("%s: ends at %r" % (what, step.get("addr")))
                        break
                    exp = members[i]
                    got = step.get("member")
                    # Cosmetic: a pointer element of an array is named
                    # "[6].+0x0" (the member path of a scalar); accept it.
                    if isinstance(got, str) and got.endswith(".+0x0"):
                        got = got[:-len(".+0x0")]
                    if exp != "-" and got != exp:
                        pb.append("%s: step %d member %r, expected %r" % (what, i, step.get("member"), exp))
                    if i and "addr" in step:
                        b = used.get(int(step["addr"], 16), {})
                        if step.get("type") != b.get("type"):
                            pb.append("%s: step %d type %r, blocks says %r"
                                      % (what, i, step.get("type"), b.get("type")))
                    if i == 0 and not step.get("type"):
                        pb.append("%s: root step of a typed global has no type" % what)
            return "%d paths" % len(tr.why)
        self.check("why members", why)

        def leaks(mode):
            def fn(pb):
                args = ["leaks", "--json"] + (["--untyped"] if mode == "untyped" else [])
                doc = self.json(args)
                got = {}
                for lk in doc.get("leaks", []):
                    if "type" not in lk:
                        pb.append("leak %s has no type" % lk.get("addr"))
                    got[int(lk["addr"], 16)] = lk
                want = {a for a, e in tr.idom[mode].items() if e == "leaked"}
                if set(got) != want:
                    pb.append("leaked %s, expected %s" % (
                        sorted(tr.name(a) for a in got), sorted(tr.name(a) for a in want)))
                for a, lk in got.items():
                    exp = None if mode == "untyped" else used.get(a, {}).get("type")
                    if lk.get("type") != exp:
                        pb.append("leak %s: type %r, expected %r" % (tr.name(a), lk.get("type"), exp))
                for g in doc.get("groups", []):
                    if "type" not in g:
                        pb.append("group %r has no type" % (g,))
                if doc.get("leaked_blocks") != len(want):
                    pb.append("leaked_blocks %r, expected %d" % (doc.get("leaked_blocks"), len(want)))
                return "%d leaked" % len(got)
            return fn
        self.check("leaks typed", leaks("typed"))
        self.check("leaks --untyped", leaks("untyped"))

        def profile(pb):
            res = {}
            for mode in ("typed", "untyped"):
                args = ["dominators"] + self.t + ["--profile"] + (["--untyped"] if mode == "untyped" else [])
                r = heaptest.run_heapdom(self.heapdom, args)
                if r.rc != 0:
                    raise HarnessError(r.describe())
                e = parse_edges(r.err)
                if e is None:
                    pb.append("%s: no \"(W words, E edges: T typed, C conservative)\" in stderr: %s"
                              % (mode, r.err.strip()[:500]))
                    continue
                res[mode] = e
            if len(res) < 2:
                return
            wt, et, tt, ct = res["typed"]
            wu, eu, tu, cu = res["untyped"]
            if tt <= 0:
                pb.append("typed edges %d with typing" % tt)
            if tu != 0:
                pb.append("typed edges %d with --untyped" % tu)
            if eu != et:
                pb.append("--untyped has %d edges, typed %d: expected the same (every word is scanned)"
                          % (eu, et))
            return "typed: %d edges (%d typed, %d conservative); --untyped: %d edges" % (et, tt, ct, eu)
        self.check("profile edges", profile)

        if self.cpp:
            self.check("C++ containers", lambda pb: self.cpp_roles(pb, used))
        if self.cpp and not self.live:
            self.check("names asked one block at a time", lambda pb: self.one_by_one(pb, used))

    def one_by_one(self, pb, used):
        """The libstdc++ module waits until a report asks about a block it
        may name (docs/types.md): each used block asked alone, by `why` in a
        process of its own, must get the name `blocks` gives (which runs the
        module at once), whether the module ran for it, was not needed, or
        named it from its container alone (a node of a global std::map,
        std::set or std::list); at least one of each must be seen."""
        ran = waited = alone = 0
        for a in sorted(used):
            r = heaptest.run_heapdom(self.heapdom, ["why"] + self.t + ["0x%x" % a, "--json",
                                                                       "--profile"])
            if r.rc != 0:
                pb.append("why 0x%x: %s" % (a, r.describe()))
                continue
            got = json.loads(r.out).get("block", {}).get("type")
            if got != used[a].get("type"):
                pb.append("%s asked alone: type %r, blocks says %r"
                          % (self.truth.name(a), got, used[a].get("type")))
            m = re.search(r"module waited and was not needed \(.*, (\d+) named from their container alone",
                          r.err)
            if "module ran for block 0x%x" % a in r.err:
                ran += 1
            elif m and int(m.group(1)) > 0:
                alone += 1
            elif m:
                waited += 1
            else:
                pb.append("why 0x%x --profile says nothing of the libstdc++ module waiting: %s"
                          % (a, r.err.strip()[-300:]))
        if not ran or not waited or not alone:
            pb.append("%d blocks ran the module, %d did not need it, %d were named from their "
                      "container alone: expected some of each" % (ran, waited, alone))
        return "%d blocks: %d ran the module, %d did not need it, %d named from their container alone" % (
            len(used), ran, waited, alone)

    def cpp_roles(self, pb, used):
        tr = self.truth
        list_types = set()
        n = {}
        for a, role in tr.roles.items():
            n[role] = n.get(role, 0) + 1
            b = used.get(a)
            if b is None:
                pb.append("%s (%s) is not a used block" % (tr.name(a), role))
                continue
            ty = b.get("type")
            if role == "map-node":
                if ty is None or ty.endswith("]") or not ty.startswith("std::_Rb_tree_node<"):
                    pb.append("map node %s: type %r, expected std::_Rb_tree_node<…>, not its "
                              "base and not an array" % (tr.name(a), ty))
            elif role == "list-node":
                list_types.add(ty)
                if ty is None or ty.endswith("]") or not ty.startswith("std::_List_node<"):
                    pb.append("list node %s: type %r, expected std::_List_node<…>, not its "
                              "base and not an array" % (tr.name(a), ty))
            elif role == "list-string-buffer":
                if ty is None:
                    pb.append("string buffer %s (in a list node) is untyped" % tr.name(a))
            elif role in ("string-buffer", "int-buffer", "vector-buffer"):
                if ty is None:
                    pb.append("%s %s is untyped" % (role, tr.name(a)))
        if len(list_types) > 1:
            pb.append("list nodes have %d different types: %s" % (len(list_types), sorted(map(str, list_types))))
        return ", ".join("%d %s" % (v, k) for k, v in sorted(n.items()))


# ------------------------------------------------------------------ cases
def case_core(run, args, case, fixture, cpp):
    wd = os.path.join(args.workdir, case)
    os.makedirs(wd, exist_ok=True)
    truth_path, core = os.path.join(wd, "truth"), os.path.join(wd, "core")
    t0 = time.monotonic()
    try:
        heaptest.make_core(fixture, truth_path, core)
        truth = parse_truth(truth_path)
    except HarnessError as e:
        run.result(case, "make core", [str(e)])
        return
    run.result(case, "make core", [], "%.1fs" % (time.monotonic() - t0))
    Target(run, case, args.heapdom, [core], truth, cpp).all_checks()
    if not args.keep:
        for p in (core,):
            if os.path.exists(p):
                os.unlink(p)


def case_live(run, args, case, fixture, cpp):
    wd = os.path.join(args.workdir, case)
    os.makedirs(wd, exist_ok=True)
    truth_path, ready = os.path.join(wd, "truth"), os.path.join(wd, "ready")
    try:
        proc = heaptest.start_fixture(fixture, truth_path, ready)
    except HarnessError as e:
        run.result(case, "start fixture", [str(e)])
        return
    try:
        truth = parse_truth(truth_path)
        if truth.pid != proc.pid:
            run.result(case, "start fixture", ["truth pid %d, started %d" % (truth.pid, proc.pid)])
            return
        Target(run, case, args.heapdom, ["--pid", str(proc.pid)], truth, cpp, live=True).all_checks()
        bad = heaptest.stopped_threads(proc.pid)
        run.result(case, "process left running",
                   ["thread %d state %s tracer %d" % (t, s[0], s[1]) for t, s in bad.items()])
    except HarnessError as e:
        run.result(case, "live", [str(e)])
    finally:
        heaptest.stop_fixture(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--c-fixture", required=True)
    ap.add_argument("--cpp-fixture")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated cases: c,cpp,c-live,cpp-live")
    ap.add_argument("--keep", action="store_true", help="keep cores and truth files")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else {"c", "cpp", "c-live", "cpp-live"}
    if os.path.isdir(args.workdir) and not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir, exist_ok=True)
    run = Runner()
    t0 = time.monotonic()
    have_cpp = bool(args.cpp_fixture) and os.path.isfile(args.cpp_fixture)
    if "c" in only:
        case_core(run, args, "c", args.c_fixture, False)
    if "cpp" in only:
        if have_cpp:
            case_core(run, args, "cpp", args.cpp_fixture, True)
        else:
            print("SKIP cpp: no C++ fixture")
    if "c-live" in only:
        case_live(run, args, "c-live", args.c_fixture, False)
    if "cpp-live" in only:
        if have_cpp:
            case_live(run, args, "cpp-live", args.cpp_fixture, True)
        else:
            print("SKIP cpp-live: no C++ fixture")
    print("time %.1fs" % (time.monotonic() - t0))
    print("%d passed, %d failed" % (run.passed, run.failed))
    return 1 if run.failed or not run.passed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""heapdom integration test: dominators, why, leaks and graph against the
dominator tree dom_fixture builds by construction.

    test_dominators.py --heapdom PATH --fixture PATH --workdir DIR
                       [--only a,b,...] [--keep]

Cases:
  a  core, default debug info
  b  core, --debug-dir EMPTYDIR: every check of (a), and the nodes (addr,
     size, chunk, idom, retained, leaked) equal those of (a)
  c  live --pid (fixture started with --wait); afterwards no thread of the
     fixture may be left stopped or traced
  d  core of `dom_fixture --list 1000000`: the head retains the whole list,
     the recorded tail nodes have their predecessor as idom; times printed
For (a)-(c), on one target:
  - `dominators --json --all`: schema, every truth record (block chunk,
    idom, retained, leaked), consistent totals (used/leaked blocks and
    bytes), retained sizes add up (retained = chunk + children's retained,
    top-level nodes sum to used_bytes - leaked_bytes), roots' retained
  - `dominators --json --top 5 --depth 3`: the tree mode agrees with --all
  - `why ADDR --json` for each `why` record of the truth (path start and
    length, pointers land in the next block, interior flags)
  - `leaks --json`: the leaked set, unreferenced flags, leak retained sizes,
    groups and totals
  - `graph --format json`: dominators recomputed independently here (Cooper,
    Harvey, Kennedy, "A Simple, Fast Dominance Algorithm", over the exported
    graph plus a virtual super-root pointing at every root) equal every
    node's idom and retained; leak-forest retained recomputed likewise
  - `graph --from ADDR --depth D`: a breadth-first subset of the full export
  - `graph --format dot`: a digraph with balanced braces and as many nodes
    and edges as the JSON export

The fixture (tests/fixtures/dom_fixture.c) documents its truth file format
at its top: `block NAME ADDR CHUNK`, `idom ADDR EXPECTED`, `retained ADDR
BYTES`, `unreferenced ADDR true|false`, `leak_retained ADDR BYTES`,
`interior ADDR POINTER`, `why ADDR LEN FROM...`, `thread TID`, `end N`.

Exit status 0 when every case passed, 1 otherwise; the last line is
"N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

BIG_LIST = 1000000
# Root classes, strongest first (docs/ownership.md).
CLASSES = ["globals", "tls", "locals", "stack", "registers"]
LIMIT = 10            # mismatches shown per check


# ------------------------------------------------------------------ truth
class DomTruth:
    def __init__(self):
        self.pid = None
        self.module = None
        self.list_length = None
        self.tid = None
        self.blocks = {}        # addr -> (name, chunk)
        self.by_name = {}       # name -> addr
        self.idom = {}          # addr -> expected text
        self.retained = {}      # addr -> bytes
        self.unref = {}         # addr -> bool
        self.leak_retained = {}  # addr -> bytes
        self.interior = {}      # addr -> pointer
        self.why = []           # (addr, len | None, [from, ...])


def parse_dom_truth(path):
    t = DomTruth()

    def record(w, line):
        k = w[0]
        if k == "block":
            a = int(w[2], 16)
            t.blocks[a] = (w[1], int(w[3]))
            t.by_name[w[1]] = a
        elif k == "idom":
            t.idom[int(w[1], 16)] = w[2]
        elif k == "retained":
            t.retained[int(w[1], 16)] = int(w[2])
        elif k == "unreferenced":
            if w[2] not in ("true", "false"):
                raise ValueError("not true/false")
            t.unref[int(w[1], 16)] = w[2] == "true"
        elif k == "leak_retained":
            t.leak_retained[int(w[1], 16)] = int(w[2])
        elif k == "interior":
            t.interior[int(w[1], 16)] = int(w[2], 16)
        elif k == "why":
            t.why.append((int(w[1], 16), None if w[2] == "-" else int(w[2]), w[3:]))
            if not w[3:]:
                raise ValueError("no FROM")
        elif k == "thread":
            t.tid = int(w[1])
        elif k == "pid":
            t.pid = int(w[1])
        elif k == "module":
            t.module = w[1]
        elif k == "list_length":
            t.list_length = int(w[1])
        else:
            raise ValueError("unknown record")
    heaptest.read_truth(path, "dom_fixture", record)
    if t.module is None or t.tid is None or t.list_length is None:
        raise HarnessError("%s: module/thread/list_length record missing" % path)
    return t


def hx(a):
    return "0x%x" % a


# dom_fixture's thread holding "tlist": on a core the CLI unwinds it (as
# gdb and lldb do), so its stack root may be split into that function's
# frame and locals.
THREAD_FN = "holder_thread"


def thread_stack_root(tid, name):
    """Is NAME a root of thread TID's stack: "thread TID stack|registers",
    a frame "thread TID #N holder_thread (...)" or one of its locals
    "thread TID #N holder_thread (...) local VAR"?"""
    if name in ("thread %s stack" % tid, "thread %s registers" % tid):
        return True
    if name.startswith("thread %s #" % tid):
        return name.split(" ", 3)[3].startswith(THREAD_FN + " ")
    return False


def idom_matches(expected, got):
    """Does a `dominators` idom value match a truth expectation?"""
    if expected == "leaked":
        return got is None
    if expected.startswith("thread-stack:"):
        tid = expected.split(":", 1)[1]
        return isinstance(got, str) and got.startswith("root:") and thread_stack_root(tid, got[5:])
    if expected.startswith("exited-thread:"):
        return got == "root:exited thread %s" % expected.split(":", 1)[1]
    if expected.startswith("0x"):
        return isinstance(got, str) and got.startswith("0x") and int(got, 16) == int(expected, 16)
    return got == expected


def root_matches(expected, name):
    """Does a root NAME (why path start) match `root:NAME` / `thread-stack:TID`?"""
    if expected.startswith("thread-stack:"):
        return thread_stack_root(expected.split(":", 1)[1], name)
    return expected.startswith("root:") and name == expected[5:]


class Problems:
    """Problems grouped by check, at most LIMIT shown per group."""

    def __init__(self, prefix=""):
        self.prefix = prefix
        self.groups = {}

    def add(self, check, msg):
        self.groups.setdefault(check, []).append(msg)

    def extend(self, other):
        for k, v in other.groups.items():
            self.groups.setdefault(k, []).extend(v)

    def lines(self):
        out = []
        for check, msgs in self.groups.items():
            s = "%s%s: %d problem(s)" % (self.prefix, check, len(msgs))
            for m in msgs[:LIMIT]:
                s += "\n  - " + m
            if len(msgs) > LIMIT:
                s += "\n  ... %d more" % (len(msgs) - LIMIT)
            out.append(s)
        return out


# ------------------------------------------------- independent dominators
def chk_dominators(n, succ, start):
    """Cooper-Harvey-Kennedy over vertices 0..n-1 from `start`.
    Returns idom list (None = unreachable, idom[start] = start)."""
    order = []            # postorder
    seen = [False] * n
    seen[start] = True
    stack = [(start, iter(succ[start]))]
    while stack:
        v, it = stack[-1]
        for w in it:
            if not seen[w]:
                seen[w] = True
                stack.append((w, iter(succ[w])))
                break
        else:
            stack.pop()
            order.append(v)
    po = [-1] * n
    for i, v in enumerate(order):
        po[v] = i
    rpo = order[::-1]
    preds = [[] for _ in range(n)]
    for v in range(n):
        if seen[v]:
            for w in succ[v]:
                preds[w].append(v)
    idom = [None] * n
    idom[start] = start

    def intersect(a, b):
        while a != b:
            while po[a] < po[b]:
                a = idom[a]
            while po[b] < po[a]:
                b = idom[b]
        return a

    changed = True
    while changed:
        changed = False
        for v in rpo:
            if v == start:
                continue
            new = None
            for p in preds[v]:
                if idom[p] is None:
                    continue
                new = p if new is None else intersect(p, new)
            if new is not None and idom[v] != new:
                idom[v] = new
                changed = True
    return idom


def subtree_sums(n, idom, start, size):
    """retained (sum of size over the dominator subtree) and counts."""
    children = [[] for _ in range(n)]
    for v in range(n):
        if idom[v] is not None and v != start:
            children[idom[v]].append(v)
    ret = [0] * n
    cnt = [0] * n
    order = []
    stack = [start]
    while stack:
        v = stack.pop()
        order.append(v)
        stack.extend(children[v])
    for v in reversed(order):
        ret[v] = size[v] + sum(ret[c] for c in children[v])
        cnt[v] = (1 if size[v] else 0) + sum(cnt[c] for c in children[v])
    return ret, cnt


class Graph:
    """A `graph --format json` document as index-based adjacency lists.
    Vertex 0 is the virtual super-root; the others are the exported ids."""

    def __init__(self, doc, pb):
        ids = [0]
        self.root_name = {}
        self.root_class = {}  # id -> index in CLASSES
        self.block = {}       # id -> node dict
        for nd in doc.get("nodes", []):
            if not isinstance(nd.get("id"), int) or nd["id"] <= 0:
                pb.add("graph-schema", "bad node %r" % (nd,))
                continue
            ids.append(nd["id"])
            if "root" in nd:
                self.root_name[nd["id"]] = nd["root"]
                if nd.get("class") not in CLASSES:
                    pb.add("graph-schema", "root without a known class: %r" % (nd,))
                self.root_class[nd["id"]] = CLASSES.index(nd.get("class")) \
                    if nd.get("class") in CLASSES else len(CLASSES)
            elif all(k in nd for k in ("addr", "size", "chunk")):
                self.block[nd["id"]] = nd
            else:
                pb.add("graph-schema", "node neither root nor block: %r" % (nd,))
        if len(set(ids)) != len(ids):
            pb.add("graph-schema", "duplicate node ids")
        self.ids = ids
        self.index = {v: i for i, v in enumerate(ids)}
        n = len(ids)
        self.n = n
        self.succ = [[] for _ in range(n)]
        self.pred_count = [0] * n
        self.edges = 0
        for e in doc.get("edges", []):
            if (not isinstance(e, list) or len(e) != 2 or e[0] not in self.index
                    or e[1] not in self.index):
                pb.add("graph-schema", "edge %r between unknown nodes" % (e,))
                continue
            a, b = self.index[e[0]], self.index[e[1]]
            if e[1] in self.root_name:
                pb.add("graph-schema", "edge %r into a root" % (e,))
            self.succ[a].append(b)
            self.pred_count[b] += 1
            self.edges += 1
        for rid in self.root_name:
            self.succ[0].append(self.index[rid])
        self.addr_index = {}
        for bid, nd in self.block.items():
            self.addr_index[int(nd["addr"], 16)] = self.index[bid]

    def ranked_succ(self):
        """The graph of the ranked view (docs/ownership.md), computed
        here from its definition: each vertex belongs to the strongest
        class of roots that reaches it (a breadth-first search per class,
        strongest first, over what earlier classes left), and an edge
        from a vertex of a weaker class into one of a stronger class is
        borrowed: dropped."""
        cls = [None] * self.n
        cls[0] = -1
        for k in range(len(CLASSES) + 1):
            todo = [self.index[r] for r, c in self.root_class.items() if c == k]
            for v in todo:
                cls[v] = k
            while todo:
                nxt = []
                for u in todo:
                    for w in self.succ[u]:
                        if cls[w] is None:
                            cls[w] = k
                            nxt.append(w)
                todo = nxt
        return [[w for w in self.succ[u]
                 if cls[u] is None or cls[w] is None or cls[u] <= cls[w]]
                for u in range(self.n)]

    def label(self, i):
        """The `dominators` idom text for index i."""
        if i == 0:
            return "root:*"
        v = self.ids[i]
        if v in self.root_name:
            return "root:" + self.root_name[v]
        return self.block[v]["addr"]

    def size(self, i):
        v = self.ids[i]
        return self.block[v]["chunk"] if v in self.block else 0


# --------------------------------------------------------------- checks
NODE_KEYS = {"addr": str, "size": int, "chunk": int, "retained": int,
             "retained_blocks": int, "type": (str, type(None))}


def index_nodes(doc, pb, mode):
    """addr(int) -> node of a dominators document, with schema checks."""
    for key, typ in (("target", str), ("allocator", dict), ("partial", bool),
                     ("problems", list), ("heap", dict),
                     ("roots", list), ("nodes", list)):
        if not isinstance(doc.get(key), typ):
            pb.add("schema", "top-level %r missing or not %s" % (key, typ.__name__))
    if pb.groups:
        return {}
    for k in ("used_blocks", "used_bytes", "leaked_blocks", "leaked_bytes"):
        if not isinstance(doc["heap"].get(k), int):
            pb.add("schema", "heap.%s missing or not an int" % k)
    if doc["partial"]:
        pb.add("partial", "partial is true on a consistent heap")
    for p in doc["problems"]:
        pb.add("problems", "%s: %s" % (p.get("addr"), p.get("message")))
    for r in doc["roots"]:
        if not (isinstance(r.get("name"), str) and isinstance(r.get("kind"), str)
                and isinstance(r.get("retained"), int) and isinstance(r.get("retained_blocks"), int)):
            pb.add("schema", "bad root %r" % (r,))
    nodes = {}
    for nd in doc["nodes"]:
        ok = all(isinstance(nd.get(k), t) for k, t in NODE_KEYS.items())
        ok = ok and "idom" in nd and (nd["idom"] is None or isinstance(nd["idom"], str))
        ok = ok and (isinstance(nd.get("leaked"), bool) if mode == "all"
                     else isinstance(nd.get("depth"), int))
        if not ok:
            pb.add("schema", "bad node %r" % (nd,))
            continue
        a = int(nd["addr"], 16)
        if a in nodes:
            pb.add("schema", "node %s listed twice" % nd["addr"])
        nodes[a] = nd
    return nodes


def check_truth_nodes(nodes, truth, pb, only=None):
    """Truth records (block, idom, retained) against addr -> node."""
    for a, (name, chunk) in truth.blocks.items():
        nd = nodes.get(a)
        if nd is None:
            pb.add("block", "%s %s (chunk %d) is not a node" % (name, hx(a), chunk))
        elif nd["chunk"] != chunk:
            pb.add("block", "%s %s: chunk %d, expected %d" % (name, hx(a), nd["chunk"], chunk))
    for a, exp in truth.idom.items():
        nd = nodes.get(a)
        if nd is None:
            continue
        name = truth.blocks.get(a, ("?",))[0]
        if not idom_matches(exp, nd["idom"]):
            if exp.startswith("0x") and int(exp, 16) in truth.blocks:
                exp += " (%s)" % truth.blocks[int(exp, 16)][0]
            got = nd["idom"]
            if isinstance(got, str) and got.startswith("0x") and int(got, 16) in truth.blocks:
                got += " (%s)" % truth.blocks[int(got, 16)][0]
            pb.add("idom", "%s %s: idom %s, expected %s" % (name, hx(a), got, exp))
        if "leaked" in nd and nd["leaked"] != (exp == "leaked"):
            pb.add("leaked", "%s %s: leaked %s, expected %s" % (name, hx(a), nd["leaked"], exp == "leaked"))
    for a, ret in truth.retained.items():
        nd = nodes.get(a)
        if nd is not None and nd["retained"] != ret:
            pb.add("retained", "%s %s: retained %d, expected %d (diff %+d)"
                   % (truth.blocks.get(a, ("?",))[0], hx(a), nd["retained"], ret, nd["retained"] - ret))


def check_sums(doc, nodes, pb):
    """Totals and additivity of retained sizes in a --all document."""
    heap = doc["heap"]
    leaked = [nd for nd in nodes.values() if nd["idom"] is None]
    if heap["used_blocks"] != len(nodes):
        pb.add("totals", "used_blocks %d, --all lists %d nodes" % (heap["used_blocks"], len(nodes)))
    used = sum(nd["chunk"] for nd in nodes.values())
    if heap["used_bytes"] != used:
        pb.add("totals", "used_bytes %d, nodes' chunks sum to %d" % (heap["used_bytes"], used))
    if heap["leaked_blocks"] != len(leaked):
        pb.add("totals", "leaked_blocks %d, %d nodes have idom null" % (heap["leaked_blocks"], len(leaked)))
    lb = sum(nd["chunk"] for nd in leaked)
    if heap["leaked_bytes"] != lb:
        pb.add("totals", "leaked_bytes %d, leaked nodes' chunks sum to %d" % (heap["leaked_bytes"], lb))
    for nd in nodes.values():
        if nd["leaked"] != (nd["idom"] is None):
            pb.add("leaked", "%s: leaked %s but idom %s" % (nd["addr"], nd["leaked"], nd["idom"]))
    child_ret, child_cnt = {}, {}
    by_root, by_root_cnt = {}, {}
    for nd in nodes.values():
        d = nd["idom"]
        if d is None:
            continue
        if d.startswith("0x"):
            p = int(d, 16)
            if p not in nodes:
                pb.add("idom", "%s: idom %s is not a used block" % (nd["addr"], d))
                continue
            child_ret[p] = child_ret.get(p, 0) + nd["retained"]
            child_cnt[p] = child_cnt.get(p, 0) + nd["retained_blocks"]
        elif d.startswith("root:"):
            by_root[d[5:]] = by_root.get(d[5:], 0) + nd["retained"]
            by_root_cnt[d[5:]] = by_root_cnt.get(d[5:], 0) + nd["retained_blocks"]
        else:
            pb.add("idom", "%s: idom %r is neither 0x.. nor root:.." % (nd["addr"], d))
    for a, nd in nodes.items():
        if nd["idom"] is None:
            continue
        want = nd["chunk"] + child_ret.get(a, 0)
        if nd["retained"] != want:
            pb.add("additivity", "%s: retained %d != chunk %d + children's %d"
                   % (nd["addr"], nd["retained"], nd["chunk"], child_ret.get(a, 0)))
        wantb = 1 + child_cnt.get(a, 0)
        if nd["retained_blocks"] != wantb:
            pb.add("additivity", "%s: retained_blocks %d != 1 + children's %d"
                   % (nd["addr"], nd["retained_blocks"], child_cnt.get(a, 0)))
    top = sum(by_root.values())
    if top != heap["used_bytes"] - heap["leaked_bytes"]:
        pb.add("additivity", "top-level nodes retain %d, used_bytes - leaked_bytes = %d"
               % (top, heap["used_bytes"] - heap["leaked_bytes"]))
    # Roots: what a named root retains is what the nodes it dominates retain.
    # (Several roots may share a name: sum per name.)
    root_ret, root_cnt = {}, {}
    for r in doc["roots"]:
        root_ret[r["name"]] = root_ret.get(r["name"], 0) + r["retained"]
        root_cnt[r["name"]] = root_cnt.get(r["name"], 0) + r["retained_blocks"]
    for name, ret in by_root.items():
        if name == "*":
            continue
        if name not in root_ret:
            pb.add("roots", "idom root:%s names no listed root" % name)
        elif (root_ret[name], root_cnt[name]) != (ret, by_root_cnt[name]):
            pb.add("roots", "root %r retained %d (%d blocks), its top-level nodes retain %d (%d blocks)"
                   % (name, root_ret[name], root_cnt[name], ret, by_root_cnt[name]))
    for name, ret in root_ret.items():
        if (ret or root_cnt[name]) and name not in by_root:
            pb.add("roots", "root %r retained %d (%d blocks), but no node has idom root:%s"
                   % (name, ret, root_cnt[name], name))


def check_tree_mode(doc, all_nodes, pb, top, depth):
    """`dominators --json --top T --depth D` against the --all document."""
    tpb = Problems()
    nodes = index_nodes(doc, tpb, "tree")
    pb.extend(tpb)
    if tpb.groups:
        return
    seq = doc["nodes"]
    last_at = {}
    roots_seen = []
    kids = {}
    for nd in seq:
        a = int(nd["addr"], 16)
        ref = all_nodes.get(a)
        if ref is None:
            pb.add("tree", "%s is not a used block of --all" % nd["addr"])
            continue
        for k in ("size", "chunk", "retained", "retained_blocks", "idom"):
            if nd[k] != ref[k]:
                pb.add("tree", "%s: %s %r in tree mode, %r with --all" % (nd["addr"], k, nd[k], ref[k]))
        d = nd["depth"]
        if d < 0 or d > depth:
            pb.add("tree", "%s: depth %d outside 0..%d" % (nd["addr"], d, depth))
        if d == 0:
            if not (nd["idom"] or "").startswith("root:"):
                pb.add("tree", "%s: depth 0 with idom %s" % (nd["addr"], nd["idom"]))
            roots_seen.append(nd)
        else:
            parent = last_at.get(d - 1)
            if parent is None or nd["idom"] != parent["addr"]:
                pb.add("tree", "%s at depth %d: idom %s, the enclosing node is %s"
                       % (nd["addr"], d, nd["idom"], parent and parent["addr"]))
            if parent is not None:
                kids.setdefault(parent["addr"], []).append(nd)
        last_at[d] = nd
        for k in list(last_at):
            if k > d:
                del last_at[k]
    tops = sorted((nd for nd in all_nodes.values() if (nd["idom"] or "").startswith("root:")),
                  key=lambda nd: -nd["retained"])
    want = [nd["retained"] for nd in tops[:top]]
    got = [nd["retained"] for nd in roots_seen]
    if got != want:
        pb.add("tree", "depth-0 retained sizes %s, expected the %d largest top-level %s" % (got, top, want))
    for paddr, ch in kids.items():
        if len(ch) > top:
            pb.add("tree", "%s shows %d children (--top %d)" % (paddr, len(ch), top))
        r = [c["retained"] for c in ch]
        if r != sorted(r, reverse=True):
            pb.add("tree", "%s: children not by retained size: %s" % (paddr, r))


def check_why(heapdom, target, truth, nodes, pb, only_addrs=None):
    cycle = {a for a, (n, _) in truth.blocks.items() if n.startswith("cycle.")}
    for addr, length, froms in truth.why:
        if only_addrs is not None and addr not in only_addrs:
            continue
        name = truth.blocks.get(addr, ("?",))[0]
        what = "why %s (%s)" % (hx(addr), name)
        try:
            doc = heaptest.heapdom_json(heapdom, ["why"] + target + [hx(addr), "--json"])
        except HarnessError as e:
            pb.add("why", "%s: %s" % (what, e))
            continue
        path = doc.get("path")
        if not isinstance(path, list) or not path or not isinstance(doc.get("reachable"), bool):
            pb.add("why", "%s: no path/reachable: %.300r" % (what, doc))
            continue
        if doc.get("query") != hx(addr) or (doc.get("block") or {}).get("addr") != hx(addr):
            pb.add("why", "%s: query/block %r/%r" % (what, doc.get("query"), doc.get("block")))
        reach_exp = froms[0].startswith(("root:", "thread-stack:"))
        if doc["reachable"] != reach_exp:
            pb.add("why", "%s: reachable %s, expected %s" % (what, doc["reachable"], reach_exp))
        if length is not None and len(path) != length:
            pb.add("why", "%s: path of %d entries, expected %d" % (what, len(path), length))
        if cycle and froms == ["leaked-cycle"] and len(path) > len(cycle):
            pb.add("why", "%s: path of %d entries in a %d-block cycle" % (what, len(path), len(cycle)))
        first = path[0]
        ok = False
        for f in froms:
            if f.startswith(("root:", "thread-stack:")):
                ok = ok or ("root" in first and root_matches(f, first["root"]))
            elif f == "leaked-cycle":
                ok = ok or ("addr" in first and int(first["addr"], 16) in cycle)
            else:
                ok = ok or ("addr" in first and "root" not in first
                            and int(first["addr"], 16) == int(f, 16))
        if not ok:
            pb.add("why", "%s: path starts at %s, expected %s"
                   % (what, first.get("root") or first.get("addr"), " or ".join(froms)))
        last = path[-1]
        if last.get("addr") != hx(addr) or "root" in last:
            pb.add("why", "%s: path ends at %r" % (what, last))
        for i, step in enumerate(path):
            if i and "root" in step:
                pb.add("why", "%s: step %d is a root (%s)" % (what, i, step["root"]))
            if i + 1 == len(path):
                if "pointer" in step:
                    pb.add("why", "%s: last step has a pointer" % what)
                break
            nxt = path[i + 1]
            if "pointer" not in step or ("offset" not in step and "register" not in step):
                pb.add("why", "%s: step %d has no pointer/offset: %r" % (what, i, step))
                continue
            try:
                p = int(step["pointer"], 16)
                na = int(nxt["addr"], 16)
            except (KeyError, ValueError, TypeError):
                pb.add("why", "%s: step %d: bad pointer/addr" % (what, i))
                continue
            nsize = nxt.get("size", 0)
            if not (na <= p <= na + nsize):
                pb.add("why", "%s: step %d pointer %s is not inside %s (+%d)"
                       % (what, i, step["pointer"], nxt["addr"], nsize))
            if step.get("interior") is not (p != na):
                pb.add("why", "%s: step %d interior %r for pointer %s to %s"
                       % (what, i, step.get("interior"), step["pointer"], nxt["addr"]))
            if "addr" in step and "root" not in step and "offset" in step:
                if not (0 <= step["offset"] < step.get("size", 0) and step["offset"] % 8 == 0):
                    pb.add("why", "%s: step %d offset %r outside its block" % (what, i, step["offset"]))
        if addr in truth.interior and len(path) >= 2:
            step = path[-2]
            if step.get("interior") is not True or step.get("pointer") != hx(truth.interior[addr]):
                pb.add("why-interior", "%s: step into the block: interior %r pointer %r, expected "
                       "true %s" % (what, step.get("interior"), step.get("pointer"),
                                    hx(truth.interior[addr])))
        if addr in truth.interior:
            # an address inside the block names the block too
            q = addr + 40
            try:
                d2 = heaptest.heapdom_json(heapdom, ["why"] + target + [hx(q), "--json"])
                if (d2.get("query") != hx(q) or (d2.get("block") or {}).get("addr") != hx(addr)
                        or d2.get("path") != path):
                    pb.add("why-interior", "why %s (inside %s): query %r block %r, path %s the "
                           "block's" % (hx(q), hx(addr), d2.get("query"), (d2.get("block") or {}).get("addr"),
                                        "same as" if d2.get("path") == path else "differs from"))
            except HarnessError as e:
                pb.add("why-interior", "why %s: %s" % (hx(q), e))
        nd = nodes.get(addr)
        if nd is not None and (doc.get("block") or {}).get("retained") not in (None, nd["retained"]):
            pb.add("why", "%s: block retained %r, dominators says %d"
                   % (what, doc["block"].get("retained"), nd["retained"]))


def check_leaks(doc, truth, nodes, graph, pb):
    for key, typ in (("leaked_blocks", int), ("leaked_bytes", int),
                     ("unreferenced_blocks", int), ("groups", list), ("leaks", list)):
        if not isinstance(doc.get(key), typ):
            pb.add("leaks-schema", "%r missing or not %s" % (key, typ.__name__))
    if pb.groups.get("leaks-schema"):
        return
    leaks = {}
    for lk in doc["leaks"]:
        try:
            a = int(lk["addr"], 16)
            ok = (isinstance(lk["size"], int) and isinstance(lk["chunk"], int)
                  and isinstance(lk["unreferenced"], bool) and isinstance(lk["retained"], int)
                  and isinstance(lk["retained_blocks"], int))
        except (KeyError, ValueError, TypeError):
            ok = False
        if not ok:
            pb.add("leaks-schema", "bad leak %r" % (lk,))
            continue
        leaks[a] = lk
    want = {a for a, nd in nodes.items() if nd["idom"] is None}
    if set(leaks) != want:
        pb.add("leaks", "leaks lists %d blocks, dominators has %d leaked; only in leaks: %s; only in "
               "dominators: %s" % (len(leaks), len(want), [hx(a) for a in sorted(set(leaks) - want)][:5],
                                   [hx(a) for a in sorted(want - set(leaks))][:5]))
    if doc["leaked_blocks"] != len(leaks):
        pb.add("leaks", "leaked_blocks %d, %d leaks listed" % (doc["leaked_blocks"], len(leaks)))
    if doc["leaked_bytes"] != sum(lk["chunk"] for lk in leaks.values()):
        pb.add("leaks", "leaked_bytes %d != sum of chunks %d"
               % (doc["leaked_bytes"], sum(lk["chunk"] for lk in leaks.values())))
    nunref = sum(1 for lk in leaks.values() if lk["unreferenced"])
    if doc["unreferenced_blocks"] != nunref:
        pb.add("leaks", "unreferenced_blocks %d, %d leaks unreferenced" % (doc["unreferenced_blocks"], nunref))
    seen_ref = False
    for lk in doc["leaks"]:
        if not lk.get("unreferenced"):
            seen_ref = True
        elif seen_ref:
            pb.add("leaks", "unreferenced leak %s after a referenced one" % lk["addr"])
            break
    for a, lk in leaks.items():
        nd = nodes.get(a)
        if nd is not None and (lk["size"], lk["chunk"]) != (nd["size"], nd["chunk"]):
            pb.add("leaks", "%s: size/chunk %d/%d, dominators says %d/%d"
                   % (hx(a), lk["size"], lk["chunk"], nd["size"], nd["chunk"]))
    sizes_of = {}
    for lk in leaks.values():
        sizes_of.setdefault(lk["chunk"], set()).add(lk["size"])
    for grp in doc["groups"]:
        c = grp.get("chunk")
        members = [lk for lk in leaks.values() if lk["chunk"] == c]
        want = (len(members), sum(lk["chunk"] for lk in members),
                sum(1 for lk in members if lk["unreferenced"]))
        got = (grp.get("count"), grp.get("bytes"), grp.get("unreferenced"))
        if got != want:
            pb.add("leak-groups", "group chunk %s: count/bytes/unreferenced %s, the leaks give %s"
                   % (c, got, want))
        if len(sizes_of.get(c, ())) == 1 and grp.get("size") not in sizes_of[c]:
            pb.add("leak-groups", "group chunk %s: size %s, its leaks' size is %d"
                   % (c, grp.get("size"), next(iter(sizes_of[c]))))
    gc = sum(g.get("count", 0) for g in doc["groups"])
    gb = sum(g.get("bytes", 0) for g in doc["groups"])
    gu = sum(g.get("unreferenced", 0) for g in doc["groups"])
    if (gc, gb, gu) != (len(leaks), doc["leaked_bytes"], nunref):
        pb.add("leaks", "groups sum to %d blocks %d bytes %d unreferenced, expected %d %d %d"
               % (gc, gb, gu, len(leaks), doc["leaked_bytes"], nunref))
    for a, unref in truth.unref.items():
        lk = leaks.get(a)
        name = truth.blocks.get(a, ("?",))[0]
        if lk is None:
            pb.add("leaks", "%s %s is not listed as a leak" % (name, hx(a)))
        elif lk["unreferenced"] != unref:
            pb.add("unreferenced", "%s %s: unreferenced %s, expected %s" % (name, hx(a), lk["unreferenced"], unref))
    for a, ret in truth.leak_retained.items():
        lk = leaks.get(a)
        if lk is not None and lk["retained"] != ret:
            pb.add("leak-retained", "%s %s: retained %d, expected %d"
                   % (truth.blocks.get(a, ("?",))[0], hx(a), lk["retained"], ret))
    if graph is None:
        return
    # Independently: unreferenced = no predecessor in the graph; retained
    # = dominators of the leaked subgraph from its entry points.
    g = graph
    leaked_ix = set()
    for a in leaks:
        i = g.addr_index.get(a)
        if i is None:
            pb.add("leaks", "leak %s is not a graph node" % hx(a))
        else:
            leaked_ix.add(i)
    for a, lk in leaks.items():
        i = g.addr_index.get(a)
        if i is not None and lk["unreferenced"] != (g.pred_count[i] == 0):
            pb.add("unreferenced", "%s: unreferenced %s but %d graph predecessors"
                   % (hx(a), lk["unreferenced"], g.pred_count[i]))
    n = g.n
    succ = [[] for _ in range(n)]
    has_leaked_pred = set()
    for v in leaked_ix:
        for w in g.succ[v]:
            if w in leaked_ix:
                succ[v].append(w)
                if w != v:
                    has_leaked_pred.add(w)
    entries = [v for v in leaked_ix if v not in has_leaked_pred]
    succ[0] = entries
    idom = chk_dominators(n, succ, 0)
    size = [g.size(i) if i in leaked_ix else 0 for i in range(n)]
    ret, cnt = subtree_sums(n, idom, 0, size)
    # Components no entry reaches (pure cycles): one of their blocks must
    # retain the whole component, whichever the tool chose as its entry.
    rest = [v for v in leaked_ix if idom[v] is None]
    comp_of = {}
    for v in sorted(rest):
        if v in comp_of:
            continue
        comp, stack = {v}, [v]
        while stack:
            u = stack.pop()
            for w in succ[u]:
                if w in leaked_ix and w not in comp and idom[w] is None:
                    comp.add(w)
                    stack.append(w)
        for u in comp:
            comp_of.setdefault(u, comp)
    for a, lk in leaks.items():
        i = g.addr_index.get(a)
        if i is None:
            continue
        if idom[i] is not None:
            if lk["retained"] != ret[i] or lk["retained_blocks"] != cnt[i]:
                pb.add("leak-retained", "%s: retained %d (%d blocks), recomputed %d (%d blocks)"
                       % (hx(a), lk["retained"], lk["retained_blocks"], ret[i], cnt[i]))
    done = set()
    for v, comp in comp_of.items():
        if id(comp) in done:
            continue
        done.add(id(comp))
        total = sum(size[u] for u in comp)
        got = max(leaks[int(g.block[g.ids[u]]["addr"], 16)]["retained"] for u in comp)
        if got != total:
            pb.add("leak-retained", "leaked cycle of %d blocks (%s...): largest retained %d, "
                   "the component holds %d" % (len(comp), g.label(min(comp)), got, total))


def check_graph(gdoc, dom_nodes, doc_holders, truth, pb, plain=False):
    """Recompute dominators from the exported graph (the ranked view's
    graph, or with plain the graph itself); compare every node."""
    g = Graph(gdoc, pb)
    blocks = {int(nd["addr"], 16): nd for nd in g.block.values()}
    if set(blocks) != set(dom_nodes):
        pb.add("graph", "graph has %d blocks, dominators --all %d; only in graph: %s; only in "
               "dominators: %s" % (len(blocks), len(dom_nodes),
                                   [hx(a) for a in sorted(set(blocks) - set(dom_nodes))][:5],
                                   [hx(a) for a in sorted(set(dom_nodes) - set(blocks))][:5]))
    for a, nd in blocks.items():
        d = dom_nodes.get(a)
        if d is not None and (d["size"], d["chunk"]) != (nd["size"], nd["chunk"]):
            pb.add("graph", "%s: size/chunk %d/%d in graph, %d/%d in dominators"
                   % (nd["addr"], nd["size"], nd["chunk"], d["size"], d["chunk"]))
    # the structures' own edges must be there: block idoms are direct
    # predecessors, except the diamond's bottom (held by left and right)
    want_edges = [(int(exp, 16), a) for a, exp in truth.idom.items()
                  if exp.startswith("0x") and truth.blocks.get(a, ("",))[0] != "bottom"]
    nm = truth.by_name
    if all(k in nm for k in ("left", "right", "bottom")):
        want_edges += [(nm["left"], nm["bottom"]), (nm["right"], nm["bottom"])]
    for pa, ca in want_edges:
        p, c = g.addr_index.get(pa), g.addr_index.get(ca)
        if p is not None and c is not None and c not in g.succ[p]:
            pb.add("graph-edges", "no edge %s -> %s (%s)" % (hx(pa), hx(ca), truth.blocks.get(ca, ("?",))[0]))
    succ = g.succ if plain else g.ranked_succ()
    idom = chk_dominators(g.n, succ, 0)
    size = [g.size(i) for i in range(g.n)]
    ret, cnt = subtree_sums(g.n, idom, 0, size)
    for bid, nd in g.block.items():
        i = g.index[bid]
        a = int(nd["addr"], 16)
        d = dom_nodes.get(a)
        if d is None:
            continue
        want = None if idom[i] is None else g.label(idom[i])
        if d["idom"] != want:
            pb.add("graph-dominators", "%s: dominators says idom %s, recomputed from the graph %s"
                   % (nd["addr"], d["idom"], want))
        if idom[i] is not None and (d["retained"] != ret[i] or d["retained_blocks"] != cnt[i]):
            pb.add("graph-retained", "%s: retained %d (%d blocks), recomputed %d (%d blocks)"
                   % (nd["addr"], d["retained"], d["retained_blocks"], ret[i], cnt[i]))
    check_holders(doc_holders, g, succ, idom, ret, cnt, pb)
    return g


def check_holders(doc, g, succ, idom, ret, cnt, pb):
    """The holders of a dominators document against the partition
    recomputed from the graph: one per root name dominating something
    (the sum of its roots' retained), one per set of root names reaching
    the blocks the super-root alone dominates (each set found by a
    backward search from the block; a set of one name goes to that name's
    root holder), and leaked blocks for the rest."""
    holders = doc.get("holders")
    if not isinstance(holders, list):
        pb.add("holders", "no holders array")
        return
    want = {}
    for rid, name in g.root_name.items():
        i = g.index[rid]
        if idom[i] is not None and cnt[i] > 0:
            r, c = want.get(("root", name), (0, 0))
            want[("root", name)] = (r + ret[i], c + cnt[i])
    pred = [[] for _ in range(g.n)]
    for u in range(g.n):
        for w in succ[u]:
            pred[w].append(u)
    for bid in g.block:
        i = g.index[bid]
        if idom[i] != 0:
            continue
        seen, todo, names = {i}, [i], set()
        while todo:
            u = todo.pop()
            for p in pred[u]:
                if p not in seen and idom[p] is not None:
                    seen.add(p)
                    todo.append(p)
                    if g.ids[p] in g.root_name:
                        names.add(g.root_name[g.ids[p]])
        # Roots of one name (a global split in parts) are one holder.
        key = ("root", next(iter(names))) if len(names) == 1 else ("joint", frozenset(names))
        r, c = want.get(key, (0, 0))
        want[key] = (r + ret[i], c + cnt[i])
    got, leaked = {}, 0
    for h in holders:
        if h.get("kind") == "block":
            leaked += h.get("retained", 0)
            continue
        key = (h.get("kind"), h.get("name") if h.get("kind") == "root"
               else frozenset(h.get("members", [])))
        if key in got:
            pb.add("holders", "holder %r listed twice" % (key,))
        got[key] = (h.get("retained"), h.get("retained_blocks"))
    for key in set(want) | set(got):
        if want.get(key) != got.get(key):
            pb.add("holders", "%s %s: heapdom %s, recomputed %s (retained, blocks)"
                   % (key[0], sorted(key[1]) if key[0] == "joint" else key[1],
                      got.get(key), want.get(key)))
    if leaked != doc["heap"]["leaked_bytes"]:
        pb.add("holders", "leaked-block holders retain %d, heap.leaked_bytes is %d"
               % (leaked, doc["heap"]["leaked_bytes"]))


def check_graph_from(sub, g, start, depth, pb):
    """`graph --from START --depth D`: the blocks within D steps of START
    (breadth-first over the full export) and every edge among them."""
    what = "graph --from %s --depth %d" % (hx(start), depth)
    s = g.addr_index.get(start)
    if s is None:
        pb.add("graph-from", "%s: start is not a node of the full graph" % what)
        return
    dist = {s: 0}
    queue = [s]
    for u in queue:
        if dist[u] < depth:
            for w in g.succ[u]:
                if w not in dist:
                    dist[w] = dist[u] + 1
                    queue.append(w)
    want_nodes = sorted(g.ids[i] for i in dist)
    want_edges = sorted((g.ids[u], g.ids[w]) for u in dist for w in g.succ[u] if w in dist)
    try:
        got_nodes = sorted(nd["id"] for nd in sub["nodes"])
        got_edges = sorted(tuple(e) for e in sub["edges"])
        bad = [nd for nd in sub["nodes"] if "addr" in nd and nd["id"] in g.block
               and nd != g.block[nd["id"]]]
    except (KeyError, TypeError) as e:
        pb.add("graph-from", "%s: bad document (%s)" % (what, e))
        return
    for kind, got, want in (("nodes", got_nodes, want_nodes), ("edges", got_edges, want_edges)):
        if got != want:
            pb.add("graph-from", "%s: %d %s, expected %d; missing %s; extra %s"
                   % (what, len(got), kind, len(want), sorted(set(want) - set(got))[:5],
                      sorted(set(got) - set(want))[:5]))
    if bad:
        pb.add("graph-from", "%s: nodes differ from the full export: %r" % (what, bad[:3]))


DOT_NODE = re.compile(r'^\s*v\d+ \[.*\];$')
DOT_EDGE = re.compile(r'^\s*v(\d+) -> v(\d+)( \[style=dashed\])?;$')


def check_dot(text, g, pb):
    s = text.strip()
    if not s.startswith("digraph"):
        pb.add("dot", "does not start with 'digraph': %r" % s[:40])
    depth = 0
    in_str = False
    esc = False
    for ch in s:
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth < 0:
                break
    if depth != 0 or in_str or not s.endswith("}"):
        pb.add("dot", "unbalanced braces/quotes (depth %d, in string %s)" % (depth, in_str))
    nodes = edges = 0
    lines = s.splitlines()
    for ln in lines[1:-1]:
        if DOT_EDGE.match(ln):
            edges += 1
        elif DOT_NODE.match(ln):
            nodes += 1
        elif ln.strip().startswith("node ["):
            continue
        else:
            pb.add("dot", "unexpected line %r" % ln[:100])
    if g is not None and (nodes, edges) != (g.n - 1, g.edges):
        pb.add("dot", "%d nodes %d edges, the JSON export has %d and %d" % (nodes, edges, g.n - 1, g.edges))


# --------------------------------------------------------------- runner
class Runner(heaptest.CaseRunner):
    def __init__(self, args):
        super().__init__(args.workdir, args.only, args.keep)
        self.heapdom = os.path.abspath(args.heapdom)
        self.fixture = os.path.abspath(args.fixture)
        self.empty = os.path.join(self.work, "empty-debug-dir")

    def core(self, tag, fixture_args=()):
        if tag not in self.cache:
            core, truth = self.path(tag + ".core"), self.path(tag + ".truth")
            heaptest.make_core(self.fixture, truth, core, fixture_args)
            self.cache[tag] = (core, parse_dom_truth(truth))
        return self.cache[tag]

    def full_checks(self, target, truth):
        """Every check on one target; returns (problem lines, --all doc)."""
        pb = Problems()
        doc = heaptest.heapdom_json(self.heapdom, ["dominators"] + target + ["--json", "--all"])
        nodes = index_nodes(doc, pb, "all")
        if not nodes:
            return pb.lines() or ["dominators --all listed no nodes"], doc
        check_truth_nodes(nodes, truth, pb)
        check_sums(doc, nodes, pb)
        tree = heaptest.heapdom_json(self.heapdom, ["dominators"] + target +
                                     ["--json", "--top", "5", "--depth", "3"])
        check_tree_mode(tree, nodes, pb, 5, 3)
        check_why(self.heapdom, target, truth, nodes, pb)
        gdoc = heaptest.heapdom_json(self.heapdom, ["graph"] + target + ["--format", "json"])
        g = check_graph(gdoc, nodes, doc, truth, pb)
        # The plain view: the exact dominator tree of the same graph.
        pdoc = heaptest.heapdom_json(self.heapdom, ["dominators"] + target +
                                     ["--json", "--all", "--plain"])
        if pdoc.get("view") != "plain" or doc.get("view") != "ranked":
            pb.add("view", "views %r (default) and %r (--plain)" % (doc.get("view"), pdoc.get("view")))
        ppb = Problems("plain: ")
        pnodes = index_nodes(pdoc, ppb, "all")
        check_graph(gdoc, pnodes, pdoc, truth, ppb, plain=True)
        pb.extend(ppb)
        for name, depth in (("hub", 2), ("list.0", 3), ("big", 1)):
            if name in truth.by_name:
                start = truth.by_name[name]
                sub = heaptest.heapdom_json(self.heapdom, ["graph"] + target + [
                    "--format", "json", "--from", hx(start), "--depth", str(depth)])
                check_graph_from(sub, g, start, depth, pb)
        ldoc = heaptest.heapdom_json(self.heapdom, ["leaks"] + target + ["--json"])
        check_leaks(ldoc, truth, nodes, g, pb)
        r = heaptest.run_heapdom(self.heapdom, ["graph"] + target + ["--format", "dot"])
        if r.rc != 0:
            pb.add("dot", r.describe())
        else:
            check_dot(r.out, g, pb)
        print("    %d nodes (%d leaked), %d roots, %d graph edges; checked %d idom, %d retained, "
              "%d why, %d leak records"
              % (len(nodes), doc["heap"]["leaked_blocks"], len(g.root_name), g.edges, len(truth.idom),
                 len(truth.retained), len(truth.why), len(truth.unref) + len(truth.leak_retained)))
        return pb.lines(), doc

    def case_core(self):
        core, truth = self.core("dom")
        out, doc = self.full_checks([core], truth)
        self.cache["doc-a"] = doc
        return out

    def case_debug_dir(self):
        core, truth = self.core("dom")
        out, doc = self.full_checks([core, "--debug-dir", self.empty], truth)
        first = self.cache.get("doc-a")
        if first is None:
            first = heaptest.heapdom_json(self.heapdom, ["dominators", core, "--json", "--all"])
        keys = ("addr", "size", "chunk", "retained", "retained_blocks", "idom", "leaked")

        # Without libc's debug info its inlined frames are not counted:
        # a frame's level (in a root's name) may differ, nothing else.
        def node_key(nd):
            return tuple(re.sub(r"^(root:thread \d+) #\d+ ", r"\1 #N ", nd.get(k))
                         if k == "idom" and isinstance(nd.get(k), str) else nd.get(k)
                         for k in keys)
        a = {nd["addr"]: node_key(nd) for nd in first.get("nodes", [])}
        b = {nd["addr"]: node_key(nd) for nd in doc.get("nodes", [])}
        diff = ["%s: %s vs %s" % (k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
                if a.get(k) != b.get(k)]
        if diff:
            out.append("nodes differ from the default-debug-info run (%d; first %d; fields %s):\n  %s"
                       % (len(diff), LIMIT, ",".join(keys), "\n  ".join(diff[:LIMIT])))
        if first.get("heap") != doc.get("heap"):
            out.append("heap totals differ: %r vs %r" % (first.get("heap"), doc.get("heap")))
        return out

    def case_live(self):
        truth_p, ready = self.path("live.truth"), self.path("live.ready")
        proc = heaptest.start_fixture(self.fixture, truth_p, ready)
        out = []
        try:
            truth = parse_dom_truth(truth_p)
            if truth.pid != proc.pid:
                raise HarnessError("truth pid %s != fixture pid %d" % (truth.pid, proc.pid))
            try:
                res, _ = self.full_checks(["--pid", str(proc.pid)], truth)
                out += res
            except HarnessError as e:
                out.append("harness: %s" % e)
            if proc.poll() is not None:
                out.append("the fixture died (status %s) while heapdom inspected it" % proc.returncode)
            else:
                bad = heaptest.stopped_threads(proc.pid)
                if bad:
                    out.append("heapdom left the fixture stopped/traced: %s" % ", ".join(
                        "tid %d state %s tracer %d" % (t, s, tr) for t, (s, tr) in sorted(bad.items())))
        finally:
            heaptest.stop_fixture(proc)
        return out

    def case_big(self):
        core, truth = self.core("big", ["--list", str(BIG_LIST)])
        if truth.list_length != BIG_LIST:
            return ["truth list_length %s, expected %d" % (truth.list_length, BIG_LIST)]
        pb = Problems()
        outfile = self.path("big-dominators.json")
        args = ["dominators", core, "--json", "--all", "--output", outfile]
        r = heaptest.run_heapdom(self.heapdom, args)
        print("    dominators --json --all on %d list nodes: %.1fs" % (BIG_LIST, r.secs))
        if r.rc != 0:
            return [r.describe()]
        # Stream the document: one node per line; parse only the recorded ones.
        nodes, nnodes, heap = {}, 0, None
        with open(outfile) as f:
            for ln in f:
                if ln.startswith('{"addr": '):
                    nnodes += 1
                    a = int(ln[10:ln.index('"', 10)], 16)
                    if a in truth.blocks:
                        nodes[a] = json.loads(ln.rstrip().rstrip(","))
                elif heap is None and '"heap": ' in ln:
                    m = re.search(r'"heap": (\{[^}]*\})', ln)
                    heap = json.loads(m.group(1)) if m else None
        os.unlink(outfile)
        if heap is None or heap.get("used_blocks") != nnodes:
            pb.add("totals", "heap %r, %d nodes listed" % (heap, nnodes))
        if nnodes < BIG_LIST:
            pb.add("totals", "only %d nodes for a %d-node list" % (nnodes, BIG_LIST))
        check_truth_nodes(nodes, truth, pb)
        head = truth.by_name.get("list.0")
        tail = truth.by_name.get("list.%d" % (BIG_LIST - 1))
        pred = truth.by_name.get("list.%d" % (BIG_LIST - 2))
        if head is None or tail is None or pred is None:
            pb.add("truth", "list head/tail not recorded")
        else:
            hn, tn = nodes.get(head), nodes.get(tail)
            want = BIG_LIST * truth.blocks[head][1]
            if hn is None or hn["retained"] != want or hn["retained_blocks"] != BIG_LIST:
                pb.add("big", "head %s: %r, expected retained %d, %d blocks"
                       % (hx(head), hn, want, BIG_LIST))
            if tn is None or tn["idom"] != hx(pred):
                pb.add("big", "tail %s: idom %r, expected %s" % (hx(tail), tn and tn["idom"], hx(pred)))
        r = heaptest.run_heapdom(self.heapdom, ["dominators", core, "--json", "--top", "3", "--depth", "2"])
        print("    dominators --json --top 3 --depth 2: %.1fs" % r.secs)
        if r.rc != 0:
            pb.add("big", r.describe())
        r = heaptest.run_heapdom(self.heapdom, ["dominators", core])
        print("    dominators (text): %.1fs" % r.secs)
        if r.rc != 0:
            pb.add("big", r.describe())
        t0 = time.monotonic()
        check_why(self.heapdom, [core], truth, nodes, pb, only_addrs={tail})
        print("    why LIST-TAIL (path of %d entries): %.1fs" % (BIG_LIST + 1, time.monotonic() - t0))
        r = heaptest.run_heapdom(self.heapdom, ["leaks", core, "--json"])
        print("    leaks --json: %.1fs" % r.secs)
        if r.rc != 0:
            pb.add("big", r.describe())
        return pb.lines()

    def run(self):
        os.makedirs(self.work, exist_ok=True)
        if os.path.isdir(self.empty):
            shutil.rmtree(self.empty)
        os.makedirs(self.empty)
        if not shutil.which("gdb"):
            print("FAIL setup: gdb not found")
            self.failed += 1
        for p in (self.heapdom, self.fixture):
            if not (os.access(p, os.X_OK) or (p == self.heapdom and p.endswith(".py")
                                              and os.path.isfile(p))):
                print("FAIL setup: %s is not executable" % p)
                self.failed += 1
        if not self.failed:
            self.case("a core, default debug info", self.case_core)
            self.case("b core, empty --debug-dir", self.case_debug_dir)
            self.case("c live --pid", self.case_live)
            self.case("d core with a %d-node list" % BIG_LIST, self.case_big)
        return self.finish((".core", ".truth", ".ready", ".json"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated case letters, e.g. a,b")
    ap.add_argument("--keep", action="store_true", help="keep cores and truth files")
    return Runner(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())

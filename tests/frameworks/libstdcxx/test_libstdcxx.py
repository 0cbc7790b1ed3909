#!/usr/bin/env python3
"""heapdom integration test: the libstdc++ framework module against a
fixture whose containers' blocks are known by construction.

    test_libstdcxx.py --heapdom PATH --fixture PATH --workdir DIR
                      [--only core,live] [--keep]

The fixture (tests/frameworks/libstdcxx/libstdcxx_fixture.cpp; its truth
format is documented at its top) records, through its own operator new,
which live block was made for which container, and for each container the
node block that holds it (nested ones) and the framework bytes its blocks
carry.

Cases:
  core  a core of the fixture (gdb gcore at hd_fixture_stop)
  live  --pid on the fixture started with --wait
Checks for each target, on `heapdom dominators --semantic --framework
libstdc++ --json` (one PASS/FAIL line each):
  - frameworks: the module ran, detected libstdc++, no error; exactly one
    warning for each container the fixture damaged (a list's size, a
    map's node_count, a vector's finish) and none else
  - nodes: every container of the truth is one node (found by its label)
    of kind "container", owner "application", framework "libstdc++", with
    the holder the truth names (its global's root, or the block holding
    it); no node for a damaged container
  - object: alloc/used/blocks of each node equal the blocks tagged with its
    key (used = chunk - 8: no block here is mmapped)
  - bound: alloc/used/blocks of each node equal its blocks and those only
    its elements keep alive (tags under KEY/); framework = the framework
    bytes of its own and its nested containers' blocks; application =
    alloc - framework
  - nesting: the map<int, Session> node's bound holds every session's
    string and vector buffer (more than its own nodes)
  - shared: a control block two shared_ptrs share rises to their nearest
    common node (hd_fw_assign's rule, through parents and holders): the
    two globals' one has none and is in no node's bound; the one two
    shared_ptrs in a vector's buffer share is assigned to the vector's
    node (their nodes hang under the buffer, which is the vector's)
  - frameworks-report: `heapdom frameworks --framework libstdc++ --json`
    lists the module as detected with a note
  - alone (core): each block of the truth asked alone by `why --json
    --profile`, where the module waits until a block it may name is
    asked about, gets the type `blocks --json` gives (which runs the
    module whole); the nodes and buffers of every undamaged std::map,
    std::set, std::list and std::vector that a global or a block only
    roots point at holds, the nodes and bucket array of a global
    std::unordered_map, and the objects a std::vector of pointers points
    at, are named from their container alone (the module does not run);
    the others (nested in another container's blocks, damaged, or of
    other kinds) are not

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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

FRAMEWORK = "libstdc++"


class Truth:
    def __init__(self):
        self.pid = None
        self.module = None
        self.nodes = {}     # key -> (holder, fw, label)
        self.order = []     # keys in file order
        self.blocks = []    # (addr, chunk, tag)
        self.broken = []    # globals damaged on purpose


def parse_truth(path):
    t = Truth()
    n = 0
    end = None
    with open(path) as f:
        first = f.readline().split()
        if first != ["libstdcxx-truth", "1"]:
            raise HarnessError("%s: not a libstdcxx truth file (v1)" % path)
        for ln, line in enumerate(f, 2):
            w = line.rstrip("\n").split(" ")
            if not w or not w[0]:
                continue
            try:
                if w[0] == "pid":
                    t.pid = int(w[1])
                elif w[0] == "module":
                    t.module = w[1]
                elif w[0] == "node":
                    key, holder, fw = w[1], w[2], int(w[3])
                    if key in t.nodes:
                        raise ValueError("duplicate key")
                    t.nodes[key] = (holder, fw, " ".join(w[4:]))
                    t.order.append(key)
                elif w[0] == "broken":
                    t.broken.append(w[1])
                elif w[0] == "block":
                    t.blocks.append((int(w[1], 16), int(w[2]), w[3]))
                elif w[0] == "end":
                    end = int(w[1])
                    continue
                else:
                    raise ValueError("unknown record")
            except (ValueError, IndexError) as e:
                raise HarnessError("%s:%d: bad line %r (%s)" % (path, ln, line.strip(), e))
            n += 1
    if end != n:
        raise HarnessError("%s: truncated (end %r, %d records)" % (path, end, n))
    return t


def norm_holder(h):
    """A holder as a comparable value: an int address or 'root:NAME' (the
    demangler's ABI tags dropped: "g_names[abi:cxx11]" is g_names)."""
    if h is None:
        return None
    if h.startswith("0x"):
        return int(h, 16)
    return re.sub(r"\[abi:[^]]*\]", "", h)


def sums(blocks):
    return {"alloc": sum(c for _, c, _ in blocks),
            "used": sum(c - 8 for _, c, _ in blocks),
            "blocks": len(blocks)}


def expected(truth, key):
    """(object, bound) the truth gives for a node key."""
    # A control block shared by two elements of a container (KEY/cb) rises
    # to the container's node.
    own = [b for b in truth.blocks if b[2] in (key, key + "/cb")]
    sub = [b for b in truth.blocks if b[2] == key or b[2].startswith(key + "/")]
    fw = truth.nodes[key][1] + sum(v[1] for k, v in truth.nodes.items()
                                   if k.startswith(key + "/"))
    bound = sums(sub)
    bound["framework"] = fw
    bound["application"] = bound["alloc"] - fw
    return sums(own), bound


class Target:
    def __init__(self, run, case, heapdom, target_args, truth):
        self.run, self.case, self.heapdom = run, case, heapdom
        self.truth = truth
        # --pid PID comes before the report words, a core after them.
        live = target_args and target_args[0] == "--pid"
        self.pre = list(target_args) if live else []
        self.post = [] if live else list(target_args)
        self.doc = None

    def get_doc(self):
        if self.doc is None:
            self.doc = heaptest.heapdom_json(
                self.heapdom, self.pre + ["dominators", "--semantic", "--framework",
                                          FRAMEWORK, "--json"] + self.post)
            if not isinstance(self.doc.get("nodes"), list):
                raise HarnessError("no \"nodes\" list in the semantic JSON")
        return self.doc

    def nodes_by_label(self):
        out = {}
        for n in self.get_doc()["nodes"]:
            if n.get("framework") == FRAMEWORK:
                out.setdefault(n.get("label"), []).append(n)
        return out

    def node_for(self, key, problems):
        label = self.truth.nodes[key][2]
        found = self.nodes_by_label().get(label, [])
        if len(found) != 1:
            problems.append("%s: %d nodes labelled %r" % (key, len(found), label))
            return None
        return found[0]

    # ----------------------------------------------------------- checks
    def check_frameworks(self):
        p = []
        fws = [f for f in self.get_doc().get("frameworks", []) if f.get("name") == FRAMEWORK]
        if len(fws) != 1:
            return ["%d frameworks named %s in %r" % (len(fws), FRAMEWORK,
                                                      [f.get("name") for f in self.get_doc().get("frameworks", [])])]
        f = fws[0]
        if f.get("detected") is not True:
            p.append("not detected: notes %r" % f.get("notes"))
        if f.get("error") is not None:
            p.append("error: %r" % f.get("error"))
        # One warning for each container damaged on purpose, naming it;
        # no other.
        for w in f.get("warnings", []):
            named = [g for g in self.truth.broken if (" %s at 0x" % g) in str(w.get("message"))]
            if len(named) != 1:
                p.append("warning %s: %s" % (w.get("address"), w.get("message")))
        for g in self.truth.broken:
            n = sum(1 for w in f.get("warnings", []) if (" %s at 0x" % g) in str(w.get("message")))
            if n != 1:
                p.append("%d warnings about the damaged %s, expected 1" % (n, g))
        if f.get("dropped_warnings"):
            p.append("dropped_warnings %r" % f.get("dropped_warnings"))
        if f.get("source") != "built-in":
            p.append("source %r, expected built-in" % f.get("source"))
        return p

    def check_nodes(self):
        p = []
        for key in self.truth.order:
            n = self.node_for(key, p)
            if n is None:
                continue
            holder = self.truth.nodes[key][0]
            if norm_holder(n.get("holder")) != norm_holder(holder):
                p.append("%s: holder %r, expected %r" % (key, n.get("holder"), holder))
            for field, want in (("kind", "container"), ("owner", "application"),
                                ("parent", None)):
                if n.get(field) != want:
                    p.append("%s: %s %r, expected %r" % (key, field, n.get(field), want))
        labels = [n.get("label") for n in self.get_doc()["nodes"]
                  if n.get("framework") == FRAMEWORK]
        for g in self.truth.broken:
            for lab in labels:
                if lab.endswith(" " + g):
                    p.append("a node %r for the damaged %s" % (lab, g))
        extra = sorted(set(labels) - {v[2] for v in self.truth.nodes.values()})
        # Other containers (of the C++ runtime's own globals) may exist,
        # but none of this fixture's may be found twice under another name.
        for lab in extra:
            for g in ("g_sessions", "g_items", "g_names", "g_index", "g_ids", "g_blob",
                      "g_plain", "g_long", "Registry"):
                if (" %s" % g) in lab:
                    p.append("unexpected node %r" % lab)
                    break
        return p

    def check_sizes(self, what):
        p = []
        for key in self.truth.order:
            n = self.node_for(key, p)
            if n is None:
                continue
            obj, bound = expected(self.truth, key)
            want = obj if what == "object" else bound
            got = n.get(what) or {}
            for field, v in want.items():
                if got.get(field) != v:
                    p.append("%s (%s): %s.%s %r, expected %r" % (
                        key, self.truth.nodes[key][2], what, field, got.get(field), v))
        return p

    def check_nesting(self):
        p = []
        n = self.node_for("sessions", p)
        if n is None:
            return p
        inner = sums([b for b in self.truth.blocks if b[2].startswith("sessions/")])
        if not inner["blocks"]:
            return ["the truth has no session strings or vectors"]
        got = n["bound"]["alloc"] - n["object"]["alloc"]
        if got != inner["alloc"]:
            p.append("map's bound beyond its own nodes is %d bytes, the sessions' strings and "
                     "vectors are %d" % (got, inner["alloc"]))
        return p

    def check_shared(self):
        p = []
        shared = [b for b in self.truth.blocks if b[2] == "shared"]
        if len(shared) != 1:
            return ["the truth has %d shared control blocks" % len(shared)]
        for key in ("blob_a", "blob_b"):
            n = self.node_for(key, p)
            if n and (n["object"]["blocks"] or n["bound"]["blocks"]):
                p.append("%s holds the shared control block: object %r bound %r"
                         % (key, n["object"], n["bound"]))
        # The one two shared_ptrs in g_blobs' buffer share: their nodes
        # are held by the buffer, the buffer is the vector's, so it rises
        # to the vector's node.
        cb = [b for b in self.truth.blocks if b[2] == "blobs/cb"]
        own = [b for b in self.truth.blocks if b[2] == "blobs"]
        if len(cb) != 1:
            return p + ["the truth has %d g_blobs control blocks" % len(cb)]
        n = self.node_for("blobs", p)
        if n and n["object"]["blocks"] != len(own) + 1:
            p.append("g_blobs' node has %d blocks, expected its buffer and the shared "
                     "control block (%d)" % (n["object"]["blocks"], len(own) + 1))
        if n and n["bound"]["blocks"] != len(own) + 1:
            p.append("g_blobs' bound has %d blocks, expected its buffer and the shared "
                     "control block below it" % n["bound"]["blocks"])
        for key in ("blobs/0", "blobs/1"):
            e = self.node_for(key, p)
            if e and e["object"]["blocks"]:
                p.append("%s holds the control block it shares: %r" % (key, e["object"]))
        return p

    def check_report(self):
        doc = heaptest.heapdom_json(self.heapdom, self.pre + ["frameworks", "--framework",
                                                              FRAMEWORK, "--json"] + self.post)
        fws = doc.get("frameworks", doc if isinstance(doc, list) else [])
        mods = [f for f in fws if isinstance(f, dict) and f.get("name") == FRAMEWORK]
        if len(mods) != 1:
            return ["frameworks report lists %d modules named %s" % (len(mods), FRAMEWORK)]
        p = []
        if mods[0].get("detected") is not True:
            p.append("not detected: %r" % mods[0])
        if not mods[0].get("notes"):
            p.append("no notes")
        return p

    def alone_expected(self, tag):
        """Whether the block tagged tag is one heapdom names from its
        container alone (docs/frameworks.md)."""
        key, elem = (tag[:-5], True) if tag.endswith("/elem") else (tag, False)
        if key not in self.truth.nodes or key in self.truth.broken:
            return False
        holder, _, label = self.truth.nodes[key]
        # Held by a global, or by a block of no container (one made with
        # new that only roots point at), not nested in another's block.
        tags = {a: t for a, _, t in self.truth.blocks}
        if not holder.startswith("root:") and \
                tags.get(int(holder, 16), "other") in self.truth.nodes:
            return False
        if elem:
            return re.match(r"std::vector<[^<>]*\*> ", label) is not None
        if re.match(r"std::unordered_(map|set|multimap|multiset)<", label):
            return holder.startswith("root:")
        return re.match(r"std::(map|set|multimap|multiset|list|vector)<", label) is not None \
            and not label.startswith("std::vector<bool")

    def check_alone(self):
        eager = heaptest.heapdom_json(self.heapdom, self.pre + ["blocks", "--json"] + self.post)
        types = {int(b["addr"], 16) if isinstance(b["addr"], str) else b["addr"]: b.get("type")
                 for b in eager.get("blocks", []) if b.get("state") == "used"}
        p = []
        counts = {"alone": 0, "other": 0}
        for addr, _, tag in self.truth.blocks:
            r = heaptest.run_heapdom(self.heapdom, self.pre + ["why"] + self.post +
                                     ["0x%x" % addr, "--json", "--profile"])
            if r.rc != 0:
                p.append("why 0x%x: %s" % (addr, r.describe()))
                continue
            got = json.loads(r.out).get("block", {}).get("type")
            if got != types.get(addr):
                p.append("0x%x (%s) asked alone: type %r, blocks says %r"
                         % (addr, tag, got, types.get(addr)))
            m = re.search(r", (\d+) named from their container alone", r.err)
            alone = bool(m and int(m.group(1)) > 0)
            counts["alone" if alone else "other"] += 1
            if alone != self.alone_expected(tag):
                p.append("0x%x (%s): %s from its container alone"
                         % (addr, tag, "named" if alone else "not named"))
        if not p:
            print("    %d blocks named from their container alone, %d not" %
                  (counts["alone"], counts["other"]))
        return p

    def all_checks(self):
        c = self.case
        self.run.case("%s frameworks" % c, self.check_frameworks)
        self.run.case("%s nodes" % c, self.check_nodes)
        self.run.case("%s object" % c, lambda: self.check_sizes("object"))
        self.run.case("%s bound" % c, lambda: self.check_sizes("bound"))
        self.run.case("%s nesting" % c, self.check_nesting)
        self.run.case("%s shared" % c, self.check_shared)
        self.run.case("%s frameworks-report" % c, self.check_report)
        if c == "core":
            self.run.case("%s alone" % c, self.check_alone)


def case_core(run, args):
    truth_path = run.path("core.truth")
    core = run.path("core.core")
    try:
        heaptest.make_core(args.fixture, truth_path, core)
        truth = parse_truth(truth_path)
    except (HarnessError, OSError) as e:
        run.case("core setup", lambda: ["harness: %s" % e])
        return
    Target(run, "core", args.heapdom, [core], truth).all_checks()


def case_live(run, args):
    truth_path = run.path("live.truth")
    ready = run.path("live.ready")
    proc = None
    try:
        proc = heaptest.start_fixture(args.fixture, truth_path, ready)
        truth = parse_truth(truth_path)
        Target(run, "live", args.heapdom, ["--pid", str(proc.pid)], truth).all_checks()
    except (HarnessError, OSError) as e:
        run.case("live setup", lambda: ["harness: %s" % e])
    finally:
        if proc is not None:
            heaptest.stop_fixture(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated cases: core,live")
    ap.add_argument("--keep", action="store_true", help="keep the core and truth files")
    args = ap.parse_args()
    args.fixture = os.path.abspath(args.fixture)
    only = set(args.only.split(",")) if args.only else {"core", "live"}
    if os.path.isdir(args.workdir) and not args.keep:
        shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir, exist_ok=True)
    run = heaptest.CaseRunner(args.workdir)
    t0 = time.monotonic()
    if "core" in only:
        case_core(run, args)
    if "live" in only:
        case_live(run, args)
    print("time %.1fs" % (time.monotonic() - t0))
    return run.finish(require_pass=True)


if __name__ == "__main__":
    sys.exit(main())

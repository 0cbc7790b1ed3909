#!/usr/bin/env python3
"""The semantic engine against semantic_fixture's ground truth.

The fixture records every block it made (address, chunk size); the probe
module explains its structures to heapdom. By construction:

  group a  = its struct + 5 items (assigned) + 5 texts + region object 2
             + that object's payload                   (16 bytes framework)
  group b  = its struct + 3 items (assigned) + 3 texts + pool slot 3
             + the slot's payload
  registry = its struct + the pool's own bytes (assigned) + the shared
             block (assigned by a and b: risen to their parent) + the
             cross block (claimed by a and an unrelated node: unassigned,
             so dominated by what reaches it: the registry)
             + region objects 0 and 1 + groups a and b; framework-owned
  other    = nothing (its only block was shared with an unrelated node)
  leaked   = pool slot 5, region object 3; free slots 0 2 4 6 7 in no tree

Then: modules that fail in each phase are reported and change nothing;
a module built for another ABI is refused (by path: an error; from
HEAPDOM_FRAMEWORK_PATH: listed as failed); an unknown name is an error;
the same numbers live (--pid) and in gdb (heap-dominators --semantic).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "..", "integration"))
import heaptest  # noqa: E402


class Problems:
    def __init__(self):
        self.items = []

    def add(self, check, msg):
        self.items.append("%s: %s" % (check, msg))


def parse_truth(path):
    t = {}
    with open(path) as f:
        if f.readline().split() != ["semantic-truth", "1"]:
            raise heaptest.HarnessError("bad truth header in " + path)
        for line in f:
            name, addr, size = line.split()
            t[name] = (int(addr, 16), int(size))
    return t


def expected(t):
    def s(*names):
        return sum(t[n][1] for n in names)
    a_items = [k for k in t if k.startswith("a.item") and not k.endswith(".text")]
    a_texts = [k for k in t if k.startswith("a.item") and k.endswith(".text")]
    b_items = [k for k in t if k.startswith("b.item") and not k.endswith(".text")]
    b_texts = [k for k in t if k.startswith("b.item") and k.endswith(".text")]
    assert len(a_items) == 5 and len(b_items) == 3, "truth lists the items"
    slots = s(*["slot.%d" % i for i in range(8)])
    pool_own = t["pool"][1] - slots
    e = {}
    a_obj = s("a", *a_items)
    a_bound = a_obj + s(*a_texts, "robj.2", "robj.2.payload")
    e["group a"] = dict(object=a_obj, object_blocks=6, bound=a_bound,
                        framework=16, blocks=6 + 5 + 2)
    b_obj = s("b", *b_items)
    b_bound = b_obj + s(*b_texts, "slot.3", "slot.3.payload")
    e["group b"] = dict(object=b_obj, object_blocks=4, bound=b_bound,
                        framework=0, blocks=4 + 3 + 2)
    r_obj = t["registry"][1] + pool_own + t["shared"][1]
    r_bound = r_obj + a_bound + b_bound + s("cross", "robj.0", "robj.1")
    e["registry"] = dict(object=r_obj, object_blocks=3, bound=r_bound,
                         framework=r_obj + 16, blocks=3 + 13 + 9 + 3)
    e["other"] = dict(object=0, object_blocks=0, bound=0, framework=0, blocks=0)
    e["leaked"] = s("slot.5", "robj.3")
    return e


def check_doc(doc, t, m, label):
    e = expected(t)
    nodes = {n["label"]: n for n in doc["nodes"] if n["framework"] == "probe"}
    if set(nodes) != {"registry", "group a", "group b", "other"}:
        m.add(label, "probe nodes %s" % sorted(nodes))
        return
    for name, x in e.items():
        if name == "leaked":
            continue
        n = nodes[name]
        got = dict(object=n["object"]["alloc"], object_blocks=n["object"]["blocks"],
                   bound=n["bound"]["alloc"], framework=n["bound"]["framework"],
                   blocks=n["bound"]["blocks"])
        if got != x:
            m.add(label, "node %s: expected %s, got %s" % (name, x, got))
        if n["bound"]["application"] != n["bound"]["alloc"] - n["bound"]["framework"]:
            m.add(label, "node %s: application != alloc - framework" % name)
    ids = {n["id"]: n for n in doc["nodes"]}
    if nodes["group a"]["idom"] != "node:%d" % nodes["registry"]["id"]:
        m.add(label, "group a's dominator %s, not the registry" % nodes["group a"]["idom"])
    if nodes["other"]["idom"] != "super" or nodes["registry"]["idom"] != "super":
        m.add(label, "top-level nodes not under the super-root")
    if nodes["group b"]["parent"] != nodes["registry"]["id"]:
        m.add(label, "group b's parent %s" % nodes["group b"]["parent"])
    blocks = {int(b["address"], 16): b for b in doc["blocks"]}
    reg = "node:%d" % nodes["registry"]["id"]

    def blk(name):
        return blocks.get(t[name][0])
    # The shared block rose to the registry; the cross block is nobody's.
    if not blk("shared") or blk("shared")["node"] != nodes["registry"]["id"]:
        m.add(label, "shared block not assigned to the registry: %s" % blk("shared"))
    c = blk("cross")
    if not c or c["node"] is not None or c["idom"] != reg:
        m.add(label, "cross block should be unassigned under the registry: %s" % c)
    # Sub-allocator blocks: used slots are vertices typed by the module,
    # pointers into a slot lead to the slot, not to the pool around it.
    for i in range(8):
        b = blk("slot.%d" % i)
        if i in (1, 3):
            if not b or b["kind"] != "subblock" or b["type"] != "probe_slot" \
                    or b["object"]["alloc"] != 64:
                m.add(label, "slot %d: %s" % (i, b))
        elif b:
            m.add(label, "slot %d (free or leaked) is in the tree: %s" % (i, b))
    s1 = blk("slot.1")
    if s1 and not (s1["idom"].startswith("root:") and s1["idom"].endswith("g_slot1")):
        m.add(label, "slot 1 should be held by g_slot1, is held by %s" % s1["idom"])
    p3 = blk("slot.3.payload")
    if not p3 or p3["idom"] != "0x%x" % t["slot.3"][0]:
        m.add(label, "the slot's payload should be held by slot 3: %s" % p3)
    pool = blk("pool")
    if not pool or pool["object"]["alloc"] != t["pool"][1] - 8 * 64:
        m.add(label, "pool keeps %s of its own bytes, expected %d"
              % (pool and pool["object"]["alloc"], t["pool"][1] - 8 * 64))
    r2 = blk("robj.2.payload")
    if not r2 or r2["idom"] != "0x%x" % t["robj.2"][0]:
        m.add(label, "the region object's payload should be held by it: %s" % r2)
    if blk("robj.3") or blk("slot.5"):
        m.add(label, "leaked sub-blocks are in the tree")
    if doc["totals"]["unreachable_alloc"] != e["leaked"]:
        m.add(label, "unreachable %d, expected %d (slot 5 + region object 3)"
              % (doc["totals"]["unreachable_alloc"], e["leaked"]))
    items = [b for b in doc["blocks"] if b["type"] == "probe_item"]
    if len(items) != 8:
        m.add(label, "%d blocks named probe_item, expected 8" % len(items))
    # Retained sizes add up: the super-root's bound is every reachable byte.
    if doc["totals"]["alloc"] != sum(b["object"]["alloc"] for b in doc["blocks"]):
        m.add(label, "totals %d != sum of reachable blocks %d"
              % (doc["totals"]["alloc"], sum(b["object"]["alloc"] for b in doc["blocks"])))
    fw = {f["name"]: f for f in doc["frameworks"]}
    p = fw.get("probe")
    if not p or not p["detected"] or p["error"]:
        m.add(label, "probe not detected: %s" % p)
    else:
        msgs = " | ".join(w["message"] for w in p["warnings"])
        if len(p["warnings"]) != 2 or "overlaps" not in msgs or "no used heap block" not in msgs:
            m.add(label, "probe's refused blocks not warned about: %s" % msgs)
        if p["subblocks"] != 12 or p["regions"] != 1 or p["nodes"] != 4:
            m.add(label, "probe counts: %s" % {k: p[k] for k in ("subblocks", "regions", "nodes")})


def probe_view(doc):
    """What the probe module's result is, to compare runs."""
    return (sorted((n["label"], json.dumps(n["object"]), json.dumps(n["bound"]), n["idom"])
                   for n in doc["nodes"] if n["framework"] == "probe"),
            sorted((b["address"], b["idom"], b["type"]) for b in doc["blocks"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--probe", required=True)
    ap.add_argument("--broken", nargs="+", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--lldb-plugin", help="run the lldb case with this plugin")
    ap.add_argument("--lldb", default="lldb-14")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir)
    truth_path = run.path("truth")
    core = run.path("core")
    state = {}
    broken = {os.path.basename(p).split(".")[0]: p for p in a.broken}

    def sem(args, env=None):
        r = subprocess.run([a.heapdom] + args, capture_output=True, text=True,
                           timeout=600, env=env)
        return r

    def sem_json(args, env=None):
        r = sem(args, env)
        if r.returncode != 0:
            raise heaptest.HarnessError("heapdom %s: rc %d: %s" % (args, r.returncode, r.stderr))
        return json.loads(r.stdout)

    def core_case(m):
        heaptest.make_core(a.fixture, truth_path, core)
        state["truth"] = t = parse_truth(truth_path)
        doc = sem_json(["dominators", "--semantic", "--framework", a.probe, "--json",
                        "--all", core])
        state["probe"] = probe_view(doc)
        check_doc(doc, t, m, "core")
        # Text output names the nodes.
        r = sem(["dominators", "--framework", a.probe, core])
        for want in ("[registry] registry (probe)", "[group] group a (probe)"):
            if want not in r.stdout:
                m.add("text", "%r not in the text report" % want)

    def broken_case(m):
        t = state["truth"]
        args = ["dominators", "--json", "--all", "--framework", a.probe]
        for k in ("broken_fail_detect", "broken_fail_blocks", "broken_fail_analyze",
                  "broken_bad_read"):
            args += ["--framework", broken[k]]
        doc = sem_json(args + [core])
        check_doc(doc, t, m, "with broken modules")
        if probe_view(doc) != state["probe"]:
            m.add("broken", "the probe's result changed when broken modules ran")
        fw = {f["name"]: f for f in doc["frameworks"]}
        for name, phase in (("broken-detect", "detect"), ("broken-blocks", "blocks"),
                            ("broken-analyze", "analyze"), ("broken-read", "analyze")):
            f = fw.get(name)
            if not f or not f["error"] or not f["error"].startswith(phase + " failed"):
                m.add("broken", "%s not reported as failing in %s: %s" % (name, phase, f))
            elif f["nodes"] or f["assigned"] or f["subblocks"]:
                m.add("broken", "%s left work behind: %s" % (name, f))
        if any(n["framework"].startswith("broken") for n in doc["nodes"]):
            m.add("broken", "a failed module's nodes remain")
        if any(b["type"] in ("doomed", "bogus") for b in doc["blocks"]):
            m.add("broken", "a failed module's names or blocks remain")
        if "0x10" not in fw.get("broken-read", {}).get("error", "") :
            m.add("broken", "the bad read's error does not name the address: %s"
                  % fw.get("broken-read"))

    def abi_case(m):
        r = sem(["dominators", "--framework", broken["broken_bad_abi"], core])
        if r.returncode == 0 or "ABI" not in r.stderr or broken["broken_bad_abi"] not in r.stderr:
            m.add("abi", "a module for another ABI by path: rc %d, %r" % (r.returncode, r.stderr))
        r = sem(["dominators", "--framework", "no-such-framework", core])
        if r.returncode == 0 or "no-such-framework" not in r.stderr or "built-in" not in r.stderr:
            m.add("unknown", "an unknown module name: rc %d, %r" % (r.returncode, r.stderr))
        d = run.path("modules")
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        shutil.copy(a.probe, os.path.join(d, "probe.so"))
        shutil.copy(broken["broken_bad_abi"], os.path.join(d, "bad.so"))
        env = dict(os.environ, HEAPDOM_FRAMEWORK_PATH=d)
        doc = sem_json(["frameworks", "--json", core], env)
        fw = {f["source"]: f for f in doc["frameworks"]}
        p = fw.get(os.path.join(d, "probe.so"))
        b = fw.get(os.path.join(d, "bad.so"))
        if not p or not p["detected"]:
            m.add("search path", "probe.so from HEAPDOM_FRAMEWORK_PATH not detected: %s" % p)
        if not b or not b["error"] or "ABI" not in b["error"]:
            m.add("search path", "bad.so not listed as refused: %s" % b)
        if not any(f["name"] == "glibc" and f["detected"] for f in doc["frameworks"]):
            m.add("search path", "the built-in glibc module is not there by default")
        # By name from the search path.
        doc = sem_json(["dominators", "--framework", "probe", "--json", "--all", core], env)
        if probe_view(doc) != state["probe"]:
            m.add("search path", "--framework probe from the search path differs")

    def live_case(m):
        ready = run.path("ready")
        truth = run.path("truth-live")
        proc = heaptest.start_fixture(a.fixture, truth, ready)
        try:
            doc = sem_json(["--pid", str(proc.pid), "dominators", "--semantic", "--framework",
                            a.probe, "--json", "--all"])
            check_doc(doc, parse_truth(truth), m, "live")
        finally:
            heaptest.stop_fixture(proc)

    def gdb_case(m):
        out = run.path("gdb.json")
        frameworks = run.path("gdb-frameworks.json")
        env = dict(os.environ, HEAPDOM_LIB=a.lib)
        cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "source " + a.gdb_plugin,
               "-ex", "break hd_fixture_stop", "-ex", "run",
               "-ex", "heap-dominators --framework %s --json --all --output %s" % (a.probe, out),
               "-ex", "heap-frameworks --framework %s --json --output %s" % (a.probe, frameworks),
               "-ex", "kill", "--args", a.fixture, run.path("truth-gdb")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
        if not os.path.exists(out):
            m.add("gdb", "no output: %s %s" % (r.stdout[-1500:], r.stderr[-1500:]))
            return
        with open(out) as f:
            doc = json.load(f)
        check_doc(doc, parse_truth(run.path("truth-gdb")), m, "gdb")
        with open(frameworks) as f:
            fw = json.load(f)["frameworks"]
        if [x["name"] for x in fw] != ["probe"] or not fw[0]["detected"]:
            m.add("gdb", "heap-frameworks: %s" % fw)

    def checked(fn):
        def go():
            m = Problems()
            fn(m)
            return m.items
        return go
    def lldb_case(m):
        out = run.path("lldb.json")
        env = dict(os.environ, DEBUGINFOD_URLS="", LC_ALL="C",
                   PATH="/usr/bin:/bin:" + os.environ.get("PATH", ""))
        py = "/usr/lib/llvm-14/lib/python3.11/dist-packages"
        if os.path.isdir(py):
            env["PYTHONPATH"] = py
        if os.path.exists(out):
            os.unlink(out)
        cmd = [shutil.which(a.lldb) or a.lldb, "-x", "-b",
               "-o", "plugin load " + a.lldb_plugin,
               "-o", "b hd_fixture_stop", "-o", "run",
               "-o", "heap-dominators --semantic --framework %s --json --all --output %s"
               % (a.probe, out),
               "-o", "kill", "--", a.fixture, run.path("truth-lldb")]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env,
                           stdin=subprocess.DEVNULL)
        if not os.path.exists(out):
            m.add("lldb", "no output: %s %s" % (r.stdout[-1500:], r.stderr[-1500:]))
            return
        with open(out) as f:
            check_doc(json.load(f), parse_truth(run.path("truth-lldb")), m, "lldb")

    run.case("core", checked(core_case))
    run.case("broken modules", checked(broken_case))
    run.case("abi and names", checked(abi_case))
    run.case("live", checked(live_case))
    run.case("gdb", checked(gdb_case))
    if a.lldb_plugin:
        run.case("lldb", checked(lldb_case))
    return run.finish(require_pass=True)


if __name__ == "__main__":
    sys.exit(main())

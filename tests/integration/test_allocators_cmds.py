#!/usr/bin/env python3
"""Every command on every allocator (issue 22): for a core of each
allocator's fixture -- glibc (heap_fixture), jemalloc, mimalloc, tcmalloc, musl
static and dynamic, poolalloc beside glibc (pool_fixture --malloc) -- run
stats (text and JSON), blocks, dominators (ranked, --plain, --semantic),
leaks (typed and --untyped), why on a few blocks, types, snapshot and
diff, graph --format dot, and check what must hold:

  run      every command exits 0 with its output (JSON parses), and names
           the allocator (and its version where it has one)
  stats    per allocator, the held-but-unused figure is the held bytes less
           its used bytes, its parts (free, internal, other) add up, the
           held bytes cover its regions' system bytes; jemalloc's held
           bytes are its own statistics' active + dirty + muzzy pages;
           mimalloc's other bytes hold its free spans and unextended pages
  leaks    typed and --untyped leak sets are equal, and equal the blocks the
           fixture recorded as dropped (where it records verdicts)
  dominators  the top-level holders partition the used heap (ranked and
           --plain); --semantic runs
  why      a recorded reachable block has a path from a root ending at it; a
           recorded leaked block has none
  types    (--all) counts and bytes add up to the used blocks and bytes
  snapshot a core diffed with itself, and with its own snapshot file:
           nothing grew or shrank
  graph    one well-formed dot digraph
Then:
  sample   `sample --pid` on sample_fixture linked with jemalloc (and
           mimalloc): each heap thread's accesses land on its own block
           (test_sample.py's checks), the allocator named
  gdb      heap-types --json and heap-dominators --json on the jemalloc core
           equal the CLI's
  lldb     heapdom types --json and heapdom dominators --json on the
           mimalloc core equal the CLI's
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402


def cap(out, n=20):
    return out[:n] + (["... %d more" % (len(out) - n)] if len(out) > n else [])


# Each fixture's recorded verdicts: {addr: "reachable"|"leaked"}, or None.
def verdicts_jemalloc(path):
    out = {}

    def record(w, line):
        if w[0] == "block" and w[3] == "used":
            out[int(w[1], 16)] = w[4]
    heaptest.read_truth(path, "jemalloc_fixture", record)
    return out


def verdicts_mimalloc(path):
    out = {}

    def record(w, line):
        if w[0] == "block" and w[3] == "used":
            out[int(w[1], 16)] = w[4]
    heaptest.read_truth(path, "mimalloc_fixture", record)
    return out


def verdicts_musl(path):
    out = {}

    def record(w, line):
        if w[0] == "block":
            out[int(w[1], 16)] = w[3]
    heaptest.read_truth(path, "musl_fixture", record)
    return out


def verdicts_pool(path):
    out = {}

    def record(w, line):
        if w[0] in ("block", "gblock") and w[3] == "used":
            out[int(w[1], 16)] = w[4]
    heaptest.read_truth(path, "pool_fixture", record)
    return out


class Fixture:
    def __init__(self, tag, exe, args, names, verdicts=None):
        self.tag, self.exe, self.args, self.names, self.verdicts = tag, exe, args, names, verdicts


class Runner:
    def __init__(self, a, run):
        self.a, self.run = a, run

    def hd(self, args):
        return heaptest.run_heapdom(self.a.heapdom, args, timeout=300)

    def js(self, args):
        return heaptest.heapdom_json(self.a.heapdom, args, timeout=300)


def names_problems(doc, fx):
    """The allocators named (and versioned where they have a version)."""
    out = []
    got = sorted(a.get("name") for a in doc.get("allocators") or [])
    if got != sorted(fx.names):
        out.append("allocators %r, expected %r" % (got, sorted(fx.names)))
    for a in doc.get("allocators") or []:
        if a.get("name") != "poolalloc" and not a.get("version"):
            out.append("allocator %r without a version" % a.get("name"))
    return out


def check_stats(doc, fx):
    out = names_problems(doc, fx)
    allocs = {a["name"]: a for a in doc["allocators"]}
    for s in doc["allocator_stats"]:
        name = s["name"]
        al = allocs[name]
        t = al["totals"]
        held, frag = s.get("held_bytes"), s.get("fragmentation")
        if not isinstance(held, int) or not isinstance(frag, dict):
            out.append("%s: held_bytes %r, fragmentation %r (%r)"
                       % (name, held, frag, s.get("fragmentation_unknown")))
            continue
        used = t["used"]["bytes"]
        if s["used"]["bytes"] + s["mmapped"]["bytes"] != used:
            out.append("%s: stats used %d + mmapped %d, the allocator's totals %d"
                       % (name, s["used"]["bytes"], s["mmapped"]["bytes"], used))
        if frag["bytes"] != held - used:
            out.append("%s: held but unused %d, held %d - used %d = %d"
                       % (name, frag["bytes"], held, used, held - used))
        if frag["free"] != t["free"]["bytes"] or frag["internal"] != t["internal"]["bytes"] \
                or frag["reserve"] != t["reserve"]["bytes"]:
            out.append("%s: fragmentation parts %r, totals %r" % (name, frag, t))
        if frag["free"] + frag["internal"] + frag["other"] != frag["bytes"]:
            out.append("%s: free + internal + other != held but unused: %r" % (name, frag))
        sysb = sum(r["system_bytes"] for r in al["regions"])
        if held < sysb:
            out.append("%s: held %d < its regions' system bytes %d" % (name, held, sysb))
        if name == "jemalloc":
            # jemalloc's own statistics: the pages it holds are its active,
            # dirty and muzzy ones (retained ones are given back).
            want = sum(r["facts"]["active_bytes"] + r["facts"]["dirty_bytes"]
                       + r["facts"]["muzzy_bytes"] for r in al["regions"])
            if held != want:
                out.append("jemalloc: held %d, its arenas' active + dirty + muzzy %d" % (held, want))
            if held - used - frag["free"] - frag["internal"] != frag["other"]:
                out.append("jemalloc: other %r" % frag)
        if name == "mimalloc":
            # Its segments' free spans and its pages' unextended tails
            # (mimalloc's own counts, as facts) are held and in no block.
            f = al["facts"]
            if frag["other"] < f["free_span_bytes"] + f["unextended_bytes"]:
                out.append("mimalloc: other %d < free spans %d + unextended %d"
                           % (frag["other"], f["free_span_bytes"], f["unextended_bytes"]))
    return out


def check_text_stats(text, fx):
    out = []
    for n in fx.names:
        if not re.search(r"^  %s: holds .* held but unused \(" % re.escape(n), text, re.M):
            out.append("text stats: no held-but-unused line for %s" % n)
        if n not in text.split("\n\n")[0]:
            out.append("text stats: the allocator %s is not named in the header" % n)
    return out


def leak_set(doc):
    return {int(b["addr"], 16) for b in doc["leaks"]}


def check_core(r, fx, core, truth):
    """Every command on one core; returns the problems."""
    out = []
    docs = {}
    for key, args in (("stats", ["stats", core, "--json"]),
                      ("blocks", ["blocks", core, "--json"]),
                      ("dom", ["dominators", core, "--json"]),
                      ("plain", ["dominators", core, "--plain", "--json"]),
                      ("leaks", ["leaks", core, "--json"]),
                      ("untyped", ["leaks", core, "--untyped", "--json"]),
                      ("types", ["types", core, "--all", "--json"])):
        try:
            docs[key] = r.js(args)
        except heaptest.HarnessError as e:
            out.append(str(e))
    if out:
        return out
    for key, d in docs.items():
        out += ["%s: %s" % (key, p) for p in names_problems(d, fx)]
        if d.get("partial") or d.get("problems"):
            out.append("%s: partial %r, problems %r" % (key, d.get("partial"), (d.get("problems") or [])[:3]))
    # text outputs, and the ones with no JSON to read
    for args in (["stats", core], ["blocks", core], ["dominators", core],
                 ["dominators", core, "--semantic"], ["leaks", core], ["types", core]):
        res = r.hd(args)
        if res.rc != 0 or not res.out.strip():
            out.append(res.describe())
        elif args[0] == "stats":
            out += check_text_stats(res.out, fx)
    out += check_stats(docs["stats"], fx)
    # leaks
    typed, untyped = leak_set(docs["leaks"]), leak_set(docs["untyped"])
    if typed != untyped:
        out.append("typed and untyped leak sets differ: typed only %s, untyped only %s"
                   % ([hex(x) for x in sorted(typed - untyped)[:5]],
                      [hex(x) for x in sorted(untyped - typed)[:5]]))
    if fx.verdicts:
        v = fx.verdicts(truth)
        want = {x for x, s in v.items() if s == "leaked"}
        if len(want) < 2:
            out.append("the fixture recorded %d leaked blocks" % len(want))
        out += ["dropped block %s not reported leaked" % hex(x) for x in sorted(want - typed)][:10]
        out += ["block %s reported leaked, recorded %s" % (hex(x), v.get(x))
                for x in sorted(typed - want)][:10]
        # why: two reachable and one leaked block the fixture recorded
        reach = sorted(x for x, s in v.items() if s == "reachable")
        picks = [(x, True) for x in (reach[:1] + reach[-1:])] + [(min(want), False)] if want else []
        for addr, reachable in picks:
            try:
                w = r.js(["why", core, hex(addr), "--json"])
            except heaptest.HarnessError as e:
                out.append(str(e))
                continue
            path = w.get("path") or []
            if w.get("reachable") is not reachable:
                out.append("why %s: reachable %r, recorded %s" % (hex(addr), w.get("reachable"),
                                                                  "reachable" if reachable else "leaked"))
            elif reachable and (len(path) < 2 or "root" not in path[0]
                                or int(path[-1].get("addr", "0"), 16) != addr):
                out.append("why %s: path %r does not lead from a root to the block" % (hex(addr), path[:3]))
            elif not reachable and w.get("paths"):
                out.append("why %s (leaked): paths %r" % (hex(addr), w["paths"][:2]))
    # dominators
    out += ["dominators: %s" % p for p in heaptest.holder_problems(docs["dom"], require=True)]
    out += ["dominators --plain: %s" % p for p in heaptest.holder_problems(docs["plain"])]
    heap = docs["dom"]["heap"]
    used_blocks = sum(a["totals"]["used"]["blocks"] for a in docs["stats"]["allocators"])
    used_bytes = sum(a["totals"]["used"]["bytes"] for a in docs["stats"]["allocators"])
    if (heap["used_blocks"], heap["used_bytes"]) != (used_blocks, used_bytes):
        out.append("dominators: heap %r, stats' used %d blocks %d bytes" % (heap, used_blocks, used_bytes))
    # types
    ty = docs["types"]
    n = sum(t["count"] for t in ty["types"])
    b = sum(t["bytes"] for t in ty["types"])
    if len(ty["types"]) != ty["num_types"]:
        out.append("types --all lists %d of %d types" % (len(ty["types"]), ty["num_types"]))
    if (n, b) != (used_blocks, used_bytes):
        out.append("types add up to %d blocks, %d bytes; the heap has %d used blocks, %d bytes"
                   % (n, b, used_blocks, used_bytes))
    if sum(t["retained"] for t in ty["types"]) < 0:
        out.append("types: negative retained")
    # snapshot / diff: a core with itself and with its own snapshot
    snap = core + ".snap.json"
    res = r.hd(["snapshot", core, "--output", snap])
    if res.rc != 0 or not os.path.isfile(snap):
        out.append(res.describe())
    else:
        for pair in ((core, core), (snap, snap), (core, snap), (snap, core)):
            try:
                d = r.js(["diff", pair[0], pair[1], "--json"])
            except heaptest.HarnessError as e:
                out.append(str(e))
                continue
            moved = {k: v["delta"] for k, v in d["totals"].items()
                     if v["delta"]["blocks"] or v["delta"]["bytes"]}
            if moved or d["types"] or d["size_classes"] or d["subtrees"]:
                out.append("diff %s %s: totals moved %r, types %r, size classes %r, subtrees %r"
                           % (os.path.basename(pair[0]), os.path.basename(pair[1]), moved,
                              d["types"][:3], d["size_classes"][:3], d["subtrees"][:3]))
        os.unlink(snap)
    # graph
    res = r.hd(["graph", core, "--format", "dot"])
    text = res.out.strip()
    if res.rc != 0 or not text.startswith("digraph") or not text.endswith("}") \
            or text.count("{") != text.count("}") or "->" not in text:
        out.append("graph --format dot: rc %s, starts %r, ends %r" % (res.rc, text[:40], text[-40:]))
    return cap(out, 30)


def debugger_json(cmd, out):
    if os.path.exists(out):
        os.unlink(out)
    e = heaptest.debugger_env()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=e,
                       stdin=subprocess.DEVNULL, errors="replace")
    if not os.path.isfile(out) or not os.path.getsize(out):
        raise heaptest.HarnessError("%s wrote no JSON (rc %d)\n%s%s" % (
            cmd[0], r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
    with open(out) as f:
        return json.load(f)


def same_as_cli(what, got, want):
    """The parts of a types / dominators document that do not name the
    target: the types table, the holders, the heap's figures."""
    out = []
    keys = ("types", "num_types", "malloc_blocks", "malloc_bytes") if what == "types" else \
        ("heap", "holders", "roots")
    for k in keys:
        if got.get(k) != want.get(k):
            out.append("%s: %r differs from the CLI's: %.300r vs %.300r" % (what, k, got.get(k), want.get(k)))
    if [a["name"] for a in got.get("allocators", [])] != [a["name"] for a in want.get("allocators", [])]:
        out.append("%s: allocators differ" % what)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--glibc-fixture", required=True)
    ap.add_argument("--pool-fixture", required=True)
    ap.add_argument("--jemalloc-fixture")
    ap.add_argument("--mimalloc-fixture")
    ap.add_argument("--musl-static-fixture")
    ap.add_argument("--musl-dynamic-fixture")
    ap.add_argument("--tcmalloc-fixture")
    ap.add_argument("--sample-jemalloc")
    ap.add_argument("--sample-mimalloc")
    ap.add_argument("--lib")
    ap.add_argument("--gdb-plugin")
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    r = Runner(a, run)
    if a.lib:
        os.environ["HEAPDOM_LIB"] = os.path.abspath(a.lib)

    fixtures = [Fixture("glibc", a.glibc_fixture, [], ["glibc"]),
                Fixture("pool+glibc", a.pool_fixture, ["--malloc", "20"], ["poolalloc", "glibc"],
                        verdicts_pool)]
    if a.jemalloc_fixture:
        fixtures.append(Fixture("jemalloc", a.jemalloc_fixture, [], ["jemalloc"], verdicts_jemalloc))
    if a.mimalloc_fixture:
        fixtures.append(Fixture("mimalloc", a.mimalloc_fixture, [], ["mimalloc"], verdicts_mimalloc))
    if a.musl_static_fixture:
        fixtures.append(Fixture("musl-static", a.musl_static_fixture, [], ["musl"], verdicts_musl))
    if a.musl_dynamic_fixture:
        fixtures.append(Fixture("musl-dynamic", a.musl_dynamic_fixture, [], ["musl"], verdicts_musl))
    if a.tcmalloc_fixture:
        # No recorded verdicts here: gperftools leaks a block of its own,
        # which test_tcmalloc.py checks by type; here the invariants.
        fixtures.append(Fixture("tcmalloc", a.tcmalloc_fixture, [], ["tcmalloc"]))

    cores = {}
    for fx in fixtures:
        core, truth = run.path(fx.tag + ".core"), run.path(fx.tag + ".truth")

        def case(fx=fx, core=core, truth=truth):
            heaptest.make_core(fx.exe, truth, core, fx.args)
            cores[fx.tag] = core
            return check_core(r, fx, core, truth)
        run.case("%s: every command on its core" % fx.tag, case)

    for tag, exe in (("jemalloc", a.sample_jemalloc), ("mimalloc", a.sample_mimalloc)):
        if not exe:
            continue

        def case_sample(tag=tag, exe=exe):
            import test_sample
            sa = argparse.Namespace(workdir=a.workdir, fixture=exe, heapdom=a.heapdom)
            fxs = test_sample.Fixture(sa, "sample-" + tag)
            try:
                doc = r.js(["sample", "--pid", str(fxs.proc.pid), "--duration", str(test_sample.DURATION),
                            "--hz", str(test_sample.HZ), "--max-stopped", "100", "--json"])
                out = test_sample.check_released(fxs)
            finally:
                fxs.stop()
            out += test_sample.check_threads(doc, fxs.truth)
            name = (doc.get("allocator") or {}).get("name")
            if name is not None and name != tag:
                out.append("sample: allocator %r, expected %s" % (name, tag))
            return out
        run.case("sample: `sample --pid` on sample_fixture linked with %s" % tag, case_sample)

    if a.gdb_plugin and "jemalloc" in cores:
        def case_gdb():
            core = cores["jemalloc"]
            out = []
            for what, cmd, cli in (("types", "heap-types --all --json", ["types", core, "--all", "--json"]),
                                   ("dominators", "heap-dominators --json", ["dominators", core, "--json"])):
                path = run.path("gdb-%s.json" % what)
                got = debugger_json(["gdb", "-q", "-nx", "-batch",
                                     "-ex", "source " + os.path.abspath(a.gdb_plugin),
                                     "-ex", "pipe %s | cat > %s" % (cmd, path),
                                     a.jemalloc_fixture, core], path)
                out += same_as_cli(what, got, r.js(cli))
            return out
        run.case("gdb: heap-types and heap-dominators on the jemalloc core equal the CLI's", case_gdb)

    if a.lldb_plugin and "mimalloc" in cores:
        def case_lldb():
            core = cores["mimalloc"]
            out = []
            for what, cmd, cli in (("types", "heapdom types --all --json", ["types", core, "--all", "--json"]),
                                   ("dominators", "heapdom dominators --json", ["dominators", core, "--json"])):
                path = run.path("lldb-%s.json" % what)
                got = debugger_json(["lldb-14", "-x", "-b",
                                     "-o", "plugin load " + os.path.abspath(a.lldb_plugin),
                                     "-o", "target create %s --core %s" % (a.mimalloc_fixture, core),
                                     "-o", "%s --output %s" % (cmd, path)], path)
                out += same_as_cli(what, got, r.js(cli))
            return out
        run.case("lldb: heapdom types and dominators on the mimalloc core equal the CLI's", case_lldb)
    return run.finish(remove=(".core", ".truth", ".json", ".ready"))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""mimalloc 2.x (issue 22): heapdom's mimalloc backend against a program's
own record.

mimalloc_fixture is linked with Debian's libmimalloc (2.0.9). It records
every block it made (address, mi_usable_size, used or free, kept or
dropped, which thread allocated it, freed by another thread or not) and,
as a second oracle, every used block mi_heap_visit_blocks enumerates in
the main heap and in the second thread's heap (libc's own allocations
included). A third thread allocated and exited: its segment is abandoned.

  core-blocks   on a gdb gcore: the backend is mimalloc 2.0.9, not
                partial, no problem; every recorded block has heapdom's
                address, usable size and state; blocks freed by another
                thread are on thread_free or delayed_free (the heap's
                thread_delayed_free list; both
                lists seen); the main thread's blocks are in the primary
                heap, the second thread's in its heap (found through its
                TLS), those of a heap made with mi_heap_new in that heap
                (found from its pages), the exited thread's in the
                "abandoned" region
  core-oracle   heapdom's used blocks of the two heaps are exactly the
                blocks mi_heap_visit_blocks visited, less the ones the
                second thread freed afterwards, with the same sizes
  core-leaks    leaks: exactly the blocks the program dropped
  core-stats    stats: used blocks and bytes of each heap are the oracle's
  live          the same blocks, oracle and leaks on the running process
                (--pid)
  gdb-core      the gdb front-end on the core: heap-blocks and heap-leaks
                give the same verdicts
  gdb-live      the same with gdb attached to the running fixture
  lldb-core     the lldb front-end on the core (with --lldb-plugin): the
                same for heap-blocks and heap-leaks
  python        a program no one here wrote: python3 (PYTHONMALLOC=malloc,
                so every object is a malloc block) under
                LD_PRELOAD=libmimalloc.so.2 doing real work with the
                standard library (json, re, email, difflib), stopped and
                cored by gdb after gdb called mi_heap_visit_blocks in it
                (tests/fixtures/mimalloc_oracle.c, preloaded): heapdom's
                used blocks and bytes are exactly mimalloc's
"""
import argparse
import bisect
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402


def parse(path):
    t = {"blocks": {}, "visit": {}, "xfreed": set(), "lfreed": set()}

    def record(w, line):
        if w[0] == "block":
            if w[3] not in ("used", "free") or w[4] not in ("reachable", "leaked", "-") \
                    or w[5] not in ("main", "t2", "t3", "heap"):
                raise ValueError("bad state, verdict or owner")
            t["blocks"][int(w[1], 16)] = dict(usable=int(w[2]), state=w[3], verdict=w[4],
                                              owner=w[5], xfree=len(w) > 6 and w[6] == "xfree",
                                              lfree=len(w) > 6 and w[6] == "lfree")
        elif w[0] == "visit":
            t["visit"][int(w[1], 16)] = (int(w[2]), w[3])
        elif w[0] in ("xfreed", "lfreed"):
            t[w[0]].add(int(w[1], 16))
        else:
            raise KeyError(w[0])
    heaptest.read_truth(path, "mimalloc_fixture", record)
    if not t["blocks"] or not t["visit"] or not t["xfreed"] or not t["lfreed"]:
        raise heaptest.HarnessError("%s: no blocks, visits or cross-thread frees recorded" % path)
    # A block freed and handed out again: the last record at an address
    # says what it is (the records are in program order).
    return t


def cap(out, n=25):
    return out[:n] + (["... %d more" % (len(out) - n)] if len(out) > n else [])


def check_blocks(doc, truth):
    out = []
    al = doc.get("allocator") or {}
    if al.get("name") != "mimalloc" or al.get("version") != "2.0.9":
        return ["allocator %r version %r, expected mimalloc 2.0.9" % (al.get("name"), al.get("version"))]
    if doc.get("partial") or doc.get("problems"):
        out.append("partial %r, problems %r" % (doc.get("partial"), (doc.get("problems") or [])[:5]))
    regions = al.get("regions", [])
    primary = [r for r in regions if r.get("primary")]
    abandoned = [r for r in regions if r.get("kind") == "abandoned"]
    if len(primary) != 1:
        return out + ["%d primary regions" % len(primary)]
    main_thread = primary[0]["facts"].get("thread")
    others = [r for r in regions if r.get("kind") == "heap" and not r.get("primary")
              and r["facts"].get("thread_default_heap") and r["facts"].get("thread") != main_thread]
    made = [r for r in regions if r.get("kind") == "heap" and not r.get("primary")
            and not r["facts"].get("thread_default_heap") and r["facts"].get("thread") == main_thread]
    want_region = {"main": {primary[0]["addr"]}, "t2": {r["addr"] for r in others},
                   "t3": {r["addr"] for r in abandoned}, "heap": {r["addr"] for r in made}}
    if len(others) != 1 or len(abandoned) != 1 or len(made) != 1:
        out.append("%d other threads' default heaps (want 1, the second thread's), "
                   "%d abandoned regions (want 1, the exited thread's), %d other heaps of the "
                   "main thread (want 1, its mi_heap_new)" % (len(others), len(abandoned), len(made)))
    got = {int(b["addr"], 16): b for b in doc["blocks"]}
    starts = sorted(got)
    lists = set()
    for addr, t in truth["blocks"].items():
        b = got.get(addr)
        if b is None:
            # A freed block whose page mimalloc gave back to its segment
            # (a large block, a page all of whose blocks were freed) is no
            # block any more: it must then lie in no block at all.
            i = bisect.bisect_right(starts, addr) - 1
            cover = got[starts[i]] if i >= 0 else None
            if t["state"] == "used" or (cover and addr < starts[i] + cover["chunk"]):
                out.append("block %s (%s, %s) not in heapdom's table%s"
                           % (hex(addr), t["state"], t["owner"],
                              " (inside %s)" % cover["addr"] if cover else ""))
            continue
        if (b["size"], b["state"]) != (t["usable"], t["state"]):
            out.append("block %s: heapdom %s %s, recorded %s %s"
                       % (hex(addr), b["size"], b["state"], t["usable"], t["state"]))
        if t["xfree"]:
            lists.add(b.get("list"))
            if b.get("list") not in ("thread_free", "delayed_free"):
                out.append("block %s freed by another thread is on list %r"
                           % (hex(addr), b.get("list")))
        if t["lfree"]:
            lists.add(b.get("list"))
            if b.get("list") not in ("local_free", "free"):
                out.append("block %s the main thread freed is on list %r"
                           % (hex(addr), b.get("list")))
        if t["state"] == "used" and b["arena"] not in want_region[t["owner"]]:
            out.append("block %s of %s in region %s, expected %s"
                       % (hex(addr), t["owner"], b["arena"], sorted(want_region[t["owner"]])))
    if not {"thread_free", "delayed_free", "local_free"} <= lists:
        out.append("blocks freed by another thread and by main after the visit were on %s; "
                   "expected thread_free, delayed_free and local_free"
                   % sorted(map(str, lists)))
    return cap(out)


def check_oracle(doc, truth):
    """heapdom's used blocks of the main and second heaps = the visited ones."""
    al = doc["allocator"]
    heaps = {r["addr"] for r in al["regions"] if r.get("kind") == "heap"}
    got = {int(b["addr"], 16): b["size"] for b in doc["blocks"]
           if b["state"] == "used" and b["arena"] in heaps}
    later = truth["xfreed"] | truth["lfreed"]
    want = {a: n for a, (n, _) in truth["visit"].items() if a not in later}
    out = []
    for a in sorted(set(got) | set(want)):
        if got.get(a) != want.get(a):
            out.append("used block %s: heapdom size %s, mi_heap_visit_blocks %s"
                       % (hex(a), got.get(a), want.get(a)))
    if len(want) < 1000:
        out.append("the oracle visited only %d blocks" % len(want))
    return cap(out)


def check_leaks(doc, truth):
    got = {int(b["addr"], 16) for b in doc["leaks"]}
    want = {a for a, t in truth["blocks"].items() if t["verdict"] == "leaked"}
    out = ["dropped block %s (%s) not reported leaked" % (hex(a), truth["blocks"][a]["owner"])
           for a in sorted(want - got)]
    out += ["block %s reported leaked, recorded %s" % (hex(a), truth["blocks"].get(a))
            for a in sorted(got - want)]
    if len(want) < 10:
        out.append("the fixture recorded %d leaked blocks; expected many" % len(want))
    return cap(out)


def check_stats(doc, truth, blocks_doc):
    out = []
    by_region = {}
    for a, (n, owner) in truth["visit"].items():
        if a in truth["xfreed"] or a in truth["lfreed"]:
            continue
        c = by_region.setdefault(owner, [0, 0])
        c[0] += 1
        c[1] += n
    regions = {r["addr"]: r for r in blocks_doc["allocator"]["regions"]}
    prim = next(a for a, r in regions.items() if r.get("primary"))
    seen = set()
    for rs in doc.get("region_stats", []):
        r = regions.get(rs["addr"], {})
        if r.get("kind") != "heap":
            continue
        owner = "main" if rs["addr"] == prim else \
            "t2" if r["facts"].get("thread_default_heap") else "heap"
        seen.add(owner)
        used = rs["used"]
        if [used["blocks"], used["bytes"]] != by_region.get(owner):
            out.append("stats of heap %s (%s): %d used blocks, %d bytes; mi_heap_visit_blocks %s"
                       % (rs["addr"], owner, used["blocks"], used["bytes"], by_region.get(owner)))
    if seen != {"main", "t2", "heap"}:
        out.append("stats: heaps %s, expected main, t2 and heap" % sorted(seen))
    return out


LIBMIMALLOC = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2"
# Debian's python3 (package python3), else the one running this test.
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
WORK_PY = '''
import collections, difflib, email.parser, json, os, re, signal, textwrap
doc = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 17), "x"], "v": i * 0.5}
       for i in range(20000)]
text = json.dumps(doc)
back = json.loads(text)
words = collections.Counter(re.findall(r"item\\d+", text))
msg = email.parser.Parser().parsestr("From: a@b\\nSubject: hi\\n\\n" + textwrap.fill(text[:20000], 60))
diff = list(difflib.unified_diff(text[:30000].split(","), text[100:30100].split(",")))
keep = (back, words, msg, diff)
os.kill(os.getpid(), signal.SIGTRAP)
'''


def python_case(a, run):
    script, oracle = run.path("work.py"), run.path("python.oracle")
    core = run.path("python.core")
    with open(script, "w") as f:
        f.write(WORK_PY)
    for p in (oracle, core):
        if os.path.exists(p):
            os.unlink(p)
    cmd = ["gdb", "-q", "-nx", "-batch",
           "-ex", "set environment LD_PRELOAD=%s %s" % (LIBMIMALLOC, os.path.abspath(a.oracle)),
           "-ex", "set environment PYTHONMALLOC=malloc",
           "-ex", "set environment MIMALLOC_ORACLE=" + oracle,
           "-ex", "run", "-ex", "print (long)mimalloc_oracle_dump()",
           "-ex", "gcore " + core, "-ex", "kill", "--args", PYTHON, script]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=heaptest._env(),
                       stdin=subprocess.DEVNULL, errors="replace")
    if not os.path.exists(core) or not os.path.exists(oracle):
        raise heaptest.HarnessError("no core or oracle of python3 (rc %d)\n%s%s"
                                    % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    want = {}
    with open(oracle) as f:
        for line in f:
            addr, size = line.split()
            want[int(addr, 16)] = int(size)
    doc = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"])
    stats = heaptest.heapdom_json(a.heapdom, ["stats", core, "--json"])
    al = doc.get("allocator") or {}
    out = []
    if al.get("name") != "mimalloc" or doc.get("partial") or doc.get("problems"):
        out.append("allocator %r, partial %r, problems %r"
                   % (al.get("name"), doc.get("partial"), (doc.get("problems") or [])[:5]))
    got = {int(b["addr"], 16): b["size"] for b in doc["blocks"] if b["state"] == "used"}
    for addr in sorted(set(got) | set(want)):
        if got.get(addr) != want.get(addr):
            out.append("used block %s: heapdom size %s, mi_heap_visit_blocks %s"
                       % (hex(addr), got.get(addr), want.get(addr)))
    used = stats["totals"]["used"]
    if (used["blocks"], used["bytes"]) != (len(want), sum(want.values())):
        out.append("stats: %d used blocks, %d bytes; mimalloc %d blocks, %d bytes"
                   % (used["blocks"], used["bytes"], len(want), sum(want.values())))
    if len(want) < 100000:
        out.append("mimalloc visited only %d used blocks" % len(want))
    print("    python3: heapdom %d used blocks, %d bytes; mimalloc %d, %d"
          % (len(got), sum(got.values()), len(want), sum(want.values())))
    return cap(out)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--heapdom", "--fixture", "--workdir", "--gdb-plugin", "--lib", "--oracle"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    core, truth_path = run.path("mimalloc.core"), run.path("mimalloc.truth")
    st = {}

    def setup():
        heaptest.make_core(a.fixture, truth_path, core)
        st["truth"] = parse(truth_path)
        st["blocks"] = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"])
        return []
    run.case("setup: gcore of mimalloc_fixture, its truth, heapdom blocks", setup)
    if "truth" not in st:
        return run.finish()
    truth, blocks = st["truth"], st["blocks"]

    run.case("core-blocks: every recorded block, usable size, state, list and heap",
             lambda: check_blocks(blocks, truth))
    run.case("core-oracle: used blocks are exactly mi_heap_visit_blocks's",
             lambda: check_oracle(blocks, truth))
    run.case("core-leaks: exactly the dropped blocks",
             lambda: check_leaks(heaptest.heapdom_json(a.heapdom, ["leaks", core, "--json"]), truth))
    run.case("core-stats: used blocks and bytes per heap",
             lambda: check_stats(heaptest.heapdom_json(a.heapdom, ["stats", core, "--json"]),
                                 truth, blocks))

    def live():
        ltruth, ready = run.path("live.truth"), run.path("live.ready")
        proc = heaptest.start_fixture(a.fixture, ltruth, ready)
        try:
            pid = int(open(ready).read())
            t = parse(ltruth)
            doc = heaptest.heapdom_json(a.heapdom, ["blocks", "--pid", str(pid), "--json"])
            leaks = heaptest.heapdom_json(a.heapdom, ["leaks", "--pid", str(pid), "--json"])
        finally:
            heaptest.stop_fixture(proc)
        return ["live: " + m for m in check_blocks(doc, t) + check_oracle(doc, t) +
                check_leaks(leaks, t)]
    run.case("live: blocks, oracle and leaks of the running process", live)

    def gdb_run(target, t, tag):
        """heap-blocks and heap-leaks in gdb on TARGET (gdb's arguments)."""
        bj, lj = run.path(tag + "-blocks.json"), run.path(tag + "-leaks.json")
        for p in (bj, lj):
            if os.path.exists(p):
                os.unlink(p)
        env = heaptest._env()
        env["HEAPDOM_LIB"] = a.lib
        cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "set pagination off",
               "-ex", "source " + a.gdb_plugin,
               "-ex", "heap-blocks --json --output " + bj,
               "-ex", "heap-leaks --json --output " + lj,
               "-ex", "heap-stats"] + target
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env,
                           stdin=subprocess.DEVNULL, errors="replace")
        if not (os.path.exists(bj) and os.path.exists(lj)):
            raise heaptest.HarnessError("gdb wrote no output (rc %d)\n%s%s"
                                        % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        with open(bj) as f:
            bdoc = json.load(f)
        with open(lj) as f:
            ldoc = json.load(f)
        out = check_blocks(bdoc, t) + check_oracle(bdoc, t) + check_leaks(ldoc, t)
        if "mimalloc 2.0.9" not in r.stdout:
            out.append("heap-stats does not name mimalloc 2.0.9:\n" + r.stdout[-1500:])
        return [tag + ": " + m for m in out]
    run.case("gdb-core: heap-blocks and heap-leaks in gdb on the core",
             lambda: gdb_run([a.fixture, core], truth, "gdb"))

    def gdb_live():
        ltruth, ready = run.path("gdb-live.truth"), run.path("gdb-live.ready")
        proc = heaptest.start_fixture(a.fixture, ltruth, ready)
        try:
            pid = int(open(ready).read())
            return gdb_run(["-p", str(pid)], parse(ltruth), "gdb-live")
        finally:
            heaptest.stop_fixture(proc)
    run.case("gdb-live: heap-blocks and heap-leaks in gdb attached to the fixture", gdb_live)
    def lldb_core():
        bj, lj = run.path("lldb-blocks.json"), run.path("lldb-leaks.json")
        for p in (bj, lj):
            if os.path.exists(p):
                os.unlink(p)
        cmd = ["lldb-14", "-x", "-b", "-o", "plugin load " + a.lldb_plugin,
               "-o", "heap-blocks --json --output " + bj,
               "-o", "heap-leaks --json --output " + lj,
               "-c", core, a.fixture]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                           env=heaptest.debugger_env(), stdin=subprocess.DEVNULL,
                           errors="replace")
        if not (os.path.exists(bj) and os.path.exists(lj)):
            raise heaptest.HarnessError("lldb wrote no output (rc %d)\n%s%s"
                                        % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
        with open(bj) as f:
            bdoc = json.load(f)
        with open(lj) as f:
            ldoc = json.load(f)
        return ["lldb: " + m for m in check_blocks(bdoc, truth) + check_oracle(bdoc, truth)
                + check_leaks(ldoc, truth)]
    if a.lldb_plugin:
        run.case("lldb-core: heap-blocks and heap-leaks in lldb on the core", lldb_core)
    run.case("python: a real program's used blocks are exactly mimalloc's",
             lambda: python_case(a, run))
    return run.finish(remove=(".core", ".truth"))


if __name__ == "__main__":
    sys.exit(main())

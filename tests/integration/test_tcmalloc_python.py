#!/usr/bin/env python3
"""A real program no one here wrote on gperftools 2.10's tcmalloc (issue
22): Debian's python3 under LD_PRELOAD=libtcmalloc_minimal.so.4 with
PYTHONMALLOC=malloc (every object from tcmalloc) builds and parses 20,000
JSON records, counts words with re, fills an in-memory sqlite3 table, and
stops (SIGTRAP). gdb asks tcmalloc for its statistics
(MallocExtension_GetNumericProperty; the names are written into the
inferior byte by byte, since gdb allocates a string literal with the
program's malloc), then gcore. heapdom's blocks of that core must make
tcmalloc's numbers exactly:

  used      generic.current_allocated_bytes = bytes of heapdom's used blocks
  lists     tcmalloc.{thread_cache,transfer_cache,pageheap}_free_bytes and
            pageheap_unmapped_bytes = bytes on heapdom's lists "thread
            cache", "transfer cache", "page heap", "returned";
            tcmalloc.central_cache_free_bytes = bytes on "central" plus the
            unused tails of small-object spans (fact span_tail_bytes)
  complete  not partial, no problems

Skipped (77) without /usr/bin/python3 or libtcmalloc_minimal.so.4.
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

LIB = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
PYTHON = "/usr/bin/python3"
STATS = {
    "generic.current_allocated_bytes": None,
    "tcmalloc.thread_cache_free_bytes": "thread cache",
    "tcmalloc.transfer_cache_free_bytes": "transfer cache",
    "tcmalloc.central_cache_free_bytes": "central",
    "tcmalloc.pageheap_free_bytes": "page heap",
    "tcmalloc.pageheap_unmapped_bytes": "returned",
}
WORK = r'''
import collections, json, os, re, signal, sqlite3
docs = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % (i % 7)] * (i % 5), "v": i * 1.5}
        for i in range(20000)]
text = json.dumps(docs)
back = json.loads(text)
words = collections.Counter(re.findall(r"item\d+", text))
db = sqlite3.connect(":memory:")
db.execute("create table t (id integer, name text)")
db.executemany("insert into t values (?, ?)", [(d["id"], d["name"]) for d in back])
rows = db.execute("select name from t where id % 3 = 0").fetchall()
del docs, text
os.kill(os.getpid(), signal.SIGTRAP)
'''


def make_core(workdir):
    script, gdbcmds, core = (os.path.join(workdir, n) for n in ("work.py", "cmds.gdb", "python.core"))
    with open(script, "w") as f:
        f.write(WORK)
    out = ["set environment LD_PRELOAD=" + LIB, "set environment PYTHONMALLOC=malloc", "run",
           "set $p = (unsigned long *) ($rsp - 65536)", "set $s = (char *) ($rsp - 65536 + 64)"]
    for n in STATS:
        out += ["set var *($s + %d) = %d" % (i, ord(c)) for i, c in enumerate(n + "\0")]
        out += ["call (int) MallocExtension_GetNumericProperty($s, $p)",
                'printf "STAT %s %%lu\\n", *$p' % n]
    out += ["gcore " + core, "kill"]
    with open(gdbcmds, "w") as f:
        f.write("\n".join(out) + "\n")
    if os.path.exists(core):
        os.unlink(core)
    r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-x", gdbcmds, "--args", PYTHON, script],
                       capture_output=True, text=True, timeout=240, stdin=subprocess.DEVNULL,
                       env=heaptest._env())
    stats = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 3 and w[0] == "STAT":
            stats[w[1]] = int(w[2])
    if set(stats) != set(STATS) or not os.path.isfile(core):
        raise heaptest.HarnessError("gdb did not record the statistics and the core:\n%s%s"
                                    % (r.stdout[-1500:], r.stderr[-1500:]))
    return core, stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    if not os.path.exists(LIB) or not os.path.exists(PYTHON):
        print("skipped: %s or %s missing" % (LIB, PYTHON))
        return 77
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    state = {}

    def setup():
        state["core"], state["stats"] = make_core(a.workdir)
        return []
    run.case("setup: python3 on tcmalloc, its statistics, gcore", setup)
    if "core" not in state:
        return run.finish()

    def case_stats():
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", state["core"], "--json"])
        al = doc.get("allocator") or {}
        out = []
        if al.get("name") != "tcmalloc" or al.get("version") != "2.10":
            return ["allocator %r %r, expected tcmalloc 2.10" % (al.get("name"), al.get("version"))]
        if doc.get("partial") or doc.get("problems"):
            out.append("partial %r, problems %r" % (doc.get("partial"), (doc.get("problems") or [])[:5]))
        tc = [b for b in doc["blocks"] if b.get("allocator", "tcmalloc") == "tcmalloc"]
        used = sum(b["size"] for b in tc if b["state"] == "used")
        on = {}
        for b in tc:
            if b["state"] == "free":
                on[b.get("list")] = on.get(b.get("list"), 0) + b["size"]
        tail = (al.get("facts") or {}).get("span_tail_bytes", 0)
        for name, lst in STATS.items():
            mine = used if lst is None else on.get(lst, 0) + (tail if lst == "central" else 0)
            if mine != state["stats"][name]:
                out.append("%s: tcmalloc says %d, heapdom %d" % (name, state["stats"][name], mine))
        if len([b for b in tc if b["state"] == "used"]) < 100000:
            out.append("only %d used blocks: python3 did not run on tcmalloc?"
                       % len([b for b in tc if b["state"] == "used"]))
        print("  %d used blocks, %d bytes; tcmalloc: %r" % (
            len([b for b in tc if b["state"] == "used"]), used, state["stats"]))
        return out
    run.case("stats: heapdom's used and free bytes are tcmalloc's own statistics", case_stats)
    return run.finish(remove=(".core",))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""heapdom integration test: heap snapshots and diffs against a fixture
whose heap grows and shrinks between two stops by amounts known by
construction.

    test_snapshot.py --heapdom PATH --fixture PATH --workdir DIR
                     [--only a,b,...] [--keep]

The fixture (tests/fixtures/growth_fixture.c, truth format at its top) is
run once under gdb, which takes a core at each of its two stops
(hd_fixture_stop): c1 and c2.

Cases (letters for --only):
  a snapshot   `snapshot CORE --output FILE` for both cores: one JSON
               document of the documented shape, equal to `snapshot CORE
               --json`; types add up to the used totals, size classes to
               the used blocks; nothing on stdout with --output
  b files      `diff S1 S2 --json`: used totals, and exactly the truth's
               changed types (count, bytes, retained), size classes and
               root paths (count, blocks, retained; "gone" ones), nothing
               else changed; `from`/`to`/`snapshots`
  c cores      `diff C1 C2 --json` (snapshots made in memory): the same
               changes as b, and the same document as b but for sources
  d same       a snapshot against itself and a core against itself: all
               deltas 0, no changed row
  e series     `diff S1 C1 S2 --json`: three snapshots, the changes of S1
               to S2; the text shows the series and the totals of each
  f text       `diff S1 S2 --top 1`: the growing root path first, one row
               per list and "… N more"
  g corrupt    damaged snapshot files: exit 1, one line on stderr naming
               the file and the byte offset where the damage is
Exit status 0 when every case passed; the last line is "N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402


class GrowthTruth:
    def __init__(self):
        self.pid = None
        self.module = None
        self.used = None      # (dblocks, dbytes)
        self.types = {}       # name -> (dcount, dbytes, dretained)
        self.classes = {}     # (min, max) -> (dblocks, dbytes)
        self.paths = {}       # path -> (dcount, dblocks, dretained)


def parse_truth(path):
    t = GrowthTruth()

    def record(w, line):
        if w[0] == "pid":
            t.pid = int(w[1])
        elif w[0] == "module":
            t.module = w[1]
        elif w[0] == "used":
            t.used = (int(w[1]), int(w[2]))
        elif w[0] == "type":
            t.types[line.split(" ", 4)[4]] = tuple(int(x) for x in w[1:4])
        elif w[0] == "class":
            t.classes[(int(w[1]), int(w[2]))] = (int(w[3]), int(w[4]))
        elif w[0] == "path":
            t.paths[line.split(" ", 4)[4]] = tuple(int(x) for x in w[1:4])
        else:
            raise ValueError("unknown record")
    heaptest.read_truth(path, "growth_fixture", record)
    if t.used is None or t.module is None:
        raise HarnessError("%s: truncated or inconsistent (no used or module record)" % path)
    return t


def make_cores(fixture, truth, c1, c2, timeout=600):
    """Run the fixture under gdb; gcore at each of its two stops."""
    for p in (truth, c1, c2):
        if os.path.exists(p):
            os.unlink(p)
    cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "break hd_fixture_stop", "-ex", "run",
           "-ex", "gcore " + c1, "-ex", "continue", "-ex", "gcore " + c2, "-ex", "kill",
           "--args", fixture, truth]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                           env=heaptest._env())
    except subprocess.TimeoutExpired:
        raise HarnessError("gdb timed out: %s" % " ".join(cmd))
    for p in (c1, c2, truth):
        if not os.path.isfile(p) or os.path.getsize(p) == 0:
            raise HarnessError("gdb run left no %s (rc %d)\n%s%s"
                               % (p, r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    heaptest.check_core(c1, fixture)
    heaptest.check_core(c2, fixture)


DELTA_FIELDS = {"types": ("count", "bytes", "retained"),
                "size_classes": ("blocks", "bytes"),
                "subtrees": ("count", "blocks", "retained")}


def key_of(list_name, row):
    if list_name == "types":
        return row["type"] if row["type"] is not None else "unk<%d>" % row["size"]
    if list_name == "size_classes":
        return (row["min"], row["max"])
    return row["path"]


def check_diff(doc, truth, nsnaps=2):
    """Compares a `diff --json` document with the truth's changes."""
    p = []
    if len(doc.get("snapshots", [])) != nsnaps:
        p.append("snapshots: %d entries, expected %d" % (len(doc.get("snapshots", [])), nsnaps))
    if doc.get("from") != 0 or doc.get("to") != nsnaps - 1:
        p.append("from/to are %r/%r" % (doc.get("from"), doc.get("to")))
    used = doc["totals"]["used"]
    got = (used["delta"]["blocks"], used["delta"]["bytes"])
    if got != truth.used:
        p.append("used delta (blocks, bytes) %r, truth %r" % (got, truth.used))
    for k in ("blocks", "bytes"):
        if used["after"][k] - used["before"][k] != used["delta"][k]:
            p.append("used %s: after - before != delta" % k)
    expect = {"types": truth.types, "size_classes": truth.classes, "subtrees": truth.paths}
    for name, fields in DELTA_FIELDS.items():
        rows = doc[name]
        if doc["num_" + name] != len(rows):
            p.append("num_%s %d but %d rows" % (name, doc["num_" + name], len(rows)))
        got = {}
        for r in rows:
            k = key_of(name, r)
            if k in got:
                p.append("%s: %r twice" % (name, k))
            got[k] = r
            for f in fields:
                if r["after"][f] - r["before"][f] != r["delta"][f]:
                    p.append("%s %r: %s after - before != delta" % (name, k, f))
            if all(r["delta"][f] == 0 for f in fields):
                p.append("%s %r: listed but unchanged" % (name, k))
            status = "new" if not any(r["before"].values()) else \
                "gone" if not any(r["after"].values()) else "changed"
            if r["status"] != status:
                p.append("%s %r: status %r, expected %r" % (name, k, r["status"], status))
        for k, want in expect[name].items():
            if k not in got:
                p.append("%s %r: not among the changes (truth: %r)" % (name, k, want))
                continue
            have = tuple(got[k]["delta"][f] for f in fields)
            if have != want:
                p.append("%s %r: delta %r, truth %r" % (name, k, have, want))
        for k in got:
            if k not in expect[name]:
                p.append("%s %r changed (%r) but the truth says it did not"
                         % (name, k, got[k]["delta"]))
    # growth first: grown rows before shrunk ones
    for name, fields in DELTA_FIELDS.items():
        primary = {"types": "bytes", "size_classes": "bytes", "subtrees": "retained"}[name]
        signs = [r["delta"][primary] for r in doc[name] if r["delta"][primary]]
        grew = [d > 0 for d in signs]
        if grew != sorted(grew, reverse=True):
            p.append("%s: growth is not listed first: %r" % (name, signs))
    # gone root paths: the truth's DCOUNT -1 paths are absent after
    for k, (dcount, _, _) in truth.paths.items():
        r = next((r for r in doc["subtrees"] if r["path"] == k), None)
        if r and dcount == -1 and r["status"] != "gone":
            p.append("subtree %r: status %r, expected gone" % (k, r["status"]))
    return p


def check_snapshot(doc):
    p = []
    for key, typ in (("heapdom_snapshot", int), ("target", str), ("target_kind", str),
                     ("partial", bool), ("totals", dict), ("size_classes", list),
                     ("types", list), ("subtrees", list), ("subtree_depth", int),
                     ("subtree_limit", int)):
        if not isinstance(doc.get(key), typ):
            p.append("snapshot: %r missing or not %s" % (key, typ.__name__))
    if p:
        return p
    if doc["heapdom_snapshot"] != 1:
        p.append("heapdom_snapshot is %r" % doc["heapdom_snapshot"])
    used = doc["totals"]["used"]
    tb = sum(t["bytes"] for t in doc["types"])
    tc = sum(t["count"] for t in doc["types"])
    if (tc, tb) != (used["blocks"], used["bytes"]):
        p.append("types add up to %d blocks %d bytes, used is %r" % (tc, tb, used))
    cb = sum(c["blocks"] for c in doc["size_classes"])
    if cb != used["blocks"]:
        p.append("size classes add up to %d blocks, used is %d" % (cb, used["blocks"]))
    for c in doc["size_classes"]:
        if c["max"] & (c["max"] - 1) or (c["max"] > 1 and c["min"] != c["max"] // 2 + 1):
            p.append("size class %r is not a power-of-two class" % c)
    rets = [s["retained"] for s in doc["subtrees"]]
    if rets != sorted(rets, reverse=True):
        p.append("subtrees not sorted by retained")
    if len(set(s["path"] for s in doc["subtrees"])) != len(doc["subtrees"]):
        p.append("a root path is listed twice")
    if any("0x" in s["path"] for s in doc["subtrees"]):
        p.append("a root path holds an address: %r"
                 % [s["path"] for s in doc["subtrees"] if "0x" in s["path"]][:3])
    return p


class Runner(heaptest.CaseRunner):
    def __init__(self, args):
        super().__init__(args.workdir, args.only, args.keep)
        self.heapdom = args.heapdom
        self.fixture = args.fixture
        self.truth = None

    def hd(self, *args):
        return heaptest.run_heapdom(self.heapdom, list(args))

    def json(self, *args):
        return heaptest.heapdom_json(self.heapdom, list(args))

    def setup(self):
        if self.truth is None:
            make_cores(self.fixture, self.path("growth.truth"), self.path("c1.core"),
                       self.path("c2.core"))
            self.truth = parse_truth(self.path("growth.truth"))
            for c, s in (("c1.core", "s1.json"), ("c2.core", "s2.json")):
                r = self.hd("snapshot", self.path(c), "--output", self.path(s))
                if r.rc != 0:
                    raise HarnessError(r.describe())
                if r.out:
                    raise HarnessError("snapshot --output wrote to stdout: %r" % r.out[:200])
        return self.truth

    def case_snapshot(self):
        self.setup()
        p = []
        for c, s in (("c1.core", "s1.json"), ("c2.core", "s2.json")):
            with open(self.path(s)) as f:
                text = f.read()
            doc = json.loads(text)
            p += ["%s: %s" % (s, m) for m in check_snapshot(doc)]
            r = self.hd("snapshot", self.path(c), "--json")
            if r.rc != 0 or r.out != text:
                p.append("snapshot --json of %s differs from its --output file" % c)
        return p

    def case_files(self):
        t = self.setup()
        doc = self.json("diff", self.path("s1.json"), self.path("s2.json"), "--json")
        p = check_diff(doc, t)
        srcs = [s["source"] for s in doc["snapshots"]]
        if srcs != [self.path("s1.json"), self.path("s2.json")]:
            p.append("sources %r" % srcs)
        return p

    def case_cores(self):
        t = self.setup()
        doc = self.json("diff", self.path("c1.core"), self.path("c2.core"), "--json")
        p = check_diff(doc, t)
        files = self.json("diff", self.path("s1.json"), self.path("s2.json"), "--json")
        for d in (doc, files):
            for s in d["snapshots"]:
                s.pop("source")
        if doc != files:
            p.append("the diff of the cores differs from the diff of their snapshot files")
        return p

    def case_same(self):
        self.setup()
        p = []
        for a in ("s1.json", "c1.core", "c2.core"):
            doc = self.json("diff", self.path(a), self.path(a), "--json")
            for name in DELTA_FIELDS:
                if doc[name] or doc["num_" + name]:
                    p.append("%s against itself: %d %s changed" % (a, len(doc[name]), name))
            for k, v in doc["totals"].items():
                if any(v["delta"].values()):
                    p.append("%s against itself: totals.%s delta %r" % (a, k, v["delta"]))
        r = self.hd("diff", self.path("s2.json"), self.path("c2.core"))
        if r.rc != 0 or "No type, size class or root path changed." not in r.out:
            p.append("text diff of s2 and c2 does not say nothing changed: %s" % r.describe())
        return p

    def case_series(self):
        t = self.setup()
        args = [self.path("s1.json"), self.path("c1.core"), self.path("s2.json")]
        doc = self.json("diff", *args, "--json")
        p = check_diff(doc, t, nsnaps=3)
        s = doc["snapshots"]
        if s[0]["totals"] != s[1]["totals"]:
            p.append("series: the core and its snapshot have different totals")
        r = self.hd("diff", *args)
        if r.rc != 0:
            return p + [r.describe()]
        if "Series of 3 snapshots" not in r.out or "From #1 to #3" not in r.out:
            p.append("series text lacks its headings:\n" + r.out[:800])
        for i, snap in enumerate(s, 1):
            if not re.search(r"^\s+%d\s+%d\s" % (i, snap["totals"]["used"]["blocks"]), r.out, re.M):
                p.append("series text lacks the row of snapshot %d" % i)
        return p

    def case_text(self):
        t = self.setup()
        r = self.hd("diff", self.path("s1.json"), self.path("s2.json"), "--top", "1")
        if r.rc != 0:
            return [r.describe()]
        p = []
        # the largest growth first, ties by path
        grow = min(t.paths.items(), key=lambda kv: (-kv[1][2], kv[0]))
        lines = r.out.splitlines()
        try:
            i = lines.index("Root paths that grew (retained dominator subtrees)")
            if not lines[i + 2].endswith("  " + grow[0]):
                p.append("first growing root path is %r, expected %r" % (lines[i + 2], grow[0]))
        except (ValueError, IndexError):
            p.append("no \"Root paths that grew\" section:\n" + r.out[:1500])
        gone = sum(1 for v in t.paths.values() if v[0] == -1)
        shrank = sum(1 for v in t.paths.values() if v[2] < 0)
        if "… %d more (--top N)" % (shrank - 1) not in r.out:
            p.append("shrunk root paths: no \"… %d more\" line" % (shrank - 1))
        r = self.hd("diff", self.path("s1.json"), self.path("s2.json"), "--top", "100")
        if r.out.count("(gone)") != gone:
            p.append("%d (gone) rows, truth %d" % (r.out.count("(gone)"), gone))
        return p

    def case_corrupt(self):
        self.setup()
        with open(self.path("s1.json"), "rb") as f:
            good = f.read()
        cases = []
        # cut after a comma between two types: a value is missing at EOF
        cut = good.index(b",\n{", good.index(b'"types"')) + 2
        cases.append(("truncated", good[:cut], cut))
        # a fraction where an integer must be
        m = re.search(rb'"count": (\d+)', good)
        cases.append(("fraction", good[:m.start(1)] + b"1.5" + good[m.end(1):], m.start(1)))
        # a member of the wrong kind
        m = re.search(rb'"target": ("[^"]*")', good)
        cases.append(("wrong kind", good[:m.start(1)] + b"7" + good[m.end(1):], m.start(1)))
        # a stray byte between two members
        at = good.index(b', "target_kind"')
        cases.append(("stray byte", good[:at] + b" @" + good[at:], at + 1))
        # empty
        cases.append(("empty", b"", 0))
        # a bad escape in a root path
        at = good.index(b'"path": "') + len(b'"path": "')
        cases.append(("bad escape", good[:at] + b"\\q" + good[at:], at))
        # not a snapshot at all: a JSON array
        cases.append(("not an object", b"[1, 2]\n", 0))
        p = []
        for name, data, off in cases:
            path = self.path("bad-%s.json" % name.replace(" ", "-"))
            with open(path, "wb") as f:
                f.write(data)
            for args in ((path, self.path("s2.json")), (self.path("s1.json"), path)):
                r = self.hd("diff", *args)
                err = r.err.strip()
                want = "%s: byte %d: " % (path, off)
                if r.rc != 1 or r.out or "\n" in err or want not in err:
                    p.append("%s: expected exit 1 and one line with %r, got %s"
                             % (name, want, r.describe()))
        return p

    def run(self):
        os.makedirs(self.work, exist_ok=True)
        if not shutil.which("gdb"):
            print("FAIL setup: gdb not found")
            self.failed += 1
        else:
            for letter, name, fn in (("a", "snapshot", self.case_snapshot),
                                     ("b", "files", self.case_files),
                                     ("c", "cores", self.case_cores),
                                     ("d", "same", self.case_same),
                                     ("e", "series", self.case_series),
                                     ("f", "text", self.case_text),
                                     ("g", "corrupt", self.case_corrupt)):
                self.case("%s %s" % (letter, name), fn)
        return self.finish((".core", ".truth", ".json"))


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

#!/usr/bin/env python3
"""Who holds the heap (issue 19): top-level holders, root precedence and
joint holders, on two programs written the way ordinary ones are, checked
against the ground truth they record.

    test_ownership.py --heapdom PATH --server-fixture PATH --walk-fixture PATH
                      --gdb-plugin PATH [--lib PATH] --workdir DIR
                      [--entries N] [--only a,b] [--keep]

Cases:
  a partition   `dominators --json` (ranked, the default) and `--plain` on the
                cores of both fixtures: "view" says which; the holders
                partition the used heap (sum of retained == heap.used_bytes,
                sum of retained_blocks == heap.used_blocks), every holder
                holds something, names unique per kind (heaptest.
                holder_problems, which also runs on every core the suite
                makes when HEAPDOM_INVARIANTS is set); accumulation points
                name a holder and retain no more than it
  b server      server_fixture (a hash table of entries with keys and
                payloads, an LRU list through them, an index over a quarter):
                the entries sit in one joint holder whose members are exactly
                the globals the fixture says reach every entry (g_table,
                g_lru_head, g_lru_tail, g_index), in both views, retaining at
                least the fixture's entries + keys + payloads; g_index and
                g_table are root holders of rank globals; the text report's
                "Who holds the heap" section names the joint group's members
  c breakpoint  walk_fixture stopped by gdb in print_record while its caller
                walks g_records: gdb first checks that a register or a stack
                word holds a copy of g_records' value (else the case proves
                nothing); then, in the CLI on the core and in gdb at the stop,
                the root holder "MODULE:g_records" (rank globals) retains
                exactly the fixture's records + names + samples, and with
                --plain a joint holder of g_records and a register/stack/frame
                root retains them (the plain dominator tree)
  e accumulation  (issue 19 item 5: "the holder under which most of the heap
                accumulates ... the container that grows") on both cores, ranked:
                the first accumulation point retains at least half of what
                the fixture's container holds (server: entries + keys +
                payloads, under the joint holder; walk: the list, under
                g_records)
  d named       on both fixtures (CLI; and gdb for walk_fixture), at least 90%
                of used bytes sit under named holders: a root, a joint group
                with members, or a leaked block

Exit status 0 when every case passed, 1 otherwise; the last line is
"N passed, N failed".
"""
import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

NAMED_SHARE = 0.90


# ------------------------------------------------------------------ truth
class Truth:
    def __init__(self):
        self.module = None
        self.reach = []          # globals every entry is reachable from
        self.groups = {}         # name -> (count, bytes)
        self.samples = {}        # kind -> [addr]
        self.head = None


def read_truth(path, fixture):
    t = Truth()

    def record(w, line):
        if w[0] == "module":
            t.module = w[1]
        elif w[0] == "reach":
            t.reach = w[1:]
        elif w[0] == "group":
            t.groups[w[1]] = (int(w[2]), int(w[3]))
        elif w[0] in ("entry", "index"):
            t.samples.setdefault(w[0], []).append(int(w[1], 16))
        elif w[0] == "head":
            t.head = int(w[1], 16)
        elif w[0] != "pid":
            raise ValueError("unknown record")
    heaptest.read_truth(path, fixture, record)
    if t.module is None:
        raise HarnessError("%s: no module record" % path)
    return t


def group_sum(t, names):
    return (sum(t.groups[n][0] for n in names), sum(t.groups[n][1] for n in names))


# ---------------------------------------------------------------- checks
def holders_of(doc, what):
    if "holders" not in doc:
        raise HarnessError("%s: no \"holders\" in the JSON (keys %s)" % (what, sorted(doc)))
    return doc["holders"]


def show(h):
    s = "%s %r %d B %d blocks" % (h.get("kind"), h.get("name"), h.get("retained", -1),
                                  h.get("retained_blocks", -1))
    if h.get("kind") == "joint":
        s += " members %s" % h.get("members")
    if h.get("kind") == "root":
        s += " rank %s" % h.get("rank")
    return s


def top(doc, n=6):
    hs = sorted(doc.get("holders", []), key=lambda h: -h.get("retained", 0))
    return "; ".join(show(h) for h in hs[:n])


def partition_problems(doc, what, view):
    out = ["%s: %s" % (what, p) for p in heaptest.holder_problems(doc, require=True)]
    if doc.get("view") != view:
        out.append("%s: \"view\" is %r, want %r" % (what, doc.get("view"), view))
    names = {h.get("name") for h in doc.get("holders", [])}
    aps = doc.get("accumulation_points")
    if not isinstance(aps, list):
        out.append("%s: \"accumulation_points\" is %r, want a list" % (what, aps))
        aps = []
    held = {h.get("name"): h.get("retained", 0) for h in doc.get("holders", [])}
    for ap in aps:
        try:
            if ap["holder"] not in names:
                out.append("%s: accumulation point %r names no holder" % (what, ap))
            elif not 0 < ap["retained"] <= held[ap["holder"]]:
                out.append("%s: accumulation point %r retains more than its holder (%d)"
                           % (what, ap, held[ap["holder"]]))
            if not 0 <= ap["largest_child_retained"] <= ap["retained"]:
                out.append("%s: accumulation point %r: largest child > retained" % (what, ap))
            # addr null: the holder itself is where memory piles up (a
            # joint group has no address); else the block below it
            if ap["addr"] is None:
                if ap.get("depth") != 0:
                    out.append("%s: accumulation point %r: no addr below its holder"
                               % (what, ap))
            else:
                int(ap["addr"], 16)
        except (KeyError, TypeError, ValueError) as e:
            out.append("%s: malformed accumulation point %r (%s)" % (what, ap, e))
    return out


def named_share(doc):
    used = doc["heap"]["used_bytes"]
    named = sum(h["retained"] for h in doc["holders"]
                if h["kind"] in ("root", "block") or (h["kind"] == "joint" and h.get("members")))
    return named / used if used else 1.0


def named_problems(doc, what):
    share = named_share(doc)
    print("    %s: %.1f%% of %d used bytes under named holders"
          % (what, 100 * share, doc["heap"]["used_bytes"]))
    if share < NAMED_SHARE:
        return ["%s: %.1f%% of used bytes under named holders, want >= %d%%; top: %s"
                % (what, 100 * share, 100 * NAMED_SHARE, top(doc))]
    return []


def find_root(doc, name):
    return [h for h in doc["holders"] if h["kind"] == "root" and h["name"] == name]


# ------------------------------------------------------------------ runs
class Runner(heaptest.CaseRunner):
    def __init__(self, a):
        super().__init__(a.workdir, a.only, a.keep)
        self.a = a
        self.hd = a.heapdom

    def env(self):
        env = heaptest._env()
        if self.a.lib:
            env["HEAPDOM_LIB"] = os.path.abspath(self.a.lib)
        return env

    def dom(self, core, exe, plain):
        args = ["dominators", core, "--exe", exe, "--json"] + (["--plain"] if plain else [])
        return heaptest.heapdom_json(self.hd, args)

    def server(self):
        """server_fixture's core, truth and both views."""
        if "server" not in self.cache:
            truth, core = self.path("server.truth"), self.path("server.core")
            args = ["--entries", str(self.a.entries)] if self.a.entries else []
            heaptest.make_core(self.a.server_fixture, truth, core, args)
            t = read_truth(truth, "server_fixture")
            ranked = self.dom(core, self.a.server_fixture, False)
            plain = self.dom(core, self.a.server_fixture, True)
            text = heaptest.run_heapdom(self.hd, ["dominators", core, "--exe",
                                                  self.a.server_fixture])
            if text.rc != 0:
                raise HarnessError(text.describe())
            self.cache["server"] = dict(truth=t, core=core, ranked=ranked, plain=plain,
                                        text=text.out)
        return self.cache["server"]

    def walk(self):
        """walk_fixture stopped in gdb at print_record: the copies of
        g_records' value gdb finds in registers and on the stack, gdb's
        heap-dominators (both views), the core and the CLI's (both views)."""
        if "walk" in self.cache:
            return self.cache["walk"]
        truth, core = self.path("walk.truth"), self.path("walk.core")
        res = self.path("walk.results.json")
        for p in (truth, core, res):
            if os.path.exists(p):
                os.unlink(p)
        g_ranked, g_plain = self.path("walk-gdb-ranked.json"), self.path("walk-gdb-plain.json")
        script = self.path("walk.gdb")
        lines = [
            "set pagination off", "set confirm off", "set width 0",
            "set python print-stack full",
            "source " + os.path.abspath(self.a.gdb_plugin),
            "break print_record", "run",
            "python",
            "import json",
            "res = {'errors': {}}",
            "head = int(gdb.parse_and_eval('(unsigned long)g_records'))",
            "res['head'] = head",
            # Registers of the stopped frame that hold g_records' value.
            "f0 = gdb.newest_frame()",
            "res['registers'] = [r for r in ('rax','rbx','rcx','rdx','rsi','rdi','rbp',"
            "'r8','r9','r10','r11','r12','r13','r14','r15')"
            " if int(f0.read_register(r)) & 0xffffffffffffffff == head]",
            # Stack words from $sp to the top of the stack mapping.
            "sp = int(f0.read_register('rsp'))",
            "top = 0",
            "for ln in gdb.execute('info proc mappings', to_string=True).splitlines():",
            "    w = ln.split()",
            "    if len(w) >= 2 and w[0].startswith('0x') and int(w[0], 16) <= sp < int(w[1], 16):",
            "        top = int(w[1], 16)",
            "inf = gdb.selected_inferior()",
            "import struct",
            "mem = bytes(inf.read_memory(sp, top - sp)) if top > sp else b''",
            "res['stack_slots'] = [hex(sp + i) for i in range(0, len(mem) - 7, 8)"
            " if struct.unpack_from('<Q', mem, i)[0] == head]",
            "for tag, cmd in (('ranked', %r), ('plain', %r)):"
            % ("heap-dominators --json --output " + g_ranked,
               "heap-dominators --json --plain --output " + g_plain),
            "    try:",
            "        gdb.execute(cmd, to_string=True)",
            "    except Exception as e:",
            "        res['errors'][tag] = '%s: %s' % (type(e).__name__, e)",
            "gdb.execute('gcore %s', to_string=True)" % core,
            "with open(%r, 'w') as f:" % res,
            "    json.dump(res, f)",
            "end",
            "kill",
        ]
        with open(script, "w") as f:
            f.write("\n".join(lines) + "\n")
        cmd = ["gdb", "-q", "-nx", "-batch", "-x", script, "--args",
               self.a.walk_fixture, truth]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                               env=self.env(), errors="replace", stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HarnessError("gdb timed out: %s" % " ".join(cmd))
        if not os.path.exists(res):
            raise HarnessError("the gdb script did not finish (rc %d)\n%s\n%s"
                               % (r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
        with open(res) as f:
            g = json.load(f)
        heaptest.check_core(core, self.a.walk_fixture)
        t = read_truth(truth, "walk_fixture")
        out = dict(truth=t, core=core, gdb=g, errors=g["errors"],
                   ranked=self.dom(core, self.a.walk_fixture, False),
                   plain=self.dom(core, self.a.walk_fixture, True))
        for tag, p in (("gdb_ranked", g_ranked), ("gdb_plain", g_plain)):
            out[tag] = None
            if os.path.exists(p):
                with open(p) as f:
                    out[tag] = json.load(f)
        self.cache["walk"] = out
        return out

    # ---------------------------------------------------------- cases
    def case_partition(self):
        out = []
        s = self.server()
        out += partition_problems(s["ranked"], "server_fixture (CLI, ranked)", "ranked")
        out += partition_problems(s["plain"], "server_fixture (CLI, --plain)", "plain")
        w = self.walk()
        out += partition_problems(w["ranked"], "walk_fixture (CLI, ranked)", "ranked")
        out += partition_problems(w["plain"], "walk_fixture (CLI, --plain)", "plain")
        for tag, view in (("gdb_ranked", "ranked"), ("gdb_plain", "plain")):
            if w[tag] is None:
                out.append("walk_fixture: gdb's heap-dominators (%s) failed: %s"
                           % (view, w["errors"].get(tag[4:])))
            else:
                out += partition_problems(w[tag], "walk_fixture (gdb, %s)" % view, view)
        return out

    def case_server(self):
        s = self.server()
        t = s["truth"]
        out = []
        members = {"%s:%s" % (t.module, g) for g in t.reach}
        n, want = group_sum(t, ("entries", "keys", "payloads"))
        ni, bi = t.groups["index"]
        print("    truth: %d entries, keys and payloads: %d blocks, %d B; index %d nodes %d B"
              % (t.groups["entries"][0], n, want, ni, bi))
        for view in ("ranked", "plain"):
            doc = s[view]
            what = "server_fixture (%s)" % view
            hs = holders_of(doc, what)
            joint = [h for h in hs if h["kind"] == "joint" and set(h.get("members") or []) == members]
            if len(joint) != 1:
                out.append("%s: %d joint holders with members %s, want 1; holders: %s"
                           % (what, len(joint), sorted(members), top(doc)))
            else:
                j = joint[0]
                print("    %s: joint %s: %d B, %d blocks" % (what, j["name"], j["retained"],
                                                          j["retained_blocks"]))
                # Stale words in the slack of reused chunks may add a few
                # index nodes (reached from a payload as well as g_index).
                if not (want <= j["retained"] <= want + bi
                        and n <= j["retained_blocks"] <= n + ni):
                    out.append("%s: the joint holder of %s retains %d B in %d blocks; the "
                               "entries, keys and payloads are %d B in %d blocks (plus at "
                               "most the index, %d B in %d)"
                               % (what, sorted(members), j["retained"], j["retained_blocks"],
                                  want, n, bi, ni))
            # Bigger joint groups than the one of all four: none should exist.
            for h in hs:
                if h["kind"] == "joint" and h not in joint and h["retained"] > want // 100:
                    out.append("%s: another joint holder retains %d B: %s"
                               % (what, h["retained"], show(h)))
            for g, (gn, gb) in (("g_index", (ni, bi)), ("g_table", t.groups["table"])):
                r = find_root(doc, "%s:%s" % (t.module, g))
                if len(r) != 1 or r[0].get("rank") != "globals":
                    out.append("%s: want one root holder %s:%s of rank globals, got %s"
                               % (what, t.module, g, [show(h) for h in r]))
                elif r[0]["retained"] > gb or r[0]["retained"] < gb // 2:
                    out.append("%s: %s retains %d B, the fixture's %s is %d B"
                               % (what, g, r[0]["retained"], g, gb))
        text = s["text"]
        i = text.find("Who holds the heap")
        if i < 0:
            out.append("text report: no \"Who holds the heap\" section:\n%s" % text[:2000])
        else:
            section = text[i:i + 4000]
            missing = [m for m in sorted(members) if m.split(":", 1)[1] not in section]
            if missing:
                out.append("text report: \"Who holds the heap\" does not name %s:\n%s"
                           % (missing, section[:2000]))
        return out

    def case_breakpoint(self):
        w = self.walk()
        t, g = w["truth"], w["gdb"]
        out = []
        print("    g_records = 0x%x; copies at the stop: registers %s, stack slots %s"
              % (g["head"], g["registers"], g["stack_slots"]))
        if g["head"] != t.head:
            out.append("gdb read g_records = 0x%x, the fixture recorded 0x%x" % (g["head"], t.head))
        if not g["registers"] and not g["stack_slots"]:
            # The premise of the case: without a copy it proves nothing.
            out.append("no register or stack word holds g_records' value at print_record: "
                       "the fixture does not test what it should")
        name = "%s:g_records" % t.module
        n, want = group_sum(t, ("records", "names", "samples"))
        for tag, where in (("ranked", "CLI on the core"), ("gdb_ranked", "gdb at the stop")):
            doc = w[tag]
            if doc is None:
                out.append("%s: heap-dominators failed: %s" % (where, w["errors"].get("ranked")))
                continue
            holders_of(doc, where)
            r = find_root(doc, name)
            if len(r) != 1 or r[0].get("rank") != "globals":
                out.append("%s: want one root holder %s of rank globals, got %s; holders: %s"
                           % (where, name, [show(h) for h in r], top(doc)))
            elif (r[0]["retained"], r[0]["retained_blocks"]) != (want, n):
                out.append("%s: %s retains %d B in %d blocks, the list is %d B in %d blocks; "
                           "holders: %s" % (where, name, r[0]["retained"],
                                            r[0]["retained_blocks"], want, n, top(doc)))
        for tag, where in (("plain", "CLI on the core, --plain"),
                           ("gdb_plain", "gdb at the stop, --plain")):
            doc = w[tag]
            if doc is None:
                out.append("%s: heap-dominators failed: %s" % (where, w["errors"].get("plain")))
                continue
            hs = holders_of(doc, where)
            j = [h for h in hs if h["kind"] == "joint" and name in (h.get("members") or [])]
            if len(j) != 1:
                out.append("%s: want one joint holder with %s among its members; holders: %s"
                           % (where, name, top(doc)))
                continue
            others = [m for m in j[0]["members"] if m != name]
            # "thread N registers/stack/#K ..." (CLI, gdb) or "FN: VAR" (a local in gdb)
            weak = [m for m in others if m.startswith("thread ") or ": " in m]
            if not weak or j[0]["retained"] != want or j[0]["retained_blocks"] != n:
                out.append("%s: the plain tree's joint holder of the list should be %s and a "
                           "register/stack/frame root retaining %d B in %d blocks; got %s"
                           % (where, name, want, n, show(j[0])))
            else:
                print("    %s: %s" % (where, show(j[0])))
        return out

    def case_accumulation(self):
        out = []
        s, w = self.server(), self.walk()
        st, wt = s["truth"], w["truth"]
        for doc, t, what, groups, holder in (
                (s["ranked"], st, "server_fixture", ("entries", "keys", "payloads"), None),
                (w["ranked"], wt, "walk_fixture", ("records", "names", "samples"),
                 "%s:g_records" % wt.module)):
            _, want = group_sum(t, groups)
            aps = doc.get("accumulation_points") or []
            if not aps:
                out.append("%s: no accumulation point" % what)
                continue
            ap = aps[0]
            print("    %s: %s" % (what, ap))
            if holder and ap.get("holder") != holder:
                out.append("%s: the first accumulation point is under %r, want %r"
                           % (what, ap.get("holder"), holder))
            if ap.get("retained", 0) * 2 < want:
                out.append("%s: the first accumulation point retains %d B, less than half "
                           "of the %d B the container (%s) holds: %s"
                           % (what, ap.get("retained", 0), want, "+".join(groups), ap))
        return out

    def case_named(self):
        out = []
        s = self.server()
        out += named_problems(s["ranked"], "server_fixture (CLI)")
        w = self.walk()
        out += named_problems(w["ranked"], "walk_fixture (CLI)")
        if w["gdb_ranked"] is None:
            out.append("walk_fixture: gdb's heap-dominators failed: %s"
                       % w["errors"].get("ranked"))
        else:
            out += named_problems(w["gdb_ranked"], "walk_fixture (gdb)")
        return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--server-fixture", required=True)
    ap.add_argument("--walk-fixture", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--entries", type=int, default=0,
                    help="server_fixture --entries N (default: the fixture's)")
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = Runner(a)
    t0 = time.monotonic()
    run.case("a partition", run.case_partition)
    run.case("b server", run.case_server)
    run.case("c breakpoint", run.case_breakpoint)
    run.case("d named", run.case_named)
    run.case("e accumulation", run.case_accumulation)
    print("    (%.1fs)" % (time.monotonic() - t0))
    return run.finish(remove=(".core", ".truth", ".json", ".gdb"))


if __name__ == "__main__":
    sys.exit(main())

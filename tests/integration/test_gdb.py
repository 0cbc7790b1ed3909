#!/usr/bin/env python3
"""heapdom integration test: the gdb front-end (gdb-plugin/heapdom.py),
driven through the real gdb in batch mode.

    test_gdb.py --heapdom PATH --gdb-plugin PATH --heap-fixture PATH
                --dom-fixture PATH --workdir DIR
                [--lib PATH] [--gdb PATH] [--only a,b,...] [--keep]

--lib is the libheapdom.so the plugin loads (exported as $HEAPDOM_LIB);
default: libheapdom.so next to --heapdom (the plugin's own default,
../build/core/libheapdom.so, would miss a build directory not called build).

Every gdb run is `gdb -q -nx -batch -x SCRIPT --args FIXTURE TRUTH` (or
`gdb ... FIXTURE CORE`); scripts source the plugin, `break hd_fixture_stop`,
`run`, and run the commands, mostly as `... --json --output FILE`, through a
Python wrapper that records each command's output, error and wall time.

Cases:
  a  live, at the breakpoint: heap-blocks verdicts against heap_fixture's
     truth (heaptest.compare); heap-dominators --json --all against
     dom_fixture's truth (idom, retained, leaked, totals, additivity, root
     sums), tree mode, `set heapdom top|depth`.  In gdb the stack of the
     thread holding "tlist" is split into frames and locals: its expected
     root "thread TID stack" may be any root "thread TID ..." or a local
     "FN: VAR" of a function on that thread's stack.
  b  the cores of those stops (gcore) loaded in gdb (`gdb FIXTURE CORE`):
     the same checks; heap-blocks equals `heapdom blocks CORE --json`
     (all but "target"), and equals the live document; heap-dominators
     nodes equal `heapdom dominators CORE --json --all` (addr, size, chunk,
     retained, retained_blocks, leaked, type; idom exactly, except that the
     CLI's "thread TID stack|registers" may be a frame/local root in gdb)
  c  `set heapdom memory gdb` (reads through gdb, as for gdbserver): same
     verdicts; blocks and dominator nodes identical to the /proc path at the
     same stop (a register write discards the analysis in between)
  c2 `set heapdom memory` changed at a stop applies to the next command
  d  dom_fixture's second thread: the tlist head's idom is a frame root
     "thread TID #N holder_thread (...)" or a local "holder_thread: VAR";
     `heap-why 0xTAIL` starts its chain there (JSON and text); `heap-why
     head` in the thread's frame; gdb's selected thread/frame are restored
  e  one analysis per stop: heap-dominators twice at one stop (the second
     much faster); after `continue` to the next stop (build_guard ->
     hd_fixture_stop: one more block) the results are recomputed; after
     `finish` the returned frame no longer names a root
  f  heap-why / heap-graph --from with gdb expressions (g_list, *g_hub,
     g_hub->left, g_big[99], g_interior, (char *)g_list + 8, ...)
  g  errors: one "heapdom: ..." line each on stderr, in order, no Python
     traceback; gdb keeps working afterwards
  h  breakpoint `commands` in a batch script print heap-stats at the stop

Exit status 0 when every case passed, 1 otherwise; the last line is
"N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402
import test_dominators as td  # noqa: E402

THREAD_FN = "holder_thread"     # dom_fixture's second thread
TLIST_NODES = 200
PY_TRACE = ("Traceback", "Python Exception", "Error occurred in Python")
NODE_CMP_KEYS = ("addr", "size", "chunk", "retained", "retained_blocks", "leaked", "type")


def hx(a):
    return "0x%x" % a


def load_json(path, what):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        raise HarnessError("%s: cannot read %s (%s)" % (what, path, e))
    if not isinstance(doc, dict):
        raise HarnessError("%s: %s is not a JSON object" % (what, path))
    return doc


def frame_functions(doc):
    """{tid: {function names of that thread's frame roots}}."""
    out = {}
    for r in doc.get("roots", []):
        m = re.match(r"^thread (\d+) #\d+ (\S+)", r.get("name", ""))
        if m:
            out.setdefault(int(m.group(1)), set()).add(m.group(2))
    return out


def thread_root_ok(name, tid, fns):
    """Is root NAME (with or without "root:") a root of thread TID's stack
    as gdb names them: "thread TID ..." (its stack, a frame, or a local
    "thread TID #L FN (FILE:LINE) local VAR")?"""
    if name is None:
        return False
    if name.startswith("root:"):
        name = name[5:]
    if name.startswith("thread %d " % tid):
        return True
    return False


def strict_thread_root(name, tid):
    """A frame of THREAD_FN on thread TID, or a local of it."""
    if name is None:
        return False
    if name.startswith("root:"):
        name = name[5:]
    return bool(re.match(r"^thread %d #\d+ %s\b" % (tid, THREAD_FN), name))


def no_traceback(res, what):
    text = res.out + res.err
    bad = [w for w in PY_TRACE if w in text]
    if bad:
        i = min(text.find(w) for w in bad)
        return ["%s: gdb printed %s:\n%s" % (what, " / ".join(bad), text[max(0, i - 200):i + 1500])]
    return []


class GdbResult:
    def __init__(self, rc, out, err, secs, results):
        self.rc, self.out, self.err, self.secs, self.results = rc, out, err, secs, results

    def describe(self):
        return "gdb rc %s (%.1fs)\n  stdout (last 2000): %s\n  stderr (last 2000): %s" % (
            self.rc, self.secs, self.out[-2000:], self.err[-2000:])


class Runner(heaptest.CaseRunner):
    def __init__(self, args):
        super().__init__(args.workdir, args.only, args.keep)
        self.heapdom = os.path.abspath(args.heapdom)
        self.plugin = os.path.abspath(args.gdb_plugin)
        self.heap_fixture = os.path.abspath(args.heap_fixture)
        self.dom_fixture = os.path.abspath(args.dom_fixture)
        self.lib = os.path.abspath(args.lib) if args.lib else os.path.join(
            os.path.dirname(self.heapdom), "libheapdom.so")
        self.gdb = args.gdb

    # ---------------------------------------------------------- plumbing
    def env(self):
        env = heaptest._env()
        if os.path.isfile(self.lib):
            env["HEAPDOM_LIB"] = self.lib
        return env

    def prelude(self, results):
        """gdb script lines: settings, the plugin, and hd(TAG, CMD) which
        runs CMD and records its output, error and wall time."""
        return [
            "set pagination off",
            "set confirm off",
            "set width 0",
            "set python print-stack full",
            "source " + self.plugin,
            "python",
            "import json as _hd_json, time as _hd_time, sys as _hd_sys",
            "_hd_sys.path.insert(0, %r)" % HERE,
            "_hd_sys.dont_write_bytecode = True",
            "_hd_res = {}",
            "def hd(tag, cmd):",
            "    t0 = _hd_time.monotonic()",
            "    try:",
            "        out, err = gdb.execute(cmd, to_string=True), None",
            "    except gdb.error as e:",
            "        out, err = None, str(e)",
            "    except Exception as e:",
            "        out, err = None, 'PYTHON %s: %s' % (type(e).__name__, e)",
            "    _hd_res[tag] = {'cmd': cmd, 'out': out, 'err': err,",
            "                    'secs': _hd_time.monotonic() - t0}",
            "def hd_note(tag, value):",
            "    _hd_res[tag] = value",
            "def hd_save():",
            "    with open(%r, 'w') as f:" % results,
            "        _hd_json.dump(_hd_res, f)",
            "end",
        ]

    def run_gdb(self, name, lines, argv, timeout=300):
        """Run gdb -batch on a script; returns GdbResult (results: the hd()
        records, {} when the script did not reach hd_save())."""
        script, results = self.path(name + ".gdb"), self.path(name + ".results.json")
        if os.path.exists(results):
            os.unlink(results)
        with open(script, "w") as f:
            f.write("\n".join(ln for ln in lines if ln) + "\n")
        cmd = [self.gdb, "-q", "-nx", "-batch", "-x", script] + list(argv)
        t0 = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               env=self.env(), errors="replace", stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HarnessError("gdb timed out after %ds: %s" % (timeout, " ".join(cmd)))
        res = {}
        if os.path.exists(results):
            with open(results) as f:
                res = json.load(f)
        return GdbResult(r.returncode, r.stdout, r.stderr, time.monotonic() - t0, res)

    @staticmethod
    def need(res, tags, what):
        """The hd() records TAGS, which must all have succeeded."""
        if not res.results:
            raise HarnessError("%s: the gdb script did not finish\n%s" % (what, res.describe()))
        bad = []
        for t in tags:
            rec = res.results.get(t)
            if rec is None:
                bad.append("%s: not run" % t)
            elif rec["err"] is not None:
                bad.append("%s (`%s`): %s" % (t, rec["cmd"], rec["err"]))
        if bad:
            raise HarnessError("%s: command(s) failed:\n  %s\n%s"
                               % (what, "\n  ".join(bad), res.describe()))

    # ------------------------------------------------------ shared runs
    def live_heap(self):
        """heap_fixture stopped at hd_fixture_stop: heap-blocks, heap-stats,
        then gcore (the core of case b)."""
        if "live_heap" in self.cache:
            return self.cache["live_heap"]
        truth_p, core = self.path("heap.truth"), self.path("heap.core")
        for p in (truth_p, core):
            if os.path.exists(p):
                os.unlink(p)
        blocks, stats = self.path("heap-live-blocks.json"), self.path("heap-live-stats.json")
        lines = self.prelude(self.path("heap-live.results.json")) + [
            "break hd_fixture_stop",
            "run",
            "python hd('blocks', 'heap-blocks --json --output %s')" % blocks,
            "python hd('stats', 'heap-stats --json --output %s')" % stats,
            "python hd('stats_text', 'heap-stats')",
            "python hd('used', 'heap-blocks --state used --json --output %s')"
            % self.path("heap-live-used.json"),
            "python hd('gcore', 'gcore %s')" % core,
            "python hd_save()",
        ]
        res = self.run_gdb("heap-live", lines, ["--args", self.heap_fixture, truth_p])
        self.need(res, ["blocks", "stats", "stats_text", "used", "gcore"], "heap_fixture live run")
        heaptest.check_core(core, self.heap_fixture)
        truth = heaptest.parse_truth(truth_p)
        out = dict(res=res, truth=truth, core=core,
                   blocks=load_json(blocks, "heap-blocks"),
                   stats=load_json(stats, "heap-stats"),
                   used=load_json(self.path("heap-live-used.json"), "heap-blocks --state used"))
        self.cache["live_heap"] = out
        return out

    def live_dom(self):
        """dom_fixture stopped at hd_fixture_stop: dominators (--all, tree
        mode, parameters), heap-why by expression and address, the holder
        thread's local, heap-graph --from, then gcore."""
        if "live_dom" in self.cache:
            return self.cache["live_dom"]
        truth_p, core = self.path("dom.truth"), self.path("dom.core")
        for p in (truth_p, core):
            if os.path.exists(p):
                os.unlink(p)
        P = self.path
        exprs = [("list0", "g_list"), ("hub", "*g_hub"), ("left", "g_hub->left"),
                 ("bigchild99", "g_big[99]"), ("interior", "g_interior"),
                 ("list0_interior", "(char *)g_list + 8"), ("tree4", "g_tree->l->r"),
                 ("shared", "g_shared_a"), ("bottom", "g_hub->right->bottom")]
        lines = self.prelude(P("dom-live.results.json")) + [
            "break hd_fixture_stop",
            "run",
            "python hd('all', 'heap-dominators --json --all --output %s')" % P("dom-live-all.json"),
            "python hd('tree', 'heap-dominators --json --top 5 --depth 3 --output %s')"
            % P("dom-live-tree.json"),
            "python hd('text', 'heap-dominators --top 5')",
            "set heapdom top 3",
            "set heapdom depth 1",
            "python hd('param', 'heap-dominators --json --output %s')" % P("dom-live-param.json"),
            "python hd('param_override', 'heap-dominators --json --top 2 --depth 0 --output %s')"
            % P("dom-live-param2.json"),
            "set heapdom top 0",
            "set heapdom depth 0",
        ]
        for tag, e in exprs:
            lines.append("python hd('why_%s', %r)" % (tag, "heap-why %s --json --output %s"
                                                       % (e, P("dom-live-why-%s.json" % tag))))
        lines += [
            "python hd('why_text_list0', 'heap-why g_list')",
            "python hd('graph_hub', 'heap-graph --format json --from g_hub --depth 2 --output %s')"
            % P("dom-live-graph-hub.json"),
            # d: the tail of the second thread's list, by address literal
            "python",
            "from test_dominators import parse_dom_truth as _p",
            "_t = _p(%r)" % truth_p,
            "_tail = _t.by_name['tlist.%d']" % (TLIST_NODES - 1),
            "hd('why_tail', 'heap-why 0x%%x --json --output %s' %% _tail)" % P("dom-live-why-tail.json"),
            "hd('why_tail_text', 'heap-why 0x%x' % _tail)",
            # the thread's own local, by name, in its frame
            "_tid = int(gdb.parse_and_eval('g_thread_tid'))",
            "_before = (gdb.selected_thread().num, gdb.selected_frame().name())",
            "for _th in gdb.selected_inferior().threads():",
            "    if _th.ptid[1] == _tid:",
            "        _th.switch()",
            "hd('select', 'frame function %s')" % THREAD_FN,
            "_sel = (gdb.selected_thread().num, gdb.selected_frame().name())",
            "hd('why_head', 'heap-why head --json --output %s')" % P("dom-live-why-head.json"),
            "hd_note('selection', [list(_before), list(_sel),",
            "        [gdb.selected_thread().num, gdb.selected_frame().name()]])",
            "end",
            "thread 1",
            "python hd('gcore', 'gcore %s')" % core,
            "python hd_save()",
        ]
        res = self.run_gdb("dom-live", lines, ["--args", self.dom_fixture, truth_p])
        self.need(res, ["all", "gcore"], "dom_fixture live run")
        heaptest.check_core(core, self.dom_fixture)
        truth = td.parse_dom_truth(truth_p)
        out = dict(res=res, truth=truth, core=core, exprs=exprs,
                   all=load_json(P("dom-live-all.json"), "heap-dominators --all"))
        self.cache["live_dom"] = out
        return out

    def core_run(self, kind):
        """The live run's core loaded in gdb: heap-blocks and
        heap-dominators --all (plus heap-stats for the text header)."""
        key = "core_" + kind
        if key in self.cache:
            return self.cache[key]
        live = self.live_heap() if kind == "heap" else self.live_dom()
        fixture = self.heap_fixture if kind == "heap" else self.dom_fixture
        P = self.path
        lines = self.prelude(P("%s-core.results.json" % kind)) + [
            "python hd('blocks', 'heap-blocks --json --output %s')" % P("%s-core-blocks.json" % kind),
            "python hd('all', 'heap-dominators --json --all --output %s')" % P("%s-core-all.json" % kind),
            "python hd('why_list0', 'heap-why g_list --json --output %s')" % P("%s-core-why.json" % kind)
            if kind == "dom" else "",
            "python hd('stats_text', 'heap-stats')",
            "python hd_save()",
        ]
        res = self.run_gdb("%s-core" % kind, lines, [fixture, live["core"]])
        self.need(res, ["blocks", "all", "stats_text"], "%s core in gdb" % kind)
        out = dict(res=res, live=live,
                   blocks=load_json(P("%s-core-blocks.json" % kind), "heap-blocks (core)"),
                   all=load_json(P("%s-core-all.json" % kind), "heap-dominators (core)"))
        self.cache[key] = out
        return out

    # ------------------------------------------------------------ checks
    @staticmethod
    def blocks_verdict(doc, truth, what):
        mm = heaptest.compare(doc, truth, expect_method="debuginfo")
        if not mm:
            return []
        return ["%s: %d mismatch(es) against the truth (first 10 per check):\n%s"
                % (what, mm.count(), mm.format(indent=""))]

    @staticmethod
    def dom_checks(doc, truth, what, tree=None):
        """test_dominators' checks on a gdb --all document (thread-stack
        expectations accept gdb's frame/local roots of that thread)."""
        pb = td.Problems(what + ": ")
        nodes = td.index_nodes(doc, pb, "all")
        if not nodes:
            return pb.lines() or ["%s: heap-dominators --all listed no nodes" % what]
        fns = frame_functions(doc)
        mapped = {}
        for a, nd in nodes.items():
            exp = truth.idom.get(a, "")
            if exp.startswith("thread-stack:"):
                tid = int(exp.split(":", 1)[1])
                if thread_root_ok(nd["idom"], tid, fns):
                    nd = dict(nd, idom="root:thread %d stack" % tid)
            mapped[a] = nd
        td.check_truth_nodes(mapped, truth, pb)
        td.check_sums(doc, nodes, pb)
        if tree is not None:
            td.check_tree_mode(tree, nodes, pb, 5, 3)
        return pb.lines()

    def compare_dom_with_cli(self, gdoc, cdoc):
        """gdb's heap-dominators --all vs the CLI's on the same core."""
        out = []
        fns = frame_functions(gdoc)
        if gdoc.get("heap") != cdoc.get("heap"):
            out.append("heap totals differ: gdb %r, CLI %r" % (gdoc.get("heap"), cdoc.get("heap")))
        g = {nd["addr"]: nd for nd in gdoc.get("nodes", [])}
        c = {nd["addr"]: nd for nd in cdoc.get("nodes", [])}
        diff = []
        for a in sorted(set(g) | set(c), key=lambda s: int(s, 16)):
            x, y = g.get(a), c.get(a)
            if x is None or y is None:
                diff.append("%s: only in %s" % (a, "the CLI" if x is None else "gdb"))
                continue
            kx = tuple(x.get(k) for k in NODE_CMP_KEYS if k != "type")
            ky = tuple(y.get(k) for k in NODE_CMP_KEYS if k != "type")
            # gdb also knows the types of locals (a core gives the CLI
            # none): a block only a typed local reaches may be typed in
            # gdb alone, never typed differently.
            if kx != ky or (x.get("type") != y.get("type") and y.get("type") is not None):
                diff.append("%s: gdb %s, CLI %s (%s)" % (
                    a, kx + (x.get("type"),), ky + (y.get("type"),), ",".join(NODE_CMP_KEYS)))
            gi, ci = x.get("idom"), y.get("idom")
            m = re.match(r"^root:thread (\d+) (stack|registers)$", ci or "")
            if m:
                if gi != ci and not thread_root_ok(gi, int(m.group(1)), fns):
                    diff.append("%s: idom %r in gdb, %r in the CLI (not a root of that thread)"
                                % (a, gi, ci))
            elif gi != ci:
                diff.append("%s: idom %r in gdb, %r in the CLI" % (a, gi, ci))
        if diff:
            out.append("dominator nodes differ from `heapdom dominators CORE --json --all` "
                       "(%d; first 10):\n  %s" % (len(diff), "\n  ".join(diff[:10])))
        # named global roots retain the same in both
        gr = {r["name"]: (r["retained"], r["retained_blocks"]) for r in gdoc.get("roots", [])
              if r.get("kind") == "global"}
        cr = {r["name"]: (r["retained"], r["retained_blocks"]) for r in cdoc.get("roots", [])
              if r.get("kind") == "global"}
        if gr != cr:
            bad = sorted(k for k in set(gr) | set(cr) if gr.get(k) != cr.get(k))
            out.append("global roots differ (%d): %s" % (len(bad), ", ".join(
                "%s gdb %s CLI %s" % (k, gr.get(k), cr.get(k)) for k in bad[:10])))
        return out

    # ------------------------------------------------------------- cases
    def case_live(self):
        out = []
        h = self.live_heap()
        truth = h["truth"]
        out += no_traceback(h["res"], "heap_fixture run")
        out += self.blocks_verdict(h["blocks"], truth, "heap-blocks")
        if h["blocks"].get("target") != "pid %d" % truth.pid:
            out.append("heap-blocks target %r, expected 'pid %d'" % (h["blocks"].get("target"), truth.pid))
        want = [b for b in h["blocks"].get("blocks", []) if b["state"] == "used"]
        if h["used"].get("blocks") != want:
            out.append("heap-blocks --state used: %d blocks, the full list has %d used"
                       % (len(h["used"].get("blocks", [])), len(want)))
        missing = [k for k in ("totals", "allocator", "size_classes") if k not in h["stats"]]
        if missing:
            out.append("heap-stats --json lacks %s" % ", ".join(missing))
        st = h["res"].results["stats_text"]["out"] or ""
        if not st.startswith("heap of pid %d: " % truth.pid) or "\x1b[" in st:
            out.append("heap-stats text: expected 'heap of pid %d: ...' without colour, got %r"
                       % (truth.pid, st[:200]))

        d = self.live_dom()
        dt, res = d["truth"], d["res"]
        out += no_traceback(res, "dom_fixture run")
        tree = None
        try:
            self.need(res, ["tree", "text", "param", "param_override"], "dominators variants")
            tree = load_json(self.path("dom-live-tree.json"), "heap-dominators --top 5 --depth 3")
        except HarnessError as e:
            out.append(str(e))
        out += self.dom_checks(d["all"], dt, "heap-dominators --all (live)", tree)
        text = (res.results.get("text") or {}).get("out") or ""
        if not text.startswith("heap of pid %d: " % dt.pid) or "Blocks holding the most memory" not in text:
            out.append("heap-dominators text: unexpected %r" % text[:300])
        # set heapdom top 3 / depth 1; explicit options win
        for tag, f, top, depth in (("param", "dom-live-param.json", 3, 1),
                                   ("param_override", "dom-live-param2.json", 2, 0)):
            if (res.results.get(tag) or {}).get("err") is not None:
                continue
            doc = load_json(self.path(f), tag)
            depths = [nd.get("depth") for nd in doc.get("nodes", [])]
            if depths.count(0) != top or max(depths or [0]) != depth:
                out.append("%s: %d top-level nodes, max depth %s; expected %d and %d"
                           % (res.results[tag]["cmd"], depths.count(0), max(depths or [None]), top, depth))
        return out

    def case_core(self):
        out = []
        # heap_fixture
        hc = self.core_run("heap")
        live = hc["live"]
        out += no_traceback(hc["res"], "heap core run")
        core = live["core"]
        out += self.blocks_verdict(hc["blocks"], live["truth"], "heap-blocks (core in gdb)")
        if hc["blocks"].get("target") != core:
            out.append("heap-blocks target %r, expected the core %s" % (hc["blocks"].get("target"), core))
        cli = heaptest.heapdom_json(self.heapdom, ["blocks", core, "--json"])
        if hc["blocks"].get("blocks") != cli.get("blocks"):
            d = heaptest.diff_docs(cli, hc["blocks"])
            out.append("heap-blocks differs from `heapdom blocks CORE --json` (%d; first 10; CLI vs gdb):\n  %s"
                       % (len(d), "\n  ".join(d[:10])))
        keys = sorted((set(cli) | set(hc["blocks"])) - {"target", "blocks"})
        bad = [k for k in keys if cli.get(k) != hc["blocks"].get(k)]
        if bad:
            out.append("heap-blocks header differs from the CLI's in %s" % ", ".join(bad))
        d = heaptest.diff_docs(live["blocks"], hc["blocks"])
        if d:
            out.append("heap-blocks on the core differs from heap-blocks at the live stop (%d; first 10):\n  %s"
                       % (len(d), "\n  ".join(d[:10])))
        st = hc["res"].results["stats_text"]["out"] or ""
        if not st.startswith("heap of %s: " % core):
            out.append("heap-stats text on a core: %r" % st[:200])
        # dom_fixture
        dc = self.core_run("dom")
        out += no_traceback(dc["res"], "dom core run")
        dlive = dc["live"]
        out += self.dom_checks(dc["all"], dlive["truth"], "heap-dominators --all (core in gdb)")
        cli = heaptest.heapdom_json(self.heapdom, ["dominators", dlive["core"], "--json", "--all"])
        out += self.compare_dom_with_cli(dc["all"], cli)
        # the core's analysis names the same roots as the live one
        lk = {nd["addr"]: (nd["idom"], nd["retained"]) for nd in dlive["all"].get("nodes", [])}
        ck = {nd["addr"]: (nd["idom"], nd["retained"]) for nd in dc["all"].get("nodes", [])}
        if lk != ck:
            bad = sorted(k for k in set(lk) | set(ck) if lk.get(k) != ck.get(k))
            out.append("heap-dominators on the core differs from the live stop (%d; first 5): %s"
                       % (len(bad), "; ".join("%s live %s core %s" % (k, lk.get(k), ck.get(k))
                                               for k in bad[:5])))
        rec = dc["res"].results.get("why_list0") or {}
        if rec.get("err") is not None:
            out.append("heap-why g_list on the core: %s" % rec["err"])
        return out

    def case_gdb_memory(self):
        """c and c2 from one run."""
        if "memory" in self.cache:
            return self.cache["memory"]
        P = self.path
        truth_p = P("heap-mem.truth")
        lines = self.prelude(P("heap-mem.results.json")) + [
            "break hd_fixture_stop",
            "run",
            "set heapdom memory gdb",
            "python hd('show', 'show heapdom memory')",
            "python hd('show_prefetch', 'show heapdom prefetch')",
            "python hd('blocks_gdb', 'heap-blocks --json --output %s')" % P("mem-blocks-gdb.json"),
            "python hd('dom_gdb', 'heap-dominators --json --all --output %s')" % P("mem-dom-gdb.json"),
            "set heapdom memory auto",
            "set var $rax = $rax",
            "python hd('blocks_auto', 'heap-blocks --json --output %s')" % P("mem-blocks-auto.json"),
            "python hd('dom_auto', 'heap-dominators --json --all --output %s')" % P("mem-dom-auto.json"),
            "set heapdom memory gdb",
            "python hd('blocks_gdb2', 'heap-blocks --json --output %s')" % P("mem-blocks-gdb2.json"),
            "python hd_save()",
        ]
        res = self.run_gdb("heap-mem", lines, ["--args", self.heap_fixture, truth_p])
        self.need(res, ["show", "blocks_gdb", "dom_gdb", "blocks_auto", "dom_auto", "blocks_gdb2"],
                  "memory gdb run")
        truth = heaptest.parse_truth(truth_p)
        c, c2 = [], []
        c += no_traceback(res, "memory gdb run")
        if "gdb" not in (res.results["show"]["out"] or ""):
            c.append("show heapdom memory: %r" % res.results["show"]["out"])
        # Every run here read its modules' types as gdb loaded them.
        if "is on" not in (res.results.get("show_prefetch", {}).get("out") or ""):
            c.append("show heapdom prefetch: %r" % res.results.get("show_prefetch"))
        g = load_json(P("mem-blocks-gdb.json"), "heap-blocks (memory gdb)")
        a = load_json(P("mem-blocks-auto.json"), "heap-blocks (memory auto)")
        c += self.blocks_verdict(g, truth, "heap-blocks, set heapdom memory gdb")
        c += self.blocks_verdict(a, truth, "heap-blocks, set heapdom memory auto")
        if g.get("target") != "callback":
            c.append("memory gdb: target %r, expected 'callback' (gdb's reads)" % g.get("target"))
        if a.get("target") != "pid %d" % truth.pid:
            c.append("memory auto: target %r, expected 'pid %d' (/proc)" % (a.get("target"), truth.pid))
        d = heaptest.diff_docs(a, g)
        if d:
            c.append("heap-blocks through gdb's reads differs from /proc (%d; first 10):\n  %s"
                     % (len(d), "\n  ".join(d[:10])))
        dg = load_json(P("mem-dom-gdb.json"), "heap-dominators (memory gdb)")
        da = load_json(P("mem-dom-auto.json"), "heap-dominators (memory auto)")
        ng = {nd["addr"]: nd for nd in dg.get("nodes", [])}
        na = {nd["addr"]: nd for nd in da.get("nodes", [])}
        if ng != na or dg.get("heap") != da.get("heap") or dg.get("roots") != da.get("roots"):
            bad = sorted(k for k in set(ng) | set(na) if ng.get(k) != na.get(k))
            c.append("heap-dominators --all through gdb's reads differs from /proc: heap %s/%s, "
                     "roots equal %s, %d nodes differ (first 5): %s"
                     % (dg.get("heap"), da.get("heap"), dg.get("roots") == da.get("roots"), len(bad),
                        "; ".join("%s gdb %s proc %s" % (k, ng.get(k), na.get(k)) for k in bad[:5])))
        g2 = load_json(P("mem-blocks-gdb2.json"), "heap-blocks (memory gdb, same stop)")
        if g2.get("target") != "callback":
            c2.append("`set heapdom memory gdb` at a stop already analysed through /proc: the next "
                      "heap-blocks still reports target %r, expected 'callback' (the setting is "
                      "ignored until the analysis is discarded)" % g2.get("target"))
        if g2.get("blocks") != g.get("blocks"):
            c2.append("heap-blocks differs after switching memory modes at one stop")
        self.cache["memory"] = (c, c2)
        return self.cache["memory"]

    def case_thread(self):
        d = self.live_dom()
        t, res = d["truth"], d["res"]
        out = []
        head = t.by_name.get("tlist.0")
        tail = t.by_name.get("tlist.%d" % (TLIST_NODES - 1))
        if head is None or tail is None or t.tid is None:
            return ["truth has no tlist.0 / tlist.%d / thread record" % (TLIST_NODES - 1)]
        nodes = {int(nd["addr"], 16): nd for nd in d["all"].get("nodes", [])}
        nd = nodes.get(head)
        if nd is None:
            out.append("tlist head %s is not a node" % hx(head))
        else:
            if not strict_thread_root(nd["idom"], t.tid):
                out.append("tlist head %s: idom %r, expected 'root:thread %d #N %s (...)' or "
                           "'root:%s: VAR'" % (hx(head), nd["idom"], t.tid, THREAD_FN, THREAD_FN))
            if nd["retained"] != t.retained.get(head):
                out.append("tlist head: retained %d, expected %s" % (nd["retained"], t.retained.get(head)))
        roots = [r for r in d["all"].get("roots", []) if strict_thread_root(r["name"], t.tid)
                 and r["retained"]]
        if not roots:
            out.append("no frame/local root of %s on thread %d retains anything" % (THREAD_FN, t.tid))
        elif sum(r["retained"] for r in roots) != t.retained.get(head):
            out.append("roots of %s retain %d, the list is %s bytes: %s" % (
                THREAD_FN, sum(r["retained"] for r in roots), t.retained.get(head), roots))
        # heap-why 0xTAIL
        try:
            self.need(res, ["why_tail", "why_tail_text"], "heap-why TAIL")
            doc = load_json(self.path("dom-live-why-tail.json"), "heap-why TAIL")
            path = doc.get("path") or [{}]
            first = path[0]
            if not strict_thread_root(first.get("root"), t.tid):
                out.append("heap-why %s: chain starts at %r, expected a frame/local root of %s"
                           % (hx(tail), first.get("root") or first.get("addr"), THREAD_FN))
            if len(path) != TLIST_NODES + 1 or path[-1].get("addr") != hx(tail):
                out.append("heap-why %s: %d entries ending at %r, expected %d ending at the tail"
                           % (hx(tail), len(path), path[-1].get("addr"), TLIST_NODES + 1))
            if doc.get("reachable") is not True:
                out.append("heap-why %s: reachable %r" % (hx(tail), doc.get("reachable")))
            # The list's only typed root is the local `struct lnode
            # *volatile head`: a qualified pointer types like a plain one.
            untyped = [e.get("addr") for e in path[1:]
                       if not re.match(r"^struct lnode(\[\d+(\.\.\d+)?\])?$", e.get("type") or "")]
            if untyped:
                out.append("heap-why %s: %d list nodes not typed struct lnode through the "
                           "volatile local (first %s: %r)" % (hx(tail), len(untyped), untyped[0],
                                                               [e.get("type") for e in path[1:2]]))
            text = res.results["why_tail_text"]["out"] or ""
            lines = [l for l in text.splitlines() if " \u2192 " not in l]
            if (len(lines) < 2 or not lines[0].startswith(hx(tail) + " is in ")
                    or not strict_thread_root(lines[1].strip().rsplit(" (", 1)[0], t.tid)):
                out.append("heap-why %s (text): first chain line %r" % (hx(tail), lines[1:2]))
            if lines and "(%d steps)" % TLIST_NODES not in lines[0]:
                out.append("heap-why %s (text): header %r, expected %d steps" % (hx(tail), lines[0], TLIST_NODES))
        except HarnessError as e:
            out.append(str(e))
        # heap-why head, in the thread's frame
        try:
            self.need(res, ["select", "why_head"], "heap-why head (thread's frame)")
            doc = load_json(self.path("dom-live-why-head.json"), "heap-why head")
            path = doc.get("path") or [{}]
            if (doc.get("query") != hx(head) or len(path) != 2
                    or not re.match(r"^thread \d+ #\d+ %s\b.* local head$" % THREAD_FN,
                                    path[0].get("root", ""))
                    or path[0].get("kind") != "local"):
                out.append("heap-why head in %s's frame: query %r, path %r; expected %s held by the "
                           "local head of %s" % (THREAD_FN, doc.get("query"), path[:2], hx(head), THREAD_FN))
            sel = res.results.get("selection")
            if not sel or sel[1][1] != THREAD_FN or sel[2] != sel[1]:
                out.append("selected thread/frame not restored after a heap command: before %s, "
                           "after %s" % (sel and sel[1], sel and sel[2]))
        except HarnessError as e:
            out.append(str(e))
        return out

    def case_per_stop(self):
        P = self.path
        truth_p = P("dom-stops.truth")
        lines = self.prelude(P("dom-stops.results.json")) + [
            "break build_guard",
            "break hd_fixture_stop",
            "run",
            "python hd('d1', 'heap-dominators --top 5')",
            "python hd('d2', 'heap-dominators --top 5')",
            "python hd('s1', 'heap-stats --json --output %s')" % P("stops-s1.json"),
            "python hd('b1', 'heap-blocks --json --output %s')" % P("stops-b1.json"),
            "continue",
            "python hd('where2', 'frame 0')",
            "python hd('d3', 'heap-dominators --top 5')",
            "python hd('d4', 'heap-dominators --top 5')",
            "python hd('s2', 'heap-stats --json --output %s')" % P("stops-s2.json"),
            "python hd('b2', 'heap-blocks --json --output %s')" % P("stops-b2.json"),
            "python hd('a2', 'heap-dominators --json --all --output %s')" % P("stops-a2.json"),
            "finish",
            "python hd('a3', 'heap-dominators --json --all --output %s')" % P("stops-a3.json"),
            "python hd_save()",
        ]
        res = self.run_gdb("dom-stops", lines, ["--args", self.dom_fixture, truth_p])
        self.need(res, ["d1", "d2", "s1", "b1", "where2", "d3", "d4", "s2", "b2", "a2", "a3"],
                  "two-stop run")
        out = no_traceback(res, "two-stop run")
        r = res.results
        t1, t2, t3, t4 = (r[k]["secs"] for k in ("d1", "d2", "d3", "d4"))
        print("    heap-dominators at stop 1: %.4fs then %.4fs; at stop 2: %.4fs then %.4fs"
              % (t1, t2, t3, t4))
        for a, b, where in ((t1, t2, "build_guard"), (t3, t4, "hd_fixture_stop")):
            if not (b < a / 3 or b < 0.05):
                out.append("at %s the second heap-dominators took %.4fs, the first %.4fs: "
                           "not reused" % (where, b, a))
        if r["d1"]["out"] != r["d2"]["out"]:
            out.append("two heap-dominators at one stop printed different reports")
        if "hd_fixture_stop" not in (r["where2"]["out"] or ""):
            out.append("continue did not reach hd_fixture_stop: %r" % r["where2"]["out"])
        truth = td.parse_dom_truth(truth_p)
        guard = truth.by_name.get("guard")
        s1 = load_json(P("stops-s1.json"), "heap-stats at build_guard")
        s2 = load_json(P("stops-s2.json"), "heap-stats at hd_fixture_stop")
        u1, u2 = s1["totals"]["used"], s2["totals"]["used"]
        want_chunk = truth.blocks.get(guard, (None, None))[1]
        if (u2["blocks"] - u1["blocks"], u2["bytes"] - u1["bytes"]) != (1, want_chunk):
            out.append("heap-stats after continue: used %r -> %r, expected one more block of %s bytes "
                       "(the guard): results not recomputed?" % (u1, u2, want_chunk))
        b1 = {b["addr"]: b for b in load_json(P("stops-b1.json"), "b1")["blocks"]}
        b2 = {b["addr"]: b for b in load_json(P("stops-b2.json"), "b2")["blocks"]}
        g = hx(guard) if guard else None
        if (b1.get(g) or {}).get("state") == "used" or (b2.get(g) or {}).get("state") != "used":
            out.append("guard %s: %r at build_guard, %r at hd_fixture_stop; expected absent, then used"
                       % (g, b1.get(g), b2.get(g)))
        if r["d3"]["out"] == r["d1"]["out"]:
            out.append("heap-dominators printed the same report at both stops")
        a2 = load_json(P("stops-a2.json"), "dominators at hd_fixture_stop")
        a3 = load_json(P("stops-a3.json"), "dominators after finish")
        n2 = [x["name"] for x in a2["roots"] if " hd_fixture_stop " in x["name"]]
        n3 = [x["name"] for x in a3["roots"] if " hd_fixture_stop " in x["name"]]
        if not n2 or n3:
            out.append("frame roots of hd_fixture_stop: %r at the stop, %r after finish; expected "
                       "some, then none (analysis not redone after finish?)" % (n2, n3))
        gn = [nd for nd in a3.get("nodes", []) if nd["addr"] == g]
        if not gn or gn[0]["idom"] != "root:%s:g_guard" % truth.module:
            out.append("after finish: guard node %r" % gn)
        return out

    def case_expressions(self):
        d = self.live_dom()
        t, res = d["truth"], d["res"]
        mod = t.module
        out = []
        bn = t.by_name
        want = {
            "list0": (bn.get("list.0"), ["g_list"], 2),
            "hub": (bn.get("hub"), ["g_hub"], 2),
            "left": (bn.get("left"), ["g_hub"], 3),
            "bigchild99": (bn.get("bigchild.99"), ["g_big"], 3),
            "interior": (bn.get("interior"), ["g_interior"], 2),
            "list0_interior": (bn.get("list.0"), ["g_list"], 2),
            "tree4": (bn.get("tree.4"), ["g_tree"], 4),
            "shared": (bn.get("shared"), ["g_shared_a", "g_shared_b"], 2),
            "bottom": (bn.get("bottom"), ["g_hub"], 4),
        }
        exprs = dict(d["exprs"])
        for tag, (addr, globs, length) in want.items():
            what = "heap-why %s" % exprs[tag]
            rec = res.results.get("why_" + tag)
            if rec is None or rec["err"] is not None:
                out.append("%s: %s" % (what, rec and rec["err"]))
                continue
            doc = load_json(self.path("dom-live-why-%s.json" % tag), what)
            blk = (doc.get("block") or {}).get("addr")
            path = doc.get("path") or [{}]
            roots = ["%s:%s" % (mod, g) for g in globs]
            if addr is None or blk != hx(addr):
                out.append("%s: block %r, expected %s" % (what, blk, addr and hx(addr)))
            if path[0].get("root") not in roots or path[0].get("kind") != "global":
                out.append("%s: chain starts at %r, expected %s" % (what, path[0], " or ".join(roots)))
            if len(path) != length:
                out.append("%s: %d entries, expected %d" % (what, len(path), length))
        # the interior address is the query
        rec = res.results.get("why_list0_interior")
        if rec and rec["err"] is None and bn.get("list.0"):
            doc = load_json(self.path("dom-live-why-list0_interior.json"), "interior query")
            if doc.get("query") != hx(bn["list.0"] + 8):
                out.append("heap-why (char *)g_list + 8: query %r, expected %s"
                           % (doc.get("query"), hx(bn["list.0"] + 8)))
        # g_interior points 24 bytes into its block: the path says so
        rec = res.results.get("why_interior")
        if rec and rec["err"] is None:
            doc = load_json(self.path("dom-live-why-interior.json"), "interior")
            first = (doc.get("path") or [{}])[0]
            if first.get("interior") is not True:
                out.append("heap-why g_interior: first step %r is not marked interior" % first)
        text = (res.results.get("why_text_list0") or {}).get("out") or ""
        lines = [l for l in text.splitlines() if " \u2192 " not in l]
        if (len(lines) < 2 or not lines[0].startswith(hx(bn.get("list.0", 0)) + " is in ")
                or not lines[1].strip().startswith("%s:g_list (global" % mod)):
            out.append("heap-why g_list (text): %r" % lines[:3])
        rec = res.results.get("graph_hub")
        if rec is None or rec["err"] is not None:
            out.append("heap-graph --from g_hub: %s" % (rec and rec["err"]))
        else:
            g = load_json(self.path("dom-live-graph-hub.json"), "heap-graph --from g_hub")
            got = {nd.get("addr") for nd in g.get("nodes", []) if "addr" in nd}
            exp = {hx(bn[n]) for n in ("hub", "left", "right", "bottom") if n in bn}
            if got != exp:
                out.append("heap-graph --from g_hub --depth 2: blocks %s, expected hub, left, right, "
                           "bottom %s" % (sorted(got), sorted(exp)))
        return out

    def case_errors(self):
        P = self.path
        truth_p = P("dom-errors.truth")
        ok_file = P("errors-ok.json")
        if os.path.exists(ok_file):
            os.unlink(ok_file)
        # (command, expected substring of its one error line); None: no error
        steps = [
            ("heap-stats", "no process"),
            ("heap-dominators --json", "no process"),
            ("heap-why g_list", "no process"),
            ("break hd_fixture_stop", None),
            ("run", None),
            ("heap-dominators --bogus", "unknown option"),
            ("heap-why &g_thread_tid", "not inside any heap block"),
            ("heap-why 0", "not inside any heap block"),
            ("heap-why main", "not inside any heap block"),
            ("heap-why nosuchvar", 'No symbol "nosuchvar"'),
            ("heap-why g_list->next +", "syntax error"),
            ("heap-why", "needs an expression"),
            ("heap-blocks --state bogus", "--state"),
            ("heap-dominators --top", "--top"),
            ("heap-stats --output %s" % P("no-such-dir/x"), "cannot write"),
            ("heap-graph --from nosuchvar", 'No symbol "nosuchvar"'),
            ("heap-leaks --all --bogus", "unknown option"),
            ("heap-stats --json --output %s" % ok_file, None),
        ]
        argv = ["-ex", "set python print-stack full", "-ex", "source " + self.plugin]
        for cmd, _ in steps:
            argv += ["-ex", cmd]
        argv += ["--args", self.dom_fixture, truth_p]
        cmd = [self.gdb, "-q", "-nx", "-batch"] + argv
        t0 = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=self.env(),
                               errors="replace", stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise HarnessError("gdb timed out: %s" % " ".join(cmd))
        res = GdbResult(r.returncode, r.stdout, r.stderr, time.monotonic() - t0, {})
        out = no_traceback(res, "error run")
        errs = [ln for ln in r.stderr.splitlines()
                if ln.strip() and not ln.startswith("warning:")]
        expected = [(c, e) for c, e in steps if e is not None]
        stray = [ln for ln in errs if not ln.startswith("heapdom: ")]
        if stray:
            out.append("stderr lines that are not one-line heapdom errors: %r" % stray[:10])
        hd_lines = [ln for ln in errs if ln.startswith("heapdom: ")]
        if len(hd_lines) != len(expected):
            out.append("%d heapdom error lines for %d failing commands:\n  %s"
                       % (len(hd_lines), len(expected), "\n  ".join(hd_lines)))
        for (c, e), ln in zip(expected, hd_lines):
            if e not in ln:
                out.append("`%s`: error %r, expected one mentioning %r" % (c, ln, e))
        if not os.path.isfile(ok_file):
            out.append("gdb did not run heap-stats --json --output after the errors")
        else:
            load_json(ok_file, "heap-stats after errors")
        return out

    def case_commands(self):
        P = self.path
        truth_p, jf = P("heap-cmds.truth"), P("cmds-stats.json")
        if os.path.exists(jf):
            os.unlink(jf)
        lines = [
            "source " + self.plugin,
            "break hd_fixture_stop",
            "commands",
            "  heap-stats",
            "  heap-stats --json --output " + jf,
            "  heap-leaks",
            "  continue",
            "end",
            "run",
        ]
        res = self.run_gdb("heap-cmds", lines, ["--args", self.heap_fixture, truth_p])
        out = no_traceback(res, "breakpoint commands run")
        truth = heaptest.parse_truth(truth_p)
        o = res.out
        i = o.find("heap of pid %d: " % truth.pid)
        j = o.find("exited normally")
        if i < 0 or "\nTotal\n" not in o[i:] or "leaked blocks" not in o[i:]:
            out.append("breakpoint commands: no heap-stats/heap-leaks report for pid %d in gdb's stdout:\n%s"
                       % (truth.pid, o[-1500:]))
        elif j < i:
            out.append("the program did not continue to a normal exit after the commands:\n%s" % o[-800:])
        if "\x1b[" in o:
            out.append("colour escapes in batch output")
        if res.err.strip() and any(not ln.startswith("warning:") for ln in res.err.splitlines() if ln.strip()):
            out.append("stderr: %s" % res.err[-1000:])
        if not os.path.isfile(jf):
            out.append("heap-stats --json --output in breakpoint commands wrote nothing")
        else:
            doc = load_json(jf, "heap-stats from breakpoint commands")
            if doc.get("target") != "pid %d" % truth.pid or "totals" not in doc:
                out.append("heap-stats --json from breakpoint commands: target %r, keys %s"
                           % (doc.get("target"), sorted(doc)))
        return out

    # -------------------------------------------------------------- main
    def run(self):
        os.makedirs(self.work, exist_ok=True)
        if not shutil.which(self.gdb):
            print("FAIL setup: %s not found" % self.gdb)
            self.failed += 1
        for p in (self.heapdom, self.heap_fixture, self.dom_fixture):
            if not os.access(p, os.X_OK):
                print("FAIL setup: %s is not executable" % p)
                self.failed += 1
        for p in (self.plugin, self.lib):
            if not os.path.isfile(p):
                print("FAIL setup: %s not found" % p)
                self.failed += 1
        if not self.failed:
            self.case("a live at the breakpoint", self.case_live)
            self.case("b cores loaded in gdb, and the CLI on them", self.case_core)
            self.case("c set heapdom memory gdb (gdb's reads)", lambda: self.case_gdb_memory()[0])
            self.case("c2 set heapdom memory applies at the current stop",
                      lambda: self.case_gdb_memory()[1])
            self.case("d second thread's list: frame/local roots", self.case_thread)
            self.case("e one analysis per stop, redone after continue/finish", self.case_per_stop)
            self.case("f heap-why / heap-graph --from with gdb expressions", self.case_expressions)
            self.case("g errors: one line, no traceback", self.case_errors)
            self.case("h breakpoint commands in batch mode", self.case_commands)
        return self.finish((".core", ".truth", ".json", ".gdb"), kept="scripts, outputs, cores and truth files")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--heap-fixture", required=True)
    ap.add_argument("--dom-fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--lib", help="libheapdom.so for the plugin (default: next to --heapdom)")
    ap.add_argument("--gdb", default="gdb")
    ap.add_argument("--only", help="comma-separated case names, e.g. a,c2,g")
    ap.add_argument("--keep", action="store_true", help="keep cores, scripts and outputs")
    return Runner(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())

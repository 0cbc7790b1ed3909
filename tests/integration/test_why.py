#!/usr/bin/env python3
"""`why` by root class (issue 19) on tests/fixtures/why_fixture.c: a program
stopped at a breakpoint while a function holds copies of a global's value
in registers and in a local. Checked against what the fixture records (the
blocks' addresses and, by construction, what holds each):

  a cli      on a core: the chain to g_cache->slots[5] (and to the cache)
             starts at the global; "also reachable from" lists the
             registers and the local's class (stack, or locals once the CLI
             names frames); --exclude registers,stack removes them; the
             request only a register holds is explained from the registers,
             and with --exclude registers,stack is reported as reachable
             only from excluded classes; the TLS-only session from tls; the
             local-only scratch buffer from the stack/locals; JSON the same
  b gdb      the same at the stop in gdb (heap-why EXPR [--exclude ...]),
             where the local is named (thread N #L serve (FILE:LINE) local job)
  c lldb     the same in lldb (heapdom why), when --lldb-plugin is given
  d errors   an unknown class is an error naming the valid ones

usage: test_why.py --heapdom PATH --fixture PATH --gdb-plugin PATH
                   --workdir DIR [--lib PATH] [--lldb-plugin PATH]
                   [--only a,b] [--keep]
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

CLASS_OF_KIND = {"global": "globals", "region": "globals", "tls": "tls",
                 "local": "locals", "frame": "stack", "stack": "stack",
                 "registers": "registers"}
CLASSES = ("globals", "tls", "locals", "stack", "registers")
LLDB_PYTHON = "/usr/lib/llvm-14/lib/python3.11/dist-packages"


class Truth:
    def __init__(self):
        self.blocks = {}  # name -> addr
        self.held = {}    # name -> [holder, ...] strongest first
        self.module = None


def read_truth(path):
    t = Truth()

    def record(w, line):
        if w[0] == "block":
            t.blocks[w[1]] = int(w[2], 16)
        elif w[0] == "held":
            t.held[w[1]] = w[2].split(",")
        elif w[0] == "module":
            t.module = w[1]
        elif w[0] != "pid":
            raise ValueError("unknown record")
    heaptest.read_truth(path, "why_fixture", record)
    for name in ("slot.5", "cache", "request", "session", "scratch"):
        if name not in t.blocks or name not in t.held:
            raise heaptest.HarnessError("%s: no block/held record for %s" % (path, name))
    return t


def holder_classes(holders, named_locals):
    """The classes the fixture's holders fall in: a local in memory is
    "locals" where frames are named (the debuggers), else "stack"."""
    out = []
    for h in holders:
        if h.startswith("global:"):
            out.append("globals")
        elif h == "tls":
            out.append("tls")
        elif h.startswith("local:"):
            out.append("locals" if named_locals else "stack")
        elif h == "register":
            out.append("registers")
    return out


# ------------------------------------------------------------------ text

class WhyText:
    """A why report in text: the first chain's class and its one-line form,
    the "also reachable from" classes (count, line), the ignored classes,
    and for a block reachable only from excluded classes, those."""

    def __init__(self, text):
        self.text = text
        self.addr = None
        self.first = None
        self.line = None
        self.also = {}
        self.ignored = set()
        self.only = None
        lines = text.splitlines()
        for i, ln in enumerate(lines):
            m = re.match(r"0x[0-9a-f]+ is in (0x[0-9a-f]+) ", ln)
            if m and self.addr is None:
                self.addr = int(m.group(1), 16)
                m = re.search(r"kept alive by this chain from (\w+) \(", ln)
                if m:
                    self.first = m.group(1)
                    if i + 1 < len(lines):
                        self.line = lines[i + 1].strip()
                m = re.search(r"not reachable from any root outside the excluded "
                              r"classes \(reachable only from: (.*)\)$", ln)
                if m:
                    self.only = set(re.findall(r"(\w+) \(\d+ roots?\)", m.group(1)))
            m = re.match(r"  (\w+) \((\d+) roots?\), \d+ steps?: (.*)$", ln)
            if m and "also reachable from:" in lines[:i]:
                self.also[m.group(1)] = (int(m.group(2)), m.group(3))
            if ln.startswith("ignored (--exclude): "):
                self.ignored = set(re.findall(r"(\w+) \(\d+ roots?\)", ln))


def check_text(what, w, t, name, holders, exclude, named_locals):
    """Problems of one why text about block NAME held by HOLDERS (classes),
    with the classes in exclude ignored."""
    out = []
    want = [c for c in holders if c not in exclude]
    if w.addr != t.blocks[name]:
        out.append("%s: names block %s, truth %s (0x%x)"
                   % (what, w.addr and hex(w.addr), name, t.blocks[name]))
    if not want:
        if w.first is not None or w.only is None:
            out.append("%s: every holder is excluded, yet the report is:\n%s" % (what, w.text))
        elif set(holders) - w.only:
            out.append("%s: reachable only from %s, truth %s" % (what, w.only, holders))
        return out
    if w.first != want[0]:
        out.append("%s: first chain from %s, truth %s:\n%s" % (what, w.first, want[0], w.text))
    if want[0] == "globals":
        glob = [h for h in t.held[name] if h.startswith("global:")][0][7:]
        if not (w.line or "").startswith("%s:%s " % (t.module, glob)):
            out.append("%s: first chain %r does not start at %s:%s"
                       % (what, w.line, t.module, glob))
    for c in want[1:]:
        if c not in w.also:
            out.append("%s: %s not among \"also reachable from\" %s:\n%s"
                       % (what, c, sorted(w.also), w.text))
    if named_locals and "locals" in want[1:] and "locals" in w.also:
        local = [h for h in t.held[name] if h.startswith("local:")][0].split(":")
        if not re.match(r"^thread \d+ #\d+ %s\b.* local %s " % (re.escape(local[1]),
                                                                 re.escape(local[2])),
                        w.also["locals"][1]):
            out.append("%s: the locals chain %r does not start at %s's local %s"
                       % (what, w.also["locals"][1], local[1], local[2]))
    for c in exclude:
        if c in w.also or w.first == c:
            out.append("%s: excluded class %s still shown:\n%s" % (what, c, w.text))
    if exclude and "registers" in exclude and "registers" in holders and \
            "registers" not in w.ignored:
        out.append("%s: the ignored registers are not said: %r" % (what, sorted(w.ignored)))
    return out


# ------------------------------------------------------------------ json

def check_json(what, doc, t, name, holders, exclude):
    out = []
    want = [c for c in holders if c not in exclude]
    if int(doc["block"]["addr"], 16) != t.blocks[name]:
        out.append("%s: block %s, truth 0x%x" % (what, doc["block"]["addr"], t.blocks[name]))
    if doc.get("reachable") is not True:
        out.append("%s: reachable %r" % (what, doc.get("reachable")))
    if doc.get("exclude") != [c for c in CLASSES if c in exclude]:
        out.append("%s: exclude %r" % (what, doc.get("exclude")))
    classes = [p["class"] for p in doc.get("paths", [])]
    if classes != sorted(classes, key=CLASSES.index):
        out.append("%s: paths not strongest first: %s" % (what, classes))
    for p in doc.get("paths", []):
        first = p["path"][0]
        if CLASS_OF_KIND.get(first.get("kind")) != p["class"] or p["roots"] < 1:
            out.append("%s: %s path starts at %r (%s roots)"
                       % (what, p["class"], first.get("root"), p["roots"]))
        if int(p["path"][-1]["addr"], 16) != t.blocks[name]:
            out.append("%s: %s path ends at %s" % (what, p["class"], p["path"][-1]))
    if not want:
        if doc.get("class") is not None or doc.get("paths") or doc.get("path"):
            out.append("%s: every holder is excluded, yet class %r, %d paths"
                       % (what, doc.get("class"), len(doc.get("paths", []))))
        got = {e["class"] for e in doc.get("excluded_roots", [])}
        if set(holders) - got:
            out.append("%s: excluded_roots %s, truth %s" % (what, sorted(got), holders))
        return out
    if doc.get("class") != want[0] or not classes or classes[0] != want[0]:
        out.append("%s: class %r, paths %s; truth %s first" % (what, doc.get("class"), classes, want[0]))
    if doc.get("path") != (doc.get("paths") or [{}])[0].get("path"):
        out.append("%s: \"path\" is not the first of \"paths\"" % what)
    if want[0] == "globals":
        glob = [h for h in t.held[name] if h.startswith("global:")][0][7:]
        if doc["path"][0].get("root") != "%s:%s" % (t.module, glob):
            out.append("%s: path starts at %r" % (what, doc["path"][0].get("root")))
    for c in want:
        if c not in classes:
            out.append("%s: no %s path among %s" % (what, c, classes))
    for c in exclude:
        if c in classes:
            out.append("%s: excluded %s among the paths" % (what, c))
    return out


# ------------------------------------------------------------- the cases

# (block, exclude): what every front-end is asked.
QUERIES = [("slot.5", ()), ("slot.5", ("registers", "stack")), ("cache", ()),
           ("request", ()), ("request", ("registers", "stack")),
           ("session", ()), ("scratch", ()), ("scratch", ("stack", "locals"))]


def cli_case(hd, target, t):
    out = []
    # The CLI names frames and locals where the core's CFI and DWARF let
    # it unwind: the local is then in "locals", else in "stack". Asked
    # once, without exclusions, so that an excluded class can't hide it.
    probe = heaptest.heapdom_json(hd, ["why"] + target + [hex(t.blocks["scratch"]), "--json"])
    named = any(p["class"] == "locals" for p in probe.get("paths", []))
    for name, exclude in QUERIES:
        holders = holder_classes(t.held[name], named_locals=named)
        args = ["why"] + target + [hex(t.blocks[name])]
        if exclude:
            args += ["--exclude", ",".join(exclude)]
        what = "why %s%s" % (name, " --exclude " + ",".join(exclude) if exclude else "")
        doc = heaptest.heapdom_json(hd, args + ["--json"])
        out += check_json(what + " --json", doc, t, name, holders, exclude)
        r = heaptest.run_heapdom(hd, args)
        if r.rc != 0:
            out.append(r.describe())
            continue
        out += check_text(what, WhyText(r.out), t, name, holders, exclude, False)
    return out


def debugger_case(run_cmds, t, exprs):
    """run_cmds(list of commands) -> list of outputs, one per command; exprs:
    block name -> expression naming it at the stop."""
    cmds, asked = [], []
    for name, exclude in QUERIES:
        if name not in exprs:
            continue
        cmd = exprs[name] + (" --exclude " + ",".join(exclude) if exclude else "")
        cmds.append(cmd)
        asked.append((name, exclude, cmd))
    # And once as JSON, through the front-end's option passing.
    jcmd = exprs["slot.5"] + " --exclude registers --json"
    outs, t = run_cmds(cmds + [jcmd])
    out = []
    for (name, exclude, cmd), text in zip(asked, outs):
        holders = holder_classes(t.held[name], named_locals=True)
        out += check_text(cmd, WhyText(text), t, name, holders, exclude, True)
    try:
        # gdb prints its "Kill the program" after it.
        doc = json.JSONDecoder().raw_decode(outs[-1].lstrip())[0]
    except ValueError as e:
        return out + ["%s: not one JSON document (%s): %r" % (jcmd, e, outs[-1][:300])]
    holders = holder_classes(t.held["slot.5"], named_locals=True)
    return out + check_json(jcmd, doc, t, "slot.5", holders, ("registers",))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--lib")
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    hd = a.heapdom
    truth_path, core = run.path("why.truth"), run.path("why.core")
    heaptest.make_core(a.fixture, truth_path, core)
    t = read_truth(truth_path)
    target = [core, "--exe", a.fixture]

    run.case("a cli", lambda: cli_case(hd, target, t))

    mark = "@@@why"

    def split(stdout, n):
        parts = stdout.split(mark)[1:]
        return [p.split("\n", 1)[1] if "\n" in p else "" for p in parts][:n]

    def gdb_cmds(cmds):
        truth = run.path("gdb.truth")
        argv = ["gdb", "-q", "-nx", "-batch", "-ex", "source " + a.gdb_plugin,
                "-ex", "break hd_fixture_stop", "-ex", "run"]
        for c in cmds:
            if "job." in c:
                argv += ["-ex", "frame 1"]
            argv += ["-ex", "echo %s\\n" % mark, "-ex", "heap-why " + c]
        argv += ["-ex", "kill", "--args", a.fixture, truth]
        env = heaptest._env()
        if a.lib:
            env["HEAPDOM_LIB"] = a.lib
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env)
        outs = split(r.stdout, len(cmds))
        if len(outs) != len(cmds):
            raise heaptest.HarnessError("gdb ran %d of %d commands:\n%s%s"
                                        % (len(outs), len(cmds), r.stdout[-3000:], r.stderr[-2000:]))
        return outs, read_truth(truth)

    # gdb reads the __thread variable; the local from serve's frame.
    exprs = {"slot.5": "g_cache->slots[5]", "cache": "g_cache", "request": "r",
             "session": "t_session", "scratch": "job.scratch"}
    run.case("b gdb", lambda: debugger_case(gdb_cmds, t, exprs))

    def lldb_cmds(cmds):
        truth = run.path("lldb.truth")
        argv = ["lldb-14", "-x", "-b", "-o", "plugin load " + a.lldb_plugin,
                "-o", "b hd_fixture_stop", "-o", "run"]
        for c in cmds:
            if "job." in c:
                argv += ["-o", "frame select 1"]
            argv += ["-o", "heapdom why " + c]
        argv += ["--", a.fixture, truth]
        env = heaptest._env()
        if os.path.isdir(LLDB_PYTHON):
            env["PYTHONPATH"] = LLDB_PYTHON
        env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env,
                           stdin=subprocess.DEVNULL)
        # lldb echoes each command ("(lldb) heapdom why ..."): the output
        # of one runs to the next echo.
        outs = []
        for part in re.split(r"^\(lldb\) heapdom why .*\n", r.stdout, flags=re.M)[1:]:
            outs.append(re.split(r"^\(lldb\) ", part, flags=re.M)[0])
        if len(outs) != len(cmds):
            raise heaptest.HarnessError("lldb ran %d of %d commands:\n%s%s"
                                        % (len(outs), len(cmds), r.stdout[-3000:], r.stderr[-2000:]))
        return outs, read_truth(truth)

    if a.lldb_plugin:
        # lldb-14 cannot read a __thread variable at a stop ("No TLS data
        # currently exists"): the session is checked in the CLI and gdb.
        lexprs = dict(exprs)
        del lexprs["session"]
        run.case("c lldb", lambda: debugger_case(lldb_cmds, t, lexprs))

    def errors():
        out = []
        r = heaptest.run_heapdom(hd, ["why"] + target + [hex(t.blocks["slot.5"]),
                                                        "--exclude", "registers,heap"])
        if r.rc == 0 or "'heap'" not in r.err or \
                "globals, tls, locals, stack, registers" not in r.err:
            out.append("unknown class: %s" % r.describe())
        r = heaptest.run_heapdom(hd, ["dominators"] + target + ["--exclude", "stack"])
        if r.rc == 0:
            out.append("dominators took --exclude: %s" % r.describe())
        return out
    run.case("d errors", errors)

    return run.finish(remove=(".core", ".truth"))


if __name__ == "__main__":
    sys.exit(main())

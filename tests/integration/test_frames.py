#!/usr/bin/env python3
"""heapdom integration test: frames and locals of the CLI on cores (its own
CFI unwinder, core/debuginfo/frames.c) against gdb's and lldb's.

    test_frames.py --heapdom PATH --lib PATH --gdb-plugin PATH
                   [--lldb-plugin PATH] --frames-fixture PATH
                   --dom-fixture PATH --workdir DIR

Cores: frames_fixture (-O0, four threads several frames deep, one in a
signal handler) and dom_fixture (-O1, a thread blocked in libc under
inlined frames).

Cases, on each core:
  bt      ground truth is gdb's own `thread apply all bt` (no heapdom): every
          CLI frame root "thread TID #L FUNC (FILE:LINE)" is gdb's frame #L
          of that thread, same function, same basename:line; every frame
          gdb unwinds through a return address (the next one is printed
          "0x... in") and that has a caller is a CLI root
  names   the CLI's frame and local root names (`graph --format json`, all
          roots) equal the gdb front-end's (`heap-graph`, frames from gdb's
          unwinder and gdb's `_locals`) and the lldb front-end's (`heapdom
          graph`), as multisets
  types   the CLI's locals and their type names (HEAPDOM_DEBUG_LOCALS)
          equal gdb's str(val.type.strip_typedefs()) for the locals the gdb
          front-end finds (its _locals, run in gdb on the same core)
  owners  the `roots` array of `dominators --json` (names, retained) is the
          same from the CLI, gdb and lldb
  corrupt frames_fixture's core with the saved return address of a worker's
          innermost parse_record frame overwritten: no crash, one warning
          naming the thread, the frames below it kept, none above it
Exit status 0 when every case passed; the last line is "N passed, N failed".
"""
import argparse
import collections
import json
import os
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

LLDB_PYTHON = "/usr/lib/python3/dist-packages"
FRAME_RE = re.compile(r"^thread (\d+) #(\d+) (.+)$")
# A local's root: its thread, its frame, "local" and its name.
LOCAL_RE = re.compile(r"^thread (\d+) #(\d+) (.+) local ([A-Za-z_][A-Za-z_0-9]*)$")


def env(lib):
    e = dict(os.environ)
    e["DEBUGINFOD_URLS"] = ""
    e.setdefault("LC_ALL", "C")
    e["HEAPDOM_LIB"] = lib
    e["PATH"] = "/usr/bin:/bin:" + e.get("PATH", "")
    return e


def run(argv, e, timeout=300):
    r = subprocess.run(argv, capture_output=True, text=True, errors="replace",
                       timeout=timeout, env=e, stdin=subprocess.DEVNULL)
    return r


def stack_roots(doc):
    """Root names of frames and locals (and the rest of thread stacks)."""
    out = []
    for n in doc.get("nodes", []):
        name = n.get("root")
        if name is None:
            continue
        if FRAME_RE.match(name):
            out.append(name)
    return out


GDB_LOCALS = r'''
import gdb, sys
sys.path.insert(0, %(plugdir)r)
import heapdom as H
gdb.execute("set backtrace past-main on")
out = []
for th in gdb.selected_inferior().threads():
    th.switch()
    f = gdb.newest_frame()
    n = 0
    while f is not None and n < H.MAX_FRAMES:
        try:
            sp = H._int(f.read_register("rsp"))
            c = f.older()
            csp = H._int(c.read_register("rsp")) if c else None
        except gdb.error:
            break
        if csp is not None and csp >= sp:
            for name, a, b, t in H._locals(f, sp, csp):
                out.append("local %%s\t%%s" %% (name, t))
        f = c
        n += 1
with open(%(out)r, "w") as fh:
    fh.write("\n".join(sorted(out)) + "\n")
'''


class Tester:
    def __init__(self, a):
        self.a = a
        self.passed = self.failed = 0
        self.e = env(a.lib)

    def check(self, name, problems):
        if problems:
            self.failed += 1
            print("FAIL %s" % name)
            for p in problems[:20]:
                print("  " + p)
        else:
            self.passed += 1
            print("ok   %s" % name)

    def gdb(self, exe, core, cmds, plugin=True):
        argv = ["gdb", "-q", "-nx", "-batch"]
        if plugin:
            argv += ["-ex", "source " + self.a.gdb_plugin]
        for c in cmds:
            argv += ["-ex", c]
        argv += [exe, core]
        return run(argv, self.e)

    def lldb(self, exe, core, cmd):
        e = dict(self.e)
        if os.path.isdir(LLDB_PYTHON):
            e["PYTHONPATH"] = LLDB_PYTHON
        return run(["lldb-14", "-x", "-b", "-c", core, exe, "-o",
                    "plugin load " + self.a.lldb_plugin, "-o", cmd], e)

    def cli(self, args, extra_env=None):
        e = dict(self.e)
        e.update(extra_env or {})
        return run([self.a.heapdom] + args, e)

    # ------------------------------------------------------------- cases
    def case_bt(self, tag, exe, core, cli_graph):
        r = self.gdb(exe, core, ["set backtrace past-main on", "thread apply all bt"],
                     plugin=False)
        # "Thread 2 (Thread 0x.. (LWP 123)):" then "#N  [0x... in] FUNC (...) at FILE:LINE"
        bt = collections.defaultdict(dict)
        tid = None
        for line in r.stdout.splitlines():
            m = re.match(r"^Thread \d+ \(.*LWP (\d+)\)", line)
            if m:
                tid = int(m.group(1))
                continue
            m = re.match(r"^#(\d+)\s+<signal handler called>$", line)
            if m and tid is not None:
                # gdb's frame.name() of a signal trampoline (a frame of
                # its own, pc looked up as is): libc's __restore_rt.
                bt[tid][int(m.group(1))] = ("__restore_rt", False, None, None)
                continue
            m = re.match(r"^#(\d+)\s+(0x[0-9a-f]+ in )?(\S+) \(.*\)(?: at (\S+):(\d+))?$", line)
            if m and tid is not None:
                bt[tid][int(m.group(1))] = (m.group(3), bool(m.group(2)),
                                           os.path.basename(m.group(4)) if m.group(4) else None,
                                           m.group(5))
        problems = []
        if not bt:
            raise HarnessError("gdb printed no backtrace:\n" + r.stdout[-2000:] + r.stderr[-2000:])
        cli = collections.defaultdict(set)
        for name in cli_graph:
            m = FRAME_RE.match(name)
            if not m:
                continue
            t, lvl, rest = int(m.group(1)), int(m.group(2)), m.group(3)
            lm = LOCAL_RE.match(name)
            if lm:  # a local names its frame first
                rest = lm.group(3)
            cli[t].add(lvl)
            g = bt.get(t, {}).get(lvl)
            if g is None:
                problems.append("%s: CLI root %r: gdb has no frame #%d in thread %d"
                                % (tag, name, lvl, t))
                continue
            want = "%s (%s:%s)" % (g[0], g[2], g[3]) if g[2] else g[0]
            if rest != want:
                problems.append("%s: CLI root %r, gdb's bt frame #%d is %r" % (tag, name, lvl, want))
        for t, frames in bt.items():
            last = max(frames)
            for lvl, g in frames.items():
                nxt = frames.get(lvl + 1)
                if lvl < last and nxt and nxt[1] and lvl not in cli.get(t, ()):
                    problems.append("%s: gdb's frame #%d %s of thread %d is no CLI root"
                                    % (tag, lvl, g[0], t))
        if sum(len(v) for v in cli.values()) < 3:
            problems.append("%s: the CLI named fewer than 3 frames" % tag)
        self.check("%s bt" % tag, problems)

    def case_names(self, tag, exe, core, cli_graph):
        gfile = os.path.join(self.a.workdir, tag + "-gdb-graph.json")
        r = self.gdb(exe, core, ["heap-graph --format json --output " + gfile])
        with open(gfile) as f:
            g = stack_roots(json.load(f))
        others = [("gdb", g)]
        if self.a.lldb_plugin:
            lfile = os.path.join(self.a.workdir, tag + "-lldb-graph.json")
            self.lldb(exe, core, "heapdom graph --format json --output " + lfile)
            with open(lfile) as f:
                others.append(("lldb", stack_roots(json.load(f))))
        problems = []
        ca = collections.Counter(cli_graph)
        for who, names in others:
            cb = collections.Counter(names)
            problems += ["%s: only in the CLI, not %s: %r x%d" % (tag, who, k, v)
                         for k, v in (ca - cb).items()]
            problems += ["%s: only in %s: %r x%d" % (tag, who, k, v) for k, v in (cb - ca).items()]
        if not any(LOCAL_RE.match(n) for n in cli_graph):
            problems.append("%s: no local roots at all" % tag)
        self.check("%s names" % tag, problems)

    def case_types(self, tag, exe, core):
        out = os.path.join(self.a.workdir, tag + "-gdb-locals.txt")
        script = os.path.join(self.a.workdir, tag + "-locals.py")
        with open(script, "w") as f:
            f.write(GDB_LOCALS % {"plugdir": os.path.dirname(os.path.abspath(self.a.gdb_plugin)),
                                  "out": out})
        self.gdb(exe, core, ["source " + script])
        with open(out) as f:
            want = [l for l in f.read().splitlines() if l]
        r = self.cli(["dominators", core], {"HEAPDOM_DEBUG_LOCALS": "1"})
        got = sorted(l for l in r.stderr.splitlines() if l.startswith("local "))
        ca, cb = collections.Counter(got), collections.Counter(want)
        problems = ["%s: CLI local %r, not gdb's" % (tag, k) for k in (ca - cb)]
        problems += ["%s: gdb local %r, not the CLI's" % (tag, k) for k in (cb - ca)]
        if not want:
            problems.append("%s: gdb found no locals (harness?)" % tag)
        self.check("%s types" % tag, problems)

    def case_owners(self, tag, exe, core):
        cdoc = heaptest.heapdom_json(self.a.heapdom, ["dominators", core, "--json"])
        gfile = os.path.join(self.a.workdir, tag + "-gdb-dom.json")
        self.gdb(exe, core, ["heap-dominators --json --output " + gfile])
        with open(gfile) as f:
            gdoc = json.load(f)
        docs = [("gdb", gdoc)]
        if self.a.lldb_plugin:
            lfile = os.path.join(self.a.workdir, tag + "-lldb-dom.json")
            self.lldb(exe, core, "heapdom dominators --json --output " + lfile)
            with open(lfile) as f:
                docs.append(("lldb", json.load(f)))
        key = lambda r: (r["name"], r["retained"], r.get("retained_blocks"))  # noqa: E731
        mine = sorted(map(key, cdoc["roots"]))
        problems = []
        for who, d in docs:
            theirs = sorted(map(key, d["roots"]))
            for x in sorted(set(mine) - set(theirs)):
                problems.append("%s: owner %r in the CLI, not in %s" % (tag, x, who))
            for x in sorted(set(theirs) - set(mine)):
                problems.append("%s: owner %r in %s, not in the CLI" % (tag, x, who))
        if not any(FRAME_RE.match(r["name"]) for r in cdoc["roots"]):
            problems.append("%s: no frame or local owns anything (fixture?)" % tag)
        self.check("%s owners" % tag, problems)

    def case_corrupt(self, exe, core, truth):
        tids = [int(l.split()[1]) for l in open(truth) if l.startswith("thread ")]
        tid = tids[0]
        # The innermost parse_record frame of that thread: where gdb says
        # its return address is saved.
        r = self.gdb(exe, core, ["thread find %d" % tid], plugin=False)
        m = re.search(r"Thread (\d+) has target id", r.stdout)
        if not m:
            raise HarnessError("gdb cannot find thread %d\n%s" % (tid, r.stdout + r.stderr))
        gnum = m.group(1)
        r = self.gdb(exe, core, ["thread " + gnum, "frame function parse_record", "info frame"],
                     plugin=False)
        m = re.search(r"rip at (0x[0-9a-f]+)", r.stdout)
        lm = re.search(r"Stack level (\d+),", r.stdout)
        if not m or not lm:
            raise HarnessError("gdb info frame:\n" + r.stdout + r.stderr)
        slot, level = int(m.group(1), 16), int(lm.group(1))
        bad = os.path.join(self.a.workdir, "frames-corrupt.core")
        shutil.copyfile(core, bad)
        with open(bad, "r+b") as f:
            data = f.read(64)
            phoff, phentsize, phnum = struct.unpack_from("<Q", data, 32)[0], \
                struct.unpack_from("<H", data, 54)[0], struct.unpack_from("<H", data, 56)[0]
            off = None
            for i in range(phnum):
                f.seek(phoff + i * phentsize)
                p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack("<IIQQQQ", f.read(40))
                if p_type == 1 and p_vaddr <= slot < p_vaddr + p_filesz:
                    off = p_offset + slot - p_vaddr
            if off is None:
                raise HarnessError("slot 0x%x not in the core" % slot)
            f.seek(off)
            f.write(struct.pack("<Q", 0x4141414141414141))
        r = self.cli(["dominators", bad, "--json"])
        r2 = self.cli(["graph", bad, "--format", "json"])
        problems = []
        if r.returncode != 0 or r2.returncode != 0:
            problems.append("corrupt: heapdom failed: rc %s %s\n%s" % (r.returncode, r2.returncode,
                                                                       r.stderr[-2000:]))
        else:
            doc = json.loads(r.stdout)
            warns = [w for w in doc.get("warnings", []) if "thread %d" % tid in w
                     and "backtrace stopped" in w]
            if len(warns) != 1:
                problems.append("corrupt: want one warning about thread %d's backtrace, got %r"
                                % (tid, doc.get("warnings")))
            levels = set()
            for name in stack_roots(json.loads(r2.stdout)):
                m = FRAME_RE.match(name)
                if m and int(m.group(1)) == tid:
                    levels.add(int(m.group(2)))
            if level not in levels or max(levels) != level:
                problems.append("corrupt: thread %d frames %s; want every level up to #%d, none above"
                                % (tid, sorted(levels), level))
        self.check("corrupt", problems)

    def make_core(self, fixture, truth, core):
        """heaptest.make_core, passing SIGUSR2 (frames_fixture's signal
        thread) to the program."""
        for p in (truth, core):
            if os.path.exists(p):
                os.unlink(p)
        run(["gdb", "-q", "-nx", "-batch", "-ex", "handle SIGUSR2 nostop noprint pass",
             "-ex", "break hd_fixture_stop", "-ex", "run", "-ex", "gcore " + core,
             "-ex", "kill", "--args", fixture, truth], self.e, timeout=600)
        if not os.path.isfile(core) or not os.path.isfile(truth):
            raise HarnessError("gdb made no core of %s" % fixture)
        heaptest.check_core(core, fixture)

    def run_core(self, tag, fixture):
        truth = os.path.join(self.a.workdir, tag + ".truth")
        core = os.path.join(self.a.workdir, tag + ".core")
        self.make_core(fixture, truth, core)
        gdoc = heaptest.heapdom_json(self.a.heapdom, ["graph", core, "--format", "json"])
        cli_graph = stack_roots(gdoc)
        self.case_bt(tag, fixture, core, cli_graph)
        self.case_names(tag, fixture, core, cli_graph)
        self.case_types(tag, fixture, core)
        self.case_owners(tag, fixture, core)
        return core, truth


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--frames-fixture", required=True)
    ap.add_argument("--dom-fixture", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    t = Tester(a)
    try:
        core, truth = t.run_core("frames", a.frames_fixture)
        t.case_corrupt(a.frames_fixture, core, truth)
        t.run_core("dom", a.dom_fixture)
    except HarnessError as e:
        print("HARNESS ERROR: %s" % e)
        t.failed += 1
    print("%d passed, %d failed" % (t.passed, t.failed))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())

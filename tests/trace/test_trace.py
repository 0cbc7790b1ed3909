#!/usr/bin/env python3
"""heapdom integration test: libheapdom-trace.so's tables against the
fixture's ground truth.

    test_trace.py --lib LIBHEAPDOM_TRACE --fixture TRACE_FIXTURE --workdir DIR
                  [--only a,b,...] [--keep]

Cases:
  a  exported symbols: exactly the hooks, heapdom_trace, heapdom_trace_inject
  b  LD_PRELOAD with HEAPDOM_TRACE=1: on from the start, counts exact
  c  LD_PRELOAD without HEAPDOM_TRACE: off until switched on, counts exact
  d  injection: fixture started without the library, stopped by gdb at
     hd_inject_point; dlopen, heapdom_trace_inject() (> 0 slots, then 0 on
     a second call), enabled = 1 from gdb; counts after that point exact

The fixture (trace_fixture.c) records what it did: per site function and
operation the calls and sizes, per free its age in epochs, the blocks left
allocated, and the tracer's state at its start (d0) and end (d1). Checked,
as d1 - d0: calls per op, size classes, ages, untracked frees, nothing
dropped; one shard claimed per thread; per site function (every pc inside it, the function's extent from
the symbol table) counts and bytes per op; no pc at all inside functions
only called while tracing was off; the tags of the blocks left allocated
(size, site, birth epoch), including a block of 4 GiB - 1 bytes (one of
4 GiB + 4 KiB is freed at its own site) allocated at the address of one
freed while tracing was off. Expected classes and age buckets are
computed here from heapdom_trace.h's definitions, not by the tracer's code.

Exit status 0 when every case passed; the last line is "N passed, N failed".
"""
import argparse
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration"))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

MAGIC = 0x4543415254444548
VERSION = 5
OPS = 5
FREE = 4
CLASSES = 64
AGES = 64
SHARD_SITES = 512

EXPORTS = {
    "malloc", "calloc", "realloc", "reallocarray", "free", "memalign",
    "posix_memalign", "aligned_alloc", "valloc", "pvalloc",
    "heapdom_trace", "heapdom_trace_inject",
    "_Znwm", "_Znam", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
    "_ZnwmSt11align_val_t", "_ZnamSt11align_val_t",
    "_ZnwmSt11align_val_tRKSt9nothrow_t", "_ZnamSt11align_val_tRKSt9nothrow_t",
    "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm",
    "_ZdlPvRKSt9nothrow_t", "_ZdaPvRKSt9nothrow_t",
    "_ZdlPvSt11align_val_t", "_ZdaPvSt11align_val_t",
    "_ZdlPvmSt11align_val_t", "_ZdaPvmSt11align_val_t",
    "_ZdlPvSt11align_val_tRKSt9nothrow_t", "_ZdaPvSt11align_val_tRKSt9nothrow_t",
}

# Run by gdb in case d. gdb's own inferior calls (`call dlopen(...)`) fail
# on this machine kind: gdb 13 cannot write the x86 extended state on CPUs
# with AMX ("Couldn't write extended state status: Bad address"). So the
# calls are made by hand with the general registers only, which is sound
# at a function's entry: every vector register is caller-saved there.
GDB_INJECT = r"""
import gdb

LIB = %(lib)r
REGS = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
        "r10", "r11", "r12", "r13", "r14", "r15", "rip", "eflags")


def ulong(expr):
    return int(gdb.parse_and_eval("(unsigned long)(%%s)" %% expr))


def call(fn, args=(), data=b""):
    # fn(args...) with data copied above the callee's stack (args may
    # refer to it as None); returns $rax. The callee returns to the entry
    # of hd_inject_point, where the breakpoint stops it.
    saved = {r: int(gdb.parse_and_eval("$" + r)) for r in REGS}
    base = (saved["rsp"] - 65536) & ~0xF
    if data:
        gdb.selected_inferior().write_memory(base, data)
    sp = base - 64 - 8   # at a function's entry rsp + 8 is 16-aligned
    ret = ulong("&hd_inject_point")
    gdb.selected_inferior().write_memory(sp, ret.to_bytes(8, "little"))
    for reg, v in zip(("rdi", "rsi", "rdx"), args):
        gdb.execute("set var $%%s = %%d" %% (reg, base if v is None else v))
    gdb.execute("set var $rsp = %%d" %% sp)
    gdb.execute("set var $rip = %%d" %% fn)
    gdb.execute("continue")
    if ulong("$pc") != ret:
        raise gdb.GdbError("the call did not return to hd_inject_point")
    result = ulong("$rax")
    for r in REGS:
        gdb.execute("set var $%%s = %%d" %% (r, saved[r]))
    return result


gdb.execute("set breakpoint pending off")
gdb.execute("break hd_inject_point")
gdb.execute("run")
handle = call(ulong("&dlopen"), (None, 2), LIB.encode() + b"\0")
first = call(ulong("&heapdom_trace_inject"))
second = call(ulong("&heapdom_trace_inject"))
gdb.execute("set var heapdom_trace.enabled = 1")
enabled = ulong("heapdom_trace.enabled")
print("INJECT handle=%%#x first=%%d second=%%d enabled=%%d" %% (
    handle, first - (1 << 64) if first >> 63 else first, second, enabled))
gdb.execute("delete")
gdb.execute("continue")
"""


def size_class(n):
    # heapdom_trace.h: class 0 is size 0, class k holds [2^(k-1), 2^k).
    return min(n.bit_length(), CLASSES - 1)


class Dump:
    def __init__(self):
        self.state = None
        self.calls = [0] * OPS
        self.dropped = [0, 0]
        self.shards = None   # shards claimed by a thread
        self.classes = {}
        self.ages = {}
        self.sites = {}      # pc -> (counts[5], bytes[5])
        self.live = {}       # ptr -> (size, site pc, birth)


class Truth:
    def __init__(self):
        self.pid = self.sizeof = self.inject = self.enabled_at_start = None
        self.big_skipped = False
        self.big_reused = None
        self.shards = None   # shards the fixture's threads must have claimed
        self.allocs = []     # (fn, op, size, count)
        self.frees = []      # (fn, bytes, age, count)
        self.live = []       # (ptr, size, fn, birth)
        self.leaks = set()   # ptr of live blocks nothing points at
        self.fns = {}        # name -> run-time address
        self.off = set()
        self.dumps = {"d0": Dump(), "d1": Dump()}


def parse_truth(path):
    t = Truth()
    nrec = 0
    end = None
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "end":
                end = int(w[1])
                break
            nrec += 1
            tag = w[0]
            if tag == "pid":
                t.pid = int(w[1])
            elif tag == "sizeof":
                t.sizeof = int(w[1])
            elif tag == "inject":
                t.inject = int(w[1])
            elif tag == "enabled_at_start":
                t.enabled_at_start = int(w[1])
            elif tag == "alloc":
                t.allocs.append((w[1], int(w[2]), int(w[3]), int(w[4])))
            elif tag == "free":
                t.frees.append((w[1], int(w[2]), int(w[3]), int(w[4])))
            elif tag == "live":
                t.live.append((int(w[1], 16), int(w[2]), w[3], int(w[4])))
            elif tag == "leak":
                t.leaks.add(int(w[1], 16))
            elif tag == "fn":
                t.fns[w[1]] = int(w[2], 16)
            elif tag == "off":
                t.off.add(w[1])
            elif tag == "shards":
                t.shards = int(w[1])
            elif tag == "big_skipped":
                t.big_skipped = True
            elif tag == "big_reused":
                t.big_reused = w[1] == "1"
            elif tag in t.dumps:
                d = t.dumps[tag]
                kind, v = w[1], w[2:]
                if kind == "state":
                    d.state = dict(magic=int(v[0], 16), version=int(v[1]), size=int(v[2]),
                                   enabled=int(v[3]), epoch=int(v[4]), pid=int(v[5]))
                elif kind == "calls":
                    d.calls = [int(x) for x in v]
                elif kind == "dropped":
                    d.dropped = [int(x) for x in v]
                elif kind == "shards":
                    d.shards = int(v[0])
                elif kind == "class":
                    d.classes[int(v[0])] = (int(v[1]), int(v[2]))
                elif kind == "age":
                    d.ages[int(v[0])] = (int(v[1]), int(v[2]))
                elif kind == "site":
                    nums = [int(x) for x in v[1:]]
                    d.sites[int(v[0], 16)] = (nums[:OPS], nums[OPS:])
                elif kind == "live":
                    d.live[int(v[0], 16)] = (int(v[1]), int(v[2], 16), int(v[3]))
                else:
                    raise HarnessError("%s: unknown dump record %r" % (path, line))
            else:
                raise HarnessError("%s: unknown record %r" % (path, line))
    if end is None or end != nrec:
        raise HarnessError("%s: truncated truth file (end %s, %d records)" % (path, end, nrec))
    return t


def function_extents(exe, truth):
    """name -> (lo, hi) run-time extent of each site function, from the
    fixture's own addresses and the symbol sizes in its symbol table."""
    r = subprocess.run(["nm", "-S", "--defined-only", exe], capture_output=True, text=True)
    if r.returncode != 0:
        raise HarnessError("nm %s: %s" % (exe, r.stderr))
    syms = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if len(w) == 4 and w[2] in "tT":
            syms[w[3]] = (int(w[0], 16), int(w[1], 16))
    ext, bias = {}, None
    for name, addr in truth.fns.items():
        if name not in syms:
            raise HarnessError("%s: no symbol %s" % (exe, name))
        lo, size = syms[name]
        if bias is None:
            bias = addr - lo
        elif addr - lo != bias:
            raise HarnessError("%s: inconsistent load bias" % name)
        ext[name] = (addr, addr + size)
    return ext


def fn_of(ext, pc):
    for name, (lo, hi) in ext.items():
        if lo < pc <= hi:   # a return address: after the call, at most the end
            return name
    return None


def compare(truth, ext, enabled_at_start):
    problems = []
    d0, d1 = truth.dumps["d0"], truth.dumps["d1"]
    if d1.state is None or d0.state is None:
        return ["no state dump"]
    s = d1.state
    for key, want in (("magic", MAGIC), ("version", VERSION), ("size", truth.sizeof),
                      ("pid", truth.pid)):
        if s[key] != want:
            problems.append("state %s = %#x, want %#x" % (key, s[key], want))
    if truth.enabled_at_start != enabled_at_start:
        problems.append("enabled at the fixture's start = %s, want %d"
                        % (truth.enabled_at_start, enabled_at_start))

    # Expectations, from the fixture's record of what it did.
    calls = [0] * OPS
    classes, ages = {}, {}
    untracked = 0
    per_fn = {name: ([0] * OPS, [0] * OPS) for name in ext}
    for fn, op, size, count in truth.allocs:
        calls[op] += count
        k = size_class(size)
        c = classes.setdefault(k, [0, 0])
        c[0] += count
        c[1] += count * size
        per_fn[fn][0][op] += count
        per_fn[fn][1][op] += count * size
    for fn, nbytes, age, count in truth.frees:
        calls[FREE] += count
        per_fn[fn][0][FREE] += count
        per_fn[fn][1][FREE] += count * nbytes
        if age < 0:
            untracked += count
        else:
            a = ages.setdefault(min(age, AGES - 1), [0, 0])
            a[0] += count
            a[1] += count * nbytes

    def diff(f, key, n):
        return [f(d1, key, i) - f(d0, key, i) for i in range(n)]

    got_calls = [d1.calls[i] - d0.calls[i] for i in range(OPS)]
    if got_calls != calls:
        problems.append("calls per op %s, want %s" % (got_calls, calls))
    # Each thread counts into its own shard: the counts above are exact only
    # if the reader adds them up, and threads must not have fallen back to
    # the shared tables.
    if d1.shards != truth.shards:
        problems.append("%s shards claimed, want one per thread, as many as there are: %s"
                        % (d1.shards, truth.shards))
    got = [d1.dropped[i] - d0.dropped[i] for i in range(2)]
    if got != [0, untracked]:
        problems.append("dropped sites, untracked frees = %s, want %s"
                        % (got, [0, untracked]))
    for name, table, want in (("size class", "classes", classes), ("age", "ages", ages)):
        keys = set(want) | set(getattr(d1, table)) | set(getattr(d0, table))
        for k in sorted(keys):
            g1 = getattr(d1, table).get(k, (0, 0))
            g0 = getattr(d0, table).get(k, (0, 0))
            g = [g1[0] - g0[0], g1[1] - g0[1]]
            w = want.get(k, [0, 0])
            if g != w:
                problems.append("%s %d: count, bytes %s, want %s" % (name, k, g, w))

    # Per site function: the sum over its pcs.
    got_fn = {name: ([0] * OPS, [0] * OPS) for name in ext}
    for pc, (counts, nbytes) in d1.sites.items():
        name = fn_of(ext, pc)
        if name is None:
            continue
        if pc in d0.sites:
            problems.append("site %#x (%s) already in the baseline" % (pc, name))
        if name in truth.off:
            problems.append("site %#x in %s, which only ran while tracing was off: %s"
                            % (pc, name, counts))
        for i in range(OPS):
            got_fn[name][0][i] += counts[i]
            got_fn[name][1][i] += nbytes[i]
    for name in sorted(ext):
        if got_fn[name] != per_fn[name]:
            problems.append("%s: counts %s bytes %s, want counts %s bytes %s"
                            % (name, got_fn[name][0], got_fn[name][1],
                               per_fn[name][0], per_fn[name][1]))

    # wide_site calls malloc from more sites than a shard holds: the counts
    # above are exact only if the shared rows took the rest.
    wide = sum(1 for pc in d1.sites if fn_of(ext, pc) == "wide_site")
    if wide <= SHARD_SITES:
        problems.append("wide_site has %d call sites, want more than a shard holds (%d)"
                        % (wide, SHARD_SITES))

    # Blocks still allocated: their tags.
    bad = 0
    for ptr, size, fn, birth in truth.live:
        e = d1.live.get(ptr)
        want = (size, fn, birth)
        g = (e[0], fn_of(ext, e[1]), e[2]) if e else None
        if g != want:
            bad += 1
            if bad <= 5:
                problems.append("live %#x: (size, site, birth) %s, want %s" % (ptr, g, want))
    if bad > 5:
        problems.append("... %d live blocks wrong in all" % bad)
    if not truth.live:
        problems.append("the fixture left no live block to check")
    if truth.big_skipped:
        print("  note: this machine refused 4 GiB blocks: the big-size path was not exercised")
    elif truth.big_reused is False:
        print("  note: mmap did not reuse the stale 4 GiB block's address: that path was not exercised")
    return problems


class Runner(heaptest.CaseRunner):
    def __init__(self, args):
        super().__init__(args.workdir, args.only, args.keep)
        self.lib = os.path.abspath(args.lib)
        self.fixture = os.path.abspath(args.fixture)

    def env(self, **extra):
        env = heaptest._env()
        env.pop("LD_PRELOAD", None)
        env.pop("HEAPDOM_TRACE", None)
        env.update(extra)
        return env

    def run_fixture(self, tag, env):
        truth = self.path(tag + ".truth")
        if os.path.exists(truth):
            os.unlink(truth)
        try:
            r = subprocess.run([self.fixture, truth, "--lib", self.lib, "--big"], env=env,
                               capture_output=True, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            raise HarnessError("fixture timed out")
        if r.returncode != 0:
            raise HarnessError("fixture exited with %d: %s" % (r.returncode, r.stderr[-2000:]))
        return parse_truth(truth)

    def case_exports(self):
        r = subprocess.run(["nm", "-D", "--defined-only", self.lib], capture_output=True,
                           text=True)
        if r.returncode != 0:
            raise HarnessError("nm -D: %s" % r.stderr)
        got = {line.split()[-1] for line in r.stdout.splitlines() if line.strip()}
        problems = []
        if got - EXPORTS:
            problems.append("exported but should not be: %s" % sorted(got - EXPORTS))
        if EXPORTS - got:
            problems.append("not exported: %s" % sorted(EXPORTS - got))
        r = subprocess.run(["readelf", "-d", self.lib], capture_output=True, text=True)
        needed = re.findall(r"\(NEEDED\).*\[(.*)\]", r.stdout)
        if needed != ["libc.so.6"]:
            problems.append("needs %s, want libc.so.6 only" % needed)
        return problems

    def case_preload(self, trace_env):
        extra = {"LD_PRELOAD": self.lib}
        if trace_env:
            extra["HEAPDOM_TRACE"] = "1"
        truth = self.run_fixture("preload%d" % trace_env, self.env(**extra))
        return compare(truth, function_extents(self.fixture, truth), 1 if trace_env else 0)

    def case_inject(self):
        truth = self.path("inject.truth")
        script = self.path("inject.gdb.py")
        for p in (truth, script):
            if os.path.exists(p):
                os.unlink(p)
        with open(script, "w") as f:
            f.write(GDB_INJECT % {"lib": self.lib})
        cmd = ["gdb", "-q", "-nx", "-batch", "-x", script,
               "--args", self.fixture, truth, "--lib", self.lib, "--inject", "--big"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=self.env())
        except subprocess.TimeoutExpired:
            raise HarnessError("gdb timed out")
        out = r.stdout + r.stderr
        m = re.search(r"^INJECT handle=(\S+) first=(-?\d+) second=(-?\d+) enabled=(\d+)$",
                      out, re.M)
        if not m:
            raise HarnessError("gdb did not inject:\n%s" % out[-3000:])
        problems = []
        if int(m.group(1), 16) == 0:
            problems.append("dlopen returned NULL")
        first, second = int(m.group(2)), int(m.group(3))
        if first <= 0:
            problems.append("heapdom_trace_inject() = %d, want > 0" % first)
        if second != 0:
            problems.append("second heapdom_trace_inject() = %d, want 0" % second)
        if m.group(4) != "1":
            problems.append("heapdom_trace.enabled reads %s after gdb set it" % m.group(4))
        if "exited normally" not in out:
            raise HarnessError("fixture did not exit normally under gdb:\n%s" % out[-3000:])
        t = parse_truth(truth)
        return problems + compare(t, function_extents(self.fixture, t), 1)

    def run(self):
        os.makedirs(self.work, exist_ok=True)
        self.case("a exported symbols", self.case_exports)
        self.case("b LD_PRELOAD, HEAPDOM_TRACE=1", lambda: self.case_preload(True))
        self.case("c LD_PRELOAD, off until switched on", lambda: self.case_preload(False))
        self.case("d injection from gdb", self.case_inject)
        return self.finish((".truth",), kept="truth files")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only", help="comma-separated case letters, e.g. a,b")
    ap.add_argument("--keep", action="store_true", help="keep truth files")
    return Runner(ap.parse_args()).run()


if __name__ == "__main__":
    sys.exit(main())

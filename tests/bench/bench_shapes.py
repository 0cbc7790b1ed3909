#!/usr/bin/env python3
"""bench_shapes.py -- heapdom on realistic heap shapes, against chap (issue 23).
A benchmark: it prints figures and asserts nothing.

    bench_shapes.py [--shape server|list|cxx|cpython|all] [--blocks N]
                    [--runs R] [--keep DIR] [--heapdom PATH] [--workdir DIR]
                    [--python PATH] [--scale [--sizes N,N,...]] [--json FILE]

Environment: CHAP=/path/to/chap (optional; chap is not part of the project,
build it from its public source yourself), HEAPDOM (default for --heapdom).

For each shape (tests/bench/shapes/: server.c, list.c, cxx.cpp, cpython.py)
it builds the program (gcc/g++ -g -O2 into the work directory), runs it to
its stop (bench_stop() under gdb; the Python one waits on stdin), cores it
with gdb's gcore, reads the core once to have it in the page cache, then
times with /usr/bin/time -v:

  typed       heapdom dominators --profile CORE
  chap        echo 'count leaked' | $CHAP CORE   (only with CHAP), run
              alternately with `typed`: typed, chap, typed, chap, ...
  untyped     heapdom dominators --untyped --profile CORE
  leaks       heapdom leaks --profile CORE
  stats       heapdom stats --profile CORE
  semantic    heapdom dominators --semantic --profile CORE   (cpython only)

R runs each, and prints per shape: wall and peak RSS (min and median), the
phases of heapdom's --profile (median), ns per block and per edge, bytes per
block and per edge, and chap's ratios (chap wall / heapdom wall, heapdom RSS
/ chap RSS; each pair of one run, min and median over the runs), with both
tools' leak counts.

"blocks" is the block table's count (used and free blocks, what the walk
goes through); for the CPython shape pymalloc's used slots are added (the
sub-allocator blocks the cpython module finds, counted once per core with
`heapdom frameworks`), since its objects live inside pymalloc's arenas.

--scale makes the shape's core at each of --sizes (default 1M, 5M, 11M and
25M blocks) and prints the typed (and untyped) dominators' ns/block per
phase at each size, and how far apart the sizes are (max/min): the issue's
"flat within 20%" target.

Cores are large (60-100 bytes per block): they go to --workdir (default: a
temporary directory under $TMPDIR) and are deleted after use unless --keep
DIR is given; a core already in DIR for the same shape and size is reused
(the programs are built into DIR too: the core names its program's path,
where heapdom reads its DWARF). The shapes are deterministic and gdb runs
them without address randomization, so a core made again is the same heap.
Exit status 2 when a tool it needs is missing, 1 when a step fails.
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.normpath(os.path.join(HERE, "..", ".."))
SHAPES_DIR = os.path.join(HERE, "shapes")
SHAPES = ("server", "list", "cxx", "cpython")
DEFAULT_BLOCKS = 11_000_000
SCALE_SIZES = (1_000_000, 5_000_000, 11_000_000, 25_000_000)

# Each shape's program takes a size argument; these are the blocks per unit
# of it, measured (the script reports the counts the tools see, not these).
SHAPE_INFO = {
    "server": {"src": "server.c", "compiler": "gcc", "per_unit": 3.1875},
    "list": {"src": "list.c", "compiler": "gcc", "per_unit": 5.235},
    "cxx": {"src": "cxx.cpp", "compiler": "g++", "per_unit": 6.67},
    "cpython": {"src": "cpython.py", "compiler": None, "per_unit": 72.0},
}
# Core bytes per block, roughly, for the disk check (the largest shape's).
CORE_BYTES_PER_BLOCK = 110


class BenchError(Exception):
    pass


def die(msg, status=2):
    print("bench_shapes.py: " + msg, file=sys.stderr)
    sys.exit(status)


def median(xs):
    return statistics.median(xs) if xs else None


def fmt_s(x):
    return "-" if x is None else "%.2f" % x


def fmt_mib(kib):
    return "-" if kib is None else "%.0f" % (kib / 1024.0)


# ---------------------------------------------------------------- timing --

def have_time_v():
    if not os.access("/usr/bin/time", os.X_OK):
        return False
    r = subprocess.run(["/usr/bin/time", "-v", "true"], capture_output=True)
    return r.returncode == 0


HAVE_TIME_V = None


def timed(argv, stdin_data, out_path, err_path, workdir, timeout=None):
    """Run argv; return (rc, wall seconds, peak RSS KiB). With /usr/bin/time
    -v when it works, else the child's own rusage from wait4. Past timeout
    seconds the run is stopped: (None, timeout, None)."""
    time_file = os.path.join(workdir, "time.txt")
    stdin = subprocess.PIPE if stdin_data is not None else subprocess.DEVNULL
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        if HAVE_TIME_V:
            p = subprocess.Popen(["/usr/bin/time", "-v", "-o", time_file] + argv,
                                 stdin=stdin, stdout=out, stderr=err)
            if stdin_data is not None:
                p.stdin.write(stdin_data.encode())
                p.stdin.close()
            try:
                rc = p.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop_tree(p)
                return None, timeout, None
            wall = rss = None
            with open(time_file) as f:
                for line in f:
                    k, _, v = line.strip().partition(": ")
                    if k.startswith("Elapsed (wall clock) time"):
                        s = 0.0
                        for part in v.split(":"):
                            s = s * 60 + float(part)
                        wall = s
                    elif k == "Maximum resident set size (kbytes)":
                        rss = int(v)
                    elif k == "Exit status":
                        rc = int(v)
            return rc, wall, rss
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=err)
        if stdin_data is not None:
            p.stdin.write(stdin_data.encode())
            p.stdin.close()
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if timeout and time.monotonic() - t0 > timeout:
                p.kill()
                os.wait4(p.pid, 0)
                return None, timeout, None
            time.sleep(0.01)
        p.returncode = os.waitstatus_to_exitcode(status)
        return p.returncode, time.monotonic() - t0, ru.ru_maxrss


def stop_tree(p):
    # /usr/bin/time's child first (its only child), then time itself
    try:
        with open("/proc/%d/task/%d/children" % (p.pid, p.pid)) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        kids = []
    for k in kids:
        try:
            os.kill(k, 9)
        except OSError:
            pass
    p.kill()
    p.wait()


# --------------------------------------------------------------- parsing --

def parse_profile(text):
    """The figures of heapdom's --profile lines (core/tool/main.c's
    print_profile): phase seconds, blocks, edges, bytes per block/edge."""
    prof = {"phases": {}}
    lines = [l for l in text.splitlines() if l.startswith("profile: ")]
    if not lines:
        return None
    first = lines[0][len("profile: "):]
    m = re.search(r"propagation (-?[\d.]+) s(?: \(\d+ threads?\))?: (\d+) typed blocks",
                  first)
    if m:
        prof["phases"]["propagation"] = float(m.group(1))
        prof["typed_blocks"] = int(m.group(2))
    m = re.search(r"(\d+) edges", first)
    if m:
        prof["edges"] = int(m.group(1))
    top = re.sub(r"\([^)]*\)", "", first)
    for name, secs in re.findall(r"([a-z]+) (-?[\d.]+) s", top):
        prof["phases"][name] = float(secs)
    for line in lines[1:]:
        m = re.search(r"profile: (\d+) blocks", line)
        if m:
            prof["blocks"] = int(m.group(1))
        m = re.search(r"([\d.]+) bytes/block \+ ([\d.]+) bytes/edge", line)
        if m:
            prof["bytes_per_block"] = float(m.group(1))
            prof["bytes_per_edge"] = float(m.group(2))
        else:
            m = re.search(r"block table ([\d.]+) bytes/block", line)
            if m:
                prof["bytes_per_block"] = float(m.group(1))
        m = re.search(r"anonymous RSS (\d+) KiB", line)
        if m:
            prof["anon_kib"] = int(m.group(1))
    return prof


def parse_heapdom_leaks(text):
    m = re.search(r"^(\d+) leaked blocks, ", text, re.M)
    return int(m.group(1)) if m else None


def parse_chap_count(text):
    # chap: "N allocations use 0xHEX (DEC) bytes."
    # (the decimal with thousands separators)
    m = re.search(r"(\d+) allocations use 0x[0-9a-f]+ \(([\d,]+)\) bytes", text)
    return (int(m.group(1)), int(m.group(2).replace(",", ""))) if m else None


def parse_used_blocks(text):
    # heapdom stats: "heap of CORE: N used blocks (...), N free (...)"
    m = re.search(r": (\d+) used blocks \([^)]*\), (\d+) free", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_subblocks(text):
    # heapdom frameworks: "... N sub-allocator blocks" per module
    return sum(int(x) for x in re.findall(r"(\d+) sub-allocator blocks", text))


# ------------------------------------------------------------ the shapes --

class Bench:
    def __init__(self, a):
        self.a = a
        self.chap = a.chap
        self.results = []

    def log(self, msg):
        print(msg, flush=True)

    def build(self, shape, workdir):
        info = SHAPE_INFO[shape]
        src = os.path.join(SHAPES_DIR, info["src"])
        if info["compiler"] is None:
            return src
        exe = os.path.join(workdir, shape)
        if os.path.exists(exe):
            return exe
        cmd = [info["compiler"], "-g", "-O2", "-o", exe, src]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            raise BenchError("building %s failed: %s\n%s" % (shape, " ".join(cmd), r.stderr))
        return exe

    def units_for(self, shape, blocks):
        return max(1, int(round(blocks / SHAPE_INFO[shape]["per_unit"])))

    def make_core(self, shape, blocks, workdir, coredir):
        units = self.units_for(shape, blocks)
        core = os.path.join(coredir, "%s-%d.core" % (shape, units))
        if os.path.exists(core) and os.path.exists(core + ".done"):
            self.log("%s: reusing %s" % (shape, core))
            with open(core + ".done") as f:
                self.truth = f.read().strip()
            return core, 0.0
        need = blocks * CORE_BYTES_PER_BLOCK + (300 << 20)
        free = shutil.disk_usage(coredir).free
        if free < need:
            raise BenchError("%s: about %.1f GB needed for the core in %s, %.1f GB free"
                             % (shape, need / 1e9, coredir, free / 1e9))
        # A kept core keeps its program beside it: heapdom reads the program's
        # DWARF from the path the core records.
        prog = self.build(shape, coredir)
        env = dict(os.environ, DEBUGINFOD_URLS="")
        t0 = time.monotonic()
        if shape == "cpython":
            self.gcore_python(prog, units, core, env, workdir)
        else:
            log = os.path.join(workdir, "gdb.log")
            # bench_stop(used, leaked): what the program itself counted
            cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "break bench_stop", "-ex", "run",
                   "-ex", 'printf "truth %lu %lu\\n", used, leaked',
                   "-ex", "gcore " + core, "-ex", "kill", "--args", prog, str(units)]
            with open(log, "wb") as f:
                subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=env)
            if not os.path.exists(core) or os.path.getsize(core) == 0:
                with open(log, errors="replace") as f:
                    tail = f.read()[-2000:]
                raise BenchError("%s: gdb wrote no core; its log:\n%s" % (shape, tail))
            with open(log, errors="replace") as f:
                m = re.search(r"^truth (\d+) (\d+)$", f.read(), re.M)
            truth = "used %s leaked %s" % m.groups() if m else ""
        if shape == "cpython":
            truth = self.py_truth
        with open(core + ".done", "w") as f:
            f.write(truth + "\n")
        secs = time.monotonic() - t0
        self.truth = truth
        self.log("%s: %s %d -> core %.0f MiB in %.0f s"
                 % (shape, os.path.basename(prog), units, os.path.getsize(core) / 1048576, secs))
        return core, secs

    def gcore_python(self, script, units, core, env, workdir):
        # The script prints "ready ..." and blocks reading stdin: gdb attaches,
        # cores it and detaches; closing stdin ends it.
        p = subprocess.Popen([self.a.python, script, str(units)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True, env=env)
        try:
            line = p.stdout.readline()
            if not line.startswith("ready"):
                raise BenchError("cpython: the script did not reach its stop (%r)" % line)
            w = line.split()
            self.py_truth = "gc-objects %s dropped-cycles %s" % (w[1], w[3])
            log = os.path.join(workdir, "gdb.log")
            cmd = ["gdb", "-q", "-nx", "-batch", "-p", str(p.pid),
                   "-ex", "gcore " + core, "-ex", "detach"]
            with open(log, "wb") as f:
                subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL, env=env)
            if not os.path.exists(core) or os.path.getsize(core) == 0:
                with open(log, errors="replace") as f:
                    tail = f.read()[-2000:]
                raise BenchError("cpython: gdb wrote no core; its log:\n%s" % tail)
        finally:
            try:
                p.stdin.close()
            except OSError:
                pass
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def warm(self, core):
        # the core into the page cache, so no run pays the first read
        with open(core, "rb") as f:
            while f.read(1 << 24):
                pass

    def heapdom(self, args, core, workdir, tag):
        out = os.path.join(workdir, tag + ".out")
        err = os.path.join(workdir, tag + ".err")
        argv = [self.a.heapdom] + args + [core]
        rc, wall, rss = timed(argv, None, out, err, workdir)
        with open(err, errors="replace") as f:
            etext = f.read()
        if rc != 0:
            raise BenchError("%s failed (status %d):\n%s" % (" ".join(argv), rc, etext[-2000:]))
        with open(out, errors="replace") as f:
            otext = f.read()
        return {"wall": wall, "rss": rss, "profile": parse_profile(etext), "out": otext}

    def run_chap(self, core, workdir):
        out = os.path.join(workdir, "chap.out")
        err = os.path.join(workdir, "chap.err")
        rc, wall, rss = timed([self.chap, core], "count leaked\n", out, err, workdir,
                              timeout=self.a.chap_timeout)
        if rc is None:
            self.log("chap: stopped after %d s (--chap-timeout)" % self.a.chap_timeout)
            return {"wall": None, "rss": None, "count": None, "out": "",
                    "timeout": self.a.chap_timeout}
        with open(out, errors="replace") as f:
            otext = f.read()
        if rc != 0:
            with open(err, errors="replace") as f:
                raise BenchError("chap failed (status %d):\n%s" % (rc, f.read()[-2000:]))
        return {"wall": wall, "rss": rss, "count": parse_chap_count(otext), "out": otext}

    def count_blocks(self, shape, core, workdir):
        """(table blocks, used blocks, sub-allocator blocks) of the core, untimed."""
        st = self.heapdom(["stats", "--profile"], core, workdir, "count-stats")
        used = parse_used_blocks(st["out"])
        table = (st["profile"] or {}).get("blocks")
        sub = 0
        if shape == "cpython":
            fw = self.heapdom(["frameworks", "--framework", "cpython"], core, workdir, "count-fw")
            sub = parse_subblocks(fw["out"])
        return {"table": table, "used": used[0] if used else None,
                "free": used[1] if used else None, "sub": sub,
                "blocks": (table or 0) + sub}

    def commands(self, shape):
        cmds = [("untyped", ["dominators", "--untyped", "--profile"]),
                ("leaks", ["leaks", "--profile"]),
                ("stats", ["stats", "--profile"])]
        if shape == "cpython":
            cmds.append(("semantic", ["dominators", "--semantic", "--profile"]))
        return cmds

    def bench_shape(self, shape, blocks, workdir, coredir, keep, full=True):
        core, gsecs = self.make_core(shape, blocks, workdir, coredir)
        try:
            counts = self.count_blocks(shape, core, workdir)
            self.warm(core)
            runs = {"typed": []}
            if self.chap:
                runs["chap"] = []
            # typed dominators and chap alternately, so both see the same load
            chap_stopped = False
            for r in range(self.a.runs):
                runs["typed"].append(self.heapdom(["dominators", "--profile"], core,
                                                  workdir, "typed"))
                if self.chap and not chap_stopped:
                    runs["chap"].append(self.run_chap(core, workdir))
                    # one run past the limit says enough; the others would too
                    chap_stopped = runs["chap"][-1].get("timeout") is not None
            if full:
                for name, args in self.commands(shape):
                    runs[name] = [self.heapdom(args, core, workdir, name)
                                  for _ in range(self.a.runs)]
            else:
                runs["untyped"] = [self.heapdom(["dominators", "--untyped", "--profile"],
                                                core, workdir, "untyped")
                                   for _ in range(self.a.runs)]
            if full:
                lk = self.heapdom(["leaks"], core, workdir, "leaks-count")
                counts["heapdom_leaked"] = parse_heapdom_leaks(lk["out"])
            res = {"shape": shape, "units": self.units_for(shape, blocks), "truth": self.truth,
                   "core_bytes": os.path.getsize(core), "gcore_seconds": gsecs,
                   "counts": counts, "runs": runs}
            return res
        finally:
            if not keep:
                # (chap leaves CORE.symreqs, a gdb script for its symbols)
                for p in (core, core + ".done", core + ".symreqs", core + ".symdefs"):
                    if os.path.exists(p):
                        os.unlink(p)


# --------------------------------------------------------------- reports --

PHASES = ("open", "walk", "frames", "types", "propagation", "graph", "dominators",
          "semantic", "report", "total")


# the phases whose work is per edge
EDGE_PHASES = ("graph", "dominators")


def phase_medians(runs):
    out = {}
    for ph in PHASES:
        xs = [r["profile"]["phases"][ph] for r in runs
              if r.get("profile") and ph in r["profile"]["phases"]]
        if xs:
            out[ph] = median(xs)
    return out


def print_shape(res):
    c = res["counts"]
    runs = res["runs"]
    print()
    print("### %s (size argument %d)" % (res["shape"], res["units"]))
    print()
    print("core %.0f MiB; %s used blocks, %s free; block table %s blocks%s"
          % (res["core_bytes"] / 1048576, fmt_int(c["used"]), fmt_int(c["free"]),
             fmt_int(c["table"]),
             "; %s pymalloc slots (sub-allocator blocks): %s blocks in all"
             % (fmt_int(c["sub"]), fmt_int(c["blocks"])) if c["sub"] else ""))
    typed = runs["typed"]
    edges = next((r["profile"].get("edges") for r in typed
                  if r.get("profile") and r["profile"].get("edges")), None)
    if edges:
        print("edges (typed graph): %s" % fmt_int(edges))
    if res.get("truth"):
        print("the program's own count: %s" % res["truth"])
    print()
    cols = [ph for ph in PHASES if any(ph in phase_medians(runs[n]) for n in runs if n != "chap")]
    print("| command | wall min | wall median | peak RSS MiB min | median | "
          + " | ".join(cols) + " |")
    print("|---|---|---|---|---|" + "---|" * len(cols))
    for name in ("typed", "untyped", "leaks", "stats", "semantic", "chap"):
        if name not in runs:
            continue
        rr = runs[name]
        label = {"typed": "dominators", "untyped": "dominators --untyped",
                 "leaks": "leaks", "stats": "stats", "semantic": "dominators --semantic",
                 "chap": "chap count leaked"}[name]
        stopped = [r["timeout"] for r in rr if r.get("timeout")]
        rr = [r for r in rr if not r.get("timeout")]
        if stopped and not rr:
            print("| %s | > %d (stopped) | | | | %s |" % (label, stopped[0], " | ".join("" for _ in cols)))
            continue
        walls = [r["wall"] for r in rr]
        rss = [r["rss"] for r in rr]
        pm = phase_medians(rr) if name != "chap" else {}
        print("| %s | %s | %s | %s | %s | %s |" % (
            label, fmt_s(min(walls)), fmt_s(median(walls)), fmt_mib(min(rss)),
            fmt_mib(median(rss)), " | ".join(fmt_s(pm.get(ph)) for ph in cols)))
    blocks = c["blocks"]
    for name in ("typed", "semantic"):
        if name in runs:
            print_per_block(name, runs[name], blocks)
    stopped = [r["timeout"] for r in runs.get("chap", []) if r.get("timeout")]
    if stopped:
        print()
        print("against chap: chap stopped after %d s, heapdom's typed dominators took "
              "%s s (median): chap wall / heapdom wall > %.1f; chap's leak count unknown, "
              "heapdom leaks %s blocks"
              % (stopped[0], fmt_s(median([r["wall"] for r in typed])),
                 stopped[0] / median([r["wall"] for r in typed]),
                 fmt_int(c.get("heapdom_leaked"))))
    elif "chap" in runs:
        pairs = list(zip(typed, runs["chap"]))
        speed = [ch["wall"] / hd["wall"] for hd, ch in pairs if hd["wall"]]
        mem = [hd["rss"] / ch["rss"] for hd, ch in pairs if ch["rss"]]
        print()
        print("against chap (pairs run alternately): chap wall / heapdom wall min %.2f, "
              "median %.2f (target >= 4); heapdom RSS / chap RSS min %.2f, median %.2f "
              "(target <= 0.5)" % (min(speed), median(speed), min(mem), median(mem)))
        cc = runs["chap"][0]["count"]
        print("leaked: chap %s allocations (%s bytes); heapdom leaks %s blocks"
              % (fmt_int(cc[0]) if cc else "?", fmt_int(cc[1]) if cc else "?",
                 fmt_int(c.get("heapdom_leaked"))))
    elif c.get("heapdom_leaked") is not None:
        print()
        print("leaked: heapdom leaks %s blocks (no CHAP set: no comparison)"
              % fmt_int(c["heapdom_leaked"]))


def print_per_block(name, rr, blocks):
    label = {"typed": "typed dominators", "semantic": "dominators --semantic"}[name]
    edges = next((r["profile"].get("edges") for r in rr
                  if r.get("profile") and r["profile"].get("edges")), None)
    pm = phase_medians(rr)
    print()
    print("%s per block (%s blocks) and per edge (%s edges), medians:"
          % (label, fmt_int(blocks), fmt_int(edges)))
    print()
    print("| phase | s | ns/block | ns/edge |")
    print("|---|---|---|---|")
    for ph in PHASES:
        if ph in pm and ph != "open":
            print("| %s | %.3f | %.0f | %s |" % (
                ph, pm[ph], pm[ph] * 1e9 / blocks if blocks else 0,
                "%.0f" % (pm[ph] * 1e9 / edges) if edges and ph in EDGE_PHASES else "-"))
    bpb = [r["profile"].get("bytes_per_block") for r in rr if r.get("profile")]
    bpe = [r["profile"].get("bytes_per_edge") for r in rr if r.get("profile")]
    anon = [r["profile"].get("anon_kib") for r in rr if r.get("profile")]
    bpb = [x for x in bpb if x is not None]
    bpe = [x for x in bpe if x is not None]
    anon = [x for x in anon if x is not None]
    print()
    print("memory: analysis structures %s bytes/block + %s bytes/edge (profile, per block "
          "of the table); peak RSS %s bytes/block; anonymous RSS at the end %s MiB"
          % ("%.1f" % median(bpb) if bpb else "-", "%.1f" % median(bpe) if bpe else "-",
             "%.0f" % (median([r["rss"] for r in rr]) * 1024 / blocks) if blocks else "-",
             fmt_mib(median(anon)) if anon else "-"))


def fmt_int(x):
    return "-" if x is None else "{:,}".format(x)


def print_scale(shape, results):
    print()
    print("### %s at each size: typed dominators, ns per block per phase (medians)" % shape)
    print()
    sizes = [r["counts"]["blocks"] for r in results]
    cols = [ph for ph in PHASES if ph != "open"
            and any(ph in phase_medians(r["runs"]["typed"]) for r in results)]
    print("| blocks | edges | wall s | peak RSS MiB | B/block (RSS) | "
          + " | ".join(cols) + " |")
    print("|---|---|---|---|---|" + "---|" * len(cols))
    per = {ph: [] for ph in cols}
    for r, n in zip(results, sizes):
        t = r["runs"]["typed"]
        pm = phase_medians(t)
        edges = next((x["profile"].get("edges") for x in t if x.get("profile")), None)
        rss = median([x["rss"] for x in t])
        cells = []
        for ph in cols:
            v = pm.get(ph)
            if v is None:
                cells.append("-")
            else:
                per[ph].append(v * 1e9 / n)
                cells.append("%.0f" % (v * 1e9 / n))
        print("| %s | %s | %s | %s | %.0f | %s |" % (
            fmt_int(n), fmt_int(edges), fmt_s(median([x["wall"] for x in t])),
            fmt_mib(rss), rss * 1024 / n, " | ".join(cells)))
    print("| max/min | | | | | %s |" % " | ".join(
        "%.2f" % (max(per[ph]) / min(per[ph])) if per[ph] and min(per[ph]) > 0 else "-"
        for ph in cols))
    # the untyped run and chap at each size
    print()
    print("| blocks | untyped wall s | untyped ns/block | chap wall s | chap/heapdom wall | heapdom/chap RSS |")
    print("|---|---|---|---|---|---|")
    for r, n in zip(results, sizes):
        u = r["runs"].get("untyped", [])
        uw = median([x["wall"] for x in u]) if u else None
        t = r["runs"]["typed"]
        ch = [c for c in r["runs"].get("chap", []) if not c.get("timeout")]
        if ch:
            sp = median([c["wall"] / h["wall"] for h, c in zip(t, ch)])
            mr = median([h["rss"] / c["rss"] for h, c in zip(t, ch)])
        print("| %s | %s | %s | %s | %s | %s |" % (
            fmt_int(n), fmt_s(uw), "%.0f" % (uw * 1e9 / n) if uw else "-",
            fmt_s(median([c["wall"] for c in ch])) if ch else "-",
            "%.2f" % sp if ch else "-", "%.2f" % mr if ch else "-"))


def strip_outputs(obj):
    # for --json: the commands' outputs are large and not figures
    if isinstance(obj, dict):
        return {k: strip_outputs(v) for k, v in obj.items() if k != "out"}
    if isinstance(obj, list):
        return [strip_outputs(x) for x in obj]
    return obj


# ------------------------------------------------------------------ main --

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shape", default="all",
                    help="server, list, cxx, cpython, a comma-separated list, or all")
    ap.add_argument("--chap-timeout", type=int, default=900,
                    help="stop a chap run after this many seconds (default 900)")
    ap.add_argument("--blocks", type=int, default=DEFAULT_BLOCKS,
                    help="about how many blocks each core holds (default 11,000,000)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--keep", metavar="DIR",
                    help="keep the cores in DIR (and reuse those already there)")
    ap.add_argument("--workdir", help="where builds, outputs and (without --keep) cores go")
    ap.add_argument("--heapdom", default=os.environ.get("HEAPDOM") or
                    os.path.join(SRCDIR, "build", "core", "heapdom"))
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="the interpreter the CPython shape runs under (default /usr/bin/python3)")
    ap.add_argument("--scale", action="store_true",
                    help="each shape at --sizes, ns/block per phase at each")
    ap.add_argument("--sizes", default=",".join(str(s) for s in SCALE_SIZES))
    ap.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    a = ap.parse_args()
    if a.runs < 1:
        die("--runs must be at least 1")

    shapes = SHAPES if a.shape == "all" else tuple(a.shape.split(","))
    for s in shapes:
        if s not in SHAPES:
            die("unknown shape %r (server, list, cxx, cpython or all)" % s)
    missing = []
    if not shutil.which("gdb"):
        missing.append("gdb (to run the shapes to their stop and core them)")
    if any(SHAPE_INFO[s]["compiler"] == "gcc" for s in shapes) and not shutil.which("gcc"):
        missing.append("gcc (to build the C shapes)")
    if any(SHAPE_INFO[s]["compiler"] == "g++" for s in shapes) and not shutil.which("g++"):
        missing.append("g++ (to build the C++ shape)")
    if "cpython" in shapes and not os.access(a.python, os.X_OK):
        missing.append("%s (the CPython shape's interpreter; --python)" % a.python)
    if missing:
        die("missing: " + "; ".join(missing))
    if not os.access(a.heapdom, os.X_OK):
        die("heapdom not found at %s (build it, or give --heapdom / HEAPDOM)" % a.heapdom)
    a.heapdom = os.path.abspath(a.heapdom)
    a.chap = os.environ.get("CHAP") or None
    if a.chap and not os.access(a.chap, os.X_OK):
        die("CHAP=%s is not an executable" % a.chap)
    global HAVE_TIME_V
    HAVE_TIME_V = have_time_v()

    workdir = tempfile.mkdtemp(prefix="heapdom-shapes.", dir=a.workdir)
    coredir = a.keep or workdir
    if a.keep:
        os.makedirs(a.keep, exist_ok=True)
    b = Bench(a)
    up = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    print("heapdom %s; chap %s; timing by %s; load average at start %s; %s"
          % (a.heapdom, a.chap or "not set (CHAP)",
             "/usr/bin/time -v" if HAVE_TIME_V else "wait4 rusage", " ".join(up),
             time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())))
    all_results = {}
    status = 0
    try:
        for shape in shapes:
            try:
                if a.scale:
                    sizes = [int(x) for x in a.sizes.split(",") if x]
                    rs = [b.bench_shape(shape, n, workdir, coredir, bool(a.keep), full=False)
                          for n in sizes]
                    all_results[shape] = rs
                    print_scale(shape, rs)
                else:
                    r = b.bench_shape(shape, a.blocks, workdir, coredir, bool(a.keep))
                    all_results[shape] = r
                    print_shape(r)
            except BenchError as e:
                print("bench_shapes.py: %s" % e, file=sys.stderr)
                status = 1
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    up = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else []
    print()
    print("load average at the end %s" % " ".join(up))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(strip_outputs(all_results), f, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""heapdom says what it could not see (issue 18, item 4).

    test_honest.py --heapdom PATH --fixture ALLOC_FIXTURE --source ALLOC_FIXTURE_C
                   --type-fixture PATH --lib LIBHEAPDOM --gdb-plugin PATH
                   [--lldb-plugin PATH] [--foreign-cores DIR] --workdir DIR

Cases (each fails if the old behaviour returns):
  truncated   a core cut short is an error naming the core and the first
              missing address range (computed here from the core's program
              headers), exit 1; with --partial every report says "partial:"
              and names that range; diff of a truncated core likewise; the
              foreign core chap's suite truncates (../shared/foreign-cores,
              skipped when absent) cut as chap cuts it.
  fresh       a core (and gdb, lldb) at the first instruction of main: one
              "no allocation yet" line, no warning, exit 0, 0 blocks.
  warnings    a heap whose 126 bins are all broken: at most 10 kinds of
              warnings, each shown once with a count.
  exe         the executable gone: one warning saying what is lost, blocks
              unchanged; a rebuilt executable (another build-id): a warning
              naming both files and build-ids, typing from it off, the rest
              goes on (stats, --untyped, types).
  allocators  jemalloc, tcmalloc and mimalloc (LD_PRELOAD), which heapdom
              walks: their heaps, complete,
              with the fixture's live blocks. musl (static, musl-gcc):
              walked by the musl backend, its live records the used
              blocks. mimalloc dlopen'ed privately beside glibc's malloc and
              never used (no segment): glibc's heap, complete.
  foreign     chap's cores from other machines (../shared/foreign-cores,
              skipped when absent): chap's used, free and leaked blocks and bytes, and a
              warning that the files that made them are missing.
The last line is "N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

PASSED, FAILED = [], []
LIBDIR = "/usr/lib/x86_64-linux-gnu"
ALLOCATORS = [  # (name heapdom gives, library, Debian package)
    ("jemalloc", "libjemalloc.so.2", "libjemalloc2"),
    ("tcmalloc", "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"),
]
VERSIONS = {"jemalloc": "5.3.0", "tcmalloc": "2.10"}
MIMALLOC = "libmimalloc.so.2"  # package libmimalloc2.0: walked (core/heap/mimalloc)


def check(name, cond, detail=""):
    (PASSED if cond else FAILED).append(name)
    print("%s %s" % ("ok  " if cond else "FAIL", name))
    if not cond:
        print("     " + str(detail).replace("\n", "\n     ")[:3000])


def run(a, args, timeout=60):
    return heaptest.run_heapdom(a.heapdom, args, timeout)


def gdb_core(program, core, stop="hd_fixture_stop", args=(), env=()):
    """gcore PROGRAM at breakpoint STOP (a gdb location)."""
    if os.path.exists(core):
        os.unlink(core)
    cmd = ["gdb", "-q", "-nx", "-batch"]
    for e in env:
        cmd += ["-ex", "set environment " + e]
    cmd += ["-ex", "break " + stop, "-ex", "run", "-ex", "gcore " + core,
            "-ex", "kill", "--args", program] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       env=heaptest._env(), stdin=subprocess.DEVNULL)
    if not os.path.isfile(core):
        raise heaptest.HarnessError("no core of %s: %s" % (program, r.stdout[-1500:] + r.stderr[-1500:]))
    return core


def phdrs(data):
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    out = []
    for i in range(phnum):
        out.append(list(struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)))
    return phoff, phentsize, out


def first_missing(path):
    """The lowest address range a cut core lacks: (start, end, ranges)."""
    with open(path, "rb") as f:
        data = f.read(1 << 20)
    size = os.path.getsize(path)
    _, _, ph = phdrs(data)
    miss = []
    for p_type, _, off, vaddr, _, filesz, memsz, _ in ph:
        if p_type != 1:
            continue
        fs = min(filesz, memsz)
        avail = max(0, min(fs, size - off))
        if avail < fs:
            miss.append((vaddr + avail, vaddr + fs))
    miss.sort()
    return miss[0][0], miss[0][1], len(miss)


def notes_first(src, dst):
    """Rewrites a gcore core (notes at the end) the way the kernel lays one
    out (notes first, then the memory), so cutting it keeps the notes."""
    with open(src, "rb") as f:
        data = f.read()
    phoff, phentsize, ph = phdrs(data)
    out = bytearray(data[:phoff + phentsize * len(ph)])
    pos = len(out)
    chunks = []
    for p in ph:
        if p[0] == 4:  # PT_NOTE
            chunks.append((p, data[p[2]:p[2] + p[5]]))
    for p in ph:
        if p[0] == 1:
            chunks.append((p, data[p[2]:p[2] + p[5]]))
    for p, body in chunks:
        p[2] = pos
        out += body
        pos += len(body)
    for i, p in enumerate(ph):
        struct.pack_into("<IIQQQQQQ", out, phoff + i * phentsize, *p)
    with open(dst, "wb") as f:
        f.write(out)


def cut(src, dst, nbytes):
    with open(src, "rb") as s, open(dst, "wb") as d:
        d.write(s.read(nbytes))


def rng(start, end):
    return "0x%x-0x%x" % (start, end)


def warning_lines(text):
    return [ln for ln in text.splitlines() if ln.startswith("warning:")]


# ---------------------------------------------------------------- cases

def case_truncated(a, base):
    # gcore writes the notes last: cut at 90% they are gone, nothing can
    # be read, and the error still names the first missing range.
    cut90 = os.path.join(a.workdir, "gcore-cut90.core")
    cut(base, cut90, os.path.getsize(base) * 9 // 10)
    s, e, _ = first_missing(cut90)
    r = run(a, ["stats", cut90])
    check("gcore core cut at 90%: exit 1, one line naming the core and the first missing range",
          r.rc == 1 and len(r.err.strip().splitlines()) == 1 and cut90 in r.err
          and rng(s, e) in r.err and "used blocks" not in r.out, r.describe() + "\nwanted " + rng(s, e))

    # The kernel's layout: notes first; a cut keeps threads and mappings.
    kern = os.path.join(a.workdir, "kernel-layout.core")
    notes_first(base, kern)
    whole = run(a, ["blocks", kern, "--json"])
    orig = run(a, ["blocks", base, "--json"])
    check("the rewritten (notes-first) core reads as the original",
          whole.rc == 0 and orig.rc == 0 and
          json.loads(whole.out)["blocks"] == json.loads(orig.out)["blocks"], whole.describe())
    kcut = os.path.join(a.workdir, "kernel-cut90.core")
    cut(kern, kcut, os.path.getsize(kern) * 9 // 10)
    s, e, n = first_missing(kcut)
    want = rng(s, e)
    for cmd in (["stats"], ["leaks"], ["dominators"], ["blocks", "--json"]):
        r = run(a, cmd + [kcut])
        check("%s on a core cut at 90%%: exit 1 naming the core and %s" % (cmd[0], want),
              r.rc == 1 and kcut in r.err and want in r.err and "--partial" in r.err
              and not r.out, r.describe())
    doc = None
    r = run(a, ["blocks", kcut, "--json", "--partial"])
    if r.rc == 0:
        doc = json.loads(r.out)
    check("blocks --json --partial: partial, with the first missing range and the range count",
          doc is not None and doc["partial"] and doc["truncated"]["first_missing"] == [hex(s), hex(e)]
          and doc["truncated"]["missing_ranges"] == n, r.describe())
    used = [b["addr"] for b in doc["blocks"] if b["state"] == "used"] if doc else []
    some = used[len(used) // 2] if used else "0x0"
    for cmd in (["stats"], ["blocks"], ["leaks"], ["dominators"], ["types"], ["why", some],
                ["snapshot"], ["dominators", "--semantic"]):
        r = run(a, cmd[:1] + [kcut] + cmd[1:] + ["--partial"])
        first = r.out.splitlines()[0] if r.out else ""
        check("%s --partial: exit 0, first line says partial and names %s" % (" ".join(cmd[:1] + cmd[2:]), want),
              r.rc == 0 and first.startswith("partial:") and want in first and kcut in first,
              r.describe() + "\nfirst line: " + first)
    for cmd in (["why", kcut, some, "--json"], ["graph", kcut]):
        r = run(a, cmd + ["--partial"])
        d = json.loads(r.out) if r.rc == 0 else {}
        check("%s --partial (JSON): partial, with the first missing range" % cmd[0],
              d.get("partial") is True and d.get("truncated", {}).get("first_missing") == [hex(s), hex(e)],
              r.describe())
    # gdb opens the core file itself: the same error, and --partial.
    r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "source " + a.gdb_plugin,
                        "-ex", "heap-stats", "-ex", "heap-leaks --partial", a.fixture, kcut],
                       capture_output=True, text=True, timeout=120, env=gdb_env(a),
                       stdin=subprocess.DEVNULL)
    check("gdb on the cut core: heap-stats fails naming %s, heap-leaks --partial says partial" % want,
          ("truncated core" in r.stderr and want in r.stderr and
           any(ln.startswith("partial:") and want in ln for ln in r.stdout.splitlines())),
          r.stdout[-1500:] + r.stderr[-1500:])
    r = run(a, ["diff", base, kcut])
    check("diff with a truncated core: exit 1 naming its missing range",
          r.rc == 1 and want in r.err, r.describe())
    r = run(a, ["diff", base, kcut, "--partial"])
    check("diff --partial with a truncated core: exit 0", r.rc == 0, r.describe())

    # chap's suite cuts this foreign core to 1 MiB and 512 KiB.
    xz = os.path.join(a.foreign_cores, "Truncated", "core.xz")
    if not os.path.isfile(xz):
        print("skip foreign truncated core: %s absent" % xz)
        return
    full = os.path.join(a.workdir, "foreign.core")
    with open(full, "wb") as f:
        subprocess.run(["xz", "-dc", xz], stdout=f, check=True)
    for size, label in ((1 << 20, "1M"), (512 << 10, "512K")):
        fc = os.path.join(a.workdir, "foreign-%s.core" % label)
        cut(full, fc, size)
        s, e, _ = first_missing(fc)
        r = run(a, ["stats", fc])
        check("foreign core cut to %s: exit 1 naming it and %s" % (label, rng(s, e)),
              r.rc == 1 and fc in r.err and rng(s, e) in r.err, r.describe())
        # --partial: what the cut core holds, labelled partial, or (its
        # heap lies past the cut) an error that says the core is cut and
        # where, never a bare "no arena found".
        for cmd in ("stats", "leaks"):
            r = run(a, [cmd, fc, "--partial"])
            first = r.out.splitlines()[0] if r.out else ""
            check("foreign core cut to %s, %s --partial: labelled partial, or exit 1 "
                  "naming it, the truncation and %s" % (label, cmd, rng(s, e)),
                  (r.rc == 0 and first.startswith("partial:") and rng(s, e) in first) or
                  (r.rc == 1 and fc in r.err and "truncated" in r.err and rng(s, e) in r.err),
                  r.describe())
        os.unlink(fc)
    os.unlink(full)


def case_fresh(a):
    core = gdb_core(a.fixture, os.path.join(a.workdir, "at-main.core"), "*main")
    for mode in ([], ["--debug-dir", a.empty]):
        for cmd in (["stats"], ["leaks"], ["dominators"], ["types"], ["blocks"]):
            r = run(a, cmd + [core] + mode)
            lines = r.out.splitlines()
            fresh = [ln for ln in lines if ln.startswith("no allocation yet")]
            check("%s at *main %s: exit 0, one 'no allocation yet' line, no warning" % (cmd[0], mode),
                  r.rc == 0 and len(fresh) == 1 and not warning_lines(r.out)
                  and "damaged" not in r.out and not r.err.strip(), r.describe() + "\n" + r.out[:1500])
        r = run(a, ["stats", core, "--json"] + mode)
        doc = json.loads(r.out) if r.rc == 0 else {}
        check("stats --json at *main %s: no_allocation_yet, 0 used blocks, not partial" % mode,
              doc.get("no_allocation_yet") is True and doc.get("partial") is False
              and doc["totals"]["used"]["blocks"] == 0 and not doc["problems"], r.describe())
    # gdb at the same stop, live.
    r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "source " + a.gdb_plugin,
                        "-ex", "break *main", "-ex", "run", "-ex", "heap-stats",
                        "-ex", "heap-leaks", "-ex", "kill", a.fixture],
                       capture_output=True, text=True, timeout=120, env=gdb_env(a),
                       stdin=subprocess.DEVNULL)
    check("gdb heap-stats and heap-leaks at *main: 'no allocation yet', no warning",
          r.stdout.count("no allocation yet") == 2 and not warning_lines(r.stdout)
          and "heapdom:" not in r.stderr, r.stdout[-2000:] + r.stderr[-1000:])
    if a.lldb_plugin and shutil.which("lldb-14"):
        env = gdb_env(a)
        env["PYTHONPATH"] = "/usr/lib/llvm-14/lib/python3.11/dist-packages"
        env["PATH"] = "/usr/bin:/bin:" + env.get("PATH", "")
        r = subprocess.run(["lldb-14", "-x", "-b", "-o", "plugin load " + a.lldb_plugin,
                            "-o", "b main", "-o", "run", "-o", "heapdom stats", "--", a.fixture],
                           capture_output=True, text=True, timeout=120, env=env,
                           stdin=subprocess.DEVNULL)
        check("lldb heapdom stats at main: 'no allocation yet', no warning",
              "no allocation yet" in r.stdout and not warning_lines(r.stdout),
              r.stdout[-2000:] + r.stderr[-1000:])


def case_warnings(a, base):
    doc = json.loads(run(a, ["blocks", base, "--json"]).out)
    arena = int(next(x["addr"] for x in heaptest.glibc_arenas(doc) if x["main"]), 16)
    with open(base, "rb") as f:
        data = f.read(1 << 20)
    _, _, ph = phdrs(data)

    def offset(addr):
        for p_type, _, off, vaddr, _, filesz, memsz, _ in ph:
            if p_type == 1 and vaddr <= addr < vaddr + min(filesz, memsz):
                return off + addr - vaddr
        raise KeyError(hex(addr))
    # bins[] of glibc 2.27+'s malloc_state start at +112; break bins 2..127
    # (fd and bk zero): each is a warning of the same kind.
    broken = os.path.join(a.workdir, "broken-bins.core")
    shutil.copyfile(base, broken)
    with open(broken, "r+b") as f:
        f.seek(offset(arena + 112 + 16))
        f.write(bytes(16 * 126))
    r = run(a, ["stats", broken])
    jd = run(a, ["stats", broken, "--json"])
    problems = json.loads(jd.out)["problems"] if jd.rc == 0 else []
    warns = warning_lines(r.out)
    check("126 broken bins: many problems (JSON), few text lines, one per kind with a count",
          r.rc == 0 and len(problems) >= 126 and len(warns) <= 12
          and any("ends in a null pointer (and 125 more like it)" in w for w in warns),
          r.describe() + "\n" + "\n".join(warns[:20]) + "\n%d problems" % len(problems))


def build_id(path):
    r = subprocess.run(["readelf", "-n", path], capture_output=True, text=True)
    m = re.search(r"Build ID:\s*([0-9a-f]+)", r.stdout)
    return m.group(1) if m else None


def flip_build_id(path):
    """A rebuilt program in effect: the same code under another build-id."""
    r = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True)
    m = re.search(r"\.note\.gnu\.build-id\s+NOTE\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", r.stdout)
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    with open(path, "r+b") as f:
        f.seek(off + size - 1)
        b = f.read(1)
        f.seek(off + size - 1)
        f.write(bytes([b[0] ^ 0xff]))


def case_exe(a):
    exe = os.path.join(a.workdir, "type_fixture")
    shutil.copy2(a.type_fixture, exe)
    core = gdb_core(exe, os.path.join(a.workdir, "type.core"),
                    args=[os.path.join(a.workdir, "type.truth")])
    good_id = build_id(exe)
    with_exe = run(a, ["blocks", core, "--json"])
    typed = run(a, ["types", core])
    leaks_with = run(a, ["leaks", core, "--json", "--untyped"])
    check("with its executable: no warning, blocks typed from its DWARF",
          with_exe.rc == 0 and not json.loads(with_exe.out)["warnings"]
          and "struct entry" in typed.out, with_exe.describe() + typed.out[:500])

    # Gone.
    os.rename(exe, exe + ".gone")
    r = run(a, ["stats", core])
    warns = warning_lines(r.out)
    check("executable gone: exit 0, one warning naming it and what is lost",
          r.rc == 0 and len(warns) == 1 and exe in warns[0] and "was not found" in warns[0]
          and "unk<N>" in warns[0] and "--exe" in warns[0], r.describe() + "\n" + "\n".join(warns))
    gone = run(a, ["blocks", core, "--json"])
    strip = lambda out: [{k: v for k, v in b.items() if k != "type"} for b in json.loads(out)["blocks"]]
    check("executable gone: the same blocks", gone.rc == 0 and strip(gone.out) == strip(with_exe.out),
          gone.describe())
    leaks_gone = run(a, ["leaks", core, "--json", "--untyped"])
    check("executable gone: the same leaks (--untyped)",
          leaks_gone.rc == 0 and json.loads(leaks_gone.out)["leaks"] == json.loads(leaks_with.out)["leaks"],
          leaks_gone.describe())

    # Rebuilt: another build-id at the same path.
    shutil.copy2(exe + ".gone", exe)
    flip_build_id(exe)
    bad_id = build_id(exe)
    for cmd in (["stats"], ["stats", "--untyped"], ["types"], ["leaks"]):
        r = run(a, cmd + [core])
        warns = warning_lines(r.out)
        check("rebuilt executable, %s: exit 0, one warning naming both files and build-ids"
              % " ".join(cmd), r.rc == 0 and len(warns) == 1 and exe in warns[0] and core in warns[0]
              and good_id in warns[0] and bad_id in warns[0], r.describe() + "\n" + "\n".join(warns))
        if cmd == ["types"]:
            check("rebuilt executable: its DWARF types no block", r.rc == 0 and "struct entry" not in r.out,
                  r.out[:1500])
    os.unlink(exe)
    os.rename(exe + ".gone", exe)


def gdb_env(a):
    env = heaptest._env()
    env["HEAPDOM_LIB"] = a.lib
    return env


def case_allocators(a):
    for name, lib, pkg in ALLOCATORS:
        path = os.path.join(LIBDIR, lib)
        if not os.path.exists(path):
            check("%s is installed (package %s, .ci/install-deps)" % (lib, pkg), False, path)
            continue
        core = gdb_core(a.fixture, os.path.join(a.workdir, name + ".core"),
                        env=["LD_PRELOAD=" + path])
        # Both walked since issue 22 (core/heap/jemalloc, core/heap/tcmalloc).
        r = run(a, ["stats", "--json", core])
        doc = json.loads(r.out) if r.rc == 0 else {}
        al = doc.get("allocator") or {}
        check("%s (LD_PRELOAD) stats: walked, complete" % name,
              al.get("name") == name and al.get("version") == VERSIONS[name]
              and not doc.get("partial") and doc["totals"]["used"]["blocks"] > 0,
              r.describe())
        os.unlink(core)
    lib = os.path.join(LIBDIR, MIMALLOC)
    if not os.path.exists(lib):
        check("%s is installed (package libmimalloc2.0, .ci/install-deps)" % MIMALLOC, False, lib)
    else:
        # mimalloc serving the program (LD_PRELOAD): its heap is walked.
        truth = os.path.join(a.workdir, "mimalloc.truth")
        core = gdb_core(a.fixture, os.path.join(a.workdir, "mimalloc.core"),
                        args=[truth], env=["LD_PRELOAD=" + lib])
        with open(truth) as f:
            live = int(f.read().split()[1])
        j = run(a, ["stats", core, "--json"])
        doc = json.loads(j.out) if j.rc == 0 else {}
        check("mimalloc (LD_PRELOAD): its heap walked (>= %d used blocks), not partial" % live,
              j.rc == 0 and (doc.get("allocator") or {}).get("name") == "mimalloc"
              and doc.get("partial") is False and doc["totals"]["used"]["blocks"] >= live,
              j.describe() + j.out[:800])
        os.unlink(core)
        # A library loaded privately beside glibc's malloc (a plugin) and
        # never used: glibc serves the program; its heap is reported, and
        # mimalloc holds no segment, so nothing is missing from it.
        truth = os.path.join(a.workdir, "beside.truth")
        core = gdb_core(a.fixture, os.path.join(a.workdir, "beside.core"),
                        args=[truth, "--dlopen", lib])
        with open(truth) as f:
            live = int(f.read().split()[1])
        j = run(a, ["stats", core, "--json"])
        doc = json.loads(j.out) if j.rc == 0 else {}
        check("mimalloc dlopen'ed privately, never used: glibc's heap reported (>= %d used "
              "blocks), complete" % live,
              j.rc == 0 and (doc.get("allocator") or {}).get("name") == "glibc"
              and doc.get("partial") is False and doc["totals"]["used"]["blocks"] >= live,
              j.describe() + j.out[:800])
        os.unlink(core)
    musl = shutil.which("musl-gcc")
    if not musl:
        check("musl-gcc is installed (package musl-tools, .ci/install-deps)", False, "")
        return
    # musl's mallocng has a backend (core/heap/musl/, test_musl.py): the
    # static program's heap is walked, never shown as an empty glibc heap.
    prog = os.path.join(a.workdir, "alloc_fixture_musl")
    subprocess.run([musl, "-static", "-g", "-O1", a.source, "-o", prog], check=True)
    truth = os.path.join(a.workdir, "musl.truth")
    core = gdb_core(prog, os.path.join(a.workdir, "musl.core"), args=[truth])
    with open(truth) as f:
        live = int(f.read().split()[1])
    for mode in ([], ["--debug-dir", a.empty]):
        r = run(a, ["stats", core, "--json"] + mode)
        doc = json.loads(r.out) if r.rc == 0 else {}
        check("musl static %s: walked as musl's heap, its %d live records the used blocks"
              % (mode, live),
              (doc.get("allocator") or {}).get("name") == "musl" and not doc.get("partial")
              and doc["totals"]["used"]["blocks"] == live, r.describe() + r.out[:800])
    os.unlink(core)


def case_foreign(a):
    """Cores from other machines and glibc versions, without their files
    (some without NT_FILE, one whose NT_FILE lacks libc's first mapping):
    chap's verdicts are the oracle. chap counts tcache chunks and tcache
    structs as used; heapdom reports them free and internal."""
    expected = os.path.join(a.foreign_cores, "expected.json")
    if not os.path.isfile(expected):
        print("skip foreign cores: %s absent" % expected)
        return
    with open(expected) as f:
        exp = json.load(f)
    for name, core in heaptest.foreign_cores(a.foreign_cores, a.workdir, exp):
        want = exp[name]
        b = run(a, ["blocks", core, "--json"])
        lk = run(a, ["leaks", core, "--json"])
        ok = b.rc == 0 and lk.rc == 0
        detail = b.describe() + "\n" + lk.describe()
        if ok:
            blocks = json.loads(b.out)["blocks"]
            as_chap = sorted(x["addr"] for x in blocks if x["state"] in ("used", "internal")
                             or x.get("list") == "tcache")
            leaked = sorted(x["addr"] for x in json.loads(lk.out)["leaks"])
            ok = as_chap == sorted(want["used_addrs"]) and leaked == sorted(want["leaked_addrs"])
            detail += "\nused %s\nchap %s\nleaked %s chap %s" % (as_chap, want["used_addrs"],
                                                               leaked, want["leaked_addrs"])
            # chap's free set: every free chunk not on a tcache list (chap
            # counts those used). chap sizes a free chunk as heapdom does
            # (the chunk less 8: its size word, and the next chunk's
            # prev_size word it may use), except the top chunk, which has
            # no next chunk: the chunk less 16.
            free = [x for x in blocks if x["state"] == "free" and x.get("list") != "tcache"]
            chap_bytes = sum(x["size"] - (8 if x.get("list") == "top" else 0) for x in free)
            used_bytes = sum(x["size"] for x in blocks if x["state"] in ("used", "internal")
                             or x.get("list") == "tcache")
            ok = ok and len(free) == want["free"] and \
                chap_bytes == want["free_bytes"] and \
                used_bytes == want["used_bytes"]
            detail += "\nfree %d (%d B) chap %d (%d B); used bytes %d chap %d" % (
                len(free), chap_bytes, want["free"],
                want["free_bytes"], used_bytes, want["used_bytes"])
            warns = json.loads(b.out)["warnings"]
            ok = ok and len(warns) >= 1  # the files that made it are not here
            detail += "\nwarnings %s" % warns
        check("foreign core %s: chap's used, free and leaked blocks and bytes, and a "
              "warning about the missing files" % name, ok, detail)


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--heapdom", "--fixture", "--source", "--type-fixture", "--lib",
                "--gdb-plugin", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--foreign-cores", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "foreign-cores"))
    ap.add_argument("--only")
    a = ap.parse_args()
    a.heapdom = os.path.abspath(a.heapdom)
    os.makedirs(a.workdir, exist_ok=True)
    a.empty = os.path.join(a.workdir, "empty-debug")
    os.makedirs(a.empty, exist_ok=True)
    base = gdb_core(a.fixture, os.path.join(a.workdir, "base.core"))
    cases = {"truncated": lambda: case_truncated(a, base), "fresh": lambda: case_fresh(a),
             "warnings": lambda: case_warnings(a, base), "exe": lambda: case_exe(a),
             "allocators": lambda: case_allocators(a), "foreign": lambda: case_foreign(a)}
    for name, fn in cases.items():
        if a.only and name not in a.only.split(","):
            continue
        try:
            fn()
        except Exception as e:  # a harness failure fails the case, not the run
            import traceback
            check("case %s ran" % name, False, traceback.format_exc() + str(e))
    if not FAILED:
        shutil.rmtree(a.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
    print("%d passed, %d failed" % (len(PASSED), len(FAILED)))
    sys.exit(1 if FAILED else 0)

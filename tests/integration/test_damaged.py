#!/usr/bin/env python3
"""Damaged input: smashed chunk headers, looping free lists, random
corruption and truncated cores. heapdom must report problems with their
addresses and go on, or fail with one clear line — never crash or hang.

usage: test_damaged.py --heapdom PATH --program PATH --workdir DIR
The program must stop in demo_checkpoint() (examples/session_cache).
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

PASSED = []
FAILED = []


def check(name, cond, detail=""):
    (PASSED if cond else FAILED).append(name)
    if not cond:
        print(f"FAIL {name}: {detail}", file=sys.stderr)


def make_core(program, core):
    subprocess.run(["gdb", "-q", "-batch", "-ex", "break demo_checkpoint",
                    "-ex", "run", "-ex", f"gcore {core}", "-ex", "kill",
                    program], capture_output=True, timeout=120)
    if not os.path.exists(core):
        sys.exit(f"could not make a core of {program}")


def load_segments(core):
    """[(vaddr, memsz, offset, filesz)] of the core's PT_LOAD segments."""
    with open(core, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        segs = []
        for _ in range(phnum):
            ph = f.read(phentsize)
            p_type, _, off, vaddr, _, filesz, memsz = struct.unpack_from("<IIQQQQQ", ph)
            if p_type == 1:
                segs.append((vaddr, memsz, off, filesz))
        return segs


def file_offset(segs, addr):
    for vaddr, memsz, off, filesz in segs:
        if vaddr <= addr < vaddr + min(memsz, filesz):
            return off + addr - vaddr
    raise KeyError(hex(addr))


def run(heapdom, args, timeout=60):
    try:
        p = subprocess.run([heapdom] + args, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    return p


def blocks(heapdom, core, extra=()):
    p = run(heapdom, ["blocks", core, "--json", *extra])
    if p is None or p.returncode != 0:
        return None, p
    return json.loads(p.stdout), p


def same_with_threads(heapdom, core, extra=()):
    """Whether `blocks --json` is the same walked by 1 and by 2 threads
    (the split walk: every block, problem and their order); None if a run
    failed."""
    outs = []
    for jobs in ("1", "2"):
        p = run(heapdom, ["blocks", core, "--json", "--jobs", jobs, *extra], timeout=30)
        if p is None:
            return None
        outs.append((p.returncode, p.stdout, p.stderr))
    return outs[0] == outs[1]


def patch(core, out, edits):
    shutil.copyfile(core, out)
    with open(out, "r+b") as f:
        for off, data in edits:
            f.seek(off)
            f.write(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    empty = os.path.join(a.workdir, "empty-debug")
    os.makedirs(empty, exist_ok=True)
    core = os.path.join(a.workdir, "damaged-base.core")
    make_core(a.program, core)
    inv = heaptest.core_invariants(core, a.program)
    check("invariants of the undamaged core", not inv, "; ".join(inv))
    segs = load_segments(core)
    base, p = blocks(a.heapdom, core)
    check("baseline walks cleanly", base is not None and not base["partial"],
          p.stderr if p else "timeout")
    if base is None:
        return
    main_arena = next(x["addr"] for x in heaptest.glibc_arenas(base) if x["main"])
    arena_used = [b for b in base["blocks"] if b["state"] == "used"
                  and b["arena"] == main_arena]

    # 1. A smashed size field in the middle of the main heap.
    victim = arena_used[len(arena_used) // 2]
    hdr = int(victim["addr"], 16) - 16
    bad = os.path.join(a.workdir, "smashed.core")
    patch(core, bad, [(file_offset(segs, hdr + 8), struct.pack("<Q", 0xdeadbeefdeadbee8))])
    for mode in ([], ["--debug-dir", empty]):
        got, p = blocks(a.heapdom, bad, mode)
        ok = got is not None and got["partial"] and any(
            int(pr["addr"], 16) == hdr for pr in got["problems"])
        check(f"smashed chunk header reported at its address {mode}", ok,
              p.stderr if p else "timeout")
        if got:
            before = {b["addr"] for b in base["blocks"]
                      if b["arena"] == main_arena and int(b["addr"], 16) < hdr + 16}
            now = {b["addr"] for b in got["blocks"]}
            check(f"blocks before the smashed chunk still reported {mode}",
                  before <= now, f"{len(before - now)} missing")
    check("smashed heap: the same blocks and problems with 1 and 2 threads",
          same_with_threads(a.heapdom, bad))
    st = run(a.heapdom, ["stats", bad])
    check("stats on a smashed heap warns and succeeds",
          st is not None and st.returncode == 0 and "partial" in st.stdout,
          st.stderr if st else "timeout")
    sem = run(a.heapdom, ["dominators", "--semantic", "--json", bad])
    ok = sem is not None and sem.returncode == 0
    if ok:
        doc = json.loads(sem.stdout)
        ok = doc["partial"] and any(f["name"] == "glibc" and f["detected"]
                                    for f in doc["frameworks"])
    check("semantic tree of a smashed heap: partial, glibc module still runs", ok,
          sem.stderr[-300:] if sem else "timeout")

    # 2. A tcache entry whose safe-linked next points at itself: a loop.
    tc = [b for b in base["blocks"] if b.get("list") == "tcache"]
    if tc:
        e = int(tc[0]["addr"], 16)
        looped = os.path.join(a.workdir, "loop.core")
        patch(core, looped, [(file_offset(segs, e), struct.pack("<Q", (e >> 12) ^ e))])
        got, p = blocks(a.heapdom, looped)
        check("looping tcache list is reported, no hang",
              got is not None and got["partial"], p.stderr if p else "timeout")
    else:
        check("fixture has tcache chunks", False, "no tcache block in baseline")

    # 3. A bin whose fd points outside every heap.
    small = [b for b in base["blocks"] if b.get("list") in ("small", "large", "unsorted")]
    if small:
        c = int(small[0]["addr"], 16) - 16
        wild = os.path.join(a.workdir, "wild.core")
        patch(core, wild, [(file_offset(segs, c + 16), struct.pack("<Q", 0x4141414141414140))])
        got, p = blocks(a.heapdom, wild)
        check("bin pointing outside the heap is reported",
              got is not None and got["partial"], p.stderr if p else "timeout")

    # 4. Random corruption of heap words and libc's data: never a crash.
    rng = random.Random(1234)
    heap_lo = min(int(b["addr"], 16) for b in base["blocks"]) - 16
    heap_words = [int(b["addr"], 16) - 16 + 8 * k for b in base["blocks"]
                  if not b["mmapped"] for k in (0, 1, 2, 3)]
    arena_words = [int(main_arena, 16) + 8 * k for k in range(275)]
    crashes = []
    differ = []
    for i in range(60):
        edits = []
        for _ in range(rng.choice((1, 4, 16))):
            addr = rng.choice(heap_words if rng.random() < 0.7 else arena_words)
            try:
                edits.append((file_offset(segs, addr), rng.getrandbits(64).to_bytes(8, "little")))
            except KeyError:
                pass
        fuzzed = os.path.join(a.workdir, "fuzz.core")
        patch(core, fuzzed, edits)
        for mode in ([], ["--debug-dir", empty]):
            p = run(a.heapdom, ["blocks", fuzzed, "--json", *mode], timeout=30)
            if p is None or p.returncode not in (0, 1) or (p.returncode == 1 and
                                                         len(p.stderr.strip().splitlines()) != 1):
                crashes.append((i, mode, None if p is None else p.returncode,
                                "" if p is None else p.stderr[-300:]))
        if not same_with_threads(a.heapdom, fuzzed):
            differ.append(i)
        if i % 3 == 0:
            p = run(a.heapdom, ["dominators", "--semantic", fuzzed], timeout=30)
            if p is None or p.returncode not in (0, 1) or (p.returncode == 1 and
                                                         len(p.stderr.strip().splitlines()) != 1):
                crashes.append((i, "--semantic", None if p is None else p.returncode,
                                "" if p is None else p.stderr[-300:]))
    check("random corruption: exit 0 or one-line error, never a crash or hang",
          not crashes, repr(crashes[:3]))
    check("random corruption: the same blocks and problems with 1 and 2 threads",
          not differ, "differ in rounds %s" % differ[:10])
    del heap_lo

    # 5. Truncated cores.
    size = os.path.getsize(core)
    for frac in (0.001, 0.1, 0.5, 0.9, 0.999):
        cut = os.path.join(a.workdir, "cut.core")
        with open(core, "rb") as src, open(cut, "wb") as dst:
            dst.write(src.read(int(size * frac)))
        for cmd in (["stats"], ["dominators", "--semantic"]):
            p = run(a.heapdom, cmd + [cut])
            # A truncated core is an error naming it (issue 18), never a
            # result that looks whole.
            ok = (p is not None and p.returncode == 1 and not p.stdout and
                  len(p.stderr.strip().splitlines()) == 1 and cut in p.stderr and
                  "truncated" in p.stderr)
            check(f"{cmd[0]}{' --semantic' if len(cmd) > 1 else ''} on a core truncated "
                  f"at {frac:.1%}: one-line error naming it", ok,
                  "timeout" if p is None else f"rc={p.returncode} {p.stderr[-300:]}")
    os.remove(core)
    for f in ("smashed.core", "loop.core", "wild.core", "fuzz.core", "cut.core"):
        path = os.path.join(a.workdir, f)
        if os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()
    print(f"{len(PASSED)} passed, {len(FAILED)} failed")
    sys.exit(1 if FAILED else 0)

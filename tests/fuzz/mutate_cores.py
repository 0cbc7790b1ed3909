#!/usr/bin/env python3
"""Damages real cores the way crashes and bad copies do and checks that
heapdom answers each one with a report, a labelled partial answer or an
error naming the problem: never a crash, a sanitizer report, a hang or
an unbounded cost.

The fuzzers of this folder search from synthetic seeds; this script starts
from cores of real programs (python3, perl, sqlite3, ...) that the user
makes on their own machine, so the damage lands on heaps no generator
wrote: chunk headers of real chunks, links of real free lists, arena
words, notes and program headers, truncation.

usage: mutate_cores.py [--heapdom PATH] [--runs N] [--seed S]
                       [--timeout SECONDS] [--keep DIR] CORE [CORE...]

With a sanitizer build of heapdom (build-asan/core/heapdom) every report
is a finding; ASAN_OPTIONS/UBSAN_OPTIONS are set to abort on the first.
Prints one line per damage kind and a last line `N passed, N failed`;
each failing input is kept in --keep with the command and its output.
"""
import argparse
import json
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time

COMMANDS = [
    ["stats"],
    ["leaks", "--untyped"],
    ["dominators", "--top", "5"],
    ["blocks", "--json"],
]


def load_segments(path):
    """PT_LOAD (vaddr, offset, filesz) of an ELF64 core, and phdr table info."""
    with open(path, "rb") as f:
        ehdr = f.read(64)
        if ehdr[:4] != b"\x7fELF":
            sys.exit(f"{path}: not an ELF file")
        phoff, = struct.unpack_from("<Q", ehdr, 32)
        phentsize, phnum = struct.unpack_from("<HH", ehdr, 54)
        f.seek(phoff)
        ph = f.read(phentsize * phnum)
    segs, notes = [], []
    for i in range(phnum):
        p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
        if p_type == 1 and filesz:
            segs.append((vaddr, off, filesz))
        elif p_type == 4:
            notes.append((off, filesz))
    return segs, notes, phoff, phentsize * phnum


def offset_of(segs, addr):
    for vaddr, off, filesz in segs:
        if vaddr <= addr < vaddr + filesz:
            return off + (addr - vaddr)
    return None


def heap_blocks(heapdom, core):
    """Blocks of the clean core (address, extent, state) from heapdom itself:
    only to aim the damage at real chunk headers and links; the verdicts of
    damaged runs are never compared with them."""
    out = subprocess.run([heapdom, "blocks", core, "--json"], capture_output=True,
                         text=True, timeout=600)
    if out.returncode != 0:
        sys.exit(f"{core}: heapdom blocks failed on the clean core:\n{out.stderr}")
    doc = json.loads(out.stdout)
    blocks = doc.get("blocks", [])
    return [(int(b["addr"], 16) if isinstance(b["addr"], str) else b["addr"],
             b.get("state", "used")) for b in blocks]


def damage(kind, data, segs, notes, phoff, phsize, blocks, rng):
    """Returns (description, new bytes)."""
    buf = bytearray(data)

    def put64(addr, value):
        off = offset_of(segs, addr)
        if off is not None and off + 8 <= len(buf):
            buf[off:off + 8] = struct.pack("<Q", value & (2**64 - 1))
            return True
        return False

    heap_addrs = [a for a, _ in blocks]
    lo, hi = (min(heap_addrs), max(heap_addrs)) if heap_addrs else (0, 0)

    def wild():
        choice = rng.randrange(6)
        if choice == 0:
            return rng.getrandbits(64)
        if choice == 1 and heap_addrs:
            return rng.choice(heap_addrs) + rng.choice([0, 8, -16, 24, 4096])
        if choice == 2:
            return rng.randrange(lo, hi + 1) if hi else 0
        if choice == 3:
            return rng.choice([0, 1, 0x10, 0x21, 0xffffffffffffffff, 1 << 47])
        if choice == 4:
            vaddr, _, filesz = rng.choice(segs)
            return vaddr + rng.randrange(filesz) // 8 * 8
        return 0x4141414141414141

    if kind == "chunk-sizes":
        n = rng.randint(1, 32)
        for a in rng.sample(heap_addrs, min(n, len(heap_addrs))):
            put64(a - 8, wild() if rng.random() < 0.5 else rng.randrange(0, 1 << 20) | rng.randrange(8))
        return f"{n} size words", buf
    if kind == "free-links":
        free = [a for a, s in blocks if s == "free"] or heap_addrs
        n = rng.randint(1, 32)
        for a in rng.sample(free, min(n, len(free))):
            put64(a + 8 * rng.randrange(3), wild())
        return f"{n} free-list links", buf
    if kind == "heap-words":
        n = rng.randint(1, 256)
        for _ in range(n):
            put64(rng.randrange(lo, hi + 1) // 8 * 8 if hi else 0, wild())
        return f"{n} heap words", buf
    if kind == "byte-flips":
        n = rng.randint(1, 2000)
        for _ in range(n):
            i = rng.randrange(len(buf))
            buf[i] ^= 1 << rng.randrange(8)
        return f"{n} bit flips anywhere", buf
    if kind == "notes":
        off, size = rng.choice(notes) if notes else (0, 64)
        n = rng.randint(1, 64)
        for _ in range(n):
            i = off + rng.randrange(max(size, 1))
            if i < len(buf):
                buf[i] = rng.randrange(256)
        return f"{n} bytes of a note", buf
    if kind == "headers":
        n = rng.randint(1, 16)
        for _ in range(n):
            i = rng.choice([rng.randrange(64), phoff + rng.randrange(max(phsize, 1))])
            if i < len(buf):
                buf[i] = rng.randrange(256)
        return f"{n} bytes of ELF/program headers", buf
    if kind == "truncate":
        cut = rng.randrange(64, len(buf))
        return f"cut at {cut} of {len(buf)}", buf[:cut]
    if kind == "zero-pages":
        n = rng.randint(1, 64)
        for _ in range(n):
            vaddr, off, filesz = rng.choice(segs)
            p = off + rng.randrange(filesz) // 4096 * 4096
            buf[p:p + 4096] = bytes(min(4096, len(buf) - p))
        return f"{n} pages zeroed", buf
    raise ValueError(kind)


KINDS = ["chunk-sizes", "free-links", "heap-words", "byte-flips", "notes",
         "headers", "truncate", "zero-pages"]


def run_one(heapdom, core, cmd, timeout, env):
    args = [heapdom, cmd[0], core] + cmd[1:] + ["--partial"]
    t0 = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    try:
        p = subprocess.run(args, capture_output=True, timeout=timeout, env=env,
                           stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return "timeout", args, b"", b"", time.monotonic() - t0
    dt = time.monotonic() - t0
    err = p.stderr
    if p.returncode < 0 or p.returncode >= 128:
        return f"signal/status {p.returncode}", args, p.stdout, err, dt
    if b"Sanitizer" in err or b"runtime error:" in err:
        return "sanitizer report", args, p.stdout, err, dt
    if p.returncode not in (0, 1):
        return f"exit {p.returncode}", args, p.stdout, err, dt
    if p.returncode == 1 and not err.strip():
        return "exit 1 without a message", args, p.stdout, err, dt
    lines = err.count(b"\n")
    if lines > 200:
        return f"{lines} lines of warnings (uncapped)", args, p.stdout, err, dt
    return None, args, p.stdout, err, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--heapdom", default="build/core/heapdom")
    ap.add_argument("--runs", type=int, default=40, help="damaged copies per core")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--keep", default="mutate-findings")
    ap.add_argument("cores", nargs="+")
    a = ap.parse_args()
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=1:halt_on_error=1")
    env.setdefault("UBSAN_OPTIONS", "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
    rng = random.Random(a.seed)
    passed = failed = 0
    per_kind = {k: [0, 0, 0.0] for k in KINDS}
    tmp = tempfile.mkdtemp(prefix="heapdom-mutate-")
    try:
        for core in a.cores:
            segs, notes, phoff, phsize = load_segments(core)
            blocks = heap_blocks(a.heapdom, core)
            with open(core, "rb") as f:
                data = f.read()
            print(f"{core}: {len(data)} bytes, {len(segs)} loads, {len(blocks)} blocks", flush=True)
            for r in range(a.runs):
                kind = KINDS[r % len(KINDS)]
                what, buf = damage(kind, data, segs, notes, phoff, phsize, blocks, rng)
                path = os.path.join(tmp, "damaged.core")
                with open(path, "wb") as f:
                    f.write(buf)
                for cmd in COMMANDS:
                    bad, args, out, err, dt = run_one(a.heapdom, path, cmd, a.timeout, env)
                    per_kind[kind][2] = max(per_kind[kind][2], dt)
                    if bad:
                        failed += 1
                        per_kind[kind][1] += 1
                        os.makedirs(a.keep, exist_ok=True)
                        name = f"{os.path.basename(core)}-{r}-{kind}"
                        shutil.copy(path, os.path.join(a.keep, name + ".core"))
                        with open(os.path.join(a.keep, name + ".txt"), "wb") as f:
                            f.write(f"{bad}\n{what}\n{' '.join(args)}\n--- stderr\n".encode() + err[-20000:])
                        print(f"  FAIL {name} {cmd[0]}: {bad} ({what})", flush=True)
                    else:
                        passed += 1
                        per_kind[kind][0] += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{'damage':<12} {'ok':>5} {'fail':>5} {'slowest':>8}")
    for k, (ok, bad, slow) in per_kind.items():
        print(f"{k:<12} {ok:5d} {bad:5d} {slow:7.2f}s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Writes a small x86-64 ELF core with the malloc heap of one glibc
version, and its ground truth beside it (CORE.json).

The layouts are derived here from glibc's own struct definitions
(malloc/malloc.c, malloc/arena.c of each release), field by field, not
from heapdom's table: the two are written separately so one checks the
other.

The process the core shows: an executable, libc (its first page with the
ELF header and build-id, its text left out of the core as the kernel does,
its data with main_arena), a main heap with used chunks, fastbin chunks,
unsorted/small/large bin chunks and tcache entries as the version has them,
a second thread in a thread arena of two heaps (heap_info chain,
malloc_state, fenceposts closing the older heap, its own tcache), a third thread on the main arena whose tcache lies mid-heap (only
its TLS pointer finds it), and an mmapped chunk. No file of this machine is
ever named: paths are /synthetic/glibc-2.N/...

usage: mkcore.py --version 2.31 [--no-nt-file] [--libc-name NAME]
                 [--zero-first CHUNK] OUT.core
"""
import argparse
import json
import struct
import sys

PAGE = 0x1000
PREV_INUSE, IS_MMAPPED, NON_MAIN_ARENA = 1, 2, 4
HEAP_MAX = 64 << 20

# -------------------------------------------------- layouts by version


def features(minor):
    """What glibc 2.minor's malloc looks like, from its sources (2.12-2.16
    as built with PER_THREAD, which adds next_free: 2.17's layout)."""
    return {
        # malloc_state.attached_threads: 2.23 (BZ #19048)
        "attached_threads": minor >= 23,
        # malloc_state.have_fastchunks: 2.27; fastbins gone in 2.43
        "have_fastchunks": 27 <= minor <= 42,
        "fastbins": minor <= 42,
        # heap_info.pagesize: 2.35 (huge pages for arenas)
        "heap_pagesize": minor >= 35,
        # tcache: 2.26; counts char until 2.29, uint16_t from 2.30;
        # 2.42: uint16_t num_slots[64 + 12] (room left, large bins)
        "tcache": minor >= 26,
        "tcache_counts": (None if minor < 26 else "char" if minor < 30
                          else "u16" if minor < 42 else "slots"),
        # tcache_entry.key: 2.29 (= its tcache), 2.34 (= tcache_key)
        "key": None if minor < 29 else "tcache" if minor < 34 else "random",
        # safe-linking: 2.32
        "safe_linking": minor >= 32,
    }


def same_layout_range(minor):
    """The versions whose malloc looks exactly like 2.minor's."""
    f = features(minor)
    lo = minor
    while lo > 12 and features(lo - 1) == f:
        lo -= 1
    hi = minor
    while hi < 43 and features(hi + 1) == f:
        hi += 1
    return lo, hi


class Struct:
    """A C struct laid out with x86-64 natural alignment."""

    def __init__(self, fields):
        self.off = {}
        off, align = 0, 1
        for name, size, count in fields:
            a = min(size, 8)
            off = (off + a - 1) // a * a
            self.off[name] = off
            off += size * count
            align = max(align, a)
        self.size = (off + align - 1) // align * align


def malloc_state(f):
    fields = [("mutex", 4, 1), ("flags", 4, 1)]
    if f["have_fastchunks"]:
        fields.append(("have_fastchunks", 4, 1))
    if f["fastbins"]:
        fields.append(("fastbinsY", 8, 10))
    fields += [("top", 8, 1), ("last_remainder", 8, 1), ("bins", 8, 254),
               ("binmap", 4, 4), ("next", 8, 1), ("next_free", 8, 1)]
    if f["attached_threads"]:
        fields.append(("attached_threads", 8, 1))
    fields += [("system_mem", 8, 1), ("max_system_mem", 8, 1)]
    return Struct(fields)


def heap_info(f):
    fields = [("ar_ptr", 8, 1), ("prev", 8, 1), ("size", 8, 1),
              ("mprotect_size", 8, 1)]
    if f["heap_pagesize"]:
        fields.append(("pagesize", 8, 1))
    s = Struct(fields)
    s.size = (s.size + 15) // 16 * 16  # the pad to MALLOC_ALIGNMENT
    return s


def tcache_struct(f):
    kind = f["tcache_counts"]
    nbins = 76 if kind == "slots" else 64
    csize = 1 if kind == "char" else 2
    s = Struct([("counts", csize, nbins), ("entries", 8, nbins)])
    s.nbins, s.csize = nbins, csize
    return s


def request2size(n):
    return max(32, (n + 8 + 15) & ~15)


# -------------------------------------------------------- memory image


class Memory:
    def __init__(self):
        self.maps = []  # dicts: start, end, prot, path, pgoff, data|None

    def map(self, start, size, prot, path=None, pgoff=0, dumped=True):
        m = {"start": start, "end": start + size, "prot": prot,
             "path": path, "pgoff": pgoff,
             "data": bytearray(size) if dumped else None}
        self.maps.append(m)
        return m

    def _find(self, addr, n):
        for m in self.maps:
            if m["start"] <= addr and addr + n <= m["end"] and m["data"] is not None:
                return m
        raise ValueError("0x%x not in a dumped mapping" % addr)

    def write(self, addr, b):
        m = self._find(addr, len(b))
        o = addr - m["start"]
        m["data"][o:o + len(b)] = b

    def r32(self, addr):
        m = self._find(addr, 4)
        o = addr - m["start"]
        return struct.unpack_from("<I", m["data"], o)[0]

    def w64(self, addr, v):
        self.write(addr, struct.pack("<Q", v & 0xffffffffffffffff))

    def w32(self, addr, v):
        self.write(addr, struct.pack("<I", v))

    def wn(self, addr, size, v):
        self.write(addr, v.to_bytes(size, "little"))


def elf_image_page(mem, base, build_id, etype=3):
    """The first page of an ELF file as the kernel dumps it: header,
    program headers and the build-id note."""
    phoff, note_off = 64, 64 + 3 * 56
    eh = (b"\x7fELF\x02\x01\x01" + bytes(9) +
          struct.pack("<HHIQQQIHHHHHH", etype, 62, 1, 0, phoff, 0, 0, 64,
                      56, 3, 64, 0, 0))
    note = struct.pack("<III", 4, len(build_id), 3) + b"GNU\0" + build_id
    ph = struct.pack("<IIQQQQQQ", 1, 4, 0, 0, 0, PAGE, PAGE, PAGE)
    ph += struct.pack("<IIQQQQQQ", 1, 6, 0x10000, 0x10000, 0x10000, PAGE,
                      PAGE, PAGE)
    ph += struct.pack("<IIQQQQQQ", 4, 4, note_off, note_off, note_off,
                      len(note), len(note), 4)
    mem.write(base, eh + ph + note)


# ---------------------------------------------------------- the heap


class Heap:
    """Lays out chunks one after another and records the truth."""

    def __init__(self, mem, f, start, end, arena, main, truth):
        self.mem, self.f = mem, f
        self.p, self.end = start, end
        self.arena, self.main = arena, main
        self.truth = truth
        self.prev_free = 0  # size of the previous chunk if bin-free
        self.fill = 0x31

    def chunk(self, size, state, lst=None, arena_addr=None):
        p = self.p
        flags = 0 if self.main else NON_MAIN_ARENA
        if self.prev_free:
            self.mem.w64(p, self.prev_free)
        else:
            flags |= PREV_INUSE
        self.mem.w64(p + 8, size | flags)
        # The application's bytes: distinct, pointing at nothing.
        # (Past 0x7e the bytes wrap, staying printable: a word of one
        # repeated byte is never a chunk size or a pointer.)
        self.fill = self.fill + 1 if self.fill < 0x7e else 0x21
        self.mem.write(p + 16, bytes([self.fill]) * (size - 16))
        self.prev_free = size if lst in ("unsorted", "small", "large") else 0
        self.p += size
        rec = {"addr": "0x%x" % (p + 16), "chunk": size, "state": state,
               "arena": "0x%x" % self.arena}
        if lst:
            rec["list"] = lst
        self.truth.append(rec)
        return p

    def retire(self, arena):
        """The end of a heap its arena left for a new one (sysmalloc):
        the old top, freed (here into the unsorted bin), then two
        fenceposts, a 16-byte chunk and a header of size 0."""
        old = (self.end - self.p - 32) & ~15
        c = self.chunk(old, "free", "unsorted")
        arena.bins.setdefault(1, []).append(c)
        fp = self.p
        self.mem.w64(fp, old)                 # prev_size: old top is free
        self.mem.w64(fp + 8, 16 | NON_MAIN_ARENA)
        self.mem.w64(fp + 16, 16)             # set_foot of the fencepost
        self.mem.w64(fp + 24, 0 | PREV_INUSE)
        self.truth.append({"addr": "0x%x" % (fp + 16), "chunk": 16,
                           "state": "internal", "arena": "0x%x" % self.arena})

    def top(self):
        p = self.p
        size = self.end - p
        flags = (0 if self.main else NON_MAIN_ARENA)
        if self.prev_free:
            self.mem.w64(p, self.prev_free)
        else:
            flags |= PREV_INUSE
        self.mem.w64(p + 8, size | flags)
        self.mem.write(p + 16, bytes(size - 16))
        self.truth.append({"addr": "0x%x" % (p + 16), "chunk": size,
                           "state": "free", "list": "top",
                           "arena": "0x%x" % self.arena})
        return p


class Arena:
    def __init__(self, mem, f, addr):
        self.mem, self.f, self.addr = mem, f, addr
        self.st = malloc_state(f)
        self.fast = {}   # index -> [chunk addresses], head first
        self.bins = {}   # bin index -> [chunk addresses]

    def bin_at(self, i):
        return self.addr + self.st.off["bins"] + 16 * (i - 1) - 16

    def write(self, top, nxt, system_mem, flags):
        mem, st, f, a = self.mem, self.st, self.f, self.addr
        mem.w32(a + st.off["flags"], flags)
        if f["have_fastchunks"]:
            mem.w32(a + st.off["have_fastchunks"], 1 if self.fast else 0)
        mem.w64(a + st.off["top"], top)
        for i in range(1, 128):
            head = self.bin_at(i)
            chunks = self.bins.get(i, [])
            fd_field = a + st.off["bins"] + 16 * (i - 1)
            if not chunks:
                mem.w64(fd_field, head)
                mem.w64(fd_field + 8, head)
                continue
            mem.w64(fd_field, chunks[0])
            mem.w64(fd_field + 8, chunks[-1])
            for k, c in enumerate(chunks):
                mem.w64(c + 16, chunks[k + 1] if k + 1 < len(chunks) else head)
                mem.w64(c + 24, chunks[k - 1] if k else head)
                if i >= 64:  # large: fd_nextsize/bk_nextsize
                    mem.w64(c + 32, c)
                    mem.w64(c + 40, c)
            if i > 1:
                w = a + st.off["binmap"] + 4 * (i >> 5)
                mem.w32(w, mem.r32(w) | (1 << (i & 31)))
        for idx, chunks in self.fast.items():
            mem.w64(a + st.off["fastbinsY"] + 8 * idx, chunks[0])
            for k, c in enumerate(chunks):
                nxt_c = chunks[k + 1] if k + 1 < len(chunks) else 0
                field = c + 16
                mem.w64(field, protect(f, field, nxt_c))
        mem.w64(a + st.off["next"], nxt)
        if f["attached_threads"]:
            mem.w64(a + st.off["attached_threads"], 1)
        mem.w64(a + st.off["system_mem"], system_mem)
        mem.w64(a + st.off["max_system_mem"], system_mem)


def protect(f, field, ptr):
    """Safe-linking (2.32+): the stored pointer is ptr ^ (&field >> 12)."""
    return (field >> 12) ^ ptr if f["safe_linking"] else ptr


class Tcache:
    def __init__(self, mem, f, user):
        self.mem, self.f, self.user = mem, f, user
        self.ts = tcache_struct(f)
        self.bins = {}  # index -> [user pointers], head first

    def write(self, key):
        mem, f, ts, tc = self.mem, self.f, self.ts, self.user
        mem.write(tc, bytes(ts.size))
        for i in range(ts.nbins):
            n = len(self.bins.get(i, []))
            count = 7 - n if f["tcache_counts"] == "slots" else n
            mem.wn(tc + ts.off["counts"] + i * ts.csize, ts.csize, count)
        for i, entries in self.bins.items():
            mem.w64(tc + ts.off["entries"] + 8 * i, entries[0])
            for k, e in enumerate(entries):
                nxt = entries[k + 1] if k + 1 < len(entries) else 0
                mem.w64(e, protect(f, e, nxt))
                if f["key"] == "tcache":
                    mem.w64(e + 8, tc)
                elif f["key"] == "random":
                    mem.w64(e + 8, key)
                # before 2.29 the word keeps what the application wrote


def tcache_index(f, chunk):
    small = (chunk - 32) // 16
    if small < 64:
        return small
    # 2.42's large bins: 64 + clz(MAX_TCACHE_SMALL_SIZE) - clz(chunk)
    max_small = 63 * 16 + 32 - 8
    return 64 + (32 - max_small.bit_length()) - (32 - chunk.bit_length())


# ---------------------------------------------------------- the process


def build(minor, nt_file, libc_name, zero_first=0, parts=None, extra=0):
    """The process's memory image and its truth. parts, a dict, receives
    the pieces (arenas, tcaches, heaps, threads) that tests/synth/hostile.py
    damages; extra used chunks of 0x30 bytes grow the main heap (for
    tests/bench/hostile_bench.py)."""
    f = features(minor)
    mem = Memory()
    truth = []
    vdir = "/synthetic/glibc-2.%d" % minor
    exe_path = vdir + "/prog"
    libc_path = vdir + "/" + (libc_name or "libc.so.6")
    R, RW, RX = 4, 6, 5  # PF_R=4 PF_W=2 PF_X=1

    exe = 0x555555554000
    mem.map(exe, PAGE, R, exe_path, 0)
    elf_image_page(mem, exe, bytes([0xe0 + minor % 16]) * 20, etype=3)
    mem.map(exe + 0x1000, 0x2000, RX, exe_path, 1, dumped=False)
    mem.map(exe + 0x3000, PAGE, RW, exe_path, 3)

    libc = 0x7f0000000000
    mem.map(libc, PAGE, R, libc_path, 0)
    elf_image_page(mem, libc, bytes([minor]) * 20)
    mem.map(libc + 0x1000, 0xf000, RX, libc_path, 1, dumped=False)
    mem.map(libc + 0x10000, 0x4000, RW, libc_path, 0x10)
    main_arena = libc + 0x10c60
    tcache_key = 0x5d8e3ac1f02b7946  # the random tcache_key (2.34+)

    # Main heap: [heap], from sbrk_base.
    sbrk_base = 0x555555559000
    heap_size = 0x21000 + (extra * 0x30 + PAGE - 1) // PAGE * PAGE
    mem.map(sbrk_base, heap_size, RW)
    # Thread 2's arena: a heap aligned to HEAP_MAX_SIZE.
    h2 = 0x7e0000000000
    mem.map(h2, 0x21000, RW)
    mem.map(h2 + 0x21000, HEAP_MAX - 0x21000, 0, dumped=False)
    hi = heap_info(f)
    a2_addr = h2 + hi.size
    # mmapped chunk
    mm = 0x7f0000400000
    mem.map(mm, 0x22000, RW)
    # Threads: main thread's TLS block and stack, two thread stacks with
    # their TLS at the top.
    tls1 = 0x7f0000050000
    mem.map(tls1, 0x4000, RW)
    stack = 0x7ffffffde000
    mem.map(stack, 0x21000, RW)
    t2 = 0x7f0000600000
    mem.map(t2, 0x21000, RW)
    t3 = 0x7f0000700000
    mem.map(t3, 0x21000, RW)
    threads = [
        {"tid": 4000, "fs": tls1 + 0x3000, "rsp": stack + 0x1f000},
        {"tid": 4001, "fs": t2 + 0x20000, "rsp": t2 + 0x10000},
        {"tid": 4002, "fs": t3 + 0x20000, "rsp": t3 + 0x10000},
    ]
    TLS_TCACHE = 0x48  # `tcache`'s offset below the thread pointer

    a1 = Arena(mem, f, main_arena)
    a2 = Arena(mem, f, a2_addr)
    tc1 = tc2 = tc3 = None

    # ---- main heap
    hp = Heap(mem, f, sbrk_base, sbrk_base + heap_size, main_arena, True,
              truth)
    ts = tcache_struct(f) if f["tcache"] else None
    if ts:
        c = hp.chunk(request2size(ts.size), "internal")
        tc1 = Tcache(mem, f, c + 16)
    if zero_first:
        # The application's first block, still all zeros (calloc).
        c = hp.chunk(zero_first, "used")
        mem.write(c + 16, bytes(zero_first - 16))
    hp.chunk(0x30, "used")

    def fast_or_used(heap, arena, size):
        if not f["fastbins"]:
            return heap.chunk(size, "used")
        c = heap.chunk(size, "free", "fastbin")
        arena.fast.setdefault((size >> 4) - 2, []).insert(0, c)
        return c

    def tcache_or_used(heap, tc, size):
        if not tc:
            return heap.chunk(size, "used")
        c = heap.chunk(size, "free", "tcache")
        tc.bins.setdefault(tcache_index(f, size), []).insert(0, c + 16)
        return c

    def binned(heap, arena, size, lst, idx):
        c = heap.chunk(size, "free", lst)
        arena.bins.setdefault(idx, []).append(c)
        return c

    fast_or_used(hp, a1, 0x20)
    hp.chunk(0x40, "used")
    fast_or_used(hp, a1, 0x20)
    hp.chunk(0x90, "used")
    tcache_or_used(hp, tc1, 0x30)
    tcache_or_used(hp, tc1, 0x30)
    hp.chunk(0x50, "used")
    binned(hp, a1, 0x110, "unsorted", 1)
    hp.chunk(0x30, "used")
    binned(hp, a1, 0x200, "small", 0x200 >> 4)
    hp.chunk(0x40, "used")
    binned(hp, a1, 0x500, "large", 48 + (0x500 >> 6))
    hp.chunk(0x30, "used")
    if ts:
        # Thread 3 runs on the main arena: its tcache is mid-heap.
        c = hp.chunk(request2size(ts.size), "internal")
        tc3 = Tcache(mem, f, c + 16)
        tcache_or_used(hp, tc3, 0x40)
    if f["tcache_counts"] == "slots":
        tcache_or_used(hp, tc1, 0x500)  # a large tcache bin (2.42+)
    hp.chunk(0x60, "used")
    for _ in range(extra):
        hp.chunk(0x30, "used")
    top1 = hp.top()

    # ---- thread arena
    mem.w64(h2 + hi.off["ar_ptr"], a2_addr)
    mem.w64(h2 + hi.off["prev"], 0)
    mem.w64(h2 + hi.off["size"], 0x21000)
    mem.w64(h2 + hi.off["mprotect_size"], 0x21000)
    if f["heap_pagesize"]:
        mem.w64(h2 + hi.off["pagesize"], PAGE)
    first = (a2_addr + a2.st.size + 15) & ~15
    hp2 = Heap(mem, f, first, h2 + 0x21000, a2_addr, False, truth)
    if ts:
        c = hp2.chunk(request2size(ts.size), "internal")
        tc2 = Tcache(mem, f, c + 16)
    hp2.chunk(0x30, "used")
    fast_or_used(hp2, a2, 0x20)
    hp2.chunk(0x40, "used")
    tcache_or_used(hp2, tc2, 0x20)
    hp2.chunk(0x30, "used")
    binned(hp2, a2, 0x90, "unsorted", 1)
    hp2.chunk(0x30, "used")
    hp2.retire(a2)
    # The arena grew into a second heap (sysmalloc's new_heap): heap_info
    # with prev = the first heap, chunks right after it.
    h3 = h2 + HEAP_MAX
    mem.map(h3, 0x21000, RW)
    mem.map(h3 + 0x21000, HEAP_MAX - 0x21000, 0, dumped=False)
    mem.w64(h3 + hi.off["ar_ptr"], a2_addr)
    mem.w64(h3 + hi.off["prev"], h2)
    mem.w64(h3 + hi.off["size"], 0x21000)
    mem.w64(h3 + hi.off["mprotect_size"], 0x21000)
    if f["heap_pagesize"]:
        mem.w64(h3 + hi.off["pagesize"], PAGE)
    hp3 = Heap(mem, f, h3 + hi.size, h3 + 0x21000, a2_addr, False, truth)
    hp3.chunk(0x40, "used")
    binned(hp3, a2, 0x100, "small", 0x100 >> 4)
    hp3.chunk(0x30, "used")
    top2 = hp3.top()

    # ---- arenas: main_arena -> thread arena -> main_arena
    a1.write(top1, a2_addr, heap_size, 0)
    a2.write(top2, main_arena, 2 * 0x21000, 2)  # NONCONTIGUOUS_BIT
    for tc in (tc1, tc2, tc3):
        if tc:
            tc.write(tcache_key)
    for th, tc in zip(threads, (tc1, tc2, tc3)):
        mem.w64(th["fs"], th["fs"])        # tcbhead_t.tcb
        mem.w64(th["fs"] + 16, th["fs"])   # tcbhead_t.self
        if tc:
            mem.w64(th["fs"] - TLS_TCACHE, tc.user)

    # ---- mmapped chunk
    mem.w64(mm, 0)
    mem.w64(mm + 8, 0x22000 | IS_MMAPPED)
    mem.write(mm + 16, b"\x77" * 64)
    truth.append({"addr": "0x%x" % (mm + 16), "chunk": 0x22000,
                  "state": "used", "arena": None, "mmapped": True})

    auxv = [(3, exe + 64), (4, 56), (5, 3), (6, PAGE), (9, exe + 0x1000),
            (0, 0)]
    if parts is not None:
        parts.update(f=f, mem=mem, libc=libc, main_arena=main_arena,
                     sbrk_base=sbrk_base, heap_size=heap_size, h2=h2, h3=h3,
                     hi=hi, a1=a1, a2=a2, tcaches=(tc1, tc2, tc3),
                     top1=top1, top2=top2, stack=stack, threads=threads,
                     tcache_key=tcache_key)
    return mem, truth, threads, auxv, {
        "main_arena": "0x%x" % main_arena, "thread_arena": "0x%x" % a2_addr,
        "heaps": {"0x%x" % main_arena: 1, "0x%x" % a2_addr: 2},
        "libc": libc_path}


# ------------------------------------------------------------ ELF core


def note(name, ntype, desc):
    n = name.encode() + b"\0"
    pad = lambda b: b + bytes((-len(b)) % 4)
    return struct.pack("<III", len(n), len(desc), ntype) + pad(n) + pad(desc)


def prstatus(th):
    regs = [0] * 27
    regs[19] = th["rsp"]     # rsp
    regs[16] = 0x7f0000001234  # rip, in libc's text
    regs[21] = th["fs"]      # fs_base
    b = bytearray(336)
    struct.pack_into("<i", b, 32, th["tid"])
    struct.pack_into("<27Q", b, 112, *regs)
    return bytes(b)


def nt_file(mem):
    files = [m for m in mem.maps if m["path"]]
    d = struct.pack("<QQ", len(files), PAGE)
    for m in files:
        d += struct.pack("<QQQ", m["start"], m["end"], m["pgoff"])
    for m in files:
        d += m["path"].encode() + b"\0"
    return d


def write_core(path, mem, threads, auxv, with_nt_file):
    notes = b""
    for th in threads:
        notes += note("CORE", 1, prstatus(th))
    notes += note("CORE", 6, b"".join(struct.pack("<QQ", *a) for a in auxv))
    if with_nt_file:
        notes += note("CORE", 0x46494c45, nt_file(mem))
    maps = sorted(mem.maps, key=lambda m: m["start"])
    phnum = 1 + len(maps)
    off = 64 + 56 * phnum
    notes_off = off
    off += len(notes)
    off = (off + PAGE - 1) & ~(PAGE - 1)
    phdrs = struct.pack("<IIQQQQQQ", 4, 0, notes_off, 0, 0, len(notes), 0, 1)
    body = []
    for m in maps:
        size = m["end"] - m["start"]
        filesz = size if m["data"] is not None else 0
        phdrs += struct.pack("<IIQQQQQQ", 1, m["prot"], off, m["start"], 0,
                             filesz, size, PAGE)
        if filesz:
            body.append((off, m["data"]))
            off += filesz
    eh = (b"\x7fELF\x02\x01\x01" + bytes(9) +
          struct.pack("<HHIQQQIHHHHHH", 4, 62, 1, 0, 64, 0, 0, 64, 56,
                      phnum, 64, 0, 0))
    with open(path, "wb") as out:
        out.write(eh + phdrs + notes)
        for o, data in body:
            out.seek(o)
            out.write(data)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", required=True, help="2.N, 12 <= N <= 43")
    ap.add_argument("--no-nt-file", action="store_true")
    ap.add_argument("--libc-name", help="libc's file name (libc-2.17.so)")
    ap.add_argument("--zero-first", type=lambda x: int(x, 0), default=0,
                    help="first application chunk: this size, all zeros")
    ap.add_argument("out")
    args = ap.parse_args()
    major, minor = (int(x) for x in args.version.split("."))
    if major != 2 or not 12 <= minor <= 43:
        sys.exit("mkcore: glibc 2.12 to 2.43 only")
    mem, truth, threads, auxv, where = build(minor, not args.no_nt_file,
                                             args.libc_name, args.zero_first)
    write_core(args.out, mem, threads, auxv, not args.no_nt_file)
    lo, hi = same_layout_range(minor)
    with open(args.out + ".json", "w") as out:
        json.dump({"version": "2.%d" % minor, "range": [lo, hi],
                   "nt_file": not args.no_nt_file, **where,
                   "blocks": truth}, out, indent=1)


if __name__ == "__main__":
    main()

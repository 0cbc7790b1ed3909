"""Fixture of the cpython framework test: run with Debian's /usr/bin/python3
(CPython 3.11) as

    python3 cpython_fixture.py TRUTH READY

It builds globals of __main__ whose every object is referred to by its
container alone (built at run time, so nothing is shared, interned or
cached), writes TRUTH, creates READY and sleeps until killed.

The truth is read from the interpreter's own memory with ctypes: block
sizes from pymalloc's pool headers (a block of a pool is (szidx+1)*16
bytes) or from glibc's chunk header (objects above 512 bytes are malloc'd),
never computed by the test. TRUTH (one record a line, fields separated by
single spaces, ADDR = "0x.." hex):

    cpython-fixture-truth 1
    pid PID
    version MAJOR.MINOR.MICRO
    global NAME TYPE BOUND BLOCKS GCHEADS
        a global of __main__ referring to a container: its node must be
        "TYPE 'NAME' (__main__)" and keep exactly BOUND bytes in BLOCKS
        blocks, GCHEADS of them objects with a 16-byte GC head
    block NAME ADDR SIZE TYPE
        one of those blocks: ADDR its start (the object's address minus its
        pre-header, or the item array / keys table), SIZE its bytes as
        allocated, TYPE the type name (tp_name) or "list items",
        "dict keys", "set table", "instance values"
    end NGLOBALS NBLOCKS
"""
import ctypes
import gc
import os
import signal
import sys

POOL_SIZE = 16384
POOL_OVERHEAD = 48
SMALL_REQUEST_THRESHOLD = 512
TPFLAGS_MANAGED_DICT = 1 << 4
TPFLAGS_HAVE_GC = 1 << 14


class Record:
    """An instance with a managed dict (3.11: values array apart)."""

    def __init__(self, i):
        self.name = "rec-%05d-" % i + "n" * (3 + i % 7)
        self.payload = b"p" * (40 + i % 50) + str(i * 7919).encode()


class Slotted:
    """An instance with __slots__ (members inline)."""

    __slots__ = ("label", "value")

    def __init__(self, i):
        self.label = "slot-%04d" % i
        self.value = float(i) + 0.25


def build():
    global blobs, table, records, slotted, pair, tags, big, config
    blobs = [b"blob-%05d-" % i + b"b" * (i % 120) for i in range(300)]
    table = {("key-%04d" % i): ("value-%04d-" % i) * (1 + i % 3)
             for i in range(100)}
    records = [Record(i) for i in range(150)]
    slotted = [Slotted(i) for i in range(40)]
    pair = tuple(("tuple-item-%02d" % i) * 3 for i in range(12))
    tags = {"tag-%03d" % i for i in range(30)}
    big = [b"B" * (600 + 37 * i) + b"%d" % i for i in range(20)]
    config = Record(99999)


def scrub():
    # Overwrite the data-stack slots build() and write_truth() left behind
    # (stale pointers there would be roots for their objects): more locals
    # than either function has, all None.
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = None
    b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = None
    c0 = c1 = c2 = c3 = c4 = c5 = c6 = c7 = c8 = c9 = None
    d0 = d1 = d2 = d3 = d4 = d5 = d6 = d7 = d8 = d9 = None
    return (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, b0, b1, b2, b3, b4, b5,
            b6, b7, b8, b9, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9, d0, d1,
            d2, d3, d4, d5, d6, d7, d8, d9) is None


def u8(a):
    return ctypes.c_uint8.from_address(a).value


def u32(a):
    return ctypes.c_uint32.from_address(a).value


def u64(a):
    return ctypes.c_uint64.from_address(a).value


class Fail(Exception):
    pass


def pool_block_size(start):
    """pymalloc's size of the block at start, from its pool header."""
    p = start & ~(POOL_SIZE - 1)
    size = (u32(p + 36) + 1) * 16
    if (u32(p + 44) != POOL_SIZE - size or
            not p + POOL_OVERHEAD <= start < p + u32(p + 40) or
            (start - p - POOL_OVERHEAD) % size):
        raise Fail("0x%x is not a block of a valid pymalloc pool" % start)
    return size


def chunk_size(start):
    """glibc's chunk size of the block malloc returned at start."""
    return u64(start - 8) & ~7


def alloc_size(start, request):
    """The allocation's size: request known, or None (a small PyMem block)."""
    if request is None or request <= SMALL_REQUEST_THRESHOLD:
        size = pool_block_size(start)
        if request is not None and size != (request + 15) // 16 * 16:
            raise Fail("block 0x%x: pool says %d bytes, request %d"
                       % (start, size, request))
        return size
    return chunk_size(start)


def preheader(tp):
    return (16 if tp.__flags__ & TPFLAGS_HAVE_GC else 0) + \
        (16 if tp.__flags__ & TPFLAGS_MANAGED_DICT else 0)


def object_request(o):
    tp = type(o)
    if tp in (str, bytes):
        return sys.getsizeof(o)          # not GC: its exact request
    n = len(o) if tp is tuple else 0
    return preheader(tp) + tp.__basicsize__ + tp.__itemsize__ * n


class Owned:
    """The blocks a global owns, walked by construction."""

    def __init__(self, name):
        self.name = name
        self.blocks = []   # (addr, size, type)
        self.gc = 0

    def block(self, addr, request, typ):
        self.blocks.append((addr, alloc_size(addr, request), typ))

    def obj(self, o):
        tp = type(o)
        start = id(o) - preheader(tp)
        self.block(start, object_request(o), tp.__name__)
        if tp.__flags__ & TPFLAGS_HAVE_GC:
            self.gc += 1
        a = id(o)
        if tp is list:
            if u64(a + 32):
                self.block(u64(a + 24), 8 * u64(a + 32), "list items")
            for x in o:
                self.obj(x)
        elif tp is tuple:
            for x in o:
                self.obj(x)
        elif tp is dict:
            keys = u64(a + 32)
            if u64(a + 40):
                raise Fail("dict %s is split" % self.name)
            log2_size, log2_index, kind = u8(keys + 8), u8(keys + 9), u8(keys + 10)
            usable = ((1 << log2_size) << 1) // 3
            esz = 24 if kind == 0 else 16
            self.block(keys, 32 + (1 << log2_index) + esz * usable,
                       "dict keys")
            for k, v in o.items():
                self.obj(k)
                self.obj(v)
        elif tp is set:
            table = u64(a + 40)
            if table != a + 64:
                self.block(table, 16 * (u64(a + 32) + 1), "set table")
            for x in o:
                self.obj(x)
        elif tp is Record:
            values = u64(a - 32)
            if u64(a - 24):
                raise Fail("Record's dict was materialized")
            self.block(values - u8(values - 1), None, "instance values")
            self.obj(o.name)
            self.obj(o.payload)
        elif tp is Slotted:
            self.obj(o.label)
            self.obj(o.value)
        elif tp not in (str, bytes, float):
            raise Fail("unexpected %s in %s" % (tp.__name__, self.name))


def write_truth(path):
    g = globals()
    names = ("blobs", "table", "records", "slotted", "pair", "tags", "big",
             "config")
    owned = []
    for name in names:
        w = Owned(name)
        w.obj(g[name])
        owned.append((w, type(g[name]).__name__))
    # Exclusive by construction: every object has one reference, from its
    # container (the globals from __main__'s dict).
    for w, _ in owned:
        for addr, size, typ in w.blocks:
            if typ in ("list items", "dict keys", "set table",
                       "instance values"):
                continue
            tp = {"list": list, "tuple": tuple, "dict": dict,
                  "set": set}.get(typ)
            obj = addr + (preheader(tp) if tp else 0)
            if typ == "Record":
                obj = addr + preheader(Record)
            elif typ == "Slotted":
                obj = addr + preheader(Slotted)
            if u64(obj) != 1:
                raise Fail("%s: %s at 0x%x has %d references"
                           % (w.name, typ, obj, u64(obj)))
    nblocks = 0
    with open(path + ".tmp", "w") as f:
        f.write("cpython-fixture-truth 1\n")
        f.write("pid %d\n" % os.getpid())
        f.write("version %d.%d.%d\n" % sys.version_info[:3])
        for w, typ in owned:
            f.write("global %s %s %d %d %d\n"
                    % (w.name, typ, sum(b[1] for b in w.blocks),
                       len(w.blocks), w.gc))
            for addr, size, t in w.blocks:
                f.write("block %s 0x%x %d %s\n"
                        % (w.name, addr, size, t.replace(" ", "_")))
            nblocks += len(w.blocks)
        f.write("end %d %d\n" % (len(owned), nblocks))
    os.rename(path + ".tmp", path)


def main():
    truth, ready = sys.argv[1], sys.argv[2]
    build()
    scrub()
    gc.collect()
    write_truth(truth)
    scrub()
    with open(ready, "w") as f:
        f.write("ready\n")
    while True:
        signal.pause()


main()

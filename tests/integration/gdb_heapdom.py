#!/usr/bin/env python3
"""Reference ("oracle") implementation of `heapdom blocks --json`, built on
gdb + libc6-dbg.  It exists to validate the test harness itself
(heaptest.py / test_heap_walk.py) and the fixture's truth files before, or
independently of, the real heapdom:

    python3 tests/integration/test_heap_walk.py \
        --heapdom tests/integration/gdb_heapdom.py --fixture FIXTURE --workdir DIR

CLI (a subset of heapdom's):
    gdb_heapdom.py blocks CORE|--pid PID [--json] [--exe PATH]
                   [--debug-dir DIR] [--sysroot DIR] [--state S]
    gdb_heapdom.py stats  CORE|--pid PID [--json] ...   (stub output)

It always reads glibc's own structures through libc6-dbg.  With --debug-dir
it merely *reports* method "heuristic" so the harness's mode checks can run;
it is not a heuristic implementation.  glibc 2.36, x86-64 only.

The same file is also the gdb-side script: when imported by gdb (-x) it walks
the heap and writes the JSON document to the path in $HD_ORACLE_OUT.
"""
import json
import os
import struct
import subprocess
import sys

try:
    import gdb  # noqa: F401
    IN_GDB = True
except ImportError:
    IN_GDB = False

HEAP_MAX = 64 << 20
HEAP_INFO_SIZE = 0x30          # sizeof(heap_info), glibc 2.36 x86-64
TCACHE_BINS = 64
NFASTBINS = 10
NBINS = 128


# --------------------------------------------------------------- gdb side
def _gdb_walk(out_path, target, method, live_pid):
    inf = gdb.selected_inferior()

    def rd(addr, n):
        return bytes(inf.read_memory(addr, n))

    def q(addr):
        return struct.unpack("<Q", rd(addr, 8))[0]

    def val(expr):
        return int(gdb.parse_and_eval(expr))

    main_arena = val("(unsigned long)&main_arena")
    sizeof_state = val("sizeof(struct malloc_state)")
    arenas = []
    a = main_arena
    while True:
        arenas.append(a)
        a = val("(unsigned long)((struct malloc_state *)%d)->next" % a)
        if a == main_arena or len(arenas) > 1000:
            break

    free_kind = {}                         # chunk addr -> list name

    # tcache of each live thread
    tcache_structs = set()
    orig = gdb.selected_thread()
    for th in inf.threads():
        th.switch()
        try:
            tc = int(gdb.parse_and_eval("(unsigned long)tcache"))
        except gdb.error:
            tc = 0
        if not tc:
            continue
        tcache_structs.add(tc - 16)
        counts = struct.unpack("<64H", rd(tc, 128))
        entries = struct.unpack("<64Q", rd(tc + 128, 512))
        for i in range(TCACHE_BINS):
            e, n = entries[i], 0
            while e and n < counts[i] + 1:
                free_kind[e - 16] = "tcache"
                e = (e >> 12) ^ q(e)
                n += 1
    if orig is not None:
        orig.switch()

    arena_json = []
    heaps = []                              # (arena, start, end, top or None)
    for a in arenas:
        st = "((struct malloc_state *)%d)" % a
        top = val("(unsigned long)%s->top" % st)
        arena_json.append({"addr": hex(a), "main": a == main_arena,
                           "system_mem": val("%s->system_mem" % st),
                           "top": hex(top)})
        for i in range(NFASTBINS):
            p = val("(unsigned long)%s->fastbinsY[%d]" % (st, i))
            while p:
                free_kind[p] = "fastbin"
                p = ((p + 16) >> 12) ^ q(p + 16)
        bins_addr = val("(unsigned long)&%s->bins[0]" % st)
        for i in range(1, NBINS):
            b = bins_addr + (i - 1) * 16 - 16
            p = q(b + 24)
            n = 0
            while p != b and n < 1000000:
                free_kind[p] = "unsorted" if i == 1 else ("small" if i < 64 else "large")
                p = q(p + 24)
                n += 1
        if a == main_arena:
            base = val("(unsigned long)mp_.sbrk_base")
            start = (base + 15) & ~15
            end = top + (q(top + 8) & ~7)
            heaps.append((a, start, end, top))
        else:
            h = top & ~(HEAP_MAX - 1)
            while h:
                size = q(h + 16)
                if q(h) == h + HEAP_INFO_SIZE:      # first heap: state follows
                    start = (h + HEAP_INFO_SIZE + sizeof_state + 15) & ~15
                else:
                    start = h + HEAP_INFO_SIZE
                heaps.append((a, start, h + size, top if h == top & ~(HEAP_MAX - 1) else None))
                h = q(h + 8)

    blocks = []
    for a, start, end, top in heaps:
        data = rd(start, end - start)
        pos = start
        while pos < end:
            off = pos - start
            sz = struct.unpack_from("<Q", data, off + 8)[0] & ~7
            if pos == top:
                blocks.append(_blk(pos, sz, "free", "top", a))
                break
            if sz < 0x20 or pos + sz > end:  # fenceposts at a heap's end
                if sz == 0 or pos + sz > end:
                    sz = end - pos
                blocks.append(_blk(pos, sz, "internal", None, a))
                pos += sz
                continue
            nxt = pos + sz
            inuse = (struct.unpack_from("<Q", data, nxt - start + 8)[0] & 1) if nxt + 16 <= end else 1
            if pos in free_kind:
                blocks.append(_blk(pos, sz, "free", free_kind[pos], a))
            elif pos in tcache_structs:
                blocks.append(_blk(pos, sz, "internal", None, a))
            elif not inuse:
                blocks.append(_blk(pos, sz, "free", "unknown", a))
            else:
                blocks.append(_blk(pos, sz, "used", None, a))
            pos = nxt

    # mmapped chunks: scan writable regions outside the arenas' heaps
    regions = _regions(live_pid)
    page = 4096
    for lo, hi in regions:
        if any(lo < e and s < hi for _, s, e, _ in heaps) or any(
                (lo & ~(HEAP_MAX - 1)) == (s & ~(HEAP_MAX - 1)) for a_, s, e, _ in heaps
                if a_ != main_arena):
            continue
        pos = lo
        while pos + 16 <= hi:
            try:
                prev = q(pos)
                if prev % 16 or prev >= page:
                    break
                c = pos + prev
                hdr = q(c + 8)
            except gdb.MemoryError:
                break
            sz = hdr & ~7
            if not (hdr & 2) or (hdr & 5) or sz < page - prev or c + sz > hi or (prev + sz) % page:
                break
            if prev == 0:
                # memalign'd mmapped chunks start `lead` bytes into the mapping
                # (prev_size = lead) and leave a stale header at its start.
                span = min(sz, 1 << 16)
                head = rd(pos, span)
                for off in range(16, span - 15, 16):
                    p_, s_ = struct.unpack_from("<QQ", head, off)
                    if p_ == off and s_ & 2 and (s_ & ~7) + off == sz:
                        c, sz = pos + off, s_ & ~7
                        break
            blocks.append({"addr": hex(c + 16), "size": sz - 16, "chunk": sz, "state": "used",
                           "arena": None, "mmapped": True})
            pos = c + sz
    blocks.sort(key=lambda b: int(b["addr"], 16))
    # The allocator object of docs/json-format.md: arenas are regions,
    # their top a fact of each.
    regions = [{"addr": a["addr"], "kind": "arena", "primary": a["main"],
                "segments": a.get("heaps"), "system_bytes": a["system_mem"],
                "facts": {"top": a["top"]}} for a in arena_json]
    doc = {"target": target, "partial": False, "problems": [],
           "allocator": {"name": "glibc", "version": None, "method": method,
                         "facts": {}, "regions": regions},
           "blocks": blocks}
    with open(out_path, "w") as f:
        json.dump(doc, f)


def _blk(chunk, sz, state, lst, arena):
    b = {"addr": hex(chunk + 16), "size": sz - 8, "chunk": sz, "state": state,
         "arena": hex(arena), "mmapped": False}
    if state == "free":
        b["list"] = lst
    return b


def _regions(live_pid):
    out = []
    if live_pid:
        with open("/proc/%d/maps" % live_pid) as f:
            for line in f:
                parts = line.split()
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                if "w" in parts[1] and len(parts) < 6:     # anonymous, writable
                    out.append((lo, hi))
    else:
        txt = gdb.execute("maint info sections", to_string=True)
        for line in txt.splitlines():
            parts = line.split()
            if len(parts) >= 5 and parts[4].startswith("load") and "READONLY" not in line:
                lo, hi = (int(x, 16) for x in parts[1].split("->"))
                out.append((lo, hi))
    return out


# ------------------------------------------------------------- CLI side
def _fail(msg):
    sys.stderr.write("gdb_heapdom: " + msg + "\n")
    sys.exit(1)


def _build_id(path):
    try:
        out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    except OSError:
        return None
    for line in out.splitlines():
        if "Build ID:" in line:
            return line.split()[-1]
    return None


def _check_core(path, exe):
    try:
        with open(path, "rb") as f:
            hdr = f.read(64)
            fsize = os.fstat(f.fileno()).st_size
            if hdr[:4] != b"\x7fELF":
                _fail("%s: not an ELF file" % path)
            if hdr[4] != 2 or struct.unpack_from("<H", hdr, 16)[0] != 4:
                _fail("%s: not a 64-bit ELF core file" % path)
            phoff, = struct.unpack_from("<Q", hdr, 32)
            phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            if len(ph) < phentsize * phnum:
                _fail("%s: truncated core file" % path)
            for i in range(phnum):
                p_type, _, p_off, _, _, p_filesz = struct.unpack_from("<IIQQQQ", ph, i * phentsize)
                if p_type == 1 and p_off + p_filesz > fsize:
                    _fail("%s: truncated core file (segment at offset %#x beyond end %#x)"
                          % (path, p_off, fsize))
    except OSError as e:
        _fail("%s: %s" % (path, e.strerror))
    if exe:
        # the exe's build-id must appear in the core (gdb dumps ELF headers)
        bid = _build_id(exe)
        with open(path, "rb") as f:
            data = f.read()
        if not bid or bytes.fromhex(bid) not in data:
            _fail("%s: executable %s does not match the core (build-id mismatch)" % (path, exe))


def _core_exe(core):
    """First path in the core's NT_FILE note (the executable, mapped lowest)."""
    with open(core, "rb") as f:
        data = f.read(1 << 20)
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        for i in range(phnum):
            p_type, _, p_off, _, _, p_filesz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
            if p_type != 4:
                continue
            f.seek(p_off)
            notes = f.read(p_filesz)
            pos = 0
            while pos + 12 <= len(notes):
                namesz, descsz, ntype = struct.unpack_from("<III", notes, pos)
                pos += 12
                name = notes[pos:pos + namesz]
                pos += (namesz + 3) & ~3
                desc = notes[pos:pos + descsz]
                pos += (descsz + 3) & ~3
                if ntype == 0x46494C45 and name.startswith(b"CORE"):
                    count, = struct.unpack_from("<Q", desc, 0)
                    strs = desc[16 + 24 * count:].split(b"\0")
                    return strs[0].decode() if strs and strs[0] else None
    return None


def main(argv):
    if len(argv) < 2 or argv[1] not in ("blocks", "stats"):
        _fail("usage: gdb_heapdom.py blocks|stats CORE|--pid PID [--json] [...]")
    cmd, args = argv[1], argv[2:]
    core = pid = exe = debug_dir = state = None
    as_json = False
    i = 0
    while i < len(args):
        a = args[i]
        if a in ("--pid", "--exe", "--debug-dir", "--sysroot", "--state"):
            if i + 1 >= len(args):
                _fail("%s needs an argument" % a)
            v = args[i + 1]
            if a == "--pid":
                pid = int(v)
            elif a == "--exe":
                exe = v
            elif a == "--debug-dir":
                debug_dir = v
            elif a == "--state":
                state = v
            i += 2
            continue
        if a == "--json":
            as_json = True
        elif a.startswith("-"):
            _fail("unknown option %s" % a)
        else:
            core = a
        i += 1
    if (core is None) == (pid is None):
        _fail("give exactly one of CORE or --pid PID")
    if cmd == "stats":
        if core:
            _check_core(core, exe)
        print(json.dumps({"totals": {}, "allocator": {"name": "glibc", "regions": []},
                          "size_classes": []}))
        return 0
    method = "heuristic" if debug_dir else "debuginfo"
    import tempfile
    with tempfile.TemporaryDirectory() as td:
        out = os.path.join(td, "out.json")
        env = dict(os.environ, HD_ORACLE_OUT=out, HD_ORACLE_METHOD=method,
                   HD_ORACLE_TARGET=core or "pid %d" % pid, HD_ORACLE_PID=str(pid or 0))
        gdbcmd = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off",
                  "-x", os.path.abspath(__file__)]
        if core:
            _check_core(core, exe)
            exe = exe or _core_exe(core)
            gdbcmd += [exe, core] if exe else ["-c", core]
        else:
            gdbcmd += ["-p", str(pid)]
        r = subprocess.run(gdbcmd, env=env, capture_output=True, text=True)
        if not os.path.exists(out):
            _fail("%s: gdb walk failed: %s" % (core or pid, (r.stderr.strip().splitlines() or ["?"])[-1]))
        with open(out) as f:
            doc = json.load(f)
    if state:
        doc["blocks"] = [b for b in doc["blocks"] if b["state"] == state]
    if as_json:
        json.dump(doc, sys.stdout)
        sys.stdout.write("\n")
    else:
        for b in doc["blocks"]:
            print(b["addr"], b["size"], b["state"], b.get("list", ""))
    return 0


if IN_GDB:
    if os.environ.get("HD_ORACLE_OUT"):
        _gdb_walk(os.environ["HD_ORACLE_OUT"], os.environ.get("HD_ORACLE_TARGET", ""),
                  os.environ.get("HD_ORACLE_METHOD", "debuginfo"),
                  int(os.environ.get("HD_ORACLE_PID", "0")))
elif __name__ == "__main__":
    sys.exit(main(sys.argv))

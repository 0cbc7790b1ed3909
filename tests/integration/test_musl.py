#!/usr/bin/env python3
"""musl's mallocng (issue 22): heapdom's musl backend (core/heap/musl/)
against the truth musl_fixture records itself.

musl_fixture, built with musl-gcc both static and dynamic (run by
/lib/ld-musl-x86_64.so.1), allocates records of every size-class family,
two allocations past mallocng's mmap threshold, an aligned one, reallocs
some in place, frees some, drops the last pointer to others, and lets a
second thread allocate and free (keeping one block only in a local of its
live stack). It records every live block (address, size asked, reachable
or leaked) and every freed address. In mallocng a block's usable size is
the size asked, so sizes must match exactly.

For each build (static: the context from the symbol __malloc_context;
dynamic: from libc.so's data):
  blocks   allocator.name is musl, method symbol/heuristic, version the one
           the loader prints (dynamic) or 1.2.1-1.2.5; not partial, no
           problems; the used blocks are exactly the recorded ones, each
           with the size asked; every freed address is in no used block
           (and, when it is still in the heap, in a free slot, on the
           avail, freed or inactive list)
  leaks    exactly the blocks the program dropped (one only reachable from
           another leaked block), none of the kept ones (one held only by
           the second thread's stack)
  stats    used blocks and their usable bytes are the recorded ones
  why      for a sample of blocks: reachable ones reached from g_items,
           g_thread_items or the second thread's stack, leaked ones not
           reachable, each with its recorded size
  live     the same blocks and leaks attached with --pid
  gdb      heap-blocks and heap-leaks of the gdb front-end on the core
  lldb     `heapdom blocks` and `heapdom leaks` of the lldb front-end on the
           core (with --lldb-plugin)
  (--frontends none: without the gdb and lldb cases, as meson's
  musl-backend, which the ASan build runs; --frontends only: just them, as
  musl-frontends)
  kernel   a kernel core of the program (abort at the stop), when this
           machine writes them: the same blocks and leaks
  fresh    a core at main: musl's heap with no used block; the static
           program's never initialised (no_allocation_yet)
  damaged  a copy of the core with one group's pointer to its meta zeroed:
           partial, a problem naming the group, every block of the other
           groups exactly as recorded, no block the program never had
bump: a static program that never frees (musl's bump allocator, not
  mallocng): exit 1 naming it, no report
static only:
  stripped the static core read with a stripped executable: the context is
           found from the data (method heuristic), the same blocks
"""
import argparse
import os
import resource
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

LLDB_PYTHON = "/usr/lib/llvm-14/lib/python3.11/dist-packages"


def parse(path):
    blocks, freed = {}, set()

    def record(w, line):
        if w[0] == "block":
            if w[3] not in ("reachable", "leaked"):
                raise ValueError("bad verdict")
            blocks[int(w[1], 16)] = (int(w[2]), w[3])
        elif w[0] == "freed":
            freed.add(int(w[1], 16))
        else:
            raise KeyError(w[0])
    heaptest.read_truth(path, "musl_fixture", record)
    if len(blocks) < 100 or len(freed) < 20:
        raise heaptest.HarnessError("%s: %d blocks, %d freed recorded; expected more"
                                    % (path, len(blocks), len(freed)))
    return blocks, freed


def limit(out, n=20):
    return out[:n] + (["... %d more" % (len(out) - n)] if len(out) > n else [])


def loader_version():
    """musl's release as its dynamic loader prints it ("Version 1.2.3")."""
    r = subprocess.run(["/lib/ld-musl-x86_64.so.1"], capture_output=True, text=True)
    for line in (r.stdout + r.stderr).splitlines():
        if line.startswith("Version "):
            return line.split()[1]
    raise heaptest.HarnessError("/lib/ld-musl-x86_64.so.1 printed no version")


def check_blocks(doc, truth, method, version=None):
    """The used blocks, sizes and free slots of a blocks --json document."""
    blocks, freed = truth
    out = []
    al = doc.get("allocator") or {}
    if al.get("name") != "musl":
        return ["allocator.name is %r, expected musl" % al.get("name")]
    if method and al.get("method") != method:
        out.append("allocator.method %r, expected %r" % (al.get("method"), method))
    if version and al.get("version") != version:
        out.append("allocator.version %r, the loader says %r" % (al.get("version"), version))
    if doc.get("partial") or doc.get("problems"):
        out.append("partial %r, problems %r" % (doc.get("partial"), (doc.get("problems") or [])[:5]))
    used = {}
    free = []
    for b in doc["blocks"]:
        addr = int(b["addr"], 16)
        if b["state"] == "used":
            used[addr] = b["size"]
        elif b["state"] == "free":
            if b.get("list") not in ("avail", "freed", "inactive"):
                out.append("free block %s on list %r" % (b["addr"], b.get("list")))
            free.append((addr, addr + b["size"]))
        else:
            out.append("block %s is %s; mallocng blocks are used or free" % (b["addr"], b["state"]))
    want = {a: s for a, (s, _) in blocks.items()}
    for a in sorted(set(want) | set(used)):
        if want.get(a) != used.get(a):
            out.append("used block %s: heapdom size %s, recorded %s" % (hex(a), used.get(a), want.get(a)))
    free.sort()
    starts = [f[0] for f in free]
    import bisect
    in_free = 0
    for a in sorted(freed):
        if a in used:
            out.append("freed address %s is a used block" % hex(a))
            continue
        i = bisect.bisect_right(starts, a) - 1
        in_free += i >= 0 and a < free[i][1]
    if in_free < len(freed) // 2:
        out.append("only %d of %d freed addresses lie in a free slot" % (in_free, len(freed)))
    return limit(out)


def check_leaks(doc, truth):
    blocks, _ = truth
    got = {int(b["addr"], 16) for b in doc["leaks"]}
    want = {a for a, (_, v) in blocks.items() if v == "leaked"}
    out = ["dropped block %s not reported leaked" % hex(a) for a in sorted(want - got)]
    out += ["block %s reported leaked, recorded %s" % (hex(a), blocks.get(a)) for a in sorted(got - want)]
    if len(want) < 2:
        out.append("the fixture recorded %d leaked blocks; expected several" % len(want))
    return limit(out)


def check_stats(doc, truth):
    blocks, _ = truth
    tot = doc["totals"]
    n = tot["used"]["blocks"] + tot["mmapped"]["blocks"]
    want_b = sum(s for s, _ in blocks.values())
    if n != len(blocks) or tot["usable"] != want_b:
        return ["stats: %d used blocks, %d usable bytes; recorded %d, %d bytes"
                % (n, tot["usable"], len(blocks), want_b)]
    return []


def load_segments(core):
    """[(vaddr, memsz, offset, filesz)] of the core's PT_LOAD segments."""
    with open(core, "rb") as f:
        eh = f.read(64)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        segs = []
        for _ in range(phnum):
            p_type, _, off, vaddr, _, filesz, memsz = struct.unpack_from(
                "<IIQQQQQ", f.read(phentsize))
            if p_type == 1:
                segs.append((vaddr, memsz, off, filesz))
        return segs


def core_offset(segs, addr):
    for vaddr, memsz, off, filesz in segs:
        if vaddr <= addr < vaddr + min(memsz, filesz):
            return off + addr - vaddr
    raise heaptest.HarnessError("address %s is not in the core" % hex(addr))


def damaged(a, core, truth, out):
    """Breaks one group in a copy of the core (its pointer back to its meta
    zeroed): heapdom must say so, naming the group, and still give every
    block of the other groups exactly. A block's group is read from its
    in-band header (mallocng's format: the 16-bit offset at p-2 counts
    16-byte units from the group's slots, which start 16 bytes in)."""
    blocks, _ = truth
    segs = load_segments(core)
    group_of = {}
    with open(core, "rb") as f:
        for b in blocks:
            f.seek(core_offset(segs, b - 4))
            hdr = f.read(4)
            if hdr[0] == 0:
                group_of[b] = b - 16 * struct.unpack_from("<H", hdr, 2)[0] - 16
    # The group of the tenth recorded block that is not a large allocation.
    small = sorted(b for b, (size, _) in blocks.items() if size < 2000 and b in group_of)
    victim = group_of[small[len(small) // 2]]
    shutil.copyfile(core, out)
    with open(out, "r+b") as f:
        f.seek(core_offset(segs, victim))
        f.write(bytes(8))
    r = heaptest.run_heapdom(a.heapdom, ["blocks", out, "--json"])
    if r.rc != 0:
        return [r.describe()]
    import json
    doc = json.loads(r.out)
    out_ = []
    probs = doc.get("problems") or []
    if not doc.get("partial") or not any(int(p["addr"], 16) == victim for p in probs):
        out_.append("no problem names the damaged group %s (partial %r, problems %r)"
                    % (hex(victim), doc.get("partial"), probs[:5]))
    used = {int(b["addr"], 16): b["size"] for b in doc["blocks"] if b["state"] == "used"}
    lost = [b for b in blocks if group_of.get(b) == victim]
    for b, (size, _) in blocks.items():
        if group_of.get(b) == victim:
            continue
        if used.get(b) != size:
            out_.append("block %s of an intact group: heapdom %s, recorded %s"
                        % (hex(b), used.get(b), size))
    extra = sorted(set(used) - set(blocks))
    if extra:
        out_.append("used blocks the program never had: %s" % [hex(x) for x in extra[:5]])
    if not lost:
        out_.append("the damaged group %s held no recorded block" % hex(victim))
    return limit(out_)


class Run:
    def __init__(self, a):
        self.a = a
        self.run = heaptest.CaseRunner(a.workdir, a.only, a.keep)

    def case(self, frontend, name, fn):
        """A case of the CLI (frontend False) or of a debugger front-end,
        run as --frontends says."""
        if (self.a.frontends == "only") != frontend and self.a.frontends != "all":
            return
        self.run.case(name, fn)

    def hd(self, args):
        return heaptest.heapdom_json(self.a.heapdom, args)

    def variant(self, kind, fixture):
        run, a = self.run, self.a
        method = "symbol" if kind == "static" else "heuristic"
        core, tpath = run.path(kind + ".core"), run.path(kind + ".truth")
        state = {}

        def setup():
            heaptest.make_core(fixture, tpath, core)
            state["truth"] = parse(tpath)
            return []
        run.case("setup-%s: gcore of the %s musl_fixture and its truth" % (kind, kind), setup)
        if "truth" not in state:
            return
        truth = state["truth"]
        # A dynamic program's libc says its release; a static one's does not.
        version = loader_version() if kind == "dynamic" else "1.2.1-1.2.5"
        self.case(False, "blocks-%s: every used block and its exact size, the freed ones free"
                  % kind,
                  lambda: check_blocks(self.hd(["blocks", core, "--json"]), truth, method,
                                       version))
        self.case(False, "leaks-%s: exactly the blocks the program dropped" % kind,
                  lambda: check_leaks(self.hd(["leaks", core, "--json"]), truth))
        self.case(False, "stats-%s: used blocks and bytes" % kind,
                  lambda: check_stats(self.hd(["stats", core, "--json"]), truth))

        def why():
            blocks, _ = truth
            kept = sorted(b for b, (_, v) in blocks.items() if v == "reachable")
            lost = sorted(b for b, (_, v) in blocks.items() if v == "leaked")
            out = []
            for b in kept[::len(kept) // 8 or 1] + lost[::len(lost) // 4 or 1]:
                doc = self.hd(["why", core, hex(b), "--json"])
                want = blocks[b][1] == "reachable"
                blk = doc.get("block") or {}
                if doc.get("reachable") is not want or blk.get("size") != blocks[b][0]:
                    out.append("why %s: reachable %r, size %r; recorded %s, %d bytes"
                               % (hex(b), doc.get("reachable"), blk.get("size"),
                                  blocks[b][1], blocks[b][0]))
                    continue
                root = ((doc.get("path") or [{}])[0]).get("root") or ""
                if want and not (root.endswith(":g_items") or root.endswith(":g_thread_items")
                                 or root.startswith("thread ")):
                    out.append("why %s: the chain starts at %r, not at g_items, "
                               "g_thread_items or the second thread's stack" % (hex(b), root))
            return out
        self.case(False, "why-%s: reachable blocks from g_items, g_thread_items or a "
                  "thread's stack; leaked ones leaked" % kind, why)

        def live():
            lt = run.path(kind + "-live.truth")
            ready = run.path(kind + "-live.ready")
            proc = heaptest.start_fixture(fixture, lt, ready)
            try:
                pid = open(ready).read().strip()
                t = parse(lt)
                out = check_blocks(self.hd(["blocks", "--pid", pid, "--json"]), t, method)
                out += check_leaks(self.hd(["leaks", "--pid", pid, "--json"]), t)
            finally:
                heaptest.stop_fixture(proc)
            return out
        self.case(False, "live-%s: blocks and leaks with --pid" % kind, live)

        def gdb():
            bj, lj = run.path(kind + "-gdb-blocks.json"), run.path(kind + "-gdb-leaks.json")
            for p in (bj, lj):
                if os.path.exists(p):
                    os.unlink(p)
            env = dict(os.environ)
            env["HEAPDOM_LIB"] = a.lib
            r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "source " + a.gdb_plugin,
                                "-ex", "heap-blocks --json --output " + bj,
                                "-ex", "heap-leaks --json --output " + lj, fixture, core],
                               capture_output=True, text=True, timeout=600, env=env)
            if not os.path.exists(bj) or not os.path.exists(lj):
                return ["gdb wrote no output (rc %d): %s" % (r.returncode, r.stderr[-1500:])]
            import json
            return (check_blocks(json.load(open(bj)), truth, method) +
                    check_leaks(json.load(open(lj)), truth))
        self.case(True, "gdb-%s: heap-blocks and heap-leaks on the core" % kind, gdb)

        def lldb():
            bj, lj = run.path(kind + "-lldb-blocks.json"), run.path(kind + "-lldb-leaks.json")
            for p in (bj, lj):
                if os.path.exists(p):
                    os.unlink(p)
            env = dict(os.environ)
            env["HEAPDOM_LIB"] = a.lib
            if os.path.isdir(LLDB_PYTHON):
                env["PYTHONPATH"] = LLDB_PYTHON
            r = subprocess.run(["lldb-14", "-x", "-b", "-o", "plugin load " + a.lldb_plugin,
                                "-o", "heapdom blocks --json --output " + bj,
                                "-o", "heapdom leaks --json --output " + lj,
                                "-c", core, fixture],
                               capture_output=True, text=True, timeout=600, env=env)
            if not os.path.exists(bj) or not os.path.exists(lj):
                return ["lldb wrote no output (rc %d): %s" % (r.returncode, r.stdout[-1500:])]
            import json
            return (check_blocks(json.load(open(bj)), truth, method) +
                    check_leaks(json.load(open(lj)), truth))
        if a.lldb_plugin:
            self.case(True, "lldb-%s: heapdom blocks and leaks on the core" % kind, lldb)

        def kernel():
            d = run.path(kind + "-kernel")
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(d)

            def limits():
                resource.setrlimit(resource.RLIMIT_CORE,
                                   (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            subprocess.run([fixture, "truth", "--abort"], cwd=d, preexec_fn=limits,
                           capture_output=True, timeout=120)
            cores = [f for f in os.listdir(d) if f.startswith("core")]
            if not cores:
                print("skip kernel-%s: this machine wrote no kernel core (core_pattern %s)"
                      % (kind, open("/proc/sys/kernel/core_pattern").read().strip()))
                return []
            kc = os.path.join(d, cores[0])
            t = parse(os.path.join(d, "truth"))
            out = check_blocks(self.hd(["blocks", kc, "--exe", fixture, "--json"]), t, method)
            out += check_leaks(self.hd(["leaks", kc, "--exe", fixture, "--json"]), t)
            if not out and not a.keep:
                shutil.rmtree(d, ignore_errors=True)
            return out
        self.case(False, "kernel-%s: a kernel core, the same blocks and leaks" % kind, kernel)

        def fresh():
            fc = run.path(kind + "-fresh.core")
            if os.path.exists(fc):
                os.unlink(fc)
            subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "break main", "-ex", "run",
                            "-ex", "gcore " + fc, "-ex", "kill", "--args", fixture,
                            run.path(kind + "-fresh.truth")],
                           capture_output=True, timeout=300)
            if not os.path.exists(fc):
                raise heaptest.HarnessError("gdb made no core at main")
            doc = self.hd(["stats", fc, "--json"])
            al = doc.get("allocator") or {}
            used = doc["totals"]["used"]["blocks"] + doc["totals"]["mmapped"]["blocks"]
            out = []
            if al.get("name") != "musl" or used or doc.get("partial"):
                out.append("allocator %r, %d used blocks, partial %r: expected musl's heap "
                           "with no used block" % (al.get("name"), used, doc.get("partial")))
            # A static program has allocated nothing at main; a dynamic
            # one's loader has given malloc the ends of its data segments.
            if (kind == "static") != bool(doc.get("no_allocation_yet")):
                out.append("no_allocation_yet %r at main of the %s program"
                           % (doc.get("no_allocation_yet"), kind))
            return out
        self.case(False, "fresh-%s: at main, musl's heap and no used block (static: "
                  "never initialised)" % kind, fresh)

        self.case(False, "damaged-%s: a group's back pointer zeroed: a problem naming it, "
                  "the other groups' blocks exact" % kind,
                  lambda: damaged(a, core, truth, run.path(kind + "-damaged.core")))

        if kind == "static":
            def stripped():
                exe = run.path("musl_fixture_static.stripped")
                subprocess.run(["strip", "-o", exe, fixture], check=True)
                doc = self.hd(["blocks", core, "--exe", exe, "--json"])
                return check_blocks(doc, truth, "heuristic")
            self.case(False, "stripped-static: the context found from the data of a "
                      "stripped program", stripped)


BUMP_PROGRAM = r"""
#include <stdlib.h>
void *g_records[10];
__attribute__((noinline)) void hd_fixture_stop(void) { __asm__ volatile(""); }
int main(void) {
  for (int i = 0; i < 10; i++) g_records[i] = malloc(100);
  hd_fixture_stop();
  return 0;
}
"""


def bump(a, run):
    """A static program that never calls free links musl's bump allocator
    (__simple_malloc), not mallocng: heapdom names it and fails, never an
    empty heap."""
    musl = shutil.which("musl-gcc")
    if not musl:
        return ["musl-gcc is not installed (package musl-tools)"]
    src, prog, core = run.path("bump.c"), run.path("bump_static"), run.path("bump.core")
    with open(src, "w") as f:
        f.write(BUMP_PROGRAM)
    subprocess.run([musl, "-static", "-g", "-O1", src, "-o", prog], check=True)
    if os.path.exists(core):
        os.unlink(core)
    subprocess.run(["gdb", "-q", "-nx", "-batch", "-ex", "break hd_fixture_stop", "-ex", "run",
                    "-ex", "gcore " + core, "-ex", "kill", prog], capture_output=True, timeout=300)
    r = heaptest.run_heapdom(a.heapdom, ["stats", core])
    if r.rc != 1 or "bump allocator" not in r.err or "__simple_malloc" not in r.err or r.out:
        return ["expected exit 1 naming musl's bump allocator:\n" + r.describe()]
    return []


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--static-fixture", required=True)
    ap.add_argument("--dynamic-fixture", required=True)
    ap.add_argument("--gdb-plugin", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--lldb-plugin")
    ap.add_argument("--frontends", choices=("all", "none", "only"), default="all",
                    help="the gdb and lldb cases too, not at all (an ASan build: "
                    "gdb cannot load a sanitized library), or only them")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    a.lib = os.path.abspath(a.lib)
    a.lldb_plugin = a.lldb_plugin and os.path.abspath(a.lldb_plugin)
    os.makedirs(a.workdir, exist_ok=True)
    r = Run(a)
    r.variant("static", os.path.abspath(a.static_fixture))
    r.variant("dynamic", os.path.abspath(a.dynamic_fixture))
    r.case(False, "bump: a static program without free (musl's bump allocator) is named, "
               "not shown as an empty heap", lambda: bump(a, r.run))
    return r.run.finish(remove=(".core", ".truth", ".json", ".stripped", ".ready", ".c",
                                "bump_static"))


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Cores from elsewhere (issue 20, item 2): without NT_FILE, with --exe and
--sysroot, with file-backed memory filtered out.

    test_noteless.py --heapdom PATH --lib LIBHEAPDOM --fixture ALLOC_FIXTURE
                     --static-fixture PATH --filtered-source FILTERED_FIXTURE_C
                     [--foreign-cores DIR] --workdir DIR [--only CASES]

Cases (each fails if the behaviour it names breaks):
  strip     a gdb core of the fixture rewritten without its NT_FILE note
            (removed, or its type changed; core_notes.py): the modules are
            the files NT_FILE lists at offset 0 (the same files up to
            symlinks, the same ranges: the note itself is the oracle), and
            the used, free and leaked blocks and the root names are those
            of the core with the note; the warning says what was found.
  static    the same for a static executable: the executable alone.
  sysroot   the note-less core with --sysroot holding another build of
            libc (and --exe another build of the program): never used,
            a warning names both build-ids; with the real files: none.
  filtered  kernel cores of a program that sets its coredump_filter (0x1:
            anonymous memory only; 0x11: and ELF headers) and aborts: the
            left-out read-only code reads from the file when its build-id
            is the core's, and is an error naming both build-ids when the
            program was rebuilt; a private file mapping never written reads
            as the file; the used and leaked blocks are the fixture's.
  foreign   chap's cores without NT_FILE (../shared/foreign-cores): the
            executable and libc are found in memory, with their build-ids.
The last line is "N passed, N failed".
"""
import ctypes
import json
import os
import resource
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import core_notes  # noqa: E402
import heaptest  # noqa: E402

check = heaptest.Checks()


def run(a, args, timeout=120):
    return heaptest.run_heapdom(a.heapdom, args, timeout)


# ----------------------------------------------------------- libheapdom

class Module(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("file", ctypes.c_char_p),
                ("bias", ctypes.c_uint64), ("start", ctypes.c_uint64),
                ("end", ctypes.c_uint64), ("build_id", ctypes.c_uint8 * 64),
                ("build_id_len", ctypes.c_size_t), ("is_exe", ctypes.c_bool)]


class Mapping(ctypes.Structure):
    _fields_ = [("start", ctypes.c_uint64), ("end", ctypes.c_uint64),
                ("file_offset", ctypes.c_uint64), ("prot", ctypes.c_uint32),
                ("path", ctypes.c_char_p), ("readable", ctypes.c_bool)]


class Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("errnum", ctypes.c_int),
                ("has_address", ctypes.c_bool), ("address", ctypes.c_uint64),
                ("path", ctypes.c_char_p), ("message", ctypes.c_char_p),
                ("is_static", ctypes.c_bool)]


class Options(ctypes.Structure):
    _fields_ = [("exe", ctypes.c_char_p), ("sysroot", ctypes.c_char_p)]


class Target:
    """A core opened through libheapdom's C API."""

    def __init__(self, lib, core, exe=None, sysroot=None):
        self.lib = lib
        lib.hd_target_open_core.restype = ctypes.POINTER(Error)
        lib.hd_target_module.restype = ctypes.POINTER(Module)
        lib.hd_target_mapping.restype = ctypes.POINTER(Mapping)
        lib.hd_target_read.restype = ctypes.POINTER(Error)
        lib.hd_target_read.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                       ctypes.c_void_p, ctypes.c_size_t]
        lib.hd_target_num_modules.argtypes = [ctypes.c_void_p]
        lib.hd_target_module.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.hd_target_num_mappings.argtypes = [ctypes.c_void_p]
        lib.hd_target_mapping.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        lib.hd_target_num_modules.restype = ctypes.c_size_t
        lib.hd_target_num_mappings.restype = ctypes.c_size_t
        lib.hd_target_destroy.argtypes = [ctypes.c_void_p]
        opts = Options(exe.encode() if exe else None,
                       sysroot.encode() if sysroot else None)
        self.t = ctypes.c_void_p()
        err = lib.hd_target_open_core(core.encode(), ctypes.byref(opts),
                                      ctypes.byref(self.t))
        if err:
            raise RuntimeError(err.contents.message.decode())

    def modules(self):
        out = []
        for i in range(self.lib.hd_target_num_modules(self.t)):
            m = self.lib.hd_target_module(self.t, i).contents
            out.append({"name": m.name.decode(), "start": m.start, "end": m.end,
                        "bias": m.bias, "is_exe": m.is_exe,
                        "file": m.file.decode() if m.file else None,
                        "build_id": bytes(m.build_id[:m.build_id_len]).hex()})
        return out

    def mapping(self, addr):
        for i in range(self.lib.hd_target_num_mappings(self.t)):
            m = self.lib.hd_target_mapping(self.t, i).contents
            if m.start <= addr < m.end:
                return m
        return None

    def read(self, addr, n):
        """(bytes, None) or (None, error message)."""
        buf = ctypes.create_string_buffer(n)
        err = self.lib.hd_target_read(self.t, addr, buf, n)
        if err:
            return None, err.contents.message.decode()
        return buf.raw, None

    def close(self):
        self.lib.hd_target_destroy(self.t)


def nt_file_modules(core):
    """The modules NT_FILE implies: each file mapped at offset 0 that is an
    ELF file here, from that mapping to the end of its last mapping."""
    with open(core, "rb") as f:
        entries = core_notes.nt_file(f.read())
    mods = {}
    for start, end, off, path in entries:
        if path in mods:
            mods[path][1] = max(mods[path][1], end)
        elif off == 0 and os.path.isfile(path):
            with open(path, "rb") as f:
                if f.read(4) == b"\x7fELF":
                    mods[path] = [start, end]
    return sorted((s, e, os.path.realpath(p)) for p, (s, e) in mods.items())


def same_files(mods):
    return sorted((m["start"], m["end"], os.path.realpath(m["name"])) for m in mods)


def gdb_core(program, core, args=()):
    if os.path.exists(core):
        os.unlink(core)
    cmd = ["gdb", "-q", "-nx", "-batch", "-ex", "break hd_fixture_stop", "-ex", "run",
           "-ex", "gcore " + core, "-ex", "kill", "--args", program] + list(args)
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL)
    if not os.path.isfile(core):
        raise RuntimeError("no core of %s: %s" % (program, r.stdout[-1500:] + r.stderr[-1500:]))
    return core


def same_path(root):
    """A region root "PATH+0xOFFSET" with PATH's symlinks resolved: NT_FILE
    names files by their real path, the dynamic linker by the one it
    opened (/lib/... for /usr/lib/... on a merged /usr)."""
    path, plus, off = root.rpartition("+0x")
    if plus and path.startswith("/"):
        return os.path.realpath(path) + plus + off
    return root


def verdicts(a, core, extra=()):
    """(blocks as (addr, size, state, list), leaked addresses, root names)."""
    b = run(a, ["blocks", core, "--json"] + list(extra))
    lk = run(a, ["leaks", core, "--json"] + list(extra))
    g = run(a, ["graph", core, "--format", "json"] + list(extra))
    if b.rc or lk.rc or g.rc:
        raise RuntimeError(b.describe() + lk.describe() + g.describe())
    blocks = sorted((x["addr"], x["size"], x["state"], x.get("list"))
                    for x in json.loads(b.out)["blocks"])
    leaked = sorted(x["addr"] for x in json.loads(lk.out)["leaks"])
    roots = sorted(same_path(n["root"]) for n in json.loads(g.out)["nodes"] if "root" in n)
    return blocks, leaked, roots, json.loads(b.out)["warnings"]


def compare_noteless(a, lib, label, program, core, need_blocks=True):
    """The note-less copies of core find what the note says."""
    want_mods = nt_file_modules(core)
    t = Target(lib, core)
    with_note = t.modules()
    t.close()
    check("%s with NT_FILE: heapdom's modules are the note's" % label,
          same_files(with_note) == want_mods, "%s\n%s" % (with_note, want_mods))
    blocks, leaked, roots, _w = verdicts(a, core)
    for mode in ("strip", "retype"):
        nl = os.path.join(a.workdir, "%s-%s.core" % (label, mode))
        core_notes.without_nt_file(core, nl, mode)
        t = Target(lib, nl)
        mods = t.modules()
        t.close()
        check("%s, NT_FILE %s: the same modules (files up to symlinks, ranges) as the "
              "note lists" % (label, "removed" if mode == "strip" else "retyped"),
              same_files(mods) == want_mods, "%s\n%s" % (mods, want_mods))
        exe = [m for m in mods if m["is_exe"]]
        check("%s, NT_FILE %s: the executable is %s with its file and build-id" % (label, mode, program),
              len(exe) == 1 and os.path.realpath(exe[0]["name"]) == os.path.realpath(program)
              and exe[0]["file"] and exe[0]["build_id"], exe)
        b2, l2, r2, w2 = verdicts(a, nl)
        check("%s, NT_FILE %s: the same %d blocks (used, free, lists) as with the note"
              % (label, mode, len(blocks)), b2 == blocks and (blocks or not need_blocks),
              "%d vs %d blocks; first differences %s" % (
                  len(b2), len(blocks), [x for x in b2 if x not in blocks][:5]))
        check("%s, NT_FILE %s: the same %d leaked blocks" % (label, mode, len(leaked)),
              l2 == leaked, "%s\n%s" % (l2, leaked))
        check("%s, NT_FILE %s: the same %d root names" % (label, mode, len(roots)),
              r2 == roots, "only without the note: %s\nonly with it: %s" % (
                  sorted(set(r2) - set(roots))[:10], sorted(set(roots) - set(r2))[:10]))
        n = len(want_mods)
        check("%s, NT_FILE %s: one warning saying %d module%s were found from memory"
              % (label, mode, n, "" if n == 1 else "s"),
              sum("no NT_FILE note" in w for w in w2) == 1 and
              any("%d module%s found from the process's memory" % (n, "" if n == 1 else "s") in w
                  for w in w2), w2)
    return nl


def case_strip(a, lib):
    core = gdb_core(a.fixture, os.path.join(a.workdir, "dynamic.core"))
    a.noteless = compare_noteless(a, lib, "dynamic", a.fixture, core)


def case_static(a, lib):
    core = gdb_core(a.static_fixture, os.path.join(a.workdir, "static.core"))
    # A static program: main_arena lies in the executable; the blocks with
    # and without NT_FILE must be the same and not empty.
    nl = compare_noteless(a, lib, "static", a.static_fixture, core, need_blocks=True)
    t = Target(lib, nl)
    mods = t.modules()
    t.close()
    check("static, no NT_FILE: the executable is the only module",
          len(mods) == 1 and mods[0]["is_exe"], mods)


def build_id_of(path):
    out = subprocess.run(["readelf", "-n", path], capture_output=True, text=True).stdout
    for ln in out.splitlines():
        if "Build ID:" in ln:
            return ln.split("Build ID:")[1].strip()
    return None


def case_sysroot(a, lib):
    nl = getattr(a, "noteless", None)
    if not nl:
        core = gdb_core(a.fixture, os.path.join(a.workdir, "dynamic.core"))
        nl = os.path.join(a.workdir, "dynamic-strip.core")
        core_notes.without_nt_file(core, nl)
    t = Target(lib, nl)
    mods = t.modules()
    t.close()
    libc = [m for m in mods if os.path.basename(m["name"]).startswith("libc.so")][0]
    root = os.path.join(a.workdir, "sysroot")
    shutil.rmtree(root, ignore_errors=True)
    # Another build at libc's path: libm stands in for it.
    other = os.path.join(os.path.dirname(os.path.realpath(libc["name"])), "libm.so.6")
    dest = root + libc["name"]
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    shutil.copy(other, dest)
    t = Target(lib, nl, sysroot=root)
    m2 = [m for m in t.modules() if m["name"] == libc["name"]][0]
    t.close()
    check("sysroot with another libc build: its file is not used", m2["file"] is None, m2)
    r = run(a, ["stats", nl, "--sysroot", root])
    want, have = libc["build_id"], build_id_of(other)
    warn = [ln for ln in r.out.splitlines() if ln.startswith("warning:")]
    check("sysroot with another libc build: exit 0, a warning that it is not the build the "
          "process loaded", r.rc == 0 and any("libc.so.6" in w and "not the build" in w
                                              for w in warn), r.describe())
    b = run(a, ["stats", nl, "--sysroot", root, "--json"])
    check("sysroot with another libc build: the same used and free blocks as with the right one",
          b.rc == 0 and json.loads(b.out)["totals"] ==
          json.loads(run(a, ["stats", nl, "--json"]).out)["totals"], b.describe())
    # The real one under the sysroot: used, no word about libc.
    shutil.copy(os.path.realpath(libc["name"]), dest)
    t = Target(lib, nl, sysroot=root)
    m3 = [m for m in t.modules() if m["name"] == libc["name"]][0]
    t.close()
    check("sysroot with libc's own build: used from the sysroot",
          m3["file"] == dest and m3["build_id"] == want, m3)
    # --exe of another build (the static one): refused, naming both ids.
    r = run(a, ["stats", nl, "--exe", a.static_fixture])
    sid = build_id_of(a.static_fixture)
    exe = [m for m in mods if m["is_exe"]][0]
    check("no NT_FILE, --exe of another build: exit 0, one warning naming the file and both "
          "build-ids", r.rc == 0 and any(a.static_fixture in w and exe["build_id"] in w and sid in w
                                          for w in r.out.splitlines()), r.describe())
    r = run(a, ["stats", nl, "--exe", a.fixture])
    check("no NT_FILE, --exe of the right build: no warning about the executable",
          r.rc == 0 and not any(w.startswith("warning: the executable")
                                for w in r.out.splitlines()), r.describe())


def kernel_core(a, program, filt, data, name):
    """Runs program FILTER DATA TRUTH in its own directory with core dumps
    on; returns (core, truth) or None when this kernel writes no core
    there (a core_pattern pipe, a container)."""
    d = os.path.join(a.workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    truth = os.path.join(d, "truth")

    def limits():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    subprocess.run([program, filt, data, truth], cwd=d, preexec_fn=limits,
                   capture_output=True, timeout=60)
    cores = [f for f in os.listdir(d) if f.startswith("core")]
    if not cores:
        return None
    t = {"used": [], "leaked": []}
    for ln in open(truth):
        w = ln.split()
        if w[0] in ("used", "leaked"):
            t[w[0]].append(int(w[1], 16))
        elif w[0] == "map":
            t["map"] = (int(w[1], 16), int(w[2]))
        elif w[0] == "code":
            t["code"] = int(w[1], 16)
    return os.path.join(d, cores[0]), t


def check_blocks(a, label, core, truth, extra=()):
    b = run(a, ["blocks", core, "--json"] + list(extra))
    lk = run(a, ["leaks", core, "--json"] + list(extra))
    ok = b.rc == 0 and lk.rc == 0
    if ok:
        used = {int(x["addr"], 16) for x in json.loads(b.out)["blocks"] if x["state"] == "used"}
        leaked = {int(x["addr"], 16) for x in json.loads(lk.out)["leaks"]}
        ok = (set(truth["used"]) <= used and set(truth["leaked"]) <= used and
              set(truth["leaked"]) <= leaked and not set(truth["used"]) & leaked)
    check("%s: the fixture's %d kept blocks used and reachable, its %d leaked blocks leaked"
          % (label, len(truth["used"]), len(truth["leaked"])), ok, b.describe() + lk.describe())


def case_filtered(a, lib):
    pattern = open("/proc/sys/kernel/core_pattern").read().strip()
    if pattern.startswith("|"):
        print("skip filtered: core_pattern is a pipe (%s), no kernel core to read" % pattern)
        return
    data = os.path.join(a.workdir, "mapped.data")
    with open(data, "wb") as f:
        f.write(bytes((i * 7 + 3) & 0xff for i in range(3 * 4096 + 100)))
    prog = os.path.join(a.workdir, "filtered_fixture")
    cc = ["cc", "-g", "-D_GNU_SOURCE", "-I", os.path.dirname(a.filtered_source),
          a.filtered_source, "-o", prog]
    subprocess.run(cc + ["-O1"], check=True)
    for filt in ("0x1", "0x11"):
        got = kernel_core(a, prog, filt, data, "filter-" + filt)
        if not got:
            print("skip filtered: the kernel wrote no core (core_pattern %s)" % pattern)
            return
        core, truth = got
        label = "coredump_filter %s" % filt
        t = Target(lib, core)
        code, err = t.read(truth["code"], 64)
        with open(prog, "rb") as f:
            elf = f.read()
        mods = t.modules()
        exe = [m for m in mods if m["is_exe"]][0]
        check("%s: the program's code (left out of the core) reads as its file's bytes"
              % label, code is not None and code in elf, err)
        addr, size = truth["map"]
        got_data, err = t.read(addr, size)
        check("%s: a private file mapping never written (left out) reads as the file"
              % label, got_data == open(data, "rb").read(), err)
        has_ids = filt == "0x11"
        check("%s: the executable's build-id is its file's" % label,
              exe["build_id"] == build_id_of(prog) and exe["file"] == prog, exe)
        t.close()
        r = run(a, ["stats", core])
        warn = [w for w in r.out.splitlines() if w.startswith("warning:")]
        check("%s: stats exit 0%s" % (label, ", the files used unverified, said so"
                                      if not has_ids else ", no warning"),
              r.rc == 0 and (any("unverified" in w for w in warn) if not has_ids else not warn),
              r.describe())
        check_blocks(a, label, core, truth)
        if has_ids:
            kept = (core, truth)
    # The program rebuilt after the core was made: its file is another
    # build, the left-out code is unreadable, and nothing reads as zeros.
    core, truth = kept
    old_id = build_id_of(prog)
    subprocess.run(cc + ["-O2"], check=True)
    new_id = build_id_of(prog)
    t = Target(lib, core)
    code, err = t.read(truth["code"], 64)
    m = t.mapping(truth["code"])
    readable = m.readable if m else None
    t.close()
    check("rebuilt program: its left-out code is an error naming both build-ids",
          code is None and err and old_id in err and new_id in err and old_id != new_id,
          "%s %s %s" % (err, old_id, new_id))
    check("rebuilt program: its left-out code's mapping is not readable", readable is False,
          readable)
    r = run(a, ["stats", core])
    check("rebuilt program: stats exit 0, one warning naming the file and both build-ids",
          r.rc == 0 and sum(prog in w and old_id in w and new_id in w
                            for w in r.out.splitlines()) == 1, r.describe())
    check_blocks(a, "rebuilt program", core, truth)
    # The data file gone: its range is unreadable, not zeros.
    os.unlink(data)
    t = Target(lib, core)
    got_data, err = t.read(truth["map"][0], 64)
    m = t.mapping(truth["map"][0])
    readable = m.readable if m else None  # read before the target is freed
    t.close()
    check("data file gone: its left-out range is an error naming the file, and unreadable",
          got_data is None and data in (err or "") and readable is False, "%s %s" % (err, readable))


def case_foreign(a, lib):
    expected = os.path.join(a.foreign_cores, "expected.json")
    if not os.path.isfile(expected):
        print("skip foreign cores: %s absent" % expected)
        return
    with open(expected) as f:
        names = json.load(f)
    for name, core in heaptest.foreign_cores(a.foreign_cores, a.workdir, names):
        with open(core, "rb") as f:
            has_note = core_notes.nt_file(f.read()) is not None
        if has_note:
            continue
        t = Target(lib, core)
        mods = t.modules()
        # Oracle: the ELF header at each module's start, read from the
        # core's own segments with readelf's view of them.
        ok = True
        detail = str(mods)
        exe = [m for m in mods if m["is_exe"]]
        libc = [m for m in mods if os.path.basename(m["name"]).startswith("libc")]
        ok = len(exe) == 1 and len(libc) == 1 and os.path.basename(exe[0]["name"]) == name.split("_")[0]
        for m in mods:
            hdr, err = t.read(m["start"], 4)
            ok = ok and hdr == b"\x7fELF" and m["start"] < m["end"] and m["build_id"]
        spans = sorted((m["start"], m["end"]) for m in mods)
        ok = ok and all(spans[i][1] <= spans[i + 1][0] for i in range(len(spans) - 1))
        t.close()
        check("foreign core %s (no NT_FILE): the executable and libc found in memory, each "
              "range starting at its ELF header, with build-ids, none overlapping" % name,
              ok, detail)
        r = run(a, ["stats", core])
        check("foreign core %s: one warning says which modules were found from memory" % name,
              r.rc == 0 and sum("modules found from the process's memory" in w
                                for w in r.out.splitlines()) == 1, r.describe())


def main():
    ap = heaptest.arguments("--lib", "--fixture", "--static-fixture",
                            "--filtered-source")
    ap.add_argument("--foreign-cores", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "foreign-cores"))
    ap.add_argument("--only")
    a = ap.parse_args()
    for k in ("heapdom", "lib", "fixture", "static_fixture", "filtered_source", "workdir"):
        setattr(a, k, os.path.abspath(getattr(a, k)))
    os.makedirs(a.workdir, exist_ok=True)
    lib = ctypes.CDLL(a.lib)
    cases = {"strip": case_strip, "static": case_static, "sysroot": case_sysroot,
             "filtered": case_filtered, "foreign": case_foreign}
    for name, fn in cases.items():
        if a.only and name not in a.only.split(","):
            continue
        try:
            fn(a, lib)
        except Exception as e:  # a harness failure fails the case, not the run
            import traceback
            check("case %s ran" % name, False, traceback.format_exc() + str(e))
    if not check.failed:
        shutil.rmtree(a.workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
    sys.exit(check.finish())

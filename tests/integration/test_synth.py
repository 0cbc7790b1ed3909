#!/usr/bin/env python3
"""Every glibc layout from 2.17 on, without that glibc at hand (issue 20).

    test_synth.py --heapdom PATH --mkcore tests/synth/mkcore.py --workdir DIR
                  [--versions 17,30,...]

For each glibc 2.12 .. 2.43 (2.12-2.16 as built with PER_THREAD) and each of {with, without} NT_FILE, mkcore.py
writes a core with that version's malloc layout (main arena, fastbins,
unsorted/small/large bins, tcache as the version has it, a thread arena
of two heaps,
a third thread's tcache mid-heap, an mmapped chunk) and its own ground
truth. `heapdom blocks --json` must give exactly the truth's used, free
(with the list holding each) and internal blocks, both arenas, no problem,
and a glibc_version that lies within the versions whose malloc looks like
the one the core was made with. With libc named libc-2.N.so, the version is
exactly 2.N. A 2.23-2.25 heap whose first block is an all-zero chunk of
2.26's tcache size keeps that block used. On chap's cores from other
machines (--foreign-cores, skipped when absent) the version is the one
the core's own bytes name (libc's banner or libc-2.N.so). The last line is "N passed, N
failed".
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

check = heaptest.Checks()


def parse_version(s):
    """"2.27-2.28" -> (27, 28); "2.31" -> (31, 31); else None."""
    m = re.fullmatch(r"2\.(\d+)(?:-2\.(\d+))?", s or "")
    if not m:
        return None
    lo = int(m.group(1))
    return lo, int(m.group(2)) if m.group(2) else lo


def one(args, minor, nt_file, libc_name=None, zero_first=0):
    tag = "2.%d %s%s%s" % (minor, "NT_FILE" if nt_file else "no NT_FILE",
                           " " + libc_name if libc_name else "",
                           " zero block 0x%x first" % zero_first if zero_first else "")
    core = os.path.join(args.workdir, "glibc-2.%d%s%s%s.core" % (
        minor, "" if nt_file else "-nofile", "-" + libc_name if libc_name else "",
        "-zero%x" % zero_first if zero_first else ""))
    opts = ["--version", "2.%d" % minor]
    if zero_first:
        opts += ["--zero-first", hex(zero_first)]
    if not nt_file:
        opts.append("--no-nt-file")
    if libc_name:
        opts += ["--libc-name", libc_name]
    truth = heaptest.synth_core(args.mkcore, core, *opts)
    r = heaptest.run_heapdom(args.heapdom, ["blocks", "--json", core], 120)
    if r.rc != 0:
        check(tag + ": heapdom blocks runs", False, r.describe())
        return
    doc = json.loads(r.out)
    heaptest.check_synth_blocks(check, tag, truth, doc)
    mm = {b["addr"] for b in truth["blocks"] if b.get("mmapped")}
    got_mm = {b["addr"] for b in doc["blocks"] if b.get("mmapped")}
    check(tag + ": mmapped chunk", mm == got_mm, (mm, got_mm))
    arenas = {(a["addr"], a["main"]) for a in heaptest.glibc_arenas(doc)}
    check(tag + ": main and thread arena",
          arenas == {(truth["main_arena"], True), (truth["thread_arena"], False)},
          arenas)
    heaps = heaptest.synth_heaps(doc, truth["heaps"])
    check(tag + ": heaps per arena", heaps == truth["heaps"], heaps)
    check(tag + ": no problems", not doc["problems"], doc["problems"])
    got = parse_version(doc.get("allocator", {}).get("version"))
    lo, hi = truth["range"]
    if libc_name:
        ok = got == (minor, minor)
    else:
        ok = got is not None and lo <= got[0] <= minor <= got[1] <= hi
    check("%s: version %s (%s) within 2.%d-2.%d" % (
        tag, doc.get("allocator", {}).get("version"), doc.get("allocator", {}).get("version_source"), lo, hi),
        ok)


def foreign(args):
    """chap's cores from other machines: the version heapdom reports is
    the one libc's banner or file name in the core's own bytes gives
    (read here with a regular expression, not by heapdom)."""
    if not args.foreign_cores or not os.path.isdir(args.foreign_cores):
        print("skip foreign: no folder %s" % args.foreign_cores)
        return
    for name, core in heaptest.foreign_cores(args.foreign_cores, args.workdir):
        with open(core, "rb") as f:
            data = f.read()
        m = (re.search(rb"GNU C Library[^\0]{0,200}?release version 2\.(\d+)", data)
             or re.search(rb"/libc-2\.(\d+)\.so\0", data))
        r = heaptest.run_heapdom(args.heapdom, ["blocks", "--json", core], 300)
        if not m or r.rc != 0:
            check("foreign %s: a version in the core, heapdom runs" % name,
                  False, (m, r.describe()))
            continue
        doc = json.loads(r.out)
        want = "2.%d" % int(m.group(1))
        check("foreign %s: version %s (%s), the core's own says %s" % (
            name, doc.get("allocator", {}).get("version"), doc.get("allocator", {}).get("version_source"),
            want), doc.get("allocator", {}).get("version") == want)


def main():
    ap = heaptest.arguments("--mkcore")
    ap.add_argument("--versions", help="comma-separated minors (default all)")
    ap.add_argument("--foreign-cores", help="../shared/foreign-cores")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    minors = ([int(v) for v in args.versions.split(",")] if args.versions
              else range(12, 44))
    for minor in minors:
        for nt_file in (True, False):
            one(args, minor, nt_file)
    # libc's file name gives the exact version (before 2.34 glibc
    # installed libc-2.N.so); a name with only the data's range.
    for minor in (12, 17, 26, 31):
        if minor in minors:
            one(args, minor, True, "libc-2.%d.so" % minor)
    # Before 2.26, an application's first block of the size of 2.26's
    # tcache struct, all zeros, has an empty tcache's shape: it stays the
    # application's, and the version stays 2.23-2.25.
    for minor in (23, 25, 29):
        if minor in minors:
            one(args, minor, False, zero_first=0x250)
    foreign(args)
    # The cores stay only to look at a failure.
    sys.exit(check.finish(heaptest.files_ending(
        args.workdir, (".core", ".core.json"))))


if __name__ == "__main__":
    main()

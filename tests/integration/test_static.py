#!/usr/bin/env python3
"""A statically linked program's heap (issue 20): main_arena lives in the
executable's data, not in libc's, and the program's startup takes its TLS
block from brk before malloc does.

    test_static.py --heapdom PATH --fixture HEAP_FIXTURE_STATIC
                   --stripped STRIPPED_COPY --workdir DIR

The fixture is tests/fixtures/heap_fixture.c linked with -static: it
records its own truth (every live block, every freed block and its list,
tcache structs, mallinfo2()). gdb runs it to hd_fixture_stop and writes a
core. Cases:
  symbols   heapdom blocks --json CORE: the truth's blocks exactly
            (heaptest.compare, including mallinfo2), main_arena at the
            address `nm` gives for the symbol, inside the executable;
            the version source says it was found by its symbol.
  stripped  the same core with --exe STRIPPED (no symbol table): the same
            blocks and main_arena, found from the data.
  version   the glibc_version reported contains this machine's glibc
            (getconf GNU_LIBC_VERSION), the libc.a the fixture linked.
The last line is "N passed, N failed".
"""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

check = heaptest.Checks()


def main_arena_doc(doc):
    mains = [a["addr"] for a in heaptest.glibc_arenas(doc) if a.get("main")]
    return int(mains[0], 16) if len(mains) == 1 else None


def main():
    args = heaptest.arguments("--fixture", "--stripped").parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    core = os.path.join(args.workdir, "static.core")
    truth_path = os.path.join(args.workdir, "static.truth")
    heaptest.make_core(os.path.abspath(args.fixture), truth_path, core)
    truth = heaptest.parse_truth(truth_path)

    nm = subprocess.run(["nm", args.fixture], capture_output=True, text=True,
                        check=True).stdout
    m = re.search(r"^([0-9a-f]+) [dDbB] main_arena$", nm, re.M)
    check("nm finds main_arena in the static fixture", m, nm[:500])
    sym = int(m.group(1), 16) if m else None
    ph = subprocess.run(["readelf", "-lW", args.fixture], capture_output=True,
                        text=True, check=True).stdout
    rw = [(int(v, 16), int(v, 16) + int(sz, 16)) for v, sz in re.findall(
        r"^\s+LOAD\s+\S+\s+(0x[0-9a-f]+)\s+\S+\s+\S+\s+(0x[0-9a-f]+)\s+RW",
        ph, re.M)]
    check("the fixture has a writable segment", rw, ph)

    docs = {}
    for case, extra in (("symbols", []), ("stripped", ["--exe", args.stripped])):
        r = heaptest.run_heapdom(args.heapdom, ["blocks", "--json", core] + extra)
        if r.rc != 0:
            check(case + ": heapdom blocks runs", False, r.describe())
            continue
        doc = json.loads(r.out)
        docs[case] = doc
        mm = heaptest.compare(doc, truth)
        check("%s: the fixture's %d live and %d freed blocks" % (
            case, len(truth.live), len(truth.freed)), not mm,
            mm.format() if mm else "")
        ma = main_arena_doc(doc)
        check("%s: main_arena 0x%x is the symbol's address" % (case, ma or 0),
              ma is not None and ma == sym, (ma, sym))
        check("%s: main_arena lies in the executable's data" % case,
              ma is not None and any(lo <= ma < hi for lo, hi in rw), (ma, rw))
        src = doc.get("allocator", {}).get("version_source") or ""
        check("%s: the version source says how main_arena was found (%s)"
              % (case, src), ("by its symbol" in src) == (case == "symbols"))
        ver = re.fullmatch(r"2\.(\d+)(?:-2\.(\d+))?", doc.get("allocator", {}).get("version") or "")
        have = subprocess.run(["getconf", "GNU_LIBC_VERSION"],
                              capture_output=True, text=True).stdout.split()
        here = int(have[-1].split(".")[1]) if have else None
        ok = ver and here is not None and \
            int(ver.group(1)) <= here <= int(ver.group(2) or ver.group(1))
        check("%s: version %s contains this machine's glibc %s" % (
            case, doc.get("allocator", {}).get("version"), " ".join(have)), ok)
    if len(docs) == 2:
        diff = heaptest.diff_docs(docs["symbols"], docs["stripped"])
        check("symbols and stripped give the same arenas and blocks", not diff,
              "\n".join(diff))
    sys.exit(check.finish(remove=(core, truth_path)))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""heapdom integration test: the type of every block of an ordinary C++
program, against the types the program itself recorded.

    test_stl_types.py --heapdom PATH --fixture PATH --workdir DIR [--keep]

The fixture (stl_types_fixture.cpp; truth format at its top) records every
live allocation its operator new made and explains each from its own
structures, writing the type as typeid(T).name(). `c++filt -t` spells
those names; heapdom's spelling comes from DWARF and vtable symbols. Both
are brought to one canonical form before comparing (default template
arguments such as std::allocator<…> dropped, std::__cxx11:: and
basic_string<char> as std::string, "const" and spaces dropped, "long int"
as "long"): the test compares which type, not how it is written.

Checks on a core of the fixture (one PASS/FAIL line each):
  - blocks: `heapdom blocks --json` gives every recorded block exactly its
    recorded type (T[N] for arrays: N from the container, not from the
    block's usable size), none left unk
  - types: `heapdom types --all --json` counts each recorded type (arrays
    as T[]) at least as often as the fixture made it
  - why: `heapdom why --json` of a Session's user string (the Session
    lives in a make_shared control block), of a map key's body (in an
    rb-tree node) and of a vector in a hash node names the member (user,
    first, second) in the step that refers to it: the object inside the
    control block and the nodes' values are typed
  - leaks: `heapdom leaks --json` finds none (every block is reachable from
    the program's globals), typed and --untyped

Exit status 0 when every check passed, 1 otherwise.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "integration"))
import heaptest  # noqa: E402
from heaptest import HarnessError  # noqa: E402

DEFAULT_ARGS = ("std::allocator<", "std::char_traits<", "std::less<", "std::hash<",
                "std::equal_to<", "std::default_delete<")


def drop_args(s):
    """Removes template arguments that are a default (", std::allocator<…>")."""
    out = s
    for pre in DEFAULT_ARGS:
        while True:
            i = out.find(", " + pre)
            if i < 0:
                break
            j, depth = i + 2 + len(pre), 1
            while depth:
                depth += {"<": 1, ">": -1}.get(out[j], 0)
                j += 1
            out = out[:i] + out[j:]
    return out


def canonical(name):
    s = name.replace("std::__cxx11::", "std::")
    s = drop_args(s)
    s = re.sub(r"\bconst\b", "", s)
    s = re.sub(r"\blong unsigned int\b", "unsigned long", s)
    s = re.sub(r"\b(long|short) int\b", r"\1", s)
    return s.replace(" ", "").replace("std::basic_string<char>", "std::string")


def demangle(names):
    names = sorted(set(names))
    r = subprocess.run(["c++filt", "-t"], input="\n".join(names) + "\n",
                       capture_output=True, text=True, check=True)
    out = r.stdout.split("\n")
    return dict(zip(names, out))


def parse_truth(path):
    blocks = []
    meta = {"member": {}}

    def record(w, line):
        if w[0] in ("pid", "module"):
            meta[w[0]] = w[1]
        elif w[0] == "member":
            meta["member"][int(w[1], 16)] = w[2]
        elif w[0] == "block":
            blocks.append((int(w[1], 16), int(w[2]), w[3],
                           int(w[4]) if len(w) > 4 else None))
        else:
            raise ValueError("unknown record")
    heaptest.read_truth(path, "stl_types", record)
    names = demangle(b[2] for b in blocks)
    typed = {}
    for addr, size, mangled, n in blocks:
        t = names[mangled]
        typed[addr] = t + ("[%d]" % n if n is not None else "")
    return meta, typed


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, problems):
        if problems:
            self.failed += 1
            print("FAIL %s: %d problems" % (name, len(problems)))
            for p in problems[:25]:
                print("    " + p)
            if len(problems) > 25:
                print("    … %d more" % (len(problems) - 25))
        else:
            self.passed += 1
            print("PASS %s" % name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    truth_path = os.path.join(a.workdir, "truth.txt")
    core = os.path.join(a.workdir, "core")
    c = Checks()
    try:
        heaptest.make_core(a.fixture, truth_path, core)
        meta, truth = parse_truth(truth_path)
        doc = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"])
        got = {int(b["addr"], 16): b for b in doc["blocks"]}
        problems = []
        for addr, want in sorted(truth.items()):
            b = got.get(addr)
            if b is None or b["state"] != "used":
                problems.append("0x%x %s: not a used block" % (addr, want))
                continue
            have = b["type"]
            if have is None or canonical(have) != canonical(want):
                problems.append("0x%x: %s, expected %s" % (addr, have or "unk<%d>" % b["size"], want))
        c.check("blocks (%d recorded)" % len(truth), problems)

        doc = heaptest.heapdom_json(a.heapdom, ["types", core, "--all", "--json"])
        rows = {}
        for r in doc["types"]:
            if r["type"] is not None:
                rows[canonical(r["type"])] = rows.get(canonical(r["type"]), 0) + r["count"]
        want_rows = {}
        for t in truth.values():
            k = canonical(re.sub(r"\[\d+(\.\.\d+)?\]$", "[]", t))
            want_rows[k] = want_rows.get(k, 0) + 1
        c.check("types", ["%s: %d in `types`, the program made %d" % (k, rows.get(k, 0), n)
                          for k, n in sorted(want_rows.items()) if rows.get(k, 0) < n])

        problems = []
        # The first 8 of each member (one heapdom run each).
        asked = {}
        for addr, member in sorted(meta["member"].items()):
            asked[member] = asked.get(member, 0) + 1
            if asked[member] > 8:
                continue
            w = heaptest.heapdom_json(a.heapdom, ["why", core, "0x%x" % addr, "--json"])
            path = w.get("path") or []
            step = path[-2] if len(path) >= 2 else {}
            if not re.search(r"(^|\.)%s(\.|$)" % re.escape(member), step.get("member") or ""):
                problems.append("0x%x: held through %r of %r, expected member %s"
                                % (addr, step.get("member"), step.get("type"), member))
        if not meta["member"]:
            problems.append("the truth has no member records")
        c.check("why (%s)" % ", ".join("%d %s" % (min(n, 8), m) for m, n in sorted(asked.items())),
                problems)

        problems = []
        for mode in ([], ["--untyped"]):
            w = heaptest.heapdom_json(a.heapdom, ["leaks", core, "--json"] + mode)
            if w.get("leaked_blocks") != 0:
                problems.append("leaks %s: %r leaked blocks, expected 0"
                                % (" ".join(mode) or "(typed)", w.get("leaked_blocks")))
        c.check("leaks", problems)
    except HarnessError as e:
        c.failed += 1
        print("FAIL harness: %s" % e)
    except Exception:
        c.failed += 1
        print("FAIL exception:\n" + traceback.format_exc())
    print("%d passed, %d failed" % (c.passed, c.failed))
    if not a.keep and not c.failed:
        shutil.rmtree(a.workdir, ignore_errors=True)
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())

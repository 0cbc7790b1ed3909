#!/usr/bin/env python3
"""Hostile heaps (issue 21): every case tests/synth/hostile.py writes, on
the glibc layouts it fits (without tcache, with byte counts, with
safe-linking, ...).

    test_hostile.py --heapdom PATH --hostile tests/synth/hostile.py
                    --workdir DIR [--cases a,b] [--versions 25,35]

For each case heapdom's `blocks --json`, `stats` and `leaks` (text and
JSON) must exit 0 (a damaged heap is reported, labelled partial:
docs/cli.md), label the answer partial (JSON `partial: true` and
problems; text "these results are partial"), name in a warning (JSON's
problems and the text reports' warnings) one of the addresses the damage
is at, find each heap of the arenas once, and give every block the damage does not
affect exactly the truth's verdict (state and list), with no block the
truth lacks; `leaks` must list exactly the truth's used blocks among the
unaffected ones (the synthetic blocks hold no pointers, so each used block
is unreferenced). A run that does not finish within --timeout seconds
fails: that is a hang guard only; tests/bench/hostile_bench.py measures
the time and memory each case takes. The last line is "N passed, N
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


def run(args, cmd, core):
    return heaptest.run_heapdom(args.heapdom, cmd + [core], args.timeout)


def failed(r):
    """Why a run failed, or None."""
    if r.rc == "timeout":
        return "hang (over %ds)" % r.secs
    return r.describe() if r.rc != 0 else None


def named(problems, addrs):
    """Does a problem name one of addrs (as its address or in its words)?"""
    for p in problems:
        words = set(re.findall(r"0x[0-9a-f]+", p.get("message", "")))
        if p["addr"] in addrs or words & set(addrs):
            return True
    return False


def one(args, case, minor):
    tag = "%s 2.%d" % (case, minor)
    core = os.path.join(args.workdir, "%s-2.%d.core" % (case, minor))
    truth = heaptest.synth_core(args.hostile, core, "--version", "2.%d" % minor,
                                "--case", case)
    skip = set(truth["affected"])
    r = run(args, ["blocks", "--json"], core)
    if failed(r):
        check(tag + ": blocks --json finishes with status 0", False, failed(r))
        return
    doc = json.loads(r.out)
    # The walk split between threads (asked for, even this small heap is)
    # gives every block and problem in the same order.
    outs = [run(args, ["blocks", "--json", "--jobs", j], core) for j in ("1", "2")]
    check(tag + ": blocks --json the same with 1 and 2 threads",
          all(not failed(x) for x in outs) and outs[0].out == outs[1].out == r.out,
          [failed(x) for x in outs])
    check(tag + ": blocks: partial, with problems",
          doc["partial"] and doc["problems"],
          (doc["partial"], doc["problems"][:3]))
    check(tag + ": a warning names %s (%s)" % (
        truth["named"][0] if len(truth["named"]) == 1 else
        "one of %d addresses" % len(truth["named"]), truth["problem"]),
        named(doc["problems"], truth["named"]), doc["problems"][:6])
    # Every heap of the two arenas is still found, once: a loop in a
    # chain of heaps adds none twice. Only a heap nothing ties to its
    # arena is missing (heaps_found).
    heaps = heaptest.synth_heaps(doc, truth["heaps"])
    check(tag + ": heaps per arena", heaps == truth["heaps_found"],
          (heaps, truth["heaps_found"]))
    heaptest.check_synth_blocks(check, tag + ": unaffected", truth, doc, skip)
    for cmd in (["stats"], ["leaks"]):
        r = run(args, cmd, core)
        text = r.out + r.err
        ok = not failed(r) and "these results are partial" in text
        check("%s: %s finishes with status 0, labelled partial" % (tag, cmd[0]),
              ok, failed(r) or text[-800:])
        if ok:
            check("%s: %s's warnings name the damage" % (tag, cmd[0]),
                  set(re.findall(r"0x[0-9a-f]+", text)) & set(truth["named"]),
                  [l for l in text.splitlines() if "warning" in l][:6])
    r = run(args, ["leaks", "--json", "--top", "100000"], core)
    if failed(r):
        check(tag + ": leaks --json finishes with status 0", False, failed(r))
        return
    doc = json.loads(r.out)
    leaked = {b["addr"] for b in doc["leaks"]} - skip
    used = {b["addr"] for b in truth["blocks"] if b["state"] == "used"} - skip
    check(tag + ": leaks: partial, the unaffected used blocks exactly",
          doc["partial"] and leaked == used,
          "partial %s\nmissing %s\nextra %s" % (
              doc["partial"], sorted(used - leaked)[:6],
              sorted(leaked - used)[:6]))


def main():
    ap = heaptest.arguments("--hostile")
    ap.add_argument("--cases", help="comma-separated (default all)")
    ap.add_argument("--versions", help="comma-separated minors (default: "
                    "each case's own)")
    ap.add_argument("--timeout", type=int, default=120,
                    help="seconds per heapdom run before it counts as a hang")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    listing = subprocess.run([sys.executable, args.hostile, "--list"],
                             capture_output=True, text=True, check=True).stdout
    cases = {}
    for line in listing.splitlines():
        name, versions = line.split()
        cases[name] = [int(v.split(".")[1]) for v in versions.split(",")]
    only = args.cases.split(",") if args.cases else list(cases)
    for case in only:
        minors = cases[case]
        if args.versions:
            minors = [m for m in minors
                      if m in {int(v) for v in args.versions.split(",")}]
        for minor in minors:
            one(args, case, minor)
    # The cores stay only to look at a failure.
    sys.exit(check.finish(heaptest.files_ending(
        args.workdir, (".core", ".core.json"))))


if __name__ == "__main__":
    main()

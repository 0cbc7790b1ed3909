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
import argparse
import json
import os
import re
import subprocess
import sys

PASSED, FAILED = [], []


def check(name, cond, detail=""):
    (PASSED if cond else FAILED).append(name)
    print("%s %s" % ("ok  " if cond else "FAIL", name))
    if not cond:
        print("     " + str(detail).replace("\n", "\n     ")[:3000])


def run(args, cmd, core):
    try:
        return subprocess.run([args.heapdom] + cmd + [core],
                              capture_output=True, text=True,
                              timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None


def verdicts(blocks, skip):
    return {(b["addr"], b["state"], b.get("list"))
            for b in blocks if b["addr"] not in skip}


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
    subprocess.run([sys.executable, args.hostile, "--version", "2.%d" % minor,
                    "--case", case, core], check=True)
    with open(core + ".json") as f:
        truth = json.load(f)
    skip = set(truth["affected"])
    r = run(args, ["blocks", "--json"], core)
    if r is None or r.returncode != 0:
        check(tag + ": blocks --json finishes with status 0", False,
              "hang (over %ds)" % args.timeout if r is None else
              "status %d: %s" % (r.returncode, r.stderr[-800:]))
        return
    doc = json.loads(r.stdout)
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
    heaps = {r["addr"]: r["segments"] for r in doc["allocator"]["regions"]
             if r["addr"] in truth["heaps"]}
    check(tag + ": heaps per arena", heaps == truth["heaps_found"],
          (heaps, truth["heaps_found"]))
    want = verdicts(truth["blocks"], skip)
    got = verdicts(doc["blocks"], skip)
    check(tag + ": the %d unaffected blocks keep their verdicts" % len(want),
          want == got, "missing %s\nextra %s" % (sorted(want - got)[:6],
                                                 sorted(got - want)[:6]))
    for cmd in (["stats"], ["leaks"]):
        r = run(args, cmd, core)
        ok = (r is not None and r.returncode == 0 and
              "these results are partial" in r.stdout + r.stderr)
        check("%s: %s finishes with status 0, labelled partial" % (tag, cmd[0]),
              ok, "hang" if r is None else "status %d: %s" % (
                  r.returncode, (r.stdout + r.stderr)[-800:]))
        if ok:
            text = set(re.findall(r"0x[0-9a-f]+", r.stdout + r.stderr))
            check("%s: %s's warnings name the damage" % (tag, cmd[0]),
                  text & set(truth["named"]),
                  [l for l in (r.stdout + r.stderr).splitlines()
                   if "warning" in l][:6])
    r = run(args, ["leaks", "--json", "--top", "100000"], core)
    if r is None or r.returncode != 0:
        check(tag + ": leaks --json finishes with status 0", False,
              "hang" if r is None else r.stderr[-800:])
        return
    doc = json.loads(r.stdout)
    leaked = {b["addr"] for b in doc["leaks"]} - skip
    used = {b["addr"] for b in truth["blocks"] if b["state"] == "used"} - skip
    check(tag + ": leaks: partial, the unaffected used blocks exactly",
          doc["partial"] and leaked == used,
          "partial %s\nmissing %s\nextra %s" % (
              doc["partial"], sorted(used - leaked)[:6],
              sorted(leaked - used)[:6]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--hostile", required=True)
    ap.add_argument("--workdir", required=True)
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
    if not FAILED:  # keep the cores only to look at a failure
        for name in os.listdir(args.workdir):
            if name.endswith((".core", ".core.json")):
                os.unlink(os.path.join(args.workdir, name))
    print("%d passed, %d failed" % (len(PASSED), len(FAILED)))
    sys.exit(1 if FAILED else 0)


if __name__ == "__main__":
    main()

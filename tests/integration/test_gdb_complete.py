#!/usr/bin/env python3
"""heapdom integration test: gdb's TAB completion of the heap-* commands
(issue 18: `--t<TAB>` became `----top`).

    test_gdb_complete.py --gdb-plugin PATH

gdb's own `complete` command shows what TAB would make of a line. For every
heap-* command gdb lists (`complete heap-`), every option its `help` text
names must complete from its first three characters ("--t") to exactly the
option ("heap-dominators --top"), with nothing but options of that prefix
offered; heap-trace and heap-watch take their options after a subcommand
or location. A few documented values and subcommands complete too.
Exit status 0 when every check passed; the last line is "N passed, N failed".
"""
import argparse
import os
import re
import subprocess
import sys

# Where heap-trace's and heap-watch's options go: after one of these.
CONTEXTS = {"heap-trace": ("start ", "report "), "heap-watch": ("main ", "report ")}

# Values and subcommands, as docs/gdb.md and the help texts name them:
# (line typed, lines `complete` must print).
VALUES = [
    ("heap-blocks --state u", ["heap-blocks --state used"]),
    ("heap-blocks --state f", ["heap-blocks --state free"]),
    ("heap-types --sort r", ["heap-types --sort retained"]),
    ("heap-graph --format d", ["heap-graph --format dot"]),
    ("heap-graph --format j", ["heap-graph --format json"]),
    ("heap-trace r", ["heap-trace report"]),
    ("heap-trace report --by s", ["heap-trace report --by site", "heap-trace report --by size"]),
    ("heap-trace report --by a", ["heap-trace report --by age"]),
    ("heap-watch l", ["heap-watch list"]),
    ("heap-watch main --what d", ["heap-watch main --what dominators"]),
    ("heap-diff a.json b.json --what t", ["heap-diff a.json b.json --what types"]),
    ("heap-dominators --top 5 --d", ["heap-dominators --top 5 --depth"]),
    ("heap-why p --exclude r", ["heap-why p --exclude registers"]),
    ("heap-why p --exclude registers,s", ["heap-why p --exclude registers,stack"]),
    ("heap-why p --exclude stack,l", ["heap-why p --exclude stack,locals"]),
    ("heap-why p --exclude stack,", ["heap-why p --exclude stack,globals",
                                     "heap-why p --exclude stack,tls",
                                     "heap-why p --exclude stack,locals",
                                     "heap-why p --exclude stack,registers"]),
]

MARK = "@@@"


def run_gdb(plugin, lines):
    """`complete LINE` for each line, in one gdb; the output lines of each."""
    argv = ["gdb", "-batch", "-nx", "-ex", "source " + plugin]
    for i, line in enumerate(lines):
        argv += ["-ex", "echo %s%d\\n" % (MARK, i), "-ex", line]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                       stdin=subprocess.DEVNULL, env=dict(os.environ, LC_ALL="C"))
    out, cur = {}, None
    for ln in r.stdout.splitlines():
        if ln.startswith(MARK):
            cur = int(ln[len(MARK):])
            out[cur] = []
        elif cur is not None:
            out[cur].append(ln)
    if r.returncode != 0 or len(out) != len(lines):
        raise SystemExit("gdb failed (status %d):\n%s\n%s"
                         % (r.returncode, r.stdout[-2000:], r.stderr[-2000:]))
    return [out[i] for i in range(len(lines))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gdb-plugin", required=True)
    a = ap.parse_args()
    plugin = os.path.abspath(a.gdb_plugin)

    commands = run_gdb(plugin, ["complete heap-"])[0]
    if len(commands) < 10 or not all(c.startswith("heap-") for c in commands):
        raise SystemExit("gdb lists these heap commands: %r" % commands)
    helps = run_gdb(plugin, ["help " + c for c in commands])
    documented = {c: sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", "\n".join(h))))
                  for c, h in zip(commands, helps)}

    checks = []  # (label, line typed, predicate over the output lines)
    for c in commands:
        for opt in documented[c]:
            prefix = opt[:3]
            for ctx in CONTEXTS.get(c, ("",)):
                checks.append((c, opt, ctx, "complete %s %s%s" % (c, ctx, prefix)))
    outs = run_gdb(plugin, [line for *_, line in checks] +
                   ["complete " + v[0] for v in VALUES])

    passed = failed = 0
    found = {}
    for (c, opt, ctx, line), got in zip(checks, outs):
        head = "%s %s" % (c, ctx)
        bad = [g for g in got if not (g.startswith(head) and
                                      re.fullmatch(r"--[a-z][a-z-]*", g[len(head):]) and
                                      g[len(head):].startswith(opt[:3]))]
        if bad:
            failed += 1
            print("FAIL %s: %r offers %r" % (c, line, bad))
        found.setdefault((c, opt), False)
        if head + opt in got:
            found[(c, opt)] = True
    for (c, opt), ok in sorted(found.items()):
        if ok:
            passed += 1
        else:
            failed += 1
            print("FAIL %s: %s (in its help) does not complete from %r"
                  % (c, opt, opt[:3]))
    for (typed, want), got in zip(VALUES, outs[len(checks):]):
        if sorted(got) == sorted(want):
            passed += 1
        else:
            failed += 1
            print("FAIL complete %r: %r, expected %r" % (typed, got, want))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

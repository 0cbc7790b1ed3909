#!/usr/bin/env python3
"""heapdom integration test: valgrind as the oracle for `heapdom leaks` on
real Debian programs no one here wrote (issue 18).

    test_leak_oracle.py --heapdom PATH --workdir DIR [--only NAME,...]
        [--default-env] [--markdown]

Each program runs twice with the same arguments and the same environment:
under gdb, stopped at its `exit_group` system call (`catch syscall
exit_group`) and saved with `gcore`; and under `valgrind --leak-check=full`.
valgrind's definitely + indirectly lost block count is the oracle: heapdom's
`leaked_blocks` (`heapdom leaks CORE --exe PROG --json`) must equal it, typed
(the default) and `--untyped` alike. Nothing here records heapdom's numbers;
both sides are measured at test time.

The two runs must leave the program in the same state at exit:
  - valgrind does not free glibc's and libstdc++'s own memory at exit
    (--run-libc-freeres=no --run-cxx-freeres=no): the process under gdb
    stops before any such freeing would happen;
  - a block's bytes that the program never wrote are the same on both sides:
    glibc fills every new block with 0xaa and every freed one with 0x55
    (MALLOC_PERTURB_=85, and glibc.malloc.tcache_count=0 because blocks
    served from the tcache are not filled), valgrind likewise
    (--malloc-fill=0xaa --free-fill=0x55). Without this, a block reused by
    glibc keeps the pointers its previous owner wrote in the bytes the new
    owner leaves alone, and a conservative scan, valgrind's as much as
    heapdom's, follows them: `--default-env` shows the difference (on gdb:
    30 of its leaked charset names are reached from the stale part of a
    live 264-byte obstack chunk that had been a vector's buffer);
  - a fixed small environment (env -i, plus GLIBCXX_FORCE_NEW=1, which
    valgrind sets), gdb's LINES and COLUMNS unset in its inferior, the same
    working directory; both runs must exit with status 0 (gdb's is read at
    the exit_group stop), so that a run that failed is never compared.
Exit status 0 when every program agreed, 77 when valgrind is missing; the
table is printed (--markdown: as in docs/leak-oracle.md); the last line is
"N passed, N failed".
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))

FILL_ENV = {"MALLOC_PERTURB_": "85", "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
FILL_VALGRIND = ["--malloc-fill=0xaa", "--free-fill=0x55"]


def cc1plus():
    try:
        p = subprocess.run(["g++", "-print-prog-name=cc1plus"], capture_output=True,
                           text=True, timeout=30).stdout.strip()
    except OSError:
        return None
    return p if os.path.isabs(p) and os.access(p, os.X_OK) else None


def programs(work):
    """(name, language, argv, Debian package): small deterministic runs."""
    nums = os.path.join(work, "numbers.txt")
    with open(nums, "w") as f:
        f.write("".join("%d\n" % ((i * 7919) % 1000) for i in range(200)))
    xml = os.path.join(work, "doc.xml")
    with open(xml, "w") as f:
        f.write('<?xml version="1.0"?>\n<list><item n="1">one</item><item n="2"/></list>\n')
    src = os.path.join(work, "hello.cc")
    with open(src, "w") as f:
        f.write("#define GREETING \"hello\"\nconst char *greeting() { return GREETING; }\n")
    ninja_dir = os.path.join(work, "ninja")
    os.makedirs(ninja_dir, exist_ok=True)
    with open(os.path.join(ninja_dir, "build.ninja"), "w") as f:
        f.write("rule cp\n  command = cp $in $out\nbuild b.txt: cp a.txt\nbuild c.txt: cp b.txt\n")
    open(os.path.join(ninja_dir, "a.txt"), "w").close()
    repo = os.path.join(work, "repo")
    if not os.path.isdir(os.path.join(repo, ".git")):
        os.makedirs(repo, exist_ok=True)
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", HOME=work)
        git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(git[:3] + ["init", "-q"], check=True, env=env)
        with open(os.path.join(repo, "a.txt"), "w") as f:
            f.write("a\n")
        subprocess.run(git + ["add", "a.txt"], check=True, env=env)
        subprocess.run(git + ["commit", "-qm", "a"], check=True, env=env)
        with open(os.path.join(repo, "b.txt"), "w") as f:
            f.write("b\n")
    out = os.path.join(work, "hello.ii")
    progs = [
        ("perl", "C", ["/usr/bin/perl", "-e", "1"], "perl-base"),
        ("python3", "C", ["/usr/bin/python3", "-c", "pass"], "python3"),
        ("sort", "C", ["/usr/bin/sort", "-n", nums], "coreutils"),
        ("sqlite3", "C", ["/usr/bin/sqlite3", ":memory:", "select 1;"], "sqlite3"),
        ("git status", "C", ["/usr/bin/git", "-C", repo, "status", "--porcelain"], "git"),
        ("xmllint", "C", ["/usr/bin/xmllint", "--noout", xml], "libxml2-utils"),
        ("ninja", "C++", ["/usr/bin/ninja", "-C", ninja_dir, "-n"], "ninja-build"),
        ("gdb", "C++", ["/usr/bin/gdb", "-batch", "-nx", "-ex", "quit"], "gdb"),
    ]
    c = cc1plus()
    if c:
        progs.append(("cc1plus -E", "C++", [c, "-E", "-quiet", src, "-o", out], "g++-12"))
    return progs


def base_env(work, fill):
    # valgrind sets GLIBCXX_FORCE_NEW in its program's environment: the
    # process under gdb gets it too.
    env = {"PATH": "/usr/bin:/bin", "HOME": work, "LC_ALL": "C", "LANG": "C",
           "GIT_CONFIG_NOSYSTEM": "1", "DEBUGINFOD_URLS": "", "GLIBCXX_FORCE_NEW": "1"}
    if fill:
        env.update(FILL_ENV)
    return env


def run_valgrind(argv, env, log, fill):
    cmd = ["valgrind", "--leak-check=full", "--show-leak-kinds=all",
           "--run-libc-freeres=no", "--run-cxx-freeres=no", "--log-file=" + log]
    if fill:
        cmd += FILL_VALGRIND
    r = subprocess.run(cmd + argv, env=env, capture_output=True, text=True,
                       timeout=300, stdin=subprocess.DEVNULL, cwd=env["HOME"])
    with open(log) as f:
        text = f.read()
    if "HEAP SUMMARY" not in text:
        raise RuntimeError("valgrind %s: no heap summary (status %d):\n%s"
                           % (argv[0], r.returncode, text[-1500:]))

    def lost(kind):
        m = re.search(r"%s lost: ([\d,]+) bytes in ([\d,]+) blocks" % kind, text)
        return int(m.group(2).replace(",", "")) if m else 0
    m = re.search(r"in use at exit: [\d,]+ bytes in ([\d,]+) blocks", text)
    return {"definitely": lost("definitely"), "indirectly": lost("indirectly"),
            "possibly": lost("possibly"),
            "in_use": int(m.group(1).replace(",", "")) if m else 0,
            "status": r.returncode}


def run_gdb(argv, env, core):
    if os.path.exists(core):
        os.unlink(core)
    # gdb starts the program through /bin/sh, which keeps each argument
    # whole (with startup-with-shell off, gdb splits them at spaces).
    cmd = ["gdb", "-batch", "-nx",
           "-ex", "unset environment LINES", "-ex", "unset environment COLUMNS",
           "-ex", "catch syscall exit_group", "-ex", "run",
           "-ex", "printf \"exit status %d\\n\", $rdi",
           "-ex", "gcore " + core, "-ex", "kill", "--args"] + argv
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300,
                       stdin=subprocess.DEVNULL, cwd=env["HOME"])
    m = re.search(r"^exit status (-?\d+)$", r.stdout, re.M)
    if "call to syscall exit_group" not in r.stdout or not m or not os.path.exists(core):
        raise RuntimeError("gdb did not stop %s at exit_group and save %s:\n%s\n%s"
                           % (argv[0], core, r.stdout[-1500:], r.stderr[-1500:]))
    return int(m.group(1))


def run_heapdom(heapdom, core, exe, untyped):
    cmd = [heapdom, "leaks", core, "--exe", exe, "--json"] + (["--untyped"] if untyped else [])
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, DEBUGINFOD_URLS=""))
    if r.returncode != 0:
        raise RuntimeError("%s: status %d: %s" % (" ".join(cmd), r.returncode, r.stderr[-800:]))
    doc = json.loads(r.stdout)
    return doc["leaked_blocks"], doc.get("partial"), doc.get("problems")


def package_version(pkg):
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", pkg],
                           capture_output=True, text=True, timeout=30)
    except OSError:
        return "?"
    return r.stdout.strip() or "?"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--default-env", action="store_true",
                    help="also run without the fill (not checked: shows stale pointers)")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    if not shutil.which("valgrind") or not shutil.which("gdb"):
        print("valgrind or gdb missing: skipped")
        return 77
    heapdom = os.path.abspath(a.heapdom)
    work = os.path.abspath(a.workdir)
    os.makedirs(work, exist_ok=True)
    only = set(a.only.split(",")) if a.only else None

    rows, failures, passed = [], [], 0
    for name, lang, argv, pkg in programs(work):
        if only and name not in only and name.split()[0] not in only:
            continue
        tag = re.sub(r"\W+", "_", name)
        t0 = time.time()
        row = {"name": name, "lang": lang, "cmd": " ".join([os.path.basename(argv[0])] + argv[1:]),
               "pkg": pkg}
        try:
            for fill in (True, False) if a.default_env else (True,):
                env = base_env(work, fill)
                sfx = "" if fill else ".nofill"
                core = os.path.join(work, tag + sfx + ".core")
                vg = run_valgrind(argv, env, os.path.join(work, tag + sfx + ".vg.log"), fill)
                status = run_gdb(argv, env, core)
                if status != 0 or vg["status"] != 0:
                    raise RuntimeError("exit status %d under gdb, %d under valgrind: "
                                       "the runs are not the ones meant"
                                       % (status, vg["status"]))
                typed, partial, problems = run_heapdom(heapdom, core, argv[0], False)
                untyped, _, _ = run_heapdom(heapdom, core, argv[0], True)
                os.unlink(core)
                if fill:
                    row.update(vg=vg, typed=typed, untyped=untyped, partial=partial,
                               problems=problems)
                else:
                    row.update(nofill_vg=vg, nofill_typed=typed, nofill_untyped=untyped)
        except (RuntimeError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
            failures.append("%s: %s" % (name, e))
            continue
        row["seconds"] = time.time() - t0
        want = row["vg"]["definitely"] + row["vg"]["indirectly"]
        bad = []
        if row["typed"] != want:
            bad.append("heapdom leaks: %d leaked blocks" % row["typed"])
        if row["untyped"] != want:
            bad.append("heapdom leaks --untyped: %d leaked blocks" % row["untyped"])
        if row["partial"]:
            bad.append("heapdom's answer is partial: %s" % row["problems"])
        if bad:
            failures.append("%s: valgrind %d definitely + %d indirectly lost = %d; %s"
                            % (name, row["vg"]["definitely"], row["vg"]["indirectly"], want,
                               "; ".join(bad)))
        else:
            passed += 1
        row["version"] = package_version(pkg)
        rows.append(row)

    if a.markdown:
        print("| program | run | valgrind definitely + indirectly lost | heapdom `leaks` | "
              "heapdom `leaks --untyped` | valgrind possibly lost |" +
              (" default environment: valgrind / heapdom |" if a.default_env else ""))
        print("|---|---|---|---|---|---|" + ("---|" if a.default_env else ""))
        for r in rows:
            v = r["vg"]
            line = "| %s (%s) | `%s` | %d + %d = %d | %d | %d | %d |" % (
                r["name"], r["lang"], r["cmd"].replace(work + "/", ""), v["definitely"],
                v["indirectly"], v["definitely"] + v["indirectly"], r["typed"], r["untyped"],
                v["possibly"])
            if "nofill_vg" in r:
                nv = r["nofill_vg"]
                line += " %d / %d |" % (nv["definitely"] + nv["indirectly"], r["nofill_typed"])
            print(line)
        print()
        print("Debian packages: " + ", ".join("%s %s" % (p, package_version(p)) for p in
                                               sorted({r["pkg"] for r in rows} |
                                                      {"valgrind", "gdb", "libc6"})))
    else:
        print("%-12s %-5s %10s %10s %8s %8s %9s %6s" % ("program", "lang", "vg def", "vg ind",
                                                   "heapdom", "untyped", "vg poss.", "secs"))
        for r in rows:
            v = r["vg"]
            print("%-12s %-5s %10d %10d %8d %8d %9d %6.1f%s" % (
                r["name"], r["lang"], v["definitely"], v["indirectly"], r["typed"],
                r["untyped"], v["possibly"], r["seconds"],
                ("   without the fill: valgrind %d, heapdom %d / untyped %d" % (
                    r["nofill_vg"]["definitely"] + r["nofill_vg"]["indirectly"],
                    r["nofill_typed"], r["nofill_untyped"])) if "nofill_vg" in r else ""))
    for f in failures:
        print("FAIL " + f)
    print("%d passed, %d failed" % (passed, len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

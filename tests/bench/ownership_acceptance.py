#!/usr/bin/env python3
"""ownership_acceptance.py -- how much of a real program's heap `heapdom
dominators` puts under named holders (issue 19's acceptance; measures,
asserts nothing, not a test).

    tests/bench/ownership_acceptance.py [--only memcached,perl,...] [--markdown]
        [--heapdom PATH] [--before PATH] [--gdb-plugin PATH] [--lib PATH]
        [--server-fixture PATH] [--walk-fixture PATH] [--entries N]
        [--workdir DIR] [--keep]

Programs: memcached (200,000 items of 100 bytes set over TCP), perl (a hash
of 500,000 keys), sqlite3 (a 300,000-row in-memory table), python3 (a dict
of 300,000 keys, each a list of an int, a str and a float; run without
--semantic), the server fixture (tests/fixtures/server_fixture.c, --entries
N, default 1,000,000) and the breakpoint fixture
(tests/fixtures/walk_fixture.c, stopped in print_record). Each is run to a
steady state with its data loaded; gdb attaches (the fixtures: runs them
to their stop), runs heap-dominators --json (ranked and --plain) at the
stop, and gcore's a core. Then on the core:
  - after:  `heapdom dominators --json` (ranked) and `--plain`: the share of
    used bytes under named top-level holders (a root, a leaked block, or a
    joint group with members), the top 3 holders, the first accumulation
    point
  - before: `BEFORE dominators --json --all` (the head before issue 19,
    c5c5daf): named = top-level blocks whose idom is one root, or leaked
    blocks; the rest is "several" (idom root:*)
Debian packages used: memcached, perl, sqlite3, python3 (apt-get install
them). Environment: DEBUGINFOD_URLS is cleared (gdb never goes to the
network).
"""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def env(lib):
    e = dict(os.environ)
    e["DEBUGINFOD_URLS"] = ""
    e.setdefault("LC_ALL", "C")
    if lib:
        e["HEAPDOM_LIB"] = lib
    return e


def gdb_stop_lines(a, work, name):
    """gdb commands run at the stop: heap-dominators (both views, timed),
    then gcore."""
    core = os.path.join(work, name + ".core")
    out = {v: os.path.join(work, "%s-gdb-%s.json" % (name, v)) for v in ("ranked", "plain")}
    res = os.path.join(work, name + "-gdb.results.json")
    lines = [
        "set pagination off", "set confirm off", "set width 0",
        "source " + a.gdb_plugin,
        "python",
        "import json, time",
        "res = {}",
        "for v, cmd in ((%r, %r), (%r, %r)):" % (
            "ranked", "heap-dominators --json --output " + out["ranked"],
            "plain", "heap-dominators --json --plain --output " + out["plain"]),
        "    t0 = time.monotonic()",
        "    try:",
        "        gdb.execute(cmd, to_string=True)",
        "        res[v] = {'secs': time.monotonic() - t0}",
        "    except Exception as e:",
        "        res[v] = {'error': '%s: %s' % (type(e).__name__, e)}",
        "gdb.execute('gcore %s', to_string=True)" % core,
        "with open(%r, 'w') as f:" % res,
        "    json.dump(res, f)",
        "end",
    ]
    return core, out, res, lines


def run_gdb(a, work, name, lines, argv):
    script = os.path.join(work, name + ".gdb")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-x", script] + argv,
                       capture_output=True, text=True, env=env(a.lib), timeout=3600,
                       stdin=subprocess.DEVNULL, errors="replace")
    return r


def attach_and_core(a, work, name, pid):
    core, out, res, lines = gdb_stop_lines(a, work, name)
    lines.append("detach")
    r = run_gdb(a, work, name, lines, ["-p", str(pid)])
    return collect(core, out, res, r)


def collect(core, out, res, r):
    if not os.path.exists(core):
        raise RuntimeError("no core (gdb rc %d): %s %s" % (r.returncode, r.stdout[-1500:],
                                                          r.stderr[-1500:]))
    g = {}
    if os.path.exists(res):
        with open(res) as f:
            g = json.load(f)
    docs = {}
    for v, p in out.items():
        if os.path.exists(p):
            with open(p) as f:
                docs[v] = json.load(f)
        docs[v + "_info"] = g.get(v, {})
    return core, docs


# --------------------------------------------------------------- programs
def ready_path(work, name):
    """A ready file that does not exist yet (the workdir may be reused)."""
    p = os.path.join(work, name + ".ready")
    if os.path.exists(p):
        os.unlink(p)
    return p


def wait_file(path, proc, what, timeout=600):
    t0 = time.monotonic()
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise RuntimeError("%s exited (%d) before it was ready" % (what, proc.returncode))
        if time.monotonic() - t0 > timeout:
            raise RuntimeError("%s not ready after %ds" % (what, timeout))
        time.sleep(0.1)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def prog_memcached(a, work):
    port = free_port()
    cmd = ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "1024"]
    if os.getuid() == 0:
        cmd += ["-u", "root"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        s = None
        for _ in range(100):
            try:
                s = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.05)
        if s is None:
            raise RuntimeError("memcached did not listen on %d" % port)
        value = b"v" * 100
        batch = []
        for i in range(a.memcached_items):
            batch.append(b"set item:%d 0 0 %d noreply\r\n%s\r\n" % (i, len(value), value))
            if len(batch) == 1000:
                s.sendall(b"".join(batch))
                batch = []
        s.sendall(b"".join(batch) + b"get item:1\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                raise RuntimeError("memcached closed the connection")
            buf += chunk
        s.sendall(b"stats\r\n")
        buf = b""
        while not buf.endswith(b"END\r\n"):
            buf += s.recv(65536)
        items = [ln for ln in buf.decode().splitlines() if ln.startswith("STAT curr_items ")]
        note = "%s items" % (items[0].split()[2] if items else "?")
        core, docs = attach_and_core(a, work, "memcached", proc.pid)
        s.close()
        return core, "/usr/bin/memcached", docs, note
    finally:
        proc.kill()
        proc.wait()


def prog_perl(a, work):
    ready = ready_path(work, "perl")
    code = ('my %%h; $h{"key$_"} = "x" x 50 for 1..%d; '
            'open(my $f, ">", $ARGV[0]) or die; close $f; sleep 3600; print scalar(keys %%h);'
            % a.perl_keys)
    proc = subprocess.Popen(["perl", "-e", code, ready], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    try:
        wait_file(ready, proc, "perl")
        core, docs = attach_and_core(a, work, "perl", proc.pid)
        return core, "/usr/bin/perl", docs, "%d keys" % a.perl_keys
    finally:
        proc.kill()
        proc.wait()


def prog_sqlite3(a, work):
    ready = ready_path(work, "sqlite3")
    proc = subprocess.Popen(["sqlite3", ":memory:"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        sql = ("CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, email TEXT, "
               "balance REAL);\n"
               "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
               "INSERT INTO customer SELECT x, 'customer-' || x, "
               "lower(hex(randomblob(8))) || '@example.com', x * 1.5 FROM c;\n"
               ".shell touch %s\n" % (a.sqlite_rows, ready))
        proc.stdin.write(sql.encode())
        proc.stdin.flush()  # stdin stays open: sqlite3 waits for more input
        wait_file(ready, proc, "sqlite3")
        core, docs = attach_and_core(a, work, "sqlite3", proc.pid)
        return core, "/usr/bin/sqlite3", docs, "%d rows" % a.sqlite_rows
    finally:
        proc.kill()
        proc.wait()


def prog_python3(a, work):
    ready = ready_path(work, "python3")
    code = ("import sys, time\n"
            "d = {'key%%d' %% i: [i, str(i) * 3, i * 1.5] for i in range(%d)}\n"
            "open(sys.argv[1], 'w').close()\n"
            "time.sleep(3600)\n" % a.python_keys)
    proc = subprocess.Popen(["/usr/bin/python3", "-c", code, ready], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL)
    try:
        wait_file(ready, proc, "python3")
        core, docs = attach_and_core(a, work, "python3", proc.pid)
        return core, os.path.realpath("/usr/bin/python3"), docs, "%d keys" % a.python_keys
    finally:
        proc.kill()
        proc.wait()


def prog_server(a, work):
    core, out, res, lines = gdb_stop_lines(a, work, "server")
    lines = lines[:4] + ["break hd_fixture_stop", "run"] + lines[4:] + ["kill"]
    r = run_gdb(a, work, "server", lines,
                ["--args", a.server_fixture, os.path.join(work, "server.truth"),
                 "--entries", str(a.entries)])
    core, docs = collect(core, out, res, r)
    return core, a.server_fixture, docs, "%d entries" % a.entries


def prog_walk(a, work):
    core, out, res, lines = gdb_stop_lines(a, work, "walk")
    lines = lines[:4] + ["break print_record", "run"] + lines[4:] + ["kill"]
    r = run_gdb(a, work, "walk", lines,
                ["--args", a.walk_fixture, os.path.join(work, "walk.truth")])
    core, docs = collect(core, out, res, r)
    return core, a.walk_fixture, docs, "stopped in print_record"


PROGRAMS = [("memcached", prog_memcached), ("perl", prog_perl), ("sqlite3", prog_sqlite3),
            ("python3", prog_python3), ("server_fixture", prog_server),
            ("walk_fixture", prog_walk)]


# ---------------------------------------------------------------- measure
def heapdom(path, args, lib=None):
    t0 = time.monotonic()
    r = subprocess.run([path] + args, capture_output=True, text=True, env=env(lib),
                       errors="replace", timeout=3600)
    secs = time.monotonic() - t0
    if r.returncode != 0:
        return None, secs, r.stderr.strip()[:300]
    return json.loads(r.stdout), secs, None


def named(doc):
    """(named bytes share, used bytes) of a document with holders."""
    if not doc or "holders" not in doc:
        return None
    used = doc["heap"]["used_bytes"]
    n = sum(h["retained"] for h in doc["holders"]
            if h["kind"] in ("root", "block") or (h["kind"] == "joint" and h.get("members")))
    return n / used if used else 1.0


def single(doc):
    """Share of used bytes under one root or one leaked block (no joint)."""
    if not doc or "holders" not in doc:
        return None
    used = doc["heap"]["used_bytes"]
    n = sum(h["retained"] for h in doc["holders"] if h["kind"] in ("root", "block"))
    return n / used if used else 1.0


def anonymous_name(n):
    # a global without a symbol (stripped executable), an anonymous mapping
    # no framework module labels ("anon 0x..-0x.. (pymalloc arenas)" is
    # named), or a frame without a function name
    return ("+0x" in n or (n.startswith("anon ") and not n.endswith(")"))
            or " ?? " in n or n.endswith(" ??"))


def unnamed(doc):
    """Share of used bytes under holders named (or with a member named)
    only by a section offset or an anonymous mapping."""
    if not doc or "holders" not in doc:
        return None
    used = doc["heap"]["used_bytes"]
    n = sum(h["retained"] for h in doc["holders"]
            if anonymous_name(h["name"]) or any(anonymous_name(m) for m in h.get("members") or []))
    return n / used if used else 0.0


def before_named(doc):
    """Before issue 19: named = used bytes not under a block whose idom is
    the super-root (several roots)."""
    used = doc["heap"]["used_bytes"]
    several = sum(n["retained"] for n in doc["nodes"] if n.get("idom") == "root:*")
    top = max((n["retained"] for n in doc["nodes"]
               if n.get("idom") and n["idom"].startswith("root:")), default=0)
    return (used - several) / used if used else 1.0, top / used if used else 0.0


def short(name, width=44):
    return name if len(name) <= width else name[:width - 1] + "…"


def holder_label(h):
    if h["kind"] == "joint":
        ms = [m.split(":", 1)[1] if ":" in m and not m.startswith("thread ") else m
              for m in h.get("members") or []]
        return "joint(%s)" % ", ".join(ms)
    return h["name"]


def top_holders(doc, n=3):
    used = doc["heap"]["used_bytes"] or 1
    hs = sorted(doc["holders"], key=lambda h: -h["retained"])[:n]
    return ["%s %.1f%%" % (short(holder_label(h)), 100.0 * h["retained"] / used) for h in hs]


def accumulation(doc):
    aps = doc.get("accumulation_points") or []
    if not aps:
        return "-"
    ap = aps[0]
    used = doc["heap"]["used_bytes"] or 1
    if ap["addr"] is None:
        where = "the holder %s itself" % short(ap["holder"], 40)
    else:
        where = "%s %s, %d level(s) under %s" % (ap["addr"], ap.get("type") or "(untyped)",
                                                  ap.get("depth", 0), short(ap["holder"], 40))
    chain = ", a chain of %d blocks" % ap["retained_blocks"] if ap.get("chain") else ""
    return "%s: %.1f%%, %d children, the largest %.2f%%%s" % (
        where, 100.0 * ap["retained"] / used, ap["children"],
        100.0 * ap["largest_child_retained"] / used, chain)


def mib(b):
    return "%.1f MiB" % (b / 1048576.0)


def pct(x):
    return "-" if x is None else "%.1f%%" % (100 * x)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heapdom", default=os.path.join(SRC, "build/core/heapdom"))
    ap.add_argument("--lib", default=None, help="libheapdom.so for gdb (default: next to heapdom)")
    ap.add_argument("--before", default=os.environ.get("HEAPDOM_BEFORE"),
                    help="heapdom built at the head before issue 19 (c5c5daf)")
    ap.add_argument("--gdb-plugin", default=os.path.join(SRC, "gdb-plugin/heapdom.py"))
    ap.add_argument("--server-fixture", default=os.path.join(SRC, "build/tests/server_fixture"))
    ap.add_argument("--walk-fixture", default=os.path.join(SRC, "build/tests/walk_fixture"))
    ap.add_argument("--entries", type=int, default=1000000)
    ap.add_argument("--memcached-items", type=int, default=200000)
    ap.add_argument("--perl-keys", type=int, default=500000)
    ap.add_argument("--sqlite-rows", type=int, default=300000)
    ap.add_argument("--python-keys", type=int, default=300000)
    ap.add_argument("--only")
    ap.add_argument("--workdir")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--markdown", action="store_true", help="also print a Markdown table")
    a = ap.parse_args()
    a.heapdom = os.path.abspath(a.heapdom)
    a.lib = os.path.abspath(a.lib or os.path.join(os.path.dirname(a.heapdom), "libheapdom.so"))
    a.gdb_plugin = os.path.abspath(a.gdb_plugin)
    only = set(a.only.split(",")) if a.only else None
    work = a.workdir or tempfile.mkdtemp(prefix="heapdom-ownership.")
    os.makedirs(work, exist_ok=True)
    rows = []
    for name, fn in PROGRAMS:
        if only and name not in only:
            continue
        if name in ("memcached", "perl", "sqlite3") and not shutil.which(name):
            print("%s: not installed (apt-get install %s), skipped" % (name, name))
            continue
        print("== %s" % name, flush=True)
        try:
            core, exe, gdocs, note = fn(a, work)
        except Exception as e:  # measure what can be measured
            print("   failed: %s" % e)
            continue
        row = {"program": name, "note": note}
        base = ["dominators", core, "--exe", exe, "--json"]
        ranked, row["secs"], err = heapdom(a.heapdom, base)
        plain, _, perr = heapdom(a.heapdom, base + ["--plain"])
        if ranked is None:
            print("   heapdom: %s" % err)
            continue
        row["used"] = ranked["heap"]["used_bytes"]
        row["blocks"] = ranked["heap"]["used_blocks"]
        row["ranked"] = named(ranked)
        row["plain"] = named(plain) if plain else None
        row["single"] = single(ranked)
        row["single_plain"] = single(plain)
        row["unnamed"] = unnamed(ranked)
        row["gdb"] = named(gdocs.get("ranked"))
        row["gdb_plain"] = named(gdocs.get("plain"))
        row["gdb_err"] = gdocs.get("ranked_info", {}).get("error")
        row["top"] = top_holders(ranked) if "holders" in ranked else ["(no holders)"]
        row["acc"] = accumulation(ranked)
        row["before"] = row["before_top"] = row["before_secs"] = None
        if a.before:
            old, row["before_secs"], err = heapdom(a.before, base + ["--all"])
            if old:
                row["before"], row["before_top"] = before_named(old)
            else:
                print("   before: %s" % err)
        for k in ("ranked", "plain", "gdb", "gdb_plain", "before", "single", "single_plain",
                  "unnamed"):
            print("   %-10s %s" % (k, pct(row[k])))
        if row["gdb_err"]:
            print("   gdb: %s" % row["gdb_err"])
        print("   top: %s" % "; ".join(row["top"]))
        print("   accumulation: %s" % row["acc"])
        rows.append(row)
        if not a.keep:
            os.unlink(core)

    print()
    print("named: under a root, a leaked block or a joint group with members; single: under "
          "one root or block;\nanon: under holders named by a section offset or an "
          "anonymous mapping (ranked view)")
    print("%-15s %10s %7s %7s %7s %7s %7s %7s %7s  %s" % (
        "program", "used", "before", "named", "plain", "gdb", "single", "s.plain", "anon",
        "top 3 holders (ranked)"))
    for r in rows:
        print("%-15s %10s %7s %7s %7s %7s %7s %7s %7s  %s"
              % (r["program"], mib(r["used"]), pct(r["before"]), pct(r["ranked"]),
                 pct(r["plain"]), pct(r["gdb"]), pct(r["single"]), pct(r["single_plain"]),
                 pct(r["unnamed"]), "; ".join(r["top"])))
        print("%-15s %s" % ("", "accumulation: " + r["acc"]))
    print("(before: %s; dominators wall time after/before: %s)" % (
        a.before or "not measured (--before)",
        ", ".join("%s %.1fs/%s" % (r["program"], r["secs"],
                                   "-" if r["before_secs"] is None else "%.1fs" % r["before_secs"])
                  for r in rows)))
    if a.markdown:
        print()
        print("| program | data | used | named before | named after | after, --plain | "
              "after, gdb at the stop | one root or block | one root or block, --plain | "
              "unnamed roots | top 3 holders | accumulation point |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
                  % (r["program"], r["note"], mib(r["used"]), pct(r["before"]),
                     pct(r["ranked"]), pct(r["plain"]), pct(r["gdb"]), pct(r["single"]),
                     pct(r["single_plain"]), pct(r["unnamed"]),
                     "<br>".join(r["top"]), r["acc"]))
    if not a.keep and not a.workdir:
        shutil.rmtree(work, ignore_errors=True)
    elif a.keep:
        print("kept %s" % work)
    return 0


if __name__ == "__main__":
    sys.exit(main())

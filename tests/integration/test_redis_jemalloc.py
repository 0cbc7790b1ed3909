#!/usr/bin/env python3
"""jemalloc's real target (issue 22): Debian's redis-server 7.0, which links
libjemalloc.so.2, loaded with a known number of keys and cored with gdb.

  walk        heapdom finds jemalloc 5.3.0 (from the code of the stripped
              library), the heap complete (no problem, not partial)
  allocated   heapdom's used bytes are within 2% of redis's own INFO memory
              allocator_allocated (jemalloc's stats.allocated, taken just
              before the core; it also counts thread-cached regions and
              jemalloc's internal allocations); the facts allocated_bytes and
              active_bytes within 2% of allocator_allocated and
              allocator_active
  live        heapdom stats --pid on the running server: jemalloc, complete,
              used bytes within 2% of allocator_allocated
  dominators  the db's dictionary is found: an accumulation point that is a
              block the size of the dict's bucket table (8 bytes per
              bucket, a power of two >= the keys), retaining at least three
              blocks per key (entry, key, value) and most of the heap, held
              by redis's global `server`

redis listens on 127.0.0.1 on a free port, with no persistence, in the
work directory. Exit 77 (skipped) when redis-server is not installed.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

KEYS = 50000


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def command(sock, *args):
    """One RESP command; returns the raw reply (read until it is whole)."""
    msg = b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args)
    sock.sendall(msg)
    data = b""
    while True:
        data += sock.recv(1 << 20)
        if data.startswith(b"$"):
            n = int(data[1:data.index(b"\r\n")])
            if len(data) >= data.index(b"\r\n") + 2 + n + 2:
                return data
        elif data.endswith(b"\r\n"):
            return data


def load(sock, n):
    batch = []
    for i in range(n):
        k = b"key:%d" % i
        v = b"value-%d-" % i + b"x" * (i % 50)
        batch.append(b"*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(k), k, len(v), v))
    sock.sendall(b"".join(batch))
    got = b""
    while got.count(b"+OK\r\n") < n:
        chunk = sock.recv(1 << 20)
        if not chunk:
            raise heaptest.HarnessError("redis closed the connection while loading")
        got += chunk


def info_memory(sock):
    reply = command(sock, b"INFO", b"memory").decode()
    out = {}
    for line in reply.splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            out[k] = v
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapdom", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--only")
    ap.add_argument("--keep", action="store_true")
    a = ap.parse_args()
    redis = shutil.which("redis-server")
    if not redis:
        print("redis-server is not installed: skipped")
        return 77
    os.makedirs(a.workdir, exist_ok=True)
    run = heaptest.CaseRunner(a.workdir, a.only, a.keep)
    core = run.path("redis.core")
    state = {}

    def setup():
        port = free_port()
        proc = subprocess.Popen([redis, "--port", str(port), "--bind", "127.0.0.1",
                                 "--save", "", "--appendonly", "no", "--dir", a.workdir,
                                 "--daemonize", "no", "--protected-mode", "yes"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            sock = None
            for _ in range(200):
                try:
                    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
                    break
                except OSError:
                    time.sleep(0.05)
            if sock is None:
                raise heaptest.HarnessError("redis-server did not listen on port %d" % port)
            load(sock, KEYS)
            dbsize = command(sock, b"DBSIZE")
            if dbsize.strip() != b":%d" % KEYS:
                raise heaptest.HarnessError("DBSIZE %r, expected %d" % (dbsize, KEYS))
            # redis refreshes its allocator figures in serverCron (every
            # 100 ms): read until two readings a cron apart agree.
            prev = None
            for _ in range(40):
                info = info_memory(sock)
                if prev and info.get("allocator_allocated") == prev.get("allocator_allocated"):
                    break
                prev = info
                time.sleep(0.25)
            state["info"] = info
            if os.path.exists(core):
                os.unlink(core)
            r = subprocess.run(["gdb", "-q", "-nx", "-batch", "-p", str(proc.pid),
                                "-ex", "gcore " + core], capture_output=True, text=True,
                               timeout=300, env=heaptest._env())
            if not os.path.isfile(core):
                raise heaptest.HarnessError("gdb made no core (rc %d): %s" % (r.returncode, r.stderr[-1500:]))
            state["live"] = heaptest.heapdom_json(a.heapdom, ["stats", "--pid", str(proc.pid), "--json"])
            sock.close()
        finally:
            proc.kill()
            proc.wait()
        return []
    run.case("setup: redis-server with %d keys, cored" % KEYS, setup)
    if "info" not in state:
        return run.finish()
    info = state["info"]

    def case_walk():
        doc = heaptest.heapdom_json(a.heapdom, ["stats", core, "--json"])
        state["stats"] = doc
        al = doc.get("allocator") or {}
        out = []
        if al.get("name") != "jemalloc" or al.get("version") != "5.3.0":
            out.append("allocator %r %r, expected jemalloc 5.3.0" % (al.get("name"), al.get("version")))
        if doc.get("partial") or doc.get("problems"):
            out.append("partial %r problems %r" % (doc.get("partial"), (doc.get("problems") or [])[:5]))
        return out
    run.case("walk: jemalloc 5.3.0 found in the stripped library, complete", case_walk)

    def case_allocated():
        doc = state.get("stats") or heaptest.heapdom_json(a.heapdom, ["stats", core, "--json"])
        used = doc["totals"]["used"]["bytes"]
        want = int(info["allocator_allocated"])
        print("    used %d bytes in %d blocks; allocator_allocated %d (%.2f%%)"
              % (used, doc["totals"]["used"]["blocks"], want, 100.0 * (want - used) / want))
        out = []
        if abs(used - want) > 0.02 * want:
            out.append("used %d bytes, INFO allocator_allocated %d: more than 2%% apart" % (used, want))
        facts = (doc.get("allocator") or {}).get("facts") or {}
        for fact, key in (("allocated_bytes", "allocator_allocated"), ("active_bytes", "allocator_active")):
            got, ref = facts.get(fact), int(info[key])
            print("    fact %s %r, INFO %s %d" % (fact, got, key, ref))
            if got is None or abs(got - ref) > 0.02 * ref:
                out.append("fact %s %r, INFO %s %d: more than 2%% apart" % (fact, got, key, ref))
        return out
    run.case("allocated: used bytes within 2% of INFO's allocator_allocated", case_allocated)

    def case_live():
        doc = state["live"]
        al = doc.get("allocator") or {}
        used, want = doc["totals"]["used"]["bytes"], int(info["allocator_allocated"])
        out = []
        if al.get("name") != "jemalloc" or doc.get("partial") or doc.get("problems"):
            out.append("allocator %r partial %r problems %r" % (al.get("name"), doc.get("partial"),
                                                                (doc.get("problems") or [])[:3]))
        if abs(used - want) > 0.02 * want:
            out.append("live: used %d bytes, allocator_allocated %d" % (used, want))
        return out
    run.case("live: heapdom stats --pid on the running server", case_live)

    def case_dominators():
        doc = heaptest.heapdom_json(a.heapdom, ["dominators", core, "--json"])
        table = 8
        while table < 8 * KEYS:
            table *= 2
        sizes = {n["addr"]: n["size"] for n in doc.get("nodes", [])}
        used = doc["heap"]["used_bytes"]
        for p in doc.get("accumulation_points", []):
            size = sizes.get(p["addr"])
            if size is None:
                blk = heaptest.heapdom_json(a.heapdom, ["blocks", core, "--json"])
                size = next((b["size"] for b in blk["blocks"] if b["addr"] == p["addr"]), None)
            if size == table and p["retained_blocks"] >= 3 * KEYS and \
                    "server" in p["holder"] and p["retained"] >= used // 2:
                print("    dict table %s (%d bytes): %d children, retains %d blocks, %d bytes; held by %s"
                      % (p["addr"], size, p["children"], p["retained_blocks"], p["retained"], p["holder"]))
                return []
        return ["no accumulation point of %d bytes (the db dict's table) retaining >= %d blocks under "
                "`server`: %r" % (table, 3 * KEYS, doc.get("accumulation_points", [])[:3])]
    run.case("dominators: the db's dict table holds the keys", case_dominators)
    return run.finish(remove=(".core",))


if __name__ == "__main__":
    sys.exit(main())

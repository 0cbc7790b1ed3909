"""cpython.py -- a CPython heap for the performance benchmark (not a test).

    python3 cpython.py USERS

An analytics service as a Python program keeps one: a dict of user
accounts (small class instances with a few attributes: name, e-mail, a
score, a list of tags); per user a list of events, each event a tuple of a
timestamp (float), a kind (str, from a small set), a page path built at run
time (str), a duration (int above the small-int cache) and, for some, a dict
of extra fields; a dict of per-page counters; a list of recent sessions as
instances of a class with __slots__. Events expire and arrive as the
service runs, so objects reuse freed pymalloc slots. About 2% of the events
refer to themselves through their extra dict (a cycle); those that expire
stay as garbage nothing refers to, since the cyclic collector is disabled
(as some services do for latency): what an analyzer may call leaked.

When built it prints "ready OBJECTS PID CYCLES" (OBJECTS: the gc-tracked
objects; CYCLES: the dropped events left in cycles) and waits on stdin; the benchmark
cores it with gdb's gcore and then closes stdin.
"""
import gc
import os
import random
import sys

KINDS = ("view", "click", "scroll", "purchase", "login", "logout", "search")


class Account:
    def __init__(self, uid):
        self.uid = uid
        self.name = "user-%d-%s" % (uid, "x" * (uid % 11))
        self.email = "user%d@example%d.org" % (uid, uid % 97)
        self.score = uid * 0.37
        self.tags = ["tag%d" % (uid % 50), "cohort-%d" % (uid % 12)]


class Session:
    __slots__ = ("uid", "started", "pages", "agent")

    def __init__(self, uid, started):
        self.uid = uid
        self.started = started
        self.pages = []
        self.agent = "Mozilla/5.0 (X11; Linux x86_64) build %d" % (uid % 1000)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 260000
    gc.disable()
    accounts = {}
    events = {}
    counters = {}
    sessions = []
    rnd = random.Random(12345).getrandbits
    dropped_cycles = 0

    t = 1_700_000_000.0
    for uid in range(1000, 1000 + n):
        accounts[uid] = Account(uid)
        evs = []
        events[uid] = evs
        for k in range(8 + rnd(32) % 8):
            t += 0.25
            page = "/shop/item/%d/%d" % (rnd(32) % 50000, k)
            ev = (t, KINDS[rnd(32) % len(KINDS)], page, 1000 + rnd(32) % 90000)
            if rnd(32) % 4 == 0:
                extra = {"ref": "campaign-%d" % (rnd(32) % 300), "pos": rnd(32) % 1000 + 300}
                ev = ev + (extra,)
                if rnd(32) % 12 == 0:
                    extra["self"] = ev  # a cycle: garbage once dropped
            evs.append(ev)
            counters[page] = counters.get(page, 0) + 1
        # old events expire: drop a few from an earlier user's list
        if uid > 1100 and uid % 3 == 0:
            old = events[1000 + rnd(32) % (uid - 1000)]
            k = rnd(32) % 4
            dropped_cycles += sum(1 for ev in old[:k] if len(ev) == 5 and "self" in ev[4])
            del old[:k]
        if uid % 5 == 0:
            s = Session(uid, t)
            s.pages = [("/shop/item/%d" % (rnd(32) % 50000)) for _ in range(3)]
            sessions.append(s)
            if len(sessions) > 20000:
                del sessions[: 1000]
    objects = len(gc.get_objects())
    print("ready %d %d %d" % (objects, os.getpid(), dropped_cycles), flush=True)
    sys.stdin.read()  # the stop: the benchmark cores us here, then closes stdin


if __name__ == "__main__":
    main()

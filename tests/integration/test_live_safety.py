#!/usr/bin/env python3
"""heapdom integration test: live-process safety (issue 21).

    test_live_safety.py --heapdom PATH --lib LIBHEAPDOM --fixture live_fixture
        --gdb-plugin PATH [--lldb-plugin PATH] --workdir DIR [--only a,b,c]

Cases:
  a untouched  live_fixture blocked (every thread waits in read(2), so it
               changes none of its memory): this script hashes every
               readable mapping through /proc/PID/mem (a page the pagemap
               shows never touched counts as zeros, unread), then runs
               `heapdom leaks --pid` and `dominators --pid` and hashes
               again after each: byte-identical, and untraced. gdb's
               heap-leaks, heap-dominators, heap-stats (memory through /proc
               and through gdb) and lldb's `heapdom leaks`, `dominators`
               (through /proc and the SB API): hashed (by this script, run
               by the debugger's shell command) while the debugger holds
               the target stopped, before and after heapdom's commands, since
               a debugger's own attach and detach may change it.
  b kill heapdom  live_fixture running (threads sleep 1 ms in a loop):
               `heapdom leaks --pid` is SIGKILLed once attached and at
               delays through its analysis; each time every thread of the
               target has TracerPid 0, none is stopped (t/T), and it keeps
               running (its CPU time grows). The same for gdb and lldb
               killed while heapdom's command runs in them (its target open
               on /proc/PID/mem or the pagemap).
  c target killed  the target SIGKILLed at delays while `heapdom leaks
               --pid` (and gdb's heap-leaks) analyse it: either a clear
               message ("process N exited ... during the analysis") and a
               non-zero status, or, killed after the last read, the exact
               report; never a crash or another answer.
  e target execs  live_fixture re-executes itself (on SIGHUP, sent once the
               sampler holds it) while `heapdom sample --pid`, gdb's
               heap-sample and lldb's `heapdom sample` run: a message naming
               the pid ("process N executed another program"), status 1 from
               the CLI, and the new program runs untraced.
  f kill sampler `heapdom sample --pid` SIGKILLed at delays through a
               sampling and its report, gdb and lldb SIGKILLed while their
               sample command runs: the target untraced, not stopped,
               running; blocked, its memory byte-identical after a sampling
               and after each kill.
Exit status 0 when every check passed; the last line is "N passed, N failed".
"""
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import heaptest  # noqa: E402

PAGE = os.sysconf("SC_PAGE_SIZE")
ZERO = bytes(PAGE)


env = heaptest.debugger_env
parse_truth = heaptest.parse_live_truth


def start_fixture(fixture, truth, args):
    # Without rseq: the kernel itself writes each thread's restartable-
    # sequence area (the CPU it resumes on) when it runs again after a
    # stop, which would change the memory no tool wrote.
    return heaptest.start_live_fixture(
        fixture, truth, args, env={"GLIBC_TUNABLES": "glibc.pthread.rseq=0"})


def memory_hash(pid):
    """{mapping: sha256} of every readable mapping; never-touched private
    anonymous pages hash as zeros without being read (reading maps them)."""
    out = {}
    with open("/proc/%d/maps" % pid) as f:
        maps = f.read().splitlines()
    mem = open("/proc/%d/mem" % pid, "rb", buffering=0)
    pm = open("/proc/%d/pagemap" % pid, "rb", buffering=0)
    try:
        for line in maps:
            w = line.split()
            lo, hi = (int(x, 16) for x in w[0].split("-"))
            path = w[5] if len(w) > 5 else ""
            if w[1][0] != "r" or path.startswith("[vvar") or path == "[vsyscall]":
                continue
            anon = w[1][3] == "p" and (not path or path in ("[heap]", "[stack]"))
            h = hashlib.sha256()
            for a in range(lo, hi, PAGE):
                if anon:
                    pm.seek(a // PAGE * 8)
                    e = int.from_bytes(pm.read(8), "little")
                    if not e >> 62:
                        h.update(ZERO)
                        continue
                mem.seek(a)
                try:
                    h.update(mem.read(PAGE))
                except OSError:
                    h.update(b"unreadable")
            out["%x-%x %s %s" % (lo, hi, w[1], path)] = h.hexdigest()
    finally:
        mem.close()
        pm.close()
    return out


states = heaptest.thread_states


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        w = f.read().rsplit(")", 1)[1].split()
    return int(w[11]) + int(w[12])


def opened(pid, target):
    """Whether process pid holds /proc/TARGET/.../mem or pagemap open."""
    for fd in glob.glob("/proc/%d/fd/*" % pid):
        try:
            link = os.readlink(fd)
        except OSError:
            continue
        if link.startswith("/proc/%d/" % target) and link.endswith(("/mem", "/pagemap")):
            return True
    return False


class Test(heaptest.LiveTest):
    def gdb_argv(self, pid, cmds, mode="proc"):
        argv = ["gdb", "-batch", "-nx", "-ex", "source " + self.a.gdb_plugin,
                "-ex", "set heapdom memory " + mode, "-ex", "attach %d" % pid]
        for c in cmds:
            argv += ["-ex", c]
        return argv + ["-ex", "detach"]

    def lldb_argv(self, pid, cmds):
        argv = [shutil.which("lldb-14") or "lldb-14", "-x", "-b", "-o",
                "plugin load " + self.a.lldb_plugin, "-o", "process attach -p %d" % pid]
        for c in cmds:
            argv += ["-o", c]
        return argv + ["-o", "detach"]

    def gdb_env(self):
        e = env()
        e["HEAPDOM_LIB"] = self.a.lib
        return e

    # ------------------------------------------------------------ case a
    def case_untouched(self):
        truth = self.path("a.truth")
        proc = start_fixture(self.a.fixture, truth, ["--big", "64"])
        try:
            pid = proc.pid
            time.sleep(0.3)
            base = memory_hash(pid)
            again = memory_hash(pid)
            if not self.check(base == again, "a: the blocked fixture's memory changed by itself"):
                return
            # The CLI stops and releases the target itself: hash around it.
            for name, argv in (("heapdom leaks --pid", [self.a.heapdom, "leaks", "--pid", str(pid)]),
                               ("heapdom dominators --pid",
                                [self.a.heapdom, "dominators", "--pid", str(pid)])):
                r = subprocess.run(argv, capture_output=True, text=True, env=env(),
                                   stdin=subprocess.DEVNULL, timeout=600)
                self.check(r.returncode == 0, "a: %s failed (rc %d)" % (name, r.returncode),
                           r.stderr[-1500:])
                self.compare(base, memory_hash(pid), name)
                st = states(pid)
                self.check(all(s[1] == 0 for s in st.values()),
                           "a: %s left the target traced: %s" % (name, st))
            # A debugger's own attach and detach may change the target (a
            # thread's read(2) interrupted by its SIGSTOP returns EINTR and
            # sets errno): hash while it holds the target stopped, before
            # and after heapdom's commands.
            me = [sys.executable, os.path.abspath(__file__), "--hash", str(pid)]
            b1, b2 = self.path("a.before"), self.path("a.after")
            hash_cmd = " ".join(me)
            runs = [("gdb (proc)", "gdb", "proc", ["heap-leaks", "heap-dominators", "heap-stats"]),
                    ("gdb (gdb)", "gdb", "gdb", ["heap-leaks", "heap-dominators"])]
            if self.a.lldb_plugin:
                runs += [("lldb (proc)", "lldb", "proc", ["heapdom leaks", "heapdom dominators"]),
                         ("lldb (SB)", "lldb", "lldb", ["heapdom leaks", "heapdom dominators"])]
            for name, dbg, mode, cmds in runs:
                for p in (b1, b2):
                    if os.path.exists(p):
                        os.unlink(p)
                if dbg == "gdb":
                    argv = self.gdb_argv(pid, ["shell %s %s" % (hash_cmd, b1)] + cmds +
                                         ["shell %s %s" % (hash_cmd, b2)], mode)
                    e = self.gdb_env()
                else:
                    argv = self.lldb_argv(pid, ["platform shell %s %s" % (hash_cmd, b1)] + cmds +
                                          ["platform shell %s %s" % (hash_cmd, b2)])
                    e = env()
                    if mode == "lldb":
                        e["HEAPDOM_LLDB_MEMORY"] = "lldb"
                r = subprocess.run(argv, capture_output=True, text=True, env=e,
                                   stdin=subprocess.DEVNULL, timeout=600)
                log = r.stdout[-1500:] + r.stderr[-1500:]
                self.check(r.returncode == 0 and "leaked" in r.stdout,
                           "a: %s failed (rc %d)" % (name, r.returncode), log)
                try:
                    with open(b1) as f:
                        h1 = json.load(f)
                    with open(b2) as f:
                        h2 = json.load(f)
                except (OSError, ValueError):
                    self.check(False, "a: %s: the hashes were not taken" % name, log)
                    continue
                self.compare(h1, h2, name)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def compare(self, before, after, name):
        diff = sorted(k for k in before if after.get(k) != before[k])
        self.check(not diff and set(after) == set(before),
                   "a: %s changed the target's memory: %s" % (
                       name, diff[:5] or sorted(set(after) ^ set(before))[:5]))

    # ------------------------------------------------------------ case b
    def released(self, pid, what, debugger=False):
        """The target untraced, not stopped, and running. A debugger that
        attached with PTRACE_ATTACH stopped the process with SIGSTOP, and
        the kernel puts it back in that job-control stop (T) when the
        debugger dies: gdb's and lldb's doing, which SIGCONT ends; never a
        tracing stop (t)."""
        deadline = time.monotonic() + 2
        while True:
            st = states(pid)
            stop = "t" if debugger else "tT"
            bad = {t: s for t, s in st.items() if s[1] != 0 or s[0] in stop}
            if not bad or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.check(st and not bad, "b: after %s the target is still traced or stopped: %s"
                   % (what, bad))
        # The attach's SIGSTOP of a debugger killed at once may be
        # delivered only after the state was read: after a debugger, SIGCONT
        # (harmless to a running process) until the target runs.
        if debugger:
            os.kill(pid, signal.SIGCONT)
        c0 = cpu_ticks(pid)
        time.sleep(0.5)
        c1 = cpu_ticks(pid)
        t0 = time.monotonic()
        while c1 == c0 and time.monotonic() - t0 < 3:
            if debugger:
                os.kill(pid, signal.SIGCONT)
            time.sleep(0.3)
            c1 = cpu_ticks(pid)
        self.check(c1 > c0, "b: after %s the target does not run (CPU ticks %d -> %d)"
                   % (what, c0, c1))

    def kill_during(self, pid, argv, e, attached, delay):
        """Starts argv, waits until attached(child) holds, sleeps delay, kills
        it (SIGKILL, its whole process group); whether it got that far."""
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=e, start_new_session=True)
        got = False
        deadline = time.monotonic() + 60
        while p.poll() is None and time.monotonic() < deadline:
            if attached(p.pid):
                got = True
                break
            time.sleep(0.002)
        time.sleep(delay)
        try:
            os.kill(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
        # Only the debugger, as a user kills it: lldb's server, its child,
        # notices and lets the process go itself.
        return got

    def case_kill_heapdom(self):
        truth = self.path("b.truth")
        proc = start_fixture(self.a.fixture, truth, ["--run"])
        pid = proc.pid
        try:
            traced_by = lambda child: any(s[1] == child for s in states(pid).values())
            for delay in (0, 0.001, 0.01, 0.05, 0.1, 0.3, 0.6, 1.0):
                got = self.kill_during(pid, [self.a.heapdom, "leaks", "--pid", str(pid)],
                                       env(), traced_by, delay)
                self.released(pid, "heapdom leaks --pid killed %s s after attaching%s"
                              % (delay, "" if got else " (it finished first)"))
            fronts = [("gdb", lambda d: self.gdb_argv(pid, ["heap-leaks", "heap-dominators"]),
                       self.gdb_env())]
            if self.a.lldb_plugin:
                fronts.append(("lldb", lambda d: self.lldb_argv(pid, ["heapdom leaks",
                                                                      "heapdom dominators"]),
                               env()))
            for name, argv, e in fronts:
                for delay in (0, 0.05, 0.3, 0.8):
                    got = self.kill_during(pid, argv(delay), e,
                                           lambda child: opened(child, pid), delay)
                    self.released(pid, "%s killed %s s into heapdom's command%s"
                                  % (name, delay, "" if got else " (not reached)"), True)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    # ------------------------------------------------------------ case c
    def case_target_killed(self):
        for front in ("cli", "gdb"):
            for delay in (0, 0.05, 0.2, 0.5, 1.0):
                truth = self.path("c.truth")
                proc = start_fixture(self.a.fixture, truth, ["--run"])
                pid = proc.pid
                t = parse_truth(truth)
                out = self.path("c.json")
                if os.path.exists(out):
                    os.unlink(out)
                if front == "cli":
                    argv = [self.a.heapdom, "leaks", "--pid", str(pid), "--json", "--output", out]
                    e = env()
                    busy = lambda child: any(s[1] == child for s in states(pid).values())
                else:
                    argv = self.gdb_argv(pid, ["heap-leaks --json --output " + out])
                    e = self.gdb_env()
                    busy = lambda child: opened(child, pid)
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=e, text=True)
                deadline = time.monotonic() + 60
                while p.poll() is None and time.monotonic() < deadline and not busy(p.pid):
                    time.sleep(0.002)
                time.sleep(delay)
                os.killpg(pid, signal.SIGKILL)
                so, se = p.communicate(timeout=600)
                proc.wait()
                what = "c: %s, target killed %s s into the analysis" % (front, delay)
                self.check(p.returncode >= 0, what + ": crashed (signal %d)" % -p.returncode, se)
                doc = None
                if os.path.exists(out) and os.path.getsize(out):
                    with open(out) as f:
                        try:
                            doc = json.load(f)
                        except ValueError:
                            doc = None
                    leaked = sorted(int(b["addr"], 16) for b in doc["leaks"]) if doc else None
                    self.check(leaked == [t["leak"]],
                               what + ": a report with leaked %s, the fixture leaked 0x%x"
                               % (leaked, t["leak"]), so + se)
                else:
                    text = so + se
                    # gdb may see the process die before heapdom's
                    # command starts: then the command finds none.
                    self.check("exited" in text or (front == "gdb" and
                                                    "heapdom: no process" in text),
                               what + ": no report and no clear message", text)
                    if front == "cli":
                        self.check(p.returncode != 0, what + ": no report but exit status 0")

    # ------------------------------------------------------------ case e
    def case_exec(self):
        """The target executes a program (itself again, on SIGHUP, as a
        daemon upgrading in place) while `heapdom sample` runs on it, in
        the CLI, gdb and lldb. SIGHUP is sent only once the sampler holds
        the target (traced by the sampling process with a thread running,
        which neither the CLI's nor a debugger's attach alone shows), and
        the sampling is asked for 600 s: the exec always falls inside it."""
        for front in ["cli", "gdb"] + (["lldb"] if self.a.lldb_plugin else []):
            truth, truth2 = self.path("e.truth"), self.path("e.truth2")
            if os.path.exists(truth2):
                os.unlink(truth2)
            proc = start_fixture(self.a.fixture, truth, ["--run", "--reexec-on-hup", truth2])
            pid = proc.pid
            try:
                sample = ["--duration", "600", "--hz", "50"]
                if front == "cli":
                    argv, e = [self.a.heapdom, "sample", "--pid", str(pid)] + sample, env()
                elif front == "gdb":
                    argv, e = self.gdb_argv(pid, ["heap-sample " + " ".join(sample)]), self.gdb_env()
                else:
                    argv, e = self.lldb_argv(pid, ["heapdom sample " + " ".join(sample)]), env()
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=e, text=True,
                                     start_new_session=True)
                deadline = time.monotonic() + 120
                sampling = False
                while p.poll() is None and time.monotonic() < deadline:
                    st = states(pid)
                    if any(tr == p.pid and s not in "tT" for s, tr in st.values()):
                        sampling = True
                        break
                    time.sleep(0.01)
                what = "e: %s, target executed itself while sampled" % front
                if not self.check(sampling, what + ": the sampling never started"):
                    p.kill()
                    p.communicate()
                    continue
                os.kill(pid, signal.SIGHUP)
                try:
                    so, se = p.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    os.killpg(p.pid, signal.SIGKILL)
                    so, se = p.communicate()
                    self.check(False, what + ": heapdom did not notice (still sampling after 120 s)")
                    continue
                text = so + se
                self.check(p.returncode >= 0, what + ": crashed (signal %d)" % -p.returncode, text)
                self.check("process %d executed another program" % pid in text,
                           what + ": no clear message naming the pid", text)
                if front == "cli":
                    self.check(p.returncode != 0, what + ": exit status 0", text)
                # The new program runs: it writes its own truth file.
                t0 = time.monotonic()
                while not os.path.exists(truth2) and time.monotonic() - t0 < 30:
                    time.sleep(0.05)
                self.check(os.path.exists(truth2), what + ": the new program never ran")
                self.released(pid, what, front != "cli")
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    # ------------------------------------------------------------ case f
    def sampling(self, pid):
        """A predicate on the sampling process: it traces a thread of the
        target that is not stopped, which only the sampler's rounds show
        (the CLI's and a debugger's attach stop every thread they trace)."""
        return lambda child: any(tr == child and s not in "tT"
                                 for s, tr in states(pid).values())

    def case_kill_sampler(self):
        """heapdom sample SIGKILLed at points through a sampling (and
        through the report after it), and gdb and lldb SIGKILLed while
        their sample command runs: the target is left untraced, not
        stopped, running; and, blocked (it changes none of its memory by
        itself), its memory byte-identical after a sampling and after each
        kill of the CLI."""
        truth = self.path("f.truth")
        proc = start_fixture(self.a.fixture, truth, [])
        try:
            pid = proc.pid
            time.sleep(0.3)
            base = memory_hash(pid)
            r = subprocess.run([self.a.heapdom, "sample", "--pid", str(pid), "--duration", "1",
                                "--hz", "200"], capture_output=True, text=True, env=env(),
                               stdin=subprocess.DEVNULL, timeout=600)
            self.check(r.returncode == 0 and "samples" in r.stdout,
                       "f: heapdom sample failed (rc %d)" % r.returncode, r.stdout + r.stderr)
            self.compare(base, memory_hash(pid), "heapdom sample --pid")
            for delay in (0, 0.001, 0.01, 0.1, 0.5, 1.2):
                got = self.kill_during(pid, [self.a.heapdom, "sample", "--pid", str(pid),
                                             "--duration", "1", "--hz", "200"],
                                       env(), self.sampling(pid), delay)
                what = "heapdom sample killed %s s into the sampling%s" % (
                    delay, "" if got else " (not reached)")
                self.compare(base, memory_hash(pid), what)
                time.sleep(0.05)
                st = states(pid)
                self.check(st and all(s[1] == 0 and s[0] not in "tT" for s in st.values()),
                           "f: after %s the target is traced or stopped: %s" % (what, st))
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        truth = self.path("f.truth2")
        proc = start_fixture(self.a.fixture, truth, ["--run"])
        pid = proc.pid
        try:
            sample = ["--duration", "2", "--hz", "200"]
            runs = [("heapdom sample", [self.a.heapdom, "sample", "--pid", str(pid)] + sample,
                     env(), False, (0, 0.001, 0.01, 0.05, 0.3, 1.0, 2.1)),
                    ("gdb heap-sample", self.gdb_argv(pid, ["heap-sample " + " ".join(sample)]),
                     self.gdb_env(), True, (0, 0.05, 0.5))]
            if self.a.lldb_plugin:
                runs.append(("lldb heapdom sample",
                             self.lldb_argv(pid, ["heapdom sample " + " ".join(sample)]),
                             env(), True, (0, 0.05, 0.5)))
            for name, argv, e, debugger, delays in runs:
                for delay in delays:
                    got = self.kill_during(pid, argv, e, self.sampling(pid), delay)
                    self.check(got, "f: %s: the sampling was not seen to start" % name)
                    self.released(pid, "%s killed %s s into the sampling" % (name, delay),
                                  debugger)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

    def run(self):
        cases = {"a": self.case_untouched, "b": self.case_kill_heapdom,
                 "c": self.case_target_killed, "e": self.case_exec,
                 "f": self.case_kill_sampler}
        only = self.a.only.split(",") if self.a.only else list(cases)
        for k in only:
            print("case %s" % k)
            sys.stdout.flush()
            try:
                cases[k]()
            except Exception as e:
                import traceback
                traceback.print_exc()
                self.check(False, "case %s raised %s" % (k, e))


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--hash":
        # Run by gdb's `shell` and lldb's `platform shell` while they hold
        # the target stopped.
        with open(sys.argv[3], "w") as f:
            json.dump(memory_hash(int(sys.argv[2])), f)
        return 0
    ap = heaptest.live_arguments()
    ap.add_argument("--only")
    a = ap.parse_args()
    t = Test(a)
    t.run()
    print("%d passed, %d failed" % (t.passed, t.failed))
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())

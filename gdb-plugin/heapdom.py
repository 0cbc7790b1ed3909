# heapdom for gdb: `source /path/to/heapdom/gdb-plugin/heapdom.py`
#
# A thin layer over libheapdom (through ctypes): it tells the library where
# the process's memory, threads, frames and local variables are, and prints
# what the library's renderer wrote. Analysis and formatting live in C, so
# gdb prints exactly what the `heapdom` command-line tool prints.

import ctypes
import os
import re

import gdb

# ------------------------------------------------------------------ library

HD_ERROR_FAULT = 4
_HERE = os.path.dirname(os.path.abspath(__file__))
_LIB_CANDIDATES = [
    os.environ.get("HEAPDOM_LIB", ""),
    os.path.join(_HERE, "..", "build", "core", "libheapdom.so"),
    os.path.join(_HERE, "..", "lib", "libheapdom.so"),
    "libheapdom.so",
]


class _Error(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int), ("errnum", ctypes.c_int),
                ("has_address", ctypes.c_bool), ("address", ctypes.c_uint64),
                ("path", ctypes.c_char_p), ("message", ctypes.c_char_p),
                ("is_static", ctypes.c_bool)]


class _TargetOptions(ctypes.Structure):
    _fields_ = [("exe", ctypes.c_char_p), ("sysroot", ctypes.c_char_p)]


class _SessionOptions(ctypes.Structure):
    _fields_ = [("debug_dir", ctypes.c_char_p),
                ("no_libc_debuginfo", ctypes.c_bool),
                ("untyped", ctypes.c_bool),
                ("allocators", ctypes.c_char_p),
                ("threads", ctypes.c_uint)]


class _Mapping(ctypes.Structure):
    _fields_ = [("start", ctypes.c_uint64), ("end", ctypes.c_uint64),
                ("file_offset", ctypes.c_uint64), ("prot", ctypes.c_uint32),
                ("path", ctypes.c_char_p), ("readable", ctypes.c_bool)]


class _Thread(ctypes.Structure):
    _fields_ = [("tid", ctypes.c_int), ("has_regs", ctypes.c_bool),
                ("regs", ctypes.c_uint64 * 27)]


class _Frame(ctypes.Structure):
    _fields_ = [("tid", ctypes.c_int), ("level", ctypes.c_uint),
                ("sp", ctypes.c_uint64), ("caller_sp", ctypes.c_uint64),
                ("name", ctypes.c_char_p), ("local", ctypes.c_bool),
                ("type_name", ctypes.c_char_p)]


class _Module(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("file", ctypes.c_char_p),
                ("bias", ctypes.c_uint64), ("start", ctypes.c_uint64),
                ("end", ctypes.c_uint64), ("build_id", ctypes.c_uint8 * 64),
                ("build_id_len", ctypes.c_size_t), ("is_exe", ctypes.c_bool)]


_READ_FN = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint64,
                            ctypes.c_void_p, ctypes.c_size_t)
_lib = None
_lib_error = None


def _load():
    global _lib, _lib_error
    if _lib or _lib_error:
        return _lib
    tried = []
    for path in _LIB_CANDIDATES:
        if not path:
            continue
        try:
            # gdb itself links elfutils' libdw, whose dwarf_* functions share
            # their names with libdwarf's: deep binding makes libheapdom and
            # libdwarf use their own symbols first.
            lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL | os.RTLD_DEEPBIND)
            break
        except OSError:
            tried.append(path)
    else:
        _lib_error = ("heapdom: libheapdom.so not found (tried %s); build it with "
                      "`meson setup build && ninja -C build` in the heapdom "
                      "source tree, or set HEAPDOM_LIB" % ", ".join(tried))
        return None
    err = ctypes.POINTER(_Error)
    vp = ctypes.c_void_p
    sigs = {
        "hd_error_destroy": (None, [err]),
        "hd_error_new": (vp, [ctypes.c_int, ctypes.c_uint64, ctypes.c_char_p]),
        "hd_target_open_core": (err, [ctypes.c_char_p, ctypes.POINTER(_TargetOptions),
                                      ctypes.POINTER(vp)]),
        "hd_target_open_proc": (err, [ctypes.c_int, ctypes.POINTER(_TargetOptions),
                                      ctypes.POINTER(vp)]),
        "hd_target_create_callback": (err, [_READ_FN, vp, ctypes.POINTER(vp)]),
        "hd_target_add_mapping": (err, [vp, ctypes.POINTER(_Mapping)]),
        "hd_target_set_local_pid": (err, [vp, ctypes.c_int]),
        "hd_target_add_thread": (err, [vp, ctypes.POINTER(_Thread)]),
        "hd_target_add_frame": (err, [vp, ctypes.POINTER(_Frame)]),
        "hd_target_discover_modules": (err, [vp]),
        "hd_target_num_modules": (ctypes.c_size_t, [vp]),
        "hd_target_module": (ctypes.POINTER(_Module), [vp, ctypes.c_size_t]),
        "hd_target_set_module_file": (err, [vp, ctypes.c_size_t, ctypes.c_char_p]),
        "hd_target_num_threads": (ctypes.c_size_t, [vp]),
        "hd_target_destroy": (None, [vp]),
        "hd_session_create": (err, [vp, ctypes.POINTER(_SessionOptions),
                                    ctypes.POINTER(vp)]),
        "hd_session_destroy": (None, [vp]),
        "hd_command_check": (err, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]),
        "hd_command_run_string": (err, [vp, ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_char_p),
                                        ctypes.POINTER(vp)]),
        "hd_free": (None, [vp]),
        "hd_heap_known_allocators": (ctypes.c_char_p, []),
        "hd_trace_locate": (err, [vp, ctypes.POINTER(ctypes.c_uint64)]),
        "hd_sample_job_create": (err, [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p),
                                       ctypes.POINTER(vp)]),
        "hd_sample_job_run": (err, [vp, ctypes.c_int]),
        "hd_sample_job_report": (err, [vp, vp, ctypes.POINTER(vp)]),
        "hd_sample_job_destroy": (None, [vp]),
    }
    sigs["hd_prefetch_types"] = (None, [ctypes.c_char_p, ctypes.c_char_p])
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name, None)
        if fn is None:
            # An older libheapdom: the commands that need it say so.
            continue
        fn.restype = res
        fn.argtypes = args
    _lib = lib
    return lib


def _check(err):
    """Turns a libheapdom error into a one-line gdb error."""
    if not err:
        return
    msg = err.contents.message.decode(errors="replace")
    _lib.hd_error_destroy(err)
    raise gdb.GdbError("heapdom: " + msg)


# --------------------------------------------------------------- parameters

class _Prefix(gdb.Command):
    def __init__(self, name, doc):
        self.__doc__ = doc
        super().__init__(name, gdb.COMMAND_DATA, gdb.COMPLETE_NONE, True)


_Prefix("set heapdom", "Set heapdom's defaults (top, depth, colour, memory, prefetch).")
_Prefix("show heapdom", "Show heapdom's defaults.")


class _Param(gdb.Parameter):
    def __init__(self, name, kind, doc, default, *extra):
        self.set_doc = "Set " + doc
        self.show_doc = "Show " + doc
        self.__doc__ = doc
        super().__init__("heapdom " + name, gdb.COMMAND_DATA, kind, *extra)
        self.value = default

    def get_set_string(self):
        return ""

    def get_show_string(self, svalue):
        return "%s is %s." % (self.show_doc[5:], svalue)


_top = _Param("top", gdb.PARAM_ZUINTEGER,
              "how many holders heap-dominators lists (0: the library's default, 20).", 0)
_depth = _Param("depth", gdb.PARAM_ZUINTEGER,
                "how many levels of children heap-dominators shows.", 0)
_colour = _Param("colour", gdb.PARAM_AUTO_BOOLEAN,
                 "whether heapdom colours its output (auto: when gdb styles output).",
                 None)
class _MemoryParam(_Param):
    def get_set_string(self):
        # The analysis of this stop read memory the other way: redo it.
        _invalidate()
        return ""


_memory = _MemoryParam("memory", gdb.PARAM_ENUM,
                 "how heapdom reads a live process's memory: auto (/proc/PID/mem, "
                 "else gdb), proc, or gdb (the debugger's reads, as for gdbserver).",
                 "auto", ["auto", "proc", "gdb"])


_prefetch = _Param("prefetch", gdb.PARAM_BOOLEAN,
                   "whether heapdom reads each module's DWARF types on a thread of "
                   "its own as gdb loads the module (the first report at a stop "
                   "then need not wait for libc's).", True)


# ------------------------------------------------------------------ session

REGS = ["r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
        "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "eflags",
        "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs"]
_MASK = (1 << 64) - 1
MAX_FRAMES = 4096
MAX_LOCALS = 20000


class _Session:
    """One analysis per stop: built on first use, dropped when the inferior
    runs, changes, or goes away."""

    def __init__(self):
        self.handle = None
        self.keep = []  # ctypes objects the library points at

    def close(self):
        if self.handle:
            _lib.hd_session_destroy(self.handle)
        self.handle = None
        self.keep = []


_session = _Session()


def _invalidate(*_args):
    _session.close()


for _ev in ("cont", "exited", "new_objfile", "clear_objfiles",
            "memory_changed", "register_changed", "inferior_call",
            "new_inferior", "inferior_deleted"):
    _registry = getattr(gdb.events, _ev, None)
    if _registry is not None:
        _registry.connect(_invalidate)


def _prefetch_objfile(objfile):
    """Starts reading the types of the module gdb has just loaded, while
    the program runs to its stop (libc's DWARF takes a third of a second
    when no earlier process left it in the index cache). A separate debug
    file is its module's: the library finds it as a session would."""
    if not _prefetch.value or objfile is None or not objfile.is_valid():
        return
    if getattr(objfile, "owner", None) is not None:
        return
    path = objfile.filename
    # "target:" files are the remote target's: nothing on this machine.
    if not path or not path.startswith("/") or not os.path.isfile(path):
        return
    if _load() is None or not hasattr(_lib, "hd_prefetch_types"):
        return
    directory = _debug_dir()
    _lib.hd_prefetch_types(path.encode(), directory.encode() if directory else None)


def _on_new_objfile(event):
    try:
        _prefetch_objfile(event.new_objfile)
    except (gdb.error, OSError, ValueError, UnicodeError):
        pass  # only a head start: the report reads what this did not


if getattr(gdb.events, "new_objfile", None) is not None:
    gdb.events.new_objfile.connect(_on_new_objfile)


def _int(v):
    return int(v) & _MASK


def _core_path():
    text = gdb.execute("info target", to_string=True)
    m = re.search(r"Local core dump file:\s*\n\s*`([^']+)'", text)
    return m.group(1) if m else None


def _debug_dir():
    try:
        value = gdb.parameter("debug-file-directory")
    except RuntimeError:
        return None
    return value.split(":")[0] if value else None


def _sysroot():
    try:
        value = gdb.parameter("sysroot") or ""
    except RuntimeError:
        return None
    if not value or value.startswith("target:"):
        return None
    return value


def _frame_name(frame, level):
    name = frame.name() or "??"
    sal = frame.find_sal()
    if sal and sal.symtab:
        return "#%d %s (%s:%d)" % (level, name,
                                   os.path.basename(sal.symtab.filename), sal.line)
    return "#%d %s" % (level, name)


def _locals(frame, lo, hi):
    """(name, start, end, type) of the frame's local variables that live in
    [lo, hi) on the stack."""
    out = []
    try:
        block = frame.block()
    except RuntimeError:
        return out
    seen = set()
    while block is not None:
        for sym in block:
            if not (sym.is_variable or sym.is_argument) or sym.name in seen:
                continue
            seen.add(sym.name)
            try:
                val = sym.value(frame)
                addr = val.address
                if addr is None:
                    continue
                start = _int(addr)
                size = val.type.sizeof
                tname = str(val.type.strip_typedefs())
            except (gdb.error, RuntimeError):
                continue
            if size > 0 and lo <= start and start + size <= hi:
                out.append((sym.name, start, start + size, tname))
        if block.function is not None:
            break
        block = block.superblock
    return out


def _describe_threads(target, inferior, add_regs):
    """Registers (live targets), frames and locals of every thread."""
    try:
        old_thread = gdb.selected_thread()
        old_frame = gdb.selected_frame()
    except gdb.error:
        old_thread = old_frame = None
    frames, locals_ = [], []
    # gdb stops backtraces at main; main's frame and locals are roots too.
    try:
        past_main = gdb.parameter("backtrace past-main")
        gdb.execute("set backtrace past-main on", to_string=True)
    except (gdb.error, RuntimeError):
        past_main = None
    try:
        for th in inferior.threads():
            th.switch()
            tid = th.ptid[1] or th.ptid[0]
            frame = gdb.newest_frame()
            if add_regs:
                t = _Thread(tid=tid, has_regs=True)
                for i, reg in enumerate(REGS):
                    try:
                        t.regs[i] = _int(frame.read_register(reg))
                    except (gdb.error, ValueError):
                        t.regs[i] = 0
                _check(_lib.hd_target_add_thread(target, ctypes.byref(t)))
            level = 0
            while frame is not None and level < MAX_FRAMES:
                try:
                    sp = _int(frame.read_register("rsp"))
                    caller = frame.older()
                    caller_sp = _int(caller.read_register("rsp")) if caller else None
                except gdb.error:
                    break
                if caller_sp is not None and caller_sp >= sp:
                    frames.append((tid, level, sp, caller_sp, _frame_name(frame, level)))
                    if len(locals_) < MAX_LOCALS:
                        for name, a, b, tname in _locals(frame, sp, caller_sp):
                            locals_.append((tid, level, a, b, name, tname))
                frame = caller
                level += 1
    finally:
        if past_main is not None:
            gdb.execute("set backtrace past-main %s" % ("on" if past_main else "off"),
                        to_string=True)
        if old_thread is not None and old_thread.is_valid():
            old_thread.switch()
            try:
                old_frame.select()
            except (gdb.error, RuntimeError):
                pass
    # Locals first: they take their bytes before the frame around them.
    for tid, level, a, b, name, tname in locals_:
        f = _Frame(tid=tid, level=level, sp=a, caller_sp=b,
                   name=name.encode(), local=True, type_name=tname.encode())
        _check(_lib.hd_target_add_frame(target, ctypes.byref(f)))
    for tid, level, a, b, name in frames:
        f = _Frame(tid=tid, level=level, sp=a, caller_sp=b,
                   name=name.encode(), local=False, type_name=None)
        _check(_lib.hd_target_add_frame(target, ctypes.byref(f)))


def _parse_proc_mappings(pid):
    text = gdb.execute("info proc mappings %d" % pid, to_string=True)
    maps = []
    pat = re.compile(r"^\s*(0x[0-9a-f]+)\s+(0x[0-9a-f]+)\s+0x[0-9a-f]+\s+"
                     r"(0x[0-9a-f]+)\s+([rwxsp-]{4})\s*(.*)$")
    for line in text.splitlines():
        m = pat.match(line)
        if m:
            maps.append((int(m.group(1), 16), int(m.group(2), 16),
                         int(m.group(3), 16), m.group(4), m.group(5).strip()))
    if not maps:
        raise gdb.GdbError("heapdom: gdb cannot list the process's mappings "
                           "(`info proc mappings` printed none)")
    return maps


def _gdb_memory_target(inferior):
    """A target reading through gdb: slower, but works for gdbserver."""

    def read(_arg, addr, buf, size):
        try:
            data = inferior.read_memory(addr, size)
            ctypes.memmove(buf, bytes(data), size)
            return None
        except (gdb.MemoryError, gdb.error, OverflowError):
            return _lib.hd_error_new(
                HD_ERROR_FAULT, addr,
                ("cannot read %d bytes at 0x%x through gdb" % (size, addr)).encode())

    callback = _READ_FN(read)
    target = ctypes.c_void_p()
    _check(_lib.hd_target_create_callback(callback, None, ctypes.byref(target)))
    try:
        for start, end, offset, perms, path in _parse_proc_mappings(inferior.pid):
            m = _Mapping(start=start, end=end, file_offset=offset,
                         prot=(1 if perms[0] == "r" else 0) |
                         (2 if perms[1] == "w" else 0) |
                         (4 if perms[2] == "x" else 0),
                         path=path.encode() if path else None,
                         readable=perms[0] == "r" and path not in ("[vvar]", "[vsyscall]"))
            _check(_lib.hd_target_add_mapping(target, ctypes.byref(m)))
        _check(_lib.hd_target_discover_modules(target))
    except BaseException:
        _lib.hd_target_destroy(target)
        raise
    return target, callback


def _use_gdb_objfiles(target):
    """Points modules the target could not find at the files gdb loaded
    (its sysroot and solib-search-path)."""
    by_base = {}
    for obj in gdb.objfiles():
        if obj.filename:
            by_base.setdefault(os.path.basename(obj.filename), obj.filename)
    for i in range(_lib.hd_target_num_modules(target)):
        mod = _lib.hd_target_module(target, i).contents
        if mod.file:
            continue
        name = os.path.basename(mod.name.decode(errors="replace"))
        path = by_base.get(name)
        if path:
            err = _lib.hd_target_set_module_file(target, i, path.encode())
            if err:
                _lib.hd_error_destroy(err)


def _open():
    """The session for the current stop."""
    if _load() is None:
        raise gdb.GdbError(_lib_error)
    if _session.handle:
        return _session.handle
    inferior = gdb.selected_inferior()
    if inferior is None or inferior.pid == 0:
        raise gdb.GdbError("heapdom: no process: run the program or load a core "
                           "(gdb PROGRAM CORE) first")
    conn = getattr(inferior, "connection", None)
    kind = conn.type if conn is not None else "native"
    progspace = gdb.current_progspace()
    exe = progspace.filename if progspace is not None else None
    opts = _TargetOptions(exe=exe.encode() if exe else None,
                          sysroot=(_sysroot() or "").encode() or None)
    target = ctypes.c_void_p()
    keep = [opts]
    if kind == "core":
        path = _core_path()
        if not path:
            raise gdb.GdbError("heapdom: cannot tell which core file gdb has loaded")
        _check(_lib.hd_target_open_core(path.encode(), ctypes.byref(opts),
                                        ctypes.byref(target)))
        add_regs = False
    else:
        mode = _memory.value
        err = None
        if mode != "gdb" and kind == "native":
            err = _lib.hd_target_open_proc(inferior.pid, ctypes.byref(opts),
                                           ctypes.byref(target))
            if err and mode == "proc":
                _check(err)
        if mode == "gdb" or kind != "native" or err:
            if err:
                _lib.hd_error_destroy(err)
            target, callback = _gdb_memory_target(inferior)
            keep.append(callback)
            if kind == "native":
                # gdb reads the memory, but the process is on this machine:
                # its pagemap tells which pages were never touched, so
                # that gdb is not asked for gigabytes of zeros.
                err = _lib.hd_target_set_local_pid(target, inferior.pid)
                if err:
                    _lib.hd_error_destroy(err)
        add_regs = True
    try:
        _use_gdb_objfiles(target)
        _describe_threads(target, inferior, add_regs)
        debug_dir = _debug_dir()
        sopts = _SessionOptions(debug_dir=debug_dir.encode() if debug_dir else None)
        keep.append(sopts)
        session = ctypes.c_void_p()
        _check(_lib.hd_session_create(target, ctypes.byref(sopts),
                                      ctypes.byref(session)))
    except BaseException:
        _lib.hd_target_destroy(target)
        raise
    _session.handle = session
    _session.keep = keep
    return session


def _run(words):
    gdb.write(_run_capture(words))


def _address(expr):
    """An address from a gdb expression: a pointer's value, an integer, or
    the address of an object."""
    try:
        val = gdb.parse_and_eval(expr)
    except gdb.error as e:
        raise gdb.GdbError("heapdom: %s" % e)
    code = val.type.strip_typedefs().code
    if code in (gdb.TYPE_CODE_PTR, gdb.TYPE_CODE_INT, gdb.TYPE_CODE_ENUM,
                gdb.TYPE_CODE_CHAR, gdb.TYPE_CODE_BOOL):
        return _int(val)
    if code == gdb.TYPE_CODE_ARRAY:
        return _int(val.address) if val.address is not None else _int(val)
    if val.address is not None:
        return _int(val.address)
    raise gdb.GdbError("heapdom: %s is neither a pointer nor an object in memory" % expr)


# ----------------------------------------------------------------- commands

_VALUE_OPTS = {"--top", "--depth", "--min-size", "--state", "--format",
               "--from", "--sort", "--output", "--exclude", "--allocator"}


def _allocator_names():
    """The allocators libheapdom walks (--allocator's values)."""
    if _load() is None or not hasattr(_lib, "hd_heap_known_allocators"):
        return ()
    names = _lib.hd_heap_known_allocators()
    return tuple(n.strip() for n in names.decode().split(",")) if names else ()

# Root classes, strongest first (hd_root_rank_name): heap-why --exclude.
_ROOT_CLASSES = ("globals", "tls", "locals", "stack", "registers")


def _complete(text, word, candidates):
    """The candidates that extend the argument being typed, relative to
    gdb's `word`: gdb replaces only `word`, which starts after the last
    word-break character, and '-' is one, so for "--t" word is "t" and
    "--top" must be returned as "top" ("--top" would give "----top")."""
    token = "" if not text or text[-1].isspace() else text.split()[-1]
    word = word or ""
    # What of the argument lies before gdb's word (normally a suffix of it).
    lead = token[:len(token) - len(word)] if token.endswith(word) else ""
    return [c[len(lead):] for c in candidates if c.startswith(token)]


def _completing(text):
    """The words before the one being typed, and that one ("" after a
    space)."""
    words = text.split()
    if text and not text[-1].isspace() and words:
        return words[:-1], words[-1]
    return words, ""


class _HeapCommand(gdb.Command):
    report = None
    options = ()
    # Values of options that take one of a few words.
    choices = {"--state": ("used", "free", "internal"),
               "--sort": ("bytes", "count", "retained"),
               "--format": ("text", "json", "dot")}

    def __init__(self):
        super().__init__("heap-" + self.report, gdb.COMMAND_DATA)

    def complete(self, text, word):
        before, current = _completing(text)
        prev = before[-1] if before else ""
        # Every report walks the heap: --allocator is everyone's.
        options = self.options + ("--allocator",)
        if prev in self.choices and prev in options:
            return _complete(text, word, self.choices[prev])
        if prev == "--output":
            return gdb.COMPLETE_FILENAME
        if prev in ("--exclude", "--allocator") and prev in options:
            # A comma list: complete its last name, not one already given.
            names = _ROOT_CLASSES if prev == "--exclude" else _allocator_names()
            done = current[:current.rfind(",") + 1]
            given = done.split(",")
            return _complete(text, word, [done + c for c in names
                                          if c not in given])
        if current.startswith("-"):
            return _complete(text, word, options)
        if (self.report == "why" and prev not in _VALUE_OPTS) or prev == "--from":
            return gdb.COMPLETE_EXPRESSION
        if prev in _VALUE_OPTS:
            return []
        return _complete(text, word, options)

    def words(self, arg):
        return gdb.string_to_argv(arg)

    def defaults(self, words):
        return []

    def invoke(self, arg, from_tty):
        words = self.words(arg)
        extra = self.defaults(words)
        colour = _colour.value
        if colour is None:
            try:
                colour = bool(gdb.parameter("style enabled")) and from_tty
            except RuntimeError:
                colour = False
        if colour and "--output" not in words:
            extra.append("--color")
        _run([self.report] + words + extra)


class HeapStats(_HeapCommand):
    """Heap totals per arena and overall: used, free by list, internal, mmapped,
overhead, and a size-class table.

Usage: heap-stats [--json] [--output FILE] [--allocator NAME[,NAME]]"""
    report = "stats"
    options = ("--json", "--output", "--partial")


class HeapBlocks(_HeapCommand):
    """Every heap block: address, usable size, chunk size, state (used, free on
which list, internal) and arena.

Usage: heap-blocks [--state used|free|internal] [--json] [--output FILE] [--allocator NAME[,NAME]]"""
    report = "blocks"
    options = ("--state", "--json", "--output", "--partial")


class HeapDominators(_HeapCommand):
    """What keeps memory alive: who holds the heap (roots, and joint holders:
blocks several roots reach, grouped by those roots; together a partition of
the used heap), where memory accumulates, the blocks that hold the most
(retained size: the bytes that would be freed with them), what holds them (a
global, a stack frame, a local variable, a register), and with --depth what
they hold. Roots are ranked (globals, TLS, locals, stack, registers): a
register's copy of a global's pointer borrows, it does not own; --plain shows
the exact dominator tree instead.

With --semantic (or --framework NAME|PATH, repeatable) the tree is the
semantic one: the framework modules' nodes (an allocator, a container, a
window, a Python global) with the memory each keeps alive, its framework and
application share, and used vs allocated bytes.

Usage: heap-dominators [--top N] [--depth D] [--min-size SIZE] [--json] [--all]
                       [--plain] [--semantic] [--framework NAME|PATH]... [--output FILE]
                       [--allocator NAME[,NAME]]
Defaults for --top and --depth: `set heapdom top N`, `set heapdom depth D`."""
    report = "dominators"
    options = ("--top", "--depth", "--min-size", "--json", "--all", "--plain", "--semantic",
               "--framework", "--output", "--partial")

    def defaults(self, words):
        extra = []
        if _top.value and not any(w.startswith("--top") for w in words):
            extra += ["--top", str(_top.value)]
        if _depth.value and not any(w.startswith("--depth") for w in words):
            extra += ["--depth", str(_depth.value)]
        return extra


class HeapWhy(_HeapCommand):
    """Why is a block alive: the shortest chain of references to the block that
holds an address from the strongest class of roots that reaches it (globals,
then TLS, locals, stack frames, registers), then "also reachable from" each
other class: how many of its roots reach the block, and one shortest chain.
A register's or a frame's copy of g_cache does not hide g_cache.

Usage: heap-why EXPRESSION [--exclude CLASSES] [--json] [--output FILE]
                [--allocator NAME[,NAME]]
EXPRESSION is any gdb expression: a pointer (cache->buckets[3]), an integer
address, or an object (its address is used). --exclude ignores roots of the
given classes, comma-separated: globals, tls, locals, stack, registers
(heap-why p --exclude registers,stack)."""
    report = "why"
    options = ("--exclude", "--json", "--output", "--partial")

    def words(self, arg):
        words = gdb.string_to_argv(arg)
        opts, expr, i = [], [], 0
        while i < len(words):
            w = words[i]
            if w in _VALUE_OPTS and i + 1 < len(words):
                opts += [w, words[i + 1]]
                i += 2
                continue
            (opts if w.startswith("--") else expr).append(w)
            i += 1
        if not expr:
            raise gdb.GdbError("heapdom: heap-why needs an expression: heap-why PTR")
        return ["0x%x" % _address(" ".join(expr))] + opts


class HeapLeaks(_HeapCommand):
    """Used blocks that no root reaches, grouped by size; unreferenced ones (the
leak starts) first, each with the memory it retains.

Usage: heap-leaks [--json] [--output FILE] [--allocator NAME[,NAME]]"""
    report = "leaks"
    options = ("--json", "--output", "--partial")


class HeapGraph(_HeapCommand):
    """Export the object graph (roots, used blocks, references) as JSON or DOT,
whole or from one block.

Usage: heap-graph [--format json|dot] [--from EXPRESSION] [--depth D]
                  [--output FILE] [--allocator NAME[,NAME]]"""
    report = "graph"
    options = ("--format", "--from", "--depth", "--output")

    def words(self, arg):
        words = gdb.string_to_argv(arg)
        for i, w in enumerate(words[:-1]):
            if w == "--from":
                words[i + 1] = "0x%x" % _address(words[i + 1])
        return words


class HeapTypes(_HeapCommand):
    """A heap histogram by type (from the program's DWARF and C++ vtables):
instances, bytes, and the memory all instances of a type keep alive together;
untyped blocks are grouped by size.

Usage: heap-types [--sort bytes|count|retained] [--top N] [--all] [--json]
                  [--output FILE] [--allocator NAME[,NAME]]"""
    report = "types"
    options = ("--sort", "--top", "--all", "--json", "--output", "--partial")


class HeapSnapshot(_HeapCommand):
    """A heap snapshot at this stop: totals, size classes, types, and the
largest dominator subtrees named by their root paths (docs/snapshots.md),
for heap-diff later.

Usage: heap-snapshot [--output FILE] [--json] [--top N] [--depth D]
                     [--allocator NAME[,NAME]]"""
    report = "snapshot"
    options = ("--output", "--json", "--top", "--depth")


class HeapDiff(gdb.Command):
    """What grew between heap snapshots (files saved with heap-snapshot
--output or heap-watch) or cores, matched by type and root path; three or
more give the series.

Usage: heap-diff A B [C...] [--json] [--top N] [--what stats|types|dominators]
                 [--output FILE]"""

    def __init__(self):
        super().__init__("heap-diff", gdb.COMMAND_DATA)

    def complete(self, text, word):
        before, current = _completing(text)
        prev = before[-1] if before else ""
        if prev == "--what":
            return _complete(text, word, ("stats", "types", "dominators"))
        if prev == "--top":
            return []
        if current.startswith("-"):
            return _complete(text, word, ("--json", "--top", "--what", "--output"))
        return gdb.COMPLETE_FILENAME

    def invoke(self, arg, from_tty):
        if _load() is None:
            raise gdb.GdbError(_lib_error)
        _run_files(["diff"] + gdb.string_to_argv(arg))


class HeapSample(gdb.Command):
    """Where each thread's loads and stores go: lets the process run for a
while (gdb detaches), samples every thread's memory accesses (--hz rounds a
second: interrupt, decode the instruction at the PC, record its address),
then attaches again, stops it, and maps the addresses onto heap blocks,
types, dominator subtrees and regions (docs/sampling.md).

Usage: heap-sample [--duration S] [--hz N] [--threads LIST] [--pc-range A-B]
                   [--addr-range A-B] [--nearest N] [--granularity BYTES]
                   [--top N] [--json] [--output FILE.svg]
Breakpoints stay set, but none can stop the process while it is sampled."""

    def __init__(self):
        super().__init__("heap-sample", gdb.COMMAND_DATA)

    def complete(self, text, word):
        before, current = _completing(text)
        prev = before[-1] if before else ""
        if prev == "--output":
            return gdb.COMPLETE_FILENAME
        if prev in ("--duration", "--hz", "--threads", "--pc-range", "--addr-range",
                    "--nearest", "--granularity", "--top"):
            return []
        return _complete(text, word, ("--duration", "--hz", "--threads", "--pc-range",
                                      "--addr-range", "--nearest", "--granularity",
                                      "--top", "--json", "--output"))

    def invoke(self, arg, from_tty):
        if _load() is None:
            raise gdb.GdbError(_lib_error)
        inferior = gdb.selected_inferior()
        conn = getattr(inferior, "connection", None)
        if inferior.pid == 0 or _core_path() or (conn is not None and conn.type != "native"):
            raise gdb.GdbError("heapdom: heap-sample needs a live local process")
        words = ["sample"] + gdb.string_to_argv(arg)
        argv = (ctypes.c_char_p * len(words))(*[w.encode() for w in words])
        job = ctypes.c_void_p()
        _check(_lib.hd_sample_job_create(len(words), argv, ctypes.byref(job)))
        pid = inferior.pid
        try:
            _session.close()
            gdb.execute("detach", to_string=True)
            try:
                err = _lib.hd_sample_job_run(job, pid)
            finally:
                # The process may have exited meanwhile.
                if os.path.exists("/proc/%d" % pid):
                    gdb.execute("attach %d" % pid, to_string=True)
            _check(err)
            session = _open() if gdb.selected_inferior().pid else None
            text = ctypes.c_void_p()
            _check(_lib.hd_sample_job_report(job, session, ctypes.byref(text)))
            try:
                gdb.write(ctypes.string_at(text).decode(errors="replace") if text else "")
            finally:
                _lib.hd_free(text)
        finally:
            _lib.hd_sample_job_destroy(job)


class HeapFrameworks(_HeapCommand):
    """The framework modules (built-in, --framework PATH, HEAPDOM_FRAMEWORK_PATH):
what each is, whether it found its framework in this process, what it did, and
what it could not understand.

Usage: heap-frameworks [--framework NAME|PATH]... [--json] [--output FILE] [--allocator NAME[,NAME]]"""
    report = "frameworks"
    options = ("--framework", "--json", "--output", "--partial")


# ----------------------------------------------------------------- tracing
# struct hd_trace_state (core/include/heapdom_trace.h): the switch and the
# epoch the debugger writes.
_TRACE_ENABLED = 16
_TRACE_EPOCH = 20
_TRACE_LIB_CANDIDATES = [
    os.environ.get("HEAPDOM_TRACE_LIB", ""),
    os.path.join(_HERE, "..", "build", "core", "trace", "libheapdom-trace.so"),
    os.path.join(_HERE, "..", "lib", "libheapdom-trace.so"),
]
# Where a thread must not be when the tracer is loaded into the process:
# dlopen allocates, and the allocator's locks may be held.
_ALLOCATOR_FRAMES = re.compile(
    r"^(__libc_)?(malloc|calloc|realloc|free|memalign|valloc|pvalloc|"
    r"posix_memalign|aligned_alloc|reallocarray)$|^_int_|^__?malloc|^tcache|"
    r"^sysmalloc|^systrim|^arena_|^_dl_|^dl_open|^__libc_dl|^_Zn[wa]|^_Zd[la]")


def _trace_state():
    session = _open()
    addr = ctypes.c_uint64()
    _check(_lib.hd_trace_locate(session, ctypes.byref(addr)))
    return addr.value


def _trace_write32(addr, value):
    gdb.selected_inferior().write_memory(addr, int(value).to_bytes(4, "little"))
    _session.close()  # the process's memory changed


def _trace_read32(addr):
    return int.from_bytes(bytes(gdb.selected_inferior().read_memory(addr, 4)), "little")


def _in_allocator():
    """The first thread found inside the allocator or the dynamic loader, as
    (thread number, frame level, function), or None."""
    selected = gdb.selected_thread()
    frame0 = gdb.selected_frame() if selected else None
    try:
        for thread in gdb.selected_inferior().threads():
            thread.switch()
            frame, level = gdb.newest_frame(), 0
            while frame is not None and level < 8:
                name = frame.name() or ""
                if _ALLOCATOR_FRAMES.search(name):
                    return thread.num, level, name
                frame, level = frame.older(), level + 1
    finally:
        if selected:
            selected.switch()
            if frame0 is not None:
                frame0.select()
    return None


_CALL_REGS = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9",
              "r10", "r11", "r12", "r13", "r14", "r15", "rip", "eflags")


def _raw_call(func, args, strings=()):
    """func(args...) in the stopped thread, without gdb's inferior calls
    (which cannot restore the extended register state on some kernels):
    the general registers are saved, the call returns to the address the
    thread is stopped at, where a temporary breakpoint catches it (the
    return, not a call from inside that reaches the same address: the stack
    pointer tells), the registers are put back. gdb has then last seen the
    thread stop where it stands, so the next `continue` steps over a user's
    breakpoint there instead of reporting it again. Only the current thread
    runs, with the other breakpoints disabled.
    Callers make sure the thread is at a call boundary (a function's first
    instruction), where the vector registers the callee may change are
    dead. strings are written below the stack; args may name them as
    ("str", i)."""
    frame = gdb.selected_frame()
    saved = {r: int(frame.read_register(r)) & _MASK for r in _CALL_REGS}
    inferior = gdb.selected_inferior()
    at = (saved["rsp"] - 4096) & ~15
    addrs = []
    for text in strings:
        data = text.encode() + b"\0"
        at -= (len(data) + 15) & ~15
        inferior.write_memory(at, data)
        addrs.append(at)
    back_at = saved["rip"]
    sp = ((at - 256) & ~15) - 8
    inferior.write_memory(sp, back_at.to_bytes(8, "little"))
    values = [addrs[a[1]] if isinstance(a, tuple) else a for a in args]
    others = [b for b in gdb.breakpoints() if b.enabled]
    locking = gdb.parameter("scheduler-locking")
    stop = gdb.Breakpoint("*0x%x" % back_at, internal=True)
    stop.silent = True
    try:
        for b in others:
            b.enabled = False
        gdb.execute("set scheduler-locking on", to_string=True)
        for reg, v in zip(("rdi", "rsi", "rdx", "rcx", "r8", "r9"), values):
            gdb.execute("set $%s = %d" % (reg, v), to_string=True)
        gdb.execute("set $rax = 0", to_string=True)
        gdb.execute("set $rsp = %d" % sp, to_string=True)
        gdb.execute("set $rip = %d" % func, to_string=True)
        while True:
            gdb.execute("continue", to_string=True)
            now = gdb.selected_frame()
            if (int(now.read_register("rip")) & _MASK) != back_at:
                raise gdb.GdbError("heapdom: the call into the process stopped elsewhere "
                                   "(%s); its registers were restored" % now.name())
            # The return has popped the return address.
            if (int(now.read_register("rsp")) & _MASK) == sp + 8:
                break
        result = int(now.read_register("rax")) & _MASK
    finally:
        if stop.is_valid():
            stop.delete()
        for reg in _CALL_REGS:
            gdb.execute("set $%s = %d" % (reg, saved[reg]), to_string=True)
        gdb.execute("set scheduler-locking %s" % locking, to_string=True)
        for b in others:
            if b.is_valid():
                b.enabled = True
        _session.close()
    return result


def _function_address(name):
    try:
        return int(gdb.parse_and_eval("(long) &%s" % name)) & _MASK
    except gdb.error:
        raise gdb.GdbError("heapdom: %s is not known in the process" % name)


def _trace_start(words):
    if gdb.selected_inferior().pid == 0 or _core_path():
        raise gdb.GdbError("heapdom: heap-trace start needs a live process")
    path = next((os.path.abspath(p) for p in _TRACE_LIB_CANDIDATES
                 if p and os.path.isfile(p)), None)
    if path is None:
        raise gdb.GdbError("heapdom: libheapdom-trace.so not found (set HEAPDOM_TRACE_LIB)")
    try:
        _trace_state()
        loaded = True
    except gdb.GdbError:
        loaded = False
    if not loaded:
        busy = _in_allocator()
        if busy:
            raise gdb.GdbError(
                "heapdom: thread %d is inside the allocator or the loader (frame #%d %s): "
                "loading the tracer now could deadlock; step out of it (finish, or a "
                "breakpoint elsewhere) and retry" % busy)
        frame = gdb.selected_frame()
        fn = frame.function()
        pc = frame.pc()
        # An inlined function's first instruction is in the middle of its
        # caller, where any register may be live.
        if frame.level() != 0 or frame.type() != gdb.NORMAL_FRAME or fn is None or \
                fn.value().address is None or int(fn.value().address) != pc:
            raise gdb.GdbError(
                "heapdom: heap-trace start loads the tracer by calling dlopen in the "
                "process, which is safe at a function's first instruction (the registers "
                "a call may change are free there): stop at a breakpoint on a function "
                "that is not inlined (break FUNCTION) in frame 0 and retry")
        handle = _raw_call(_function_address("dlopen"), [("str", 0), 2], [path])
        if handle == 0:
            raise gdb.GdbError("heapdom: dlopen(%s) failed in the process" % path)
        patched = _raw_call(_function_address("heapdom_trace_inject"), [])
        if patched >= 1 << 63:
            raise gdb.GdbError("heapdom: the tracer could not redirect the allocation "
                               "functions of the process")
        gdb.write("heapdom: %s loaded; %d calls to the allocator redirected\n" % (path, patched))
    state = _trace_state()
    if "--off" not in words:
        _trace_write32(state + _TRACE_ENABLED, 1)
        gdb.write("heapdom: tracing on (heap-trace off to pause, heap-trace report to see)\n")


class HeapTrace(gdb.Command):
    """Allocation tracing inside the process (libheapdom-trace.so).

heap-trace start [--off]   load the tracer into the running process (at a stop
                           outside the allocator) and switch it on
heap-trace on | off        switch counting on or off (off: one branch per call)
heap-trace epoch           start a new generation: ages are counted in epochs
heap-trace status          whether it is loaded, on, and the epoch
heap-trace report [--by site|file|size|age] [--top N] [--all] [--json]
                  [--output FILE]
                           what it counted: per call site (function, file:line)
                           calls and bytes of malloc, calloc, realloc, memalign
                           and free, and what is still live; per file, per
                           power-of-two size class, per age

With LD_PRELOAD=libheapdom-trace.so HEAPDOM_TRACE=1 the tracer runs from the
start. The debugger writes only the switch and the epoch."""

    def __init__(self):
        super().__init__("heap-trace", gdb.COMMAND_DATA)

    def complete(self, text, word):
        before, current = _completing(text)
        if not before:
            return _complete(text, word, ("start", "on", "off", "epoch", "status", "report"))
        if before[-1] == "--by":
            return _complete(text, word, ("site", "file", "size", "age"))
        if before[-1] == "--output":
            return gdb.COMPLETE_FILENAME
        if before[0] == "start":
            return _complete(text, word, ("--off",))
        if before[0] == "report":
            return _complete(text, word, ("--by", "--top", "--all", "--json", "--output"))
        return []

    def invoke(self, arg, from_tty):
        words = gdb.string_to_argv(arg)
        if not words:
            raise gdb.GdbError("heapdom: heap-trace start|on|off|epoch|status|report")
        if _load() is None:
            raise gdb.GdbError(_lib_error)
        sub, rest = words[0], words[1:]
        if sub == "start":
            _trace_start(rest)
        elif sub in ("on", "off"):
            _trace_write32(_trace_state() + _TRACE_ENABLED, 1 if sub == "on" else 0)
            gdb.write("heapdom: tracing %s\n" % sub)
        elif sub == "epoch":
            state = _trace_state()
            epoch = _trace_read32(state + _TRACE_EPOCH) + 1
            _trace_write32(state + _TRACE_EPOCH, epoch)
            gdb.write("heapdom: epoch %d\n" % epoch)
        elif sub == "status":
            state = _trace_state()
            gdb.write("heapdom: tracer at 0x%x, %s, epoch %d\n"
                      % (state, "on" if _trace_read32(state + _TRACE_ENABLED) else "off",
                         _trace_read32(state + _TRACE_EPOCH)))
        elif sub == "report":
            _run(["trace"] + rest)
        else:
            raise gdb.GdbError("heapdom: heap-trace %s: not start, on, off, epoch, status "
                               "or report" % sub)


# -------------------------------------------------------------- heap-watch
def _run_files(words):
    """A report on files alone (diff): no process needed."""
    gdb.write(_run_capture(words, session=False))


def _run_capture(words, session=True):
    """A report's text. A bad option is reported before the process is
    looked at; session=False runs without one (diff of files)."""
    if _load() is None:
        raise gdb.GdbError(_lib_error)
    argv = (ctypes.c_char_p * len(words))(*[w.encode() for w in words])
    _check(_lib.hd_command_check(len(words), argv))
    handle = _open() if session else None
    text = ctypes.c_void_p()
    _check(_lib.hd_command_run_string(handle, len(words), argv, ctypes.byref(text)))
    try:
        return ctypes.string_at(text).decode(errors="replace") if text else ""
    finally:
        _lib.hd_free(text)


class _Watch(gdb.Breakpoint):
    """A breakpoint that records a heap snapshot at every Nth hit and goes
    on (unless --stop)."""

    def __init__(self, number, location, every, what, stop, directory):
        super().__init__(location, internal=False)
        self.watch_id = number
        self.location_text = location
        self.every = every
        self.what = what
        self.stop_at_hit = stop
        self.directory = directory
        self.hits = 0
        self.snapshots = []
        self.silent = not stop
        self.commands = "heap-watch hit %d%s" % (number, "" if stop else "\ncontinue")

    # The snapshot is not taken in stop(): gdb calls it before it has
    # stopped the other threads, whose registers and frames cannot be read
    # yet ("Selected thread is running"). A due hit stops; the breakpoint's
    # commands, which gdb runs once every thread is stopped, record the
    # snapshot and continue (unless --stop).
    def stop(self):
        self.hits += 1
        return self.hits % self.every == 0

    def hit(self):
        try:
            self.record()
        except gdb.GdbError as e:
            gdb.write("heap-watch %d: %s\n" % (self.watch_id, e))

    def record(self):
        _session.close()  # a new stop: a new analysis
        os.makedirs(self.directory, exist_ok=True)
        path = os.path.join(self.directory, "hit-%06d.json" % self.hits)
        _run_capture(["snapshot", "--output", path])
        self.snapshots.append(path)
        # Ages of traced allocations are counted in these snapshots' epochs.
        try:
            state = _trace_state()
            _trace_write32(state + _TRACE_EPOCH, _trace_read32(state + _TRACE_EPOCH) + 1)
        except gdb.GdbError:
            pass
        gdb.write("heap-watch %d: hit %d at %s: snapshot %s\n"
                  % (self.watch_id, self.hits, self.location_text, path))
        if len(self.snapshots) >= 2:
            words = ["diff", self.snapshots[-2], self.snapshots[-1], "--top", "5"]
            if self.what:
                words += ["--what", self.what]
            gdb.write(_run_capture(words))


_watches = {}


class HeapWatch(gdb.Command):
    """Heap snapshots at a breakpoint, and what grew between them.

heap-watch LOCATION [--every N] [--what stats|types|dominators] [--stop]
                    [--dir DIR]
    a breakpoint at LOCATION that, at every Nth hit (1), saves a snapshot of
    the heap (totals, size classes, types, the largest dominator subtrees
    with their root paths) as JSON in DIR (heapdom-watch/N/), prints what
    grew since the last one, and continues, or stops with --stop. If the
    allocation tracer is loaded, each snapshot starts a new epoch.
heap-watch list              the watches, their hits and snapshots
heap-watch delete N|all      remove watches (their snapshots stay on disk)
heap-watch report [N] [--json] [--top K]
                             the series of watch N's snapshots (the newest
                             watch by default) and what grew from the first
                             to the last
heap-watch hit N             record watch N's snapshot now (the watch's
                             breakpoint runs it, then `continue`, as its
                             commands: `info breakpoints` shows them)"""

    def __init__(self):
        super().__init__("heap-watch", gdb.COMMAND_BREAKPOINTS)

    def complete(self, text, word):
        before, current = _completing(text)
        prev = before[-1] if before else ""
        if not before:
            if current.startswith("-"):
                return []
            subs = _complete(text, word, ("list", "delete", "report", "hit"))
            # Otherwise the first word is a breakpoint location.
            return subs or gdb.COMPLETE_LOCATION
        if before[0] == "list":
            return []
        if before[0] in ("delete", "hit"):
            return _complete(text, word, ("all",)) if before[0] == "delete" else []
        if before[0] == "report":
            return [] if prev == "--top" else _complete(text, word, ("--json", "--top"))
        if prev == "--what":
            return _complete(text, word, ("stats", "types", "dominators"))
        if prev == "--dir":
            return gdb.COMPLETE_FILENAME
        if prev == "--every":
            return []
        return _complete(text, word, ("--every", "--what", "--stop", "--dir"))

    def invoke(self, arg, from_tty):
        words = gdb.string_to_argv(arg)
        if _load() is None:
            raise gdb.GdbError(_lib_error)
        if not words:
            raise gdb.GdbError("heapdom: heap-watch LOCATION [options] | list | delete N | report [N]")
        if words[0] == "list":
            if not _watches:
                gdb.write("No heap watches.\n")
            for n, w in sorted(_watches.items()):
                gdb.write("%d  %s  every %d%s  %d hits, %d snapshots in %s%s\n"
                          % (n, w.location_text, w.every, ", stops" if w.stop_at_hit else "",
                             w.hits, len(w.snapshots), w.directory,
                             "" if w.is_valid() else "  (breakpoint deleted)"))
            return
        if words[0] == "hit":
            # The watch's own breakpoint commands (see _Watch.stop).
            if len(words) != 2:
                raise gdb.GdbError("heapdom: heap-watch hit N")
            _watches[self.number(words[1])].hit()
            return
        if words[0] == "delete":
            if len(words) != 2:
                raise gdb.GdbError("heapdom: heap-watch delete N|all")
            targets = list(_watches) if words[1] == "all" else [self.number(words[1])]
            for n in targets:
                w = _watches.pop(n)
                if w.is_valid():  # not already deleted with gdb's `delete`
                    w.delete()
            return
        if words[0] == "report":
            rest = words[1:]
            n = max(_watches) if _watches else None
            if rest and not rest[0].startswith("--"):
                n = self.number(rest[0])
                rest = rest[1:]
            if n is None:
                raise gdb.GdbError("heapdom: no heap watch")
            w = _watches[n]
            if not w.snapshots:
                raise gdb.GdbError("heapdom: heap watch %d has no snapshot yet" % n)
            _run_files(["diff"] + w.snapshots + rest)
            return
        location, every, what, stop, directory = None, 1, None, False, None
        i = 0
        while i < len(words):
            a = words[i]
            if a in ("--every", "--what", "--dir") and i + 1 < len(words):
                v = words[i + 1]
                i += 2
                if a == "--every":
                    if not v.isdigit() or int(v) < 1:
                        raise gdb.GdbError("heapdom: --every takes a positive number, not %s" % v)
                    every = int(v)
                elif a == "--what":
                    if v not in ("stats", "types", "dominators"):
                        raise gdb.GdbError("heapdom: --what takes stats, types or dominators")
                    what = v
                else:
                    directory = v
                continue
            if a == "--stop":
                stop = True
            elif a.startswith("--"):
                raise gdb.GdbError("heapdom: heap-watch: unknown option %s" % a)
            elif location is None:
                location = a
            else:
                raise gdb.GdbError("heapdom: heap-watch: one location only")
            i += 1
        if location is None:
            raise gdb.GdbError("heapdom: heap-watch needs a location")
        number = max(_watches, default=0) + 1
        directory = directory or os.path.join("heapdom-watch", str(number))
        _watches[number] = _Watch(number, location, every, what, stop,
                                  os.path.abspath(directory))
        gdb.write("heap-watch %d at %s: a snapshot %s into %s\n"
                  % (number, location,
                     "every %d hits" % every if every > 1 else "at every hit",
                     os.path.abspath(directory)))

    @staticmethod
    def number(text):
        if not text.isdigit() or int(text) not in _watches:
            raise gdb.GdbError("heapdom: no heap watch %s" % text)
        return int(text)


for _cls in (HeapStats, HeapBlocks, HeapDominators, HeapWhy, HeapLeaks, HeapGraph,
             HeapTypes, HeapFrameworks, HeapTrace, HeapWatch, HeapSnapshot, HeapDiff,
             HeapSample):
    _cls()

# Sourced after the program was loaded (gdb -p PID -x heapdom.py): its
# modules are there already.
for _obj in gdb.objfiles():
    try:
        _prefetch_objfile(_obj)
    except (gdb.error, OSError, ValueError, UnicodeError):
        pass

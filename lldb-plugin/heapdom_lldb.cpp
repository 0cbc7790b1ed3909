// heapdom for lldb: `plugin load /path/to/libheapdom_lldb.so`
//
// A thin layer over libheapdom through lldb's SB API, with no Python: it
// tells the library where the process's memory, threads, frames and local
// variables are, and prints what the library's renderer wrote, so lldb
// prints exactly what the `heapdom` command-line tool and gdb print.
#include <lldb/API/LLDB.h>

#include <dlfcn.h>
#include <regex.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "heapdom.h"
#include "heapdom_trace.h"

namespace lldb {
bool PluginInitialize(SBDebugger debugger);
}

namespace {

// The description an error carries back to the user, freed here.
std::string take_message(hd_error *err)
{
	std::string msg = err->message ? err->message : "unknown error";
	hd_error_destroy(err);
	return "heapdom: " + msg;
}

struct failure {
	std::string message;
};

void check(hd_error *err)
{
	if (err)
		throw failure{take_message(err)};
}

// One analysis per stop: kept while the process's stop id is unchanged.
struct cached_session {
	hd_session *session = nullptr;
	lldb::pid_t pid = LLDB_INVALID_PROCESS_ID;
	uint32_t stop_id = 0;
	lldb::user_id_t target_id = 0;
	lldb::SBProcess process; // kept for the memory callback

	void reset()
	{
		if (session)
			hd_session_destroy(session);
		session = nullptr;
		process = lldb::SBProcess();
	}
} g_cache;

const char *const kRegs[27] = {
	"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8",
	"rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs", "rflags",
	"rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs",
};

hd_error *read_memory(void *arg, uint64_t addr, void *buf, size_t len)
{
	auto *process = static_cast<lldb::SBProcess *>(arg);
	lldb::SBError error;
	size_t got = process->ReadMemory(addr, buf, len, error);
	if (got == len && error.Success())
		return nullptr;
	char msg[128];
	snprintf(msg, sizeof(msg), "cannot read %zu bytes at 0x%llx through lldb",
		 len - got, (unsigned long long)(addr + got));
	return hd_error_new(HD_ERROR_FAULT, addr + got, msg);
}

// Mappings and modules as lldb knows them: for cores, and for live
// processes whose /proc/PID/mem we may not read.
void describe_address_space(hd_target *t, lldb::SBTarget &target,
			    lldb::SBProcess &process)
{
	lldb::SBMemoryRegionInfoList regions = process.GetMemoryRegions();
	for (uint32_t i = 0; i < regions.GetSize(); i++) {
		lldb::SBMemoryRegionInfo r;
		if (!regions.GetMemoryRegionAtIndex(i, r) || !r.IsMapped())
			continue;
		hd_mapping m = {};
		m.start = r.GetRegionBase();
		m.end = r.GetRegionEnd();
		m.prot = (r.IsReadable() ? HD_PROT_READ : 0) |
			 (r.IsWritable() ? HD_PROT_WRITE : 0) |
			 (r.IsExecutable() ? HD_PROT_EXEC : 0);
		const char *name = r.GetName();
		m.path = name && *name ? const_cast<char *>(name) : nullptr;
		m.readable = r.IsReadable() &&
			     !(name && (!strcmp(name, "[vvar]") ||
					!strcmp(name, "[vsyscall]")));
		if (m.start < m.end)
			check(hd_target_add_mapping(t, &m));
	}
	for (uint32_t i = 0; i < target.GetNumModules(); i++) {
		lldb::SBModule mod = target.GetModuleAtIndex(i);
		char path[4096];
		if (!mod.GetFileSpec().GetPath(path, sizeof(path)))
			continue;
		uint64_t lo = UINT64_MAX, hi = 0, bias = 0;
		bool have_bias = false;
		for (size_t s = 0; s < mod.GetNumSections(); s++) {
			lldb::SBSection sec = mod.GetSectionAtIndex(s);
			lldb::addr_t load = sec.GetLoadAddress(target);
			if (load == LLDB_INVALID_ADDRESS || sec.GetByteSize() == 0)
				continue;
			if (!have_bias) {
				bias = load - sec.GetFileAddress();
				have_bias = true;
			}
			lo = std::min<uint64_t>(lo, load);
			hi = std::max<uint64_t>(hi, load + sec.GetByteSize());
		}
		if (!have_bias || lo >= hi)
			continue;
		// The file itself, as the kernel names it in a core's NT_FILE
		// and /proc/PID/maps (the CLI's name): lldb gives the loader's
		// name, often a symlink (libmimalloc.so.2 -> .so.2.0).
		char real[4096];
		hd_module m = {};
		m.name = realpath(path, real) ? real : path;
		m.bias = bias;
		m.start = lo;
		m.end = hi;
		m.is_exe = i == 0;
		hd_error *err = hd_target_add_module(t, &m);
		if (err)
			hd_error_destroy(err); // a module we cannot use is no roots
	}
}

std::string frame_name(lldb::SBFrame &frame, uint32_t level)
{
	const char *fn = frame.GetFunctionName();
	std::string name = "#" + std::to_string(level) + " " + (fn ? fn : "??");
	lldb::SBLineEntry line = frame.GetLineEntry();
	if (line.IsValid() && line.GetFileSpec().GetFilename())
		name += std::string(" (") + line.GetFileSpec().GetFilename() + ":" +
			std::to_string(line.GetLine()) + ")";
	return name;
}

// Registers (when the target has no threads of its own), frames and locals.
void describe_threads(hd_target *t, lldb::SBProcess &process, bool add_regs)
{
	struct piece {
		int tid;
		unsigned level;
		uint64_t lo, hi;
		std::string name;
		std::string type;
	};
	std::vector<piece> frames, locals;
	for (uint32_t i = 0; i < process.GetNumThreads(); i++) {
		lldb::SBThread th = process.GetThreadAtIndex(i);
		int tid = (int)th.GetThreadID();
		lldb::SBFrame f0 = th.GetFrameAtIndex(0);
		if (add_regs && f0.IsValid()) {
			hd_thread ht = {};
			ht.tid = tid;
			ht.has_regs = true;
			uint64_t *regs = &ht.regs.r15;
			for (int r = 0; r < 27; r++) {
				lldb::SBValue v = f0.FindRegister(kRegs[r]);
				regs[r] = v.IsValid() ? v.GetValueAsUnsigned(0) : 0;
			}
			check(hd_target_add_thread(t, &ht));
		}
		uint32_t n = th.GetNumFrames();
		for (uint32_t level = 0; level + 1 < n && level < 4096; level++) {
			lldb::SBFrame f = th.GetFrameAtIndex(level);
			lldb::SBFrame caller = th.GetFrameAtIndex(level + 1);
			uint64_t sp = f.GetSP(), caller_sp = caller.GetSP();
			if (caller_sp < sp || sp == LLDB_INVALID_ADDRESS)
				continue;
			frames.push_back({tid, level, sp, caller_sp, frame_name(f, level), ""});
			lldb::SBValueList vars = f.GetVariables(true, true, false, true);
			for (uint32_t k = 0; k < vars.GetSize() && locals.size() < 20000; k++) {
				lldb::SBValue v = vars.GetValueAtIndex(k);
				lldb::addr_t a = v.GetLoadAddress();
				uint64_t size = v.GetByteSize();
				if (a == LLDB_INVALID_ADDRESS || !size || a < sp ||
				    a + size > caller_sp || !v.GetName())
					continue;
				const char *tn = v.GetType().GetCanonicalType().GetName();
				locals.push_back({tid, level, a, a + size,
						  v.GetName(),
						  tn ? tn : ""});
			}
		}
	}
	// Locals first: they take their bytes before the frame around them.
	for (auto *list : {&locals, &frames}) {
		for (const piece &p : *list) {
			hd_frame f = {};
			f.tid = p.tid;
			f.level = p.level;
			f.sp = p.lo;
			f.caller_sp = p.hi;
			f.name = const_cast<char *>(p.name.c_str());
			f.local = list == &locals;
			f.type_name = p.type.empty() ? nullptr
						     : const_cast<char *>(p.type.c_str());
			check(hd_target_add_frame(t, &f));
		}
	}
}

bool is_core(lldb::SBProcess &process)
{
	const char *plugin = process.GetPluginName();
	return plugin && strstr(plugin, "core");
}

hd_session *open_session(lldb::SBDebugger &debugger)
{
	lldb::SBTarget target = debugger.GetSelectedTarget();
	lldb::SBProcess process = target.GetProcess();
	if (!target.IsValid() || !process.IsValid() ||
	    process.GetState() == lldb::eStateExited ||
	    process.GetState() == lldb::eStateInvalid)
		throw failure{"heapdom: no process: launch the program or load a core "
			      "(lldb -c CORE PROGRAM) first"};
	if (process.GetState() == lldb::eStateRunning)
		throw failure{"heapdom: the process is running: stop it first"};
	if (g_cache.session && g_cache.pid == process.GetProcessID() &&
	    g_cache.stop_id == process.GetStopID() &&
	    g_cache.target_id == target.GetProcess().GetUniqueID())
		return g_cache.session;
	g_cache.reset();

	char exe[4096] = "";
	target.GetExecutable().GetPath(exe, sizeof(exe));
	hd_target_options opts = {};
	opts.exe = exe[0] ? exe : nullptr;
	hd_target *t = nullptr;
	bool core = is_core(process);
	bool from_proc = false;
	const char *mode = getenv("HEAPDOM_LLDB_MEMORY"); // "lldb" forces SB reads
	if (!core && kill((pid_t)process.GetProcessID(), 0) != 0 && errno == ESRCH)
		throw failure{"heapdom: no process: it has exited"};
	if (!core && !(mode && !strcmp(mode, "lldb"))) {
		hd_error *err = hd_target_open_proc((int)process.GetProcessID(),
						    &opts, &t);
		if (err)
			hd_error_destroy(err);
		else
			from_proc = true;
	}
	g_cache.process = process;
	try {
		if (!from_proc) {
			check(hd_target_create_callback(read_memory, &g_cache.process, &t));
			std::string name = core ? std::string("core of ") + exe
						: "pid " + std::to_string(process.GetProcessID());
			check(hd_target_set_name(t, name.c_str()));
			describe_address_space(t, target, process);
			// lldb reads the memory, but a live process is on this
			// machine: its pagemap tells which pages were never
			// touched, so lldb is not asked for gigabytes of zeros.
			lldb::SBPlatform platform = target.GetPlatform();
			const char *pname = platform.GetName();
			if (!core && pname && !strcmp(pname, "host")) {
				hd_error *err = hd_target_set_local_pid(
					t, (int)process.GetProcessID());
				if (err)
					hd_error_destroy(err);
			}
		}
		describe_threads(t, process, true);
		// lldb reads a core through its own API and does not say
		// which file it loaded: the library finds it among the files
		// lldb maps, so that its holes are not read through lldb.
		if (core)
			check(hd_target_use_loaded_core(t));
	} catch (...) {
		hd_target_destroy(t);
		throw;
	}
	hd_session_options sopts = {};
	hd_session *s = nullptr;
	check(hd_session_create(t, &sopts, &s));
	g_cache.session = s;
	g_cache.pid = process.GetProcessID();
	g_cache.stop_id = process.GetStopID();
	g_cache.target_id = process.GetUniqueID();
	return s;
}

std::vector<std::string> split_words(const char *const *argv)
{
	std::vector<std::string> words;
	for (; argv && *argv; argv++)
		words.push_back(*argv);
	return words;
}

uint64_t evaluate_address(lldb::SBDebugger &debugger, const std::string &expr)
{
	char *end;
	unsigned long long v = strtoull(expr.c_str(), &end, 0);
	if (!expr.empty() && *end == '\0')
		return v;
	lldb::SBFrame frame = debugger.GetSelectedTarget()
				      .GetProcess()
				      .GetSelectedThread()
				      .GetSelectedFrame();
	lldb::SBValue val = frame.EvaluateExpression(expr.c_str());
	if (!val.IsValid() || val.GetError().Fail())
		throw failure{"heapdom: cannot evaluate '" + expr + "': " +
			      (val.GetError().GetCString() ? val.GetError().GetCString()
							   : "no value")};
	lldb::SBType type = val.GetType().GetCanonicalType();
	if (type.IsPointerType() || (type.GetTypeFlags() & lldb::eTypeIsScalar))
		return val.GetValueAsUnsigned(0);
	lldb::addr_t a = val.GetLoadAddress();
	if (a != LLDB_INVALID_ADDRESS)
		return a;
	// On a core lldb keeps an object's value to itself: ask for its
	// address instead.
	lldb::SBValue addr = frame.EvaluateExpression(("&(" + expr + ")").c_str());
	if (addr.IsValid() && addr.GetError().Success())
		return addr.GetValueAsUnsigned(0);
	throw failure{"heapdom: " + expr + " is neither a pointer nor an object in memory"};
}

// words as the argv of the C API (pointers into the strings: words must
// outlive the result).
std::vector<char *> c_argv(std::vector<std::string> &words)
{
	std::vector<char *> argv;
	for (std::string &w : words)
		argv.push_back(&w[0]);
	return argv;
}

// Runs a report's words: checked before the process is looked at, then
// with the session of this stop (or none: diff reads files and cores).
std::string run_report(lldb::SBDebugger &debugger, std::vector<std::string> words,
		       bool need_session)
{
	std::vector<char *> cargv = c_argv(words);
	check(hd_command_check((int)cargv.size(), cargv.data()));
	hd_session *s = need_session ? open_session(debugger) : nullptr;
	char *text = nullptr;
	check(hd_command_run_string(s, (int)cargv.size(), cargv.data(), &text));
	std::string out = text ? text : "";
	hd_free(text);
	return out;
}

// --profile: what the CLI's --profile says of never-populated memory (the
// same lines), from the session the report used.
std::string sparse_profile(hd_session *s)
{
	hd_target *t = hd_session_target(s);
	char buf[4096];
	std::string out;
	snprintf(buf, sizeof(buf),
		 "profile: never-populated memory: %s; %.1f MiB of the readable mappings, not read\n",
		 hd_target_sparse_source(t), hd_target_unpopulated_bytes(t) / 1048576.0);
	out += buf;
	double walk, types, graph, dom;
	hd_session_times(s, &walk, &types, &graph, &dom);
	const hd_graph *g = nullptr;
	if (graph > 0 && !hd_session_graph(s, &g)) {
		hd_graph_info gi;
		hd_graph_get_info(g, &gi);
		snprintf(buf, sizeof(buf),
			 "profile: graph %.3f s (%llu words) (%llu words never populated, skipped)\n",
			 graph, (unsigned long long)gi.words_scanned,
			 (unsigned long long)gi.words_skipped);
		out += buf;
	}
	return out;
}

// Every heapdom command: its words split, and a failure it throws reported
// as the command's error.
class heapdom_command : public lldb::SBCommandPluginInterface {
public:
	bool DoExecute(lldb::SBDebugger debugger, char **argv,
		       lldb::SBCommandReturnObject &result) final
	{
		try {
			run(debugger, split_words(argv), result);
			result.SetStatus(lldb::eReturnStatusSuccessFinishResult);
			return true;
		} catch (const failure &f) {
			result.SetError(f.message.c_str());
			result.SetStatus(lldb::eReturnStatusFailed);
			return false;
		}
	}

protected:
	virtual void run(lldb::SBDebugger &debugger, const std::vector<std::string> &args,
			 lldb::SBCommandReturnObject &result) = 0;
};

class report_command : public heapdom_command {
public:
	explicit report_command(const char *report) : report_(report) {}

	void run(lldb::SBDebugger &debugger, const std::vector<std::string> &args,
		 lldb::SBCommandReturnObject &result) override
	{
		std::vector<std::string> words{report_};
		static const std::set<std::string> with_value = {
			"--top", "--depth", "--min-size", "--state",
			"--format", "--from", "--sort", "--output",
			"--framework", "--by", "--what", "--exclude",
			"--allocator"};
		std::string expr;
		bool profile = false;
		for (size_t i = 0; i < args.size(); i++) {
			if (args[i] == "--profile" && report_ != std::string("diff")) {
				profile = true;
			} else if (with_value.count(args[i]) && i + 1 < args.size()) {
				std::string value = args[++i];
				if (args[i - 1] == "--from")
					value = hex(evaluate_address(debugger, value));
				words.push_back(args[i - 1]);
				words.push_back(value);
			} else if (args[i].rfind("--", 0) == 0) {
				words.push_back(args[i]);
			} else if (report_ == std::string("why")) {
				expr += (expr.empty() ? "" : " ") + args[i];
			} else {
				words.push_back(args[i]);
			}
		}
		if (report_ == std::string("why")) {
			if (expr.empty())
				throw failure{"heapdom: heapdom why needs an expression: heapdom why PTR"};
			words.insert(words.begin() + 1, hex(evaluate_address(debugger, expr)));
		}
		// diff reads snapshot files and cores: no process needed.
		result.Printf("%s", run_report(debugger, words,
					       report_ != std::string("diff")).c_str());
		if (profile)
			result.Printf("%s", sparse_profile(open_session(debugger)).c_str());
	}

private:
	static std::string hex(uint64_t v)
	{
		char buf[32];
		snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
		return buf;
	}
	const char *report_;
};


// ----------------------------------------------------------------- tracing
// struct hd_trace_state (heapdom_trace.h): the switch and the epoch the
// debugger writes; the library itself never writes into the process.
const uint64_t kTraceEnabled = offsetof(hd_trace_state, enabled);
const uint64_t kTraceEpoch = offsetof(hd_trace_state, epoch);

uint64_t trace_state(lldb::SBDebugger &debugger)
{
	uint64_t addr = 0;
	check(hd_trace_locate(open_session(debugger), &addr));
	return addr;
}

uint32_t read32(lldb::SBProcess process, uint64_t addr)
{
	uint32_t v = 0;
	lldb::SBError err;
	if (process.ReadMemory(addr, &v, sizeof(v), err) != sizeof(v))
		throw failure{"heapdom: cannot read the tracer's state"};
	return v;
}

void write32(lldb::SBProcess process, uint64_t addr, uint32_t v)
{
	lldb::SBError err;
	if (process.WriteMemory(addr, &v, sizeof(v), err) != sizeof(v))
		throw failure{std::string("heapdom: cannot write the tracer's state: ") +
			      (err.GetCString() ? err.GetCString() : "")};
	g_cache.reset(); // the process's memory changed
}

// libheapdom-trace.so: $HEAPDOM_TRACE_LIB, or beside libheapdom.so (the
// build tree's core/trace/, or installed next to it).
std::string trace_library()
{
	const char *env = getenv("HEAPDOM_TRACE_LIB");
	if (env && *env)
		return env;
	Dl_info info;
	if (dladdr((void *)&hd_session_create, &info) && info.dli_fname) {
		std::string dir = info.dli_fname;
		dir = dir.substr(0, dir.rfind('/') + 1);
		for (const char *rel : {"trace/libheapdom-trace.so", "libheapdom-trace.so"}) {
			std::string p = dir + rel;
			if (access(p.c_str(), R_OK) == 0) {
				char real[4096];
				return realpath(p.c_str(), real) ? real : p;
			}
		}
	}
	throw failure{"heapdom: libheapdom-trace.so not found (set HEAPDOM_TRACE_LIB)"};
}

// A thread inside the allocator or the dynamic loader: loading the tracer
// there could deadlock on their locks.
std::string thread_in_allocator(lldb::SBProcess process)
{
	regex_t re;
	regcomp(&re,
		"^(__libc_)?(malloc|calloc|realloc|free|memalign|valloc|pvalloc|"
		"posix_memalign|aligned_alloc|reallocarray)$|^_int_|^__?malloc|^tcache|"
		"^sysmalloc|^systrim|^arena_|^_dl_|^dl_open|^__libc_dl|^_Zn[wa]|^_Zd[la]",
		REG_EXTENDED | REG_NOSUB);
	std::string found;
	for (uint32_t t = 0; t < process.GetNumThreads() && found.empty(); t++) {
		lldb::SBThread th = process.GetThreadAtIndex(t);
		for (uint32_t f = 0; f < th.GetNumFrames() && f < 8; f++) {
			const char *name = th.GetFrameAtIndex(f).GetFunctionName();
			if (name && regexec(&re, name, 0, nullptr, 0) == 0) {
				found = "thread " + std::to_string(th.GetIndexID()) + " frame #" +
					std::to_string(f) + " " + name;
				break;
			}
		}
	}
	regfree(&re);
	return found;
}

uint64_t evaluate_u64(lldb::SBDebugger &debugger, const std::string &expr)
{
	lldb::SBFrame frame = debugger.GetSelectedTarget()
				      .GetProcess()
				      .GetSelectedThread()
				      .GetSelectedFrame();
	lldb::SBValue v = frame.EvaluateExpression(expr.c_str());
	g_cache.reset(); // the process ran
	if (!v.IsValid() || v.GetError().Fail())
		throw failure{"heapdom: " + expr + " failed in the process: " +
			      (v.GetError().GetCString() ? v.GetError().GetCString() : "no value")};
	return v.GetValueAsUnsigned(0);
}

class trace_command : public heapdom_command {
public:
	void run(lldb::SBDebugger &debugger, const std::vector<std::string> &args,
		 lldb::SBCommandReturnObject &result) override
	{
		if (args.empty())
			throw failure{"heapdom: heapdom trace start|on|off|epoch|status|report"};
		std::string sub = args[0];
		lldb::SBProcess process = debugger.GetSelectedTarget().GetProcess();
		if (sub == "start") {
			start(debugger, process, args, result);
		} else if (sub == "on" || sub == "off") {
			write32(process, trace_state(debugger) + kTraceEnabled, sub == "on");
			result.Printf("heapdom: tracing %s\n", sub.c_str());
		} else if (sub == "epoch") {
			uint64_t st = trace_state(debugger);
			uint32_t e = read32(process, st + kTraceEpoch) + 1;
			write32(process, st + kTraceEpoch, e);
			result.Printf("heapdom: epoch %u\n", e);
		} else if (sub == "status") {
			uint64_t st = trace_state(debugger);
			result.Printf("heapdom: tracer at 0x%llx, %s, epoch %u\n",
				      (unsigned long long)st,
				      read32(process, st + kTraceEnabled) ? "on" : "off",
				      read32(process, st + kTraceEpoch));
		} else if (sub == "report") {
			std::vector<std::string> words{"trace"};
			words.insert(words.end(), args.begin() + 1, args.end());
			result.Printf("%s", run_report(debugger, words, true).c_str());
		} else {
			throw failure{"heapdom: heapdom trace " + sub +
				      ": not start, on, off, epoch, status or report"};
		}
	}

private:
	static void start(lldb::SBDebugger &debugger, lldb::SBProcess process,
			  const std::vector<std::string> &args,
			  lldb::SBCommandReturnObject &result)
	{
		bool loaded = true;
		try {
			trace_state(debugger);
		} catch (const failure &) {
			loaded = false;
		}
		if (!loaded) {
			std::string busy = thread_in_allocator(process);
			if (!busy.empty())
				throw failure{"heapdom: " + busy + " is inside the allocator or the "
					      "loader: loading the tracer now could deadlock; step out "
					      "of it and retry"};
			std::string path = trace_library();
			if (!evaluate_u64(debugger, "(void *) dlopen(\"" + path + "\", 2)"))
				throw failure{"heapdom: dlopen(" + path + ") failed in the process"};
			int64_t n = (int64_t)evaluate_u64(debugger, "(long) heapdom_trace_inject()");
			if (n < 0)
				throw failure{"heapdom: the tracer could not redirect the allocation "
					      "functions of the process"};
			result.Printf("heapdom: %s loaded; %lld calls to the allocator redirected\n",
				      path.c_str(), (long long)n);
		}
		bool off = false;
		for (const std::string &a : args)
			off |= a == "--off";
		if (!off) {
			write32(process, trace_state(debugger) + kTraceEnabled, 1);
			result.Printf("heapdom: tracing on\n");
		}
	}
};

// -------------------------------------------------------------- heap-watch
// A breakpoint that saves a heap snapshot at every Nth hit, prints what
// grew since the previous one and goes on (or stops).
struct watch {
	int id = 0;
	std::string location, what, dir;
	unsigned every = 1, hits = 0;
	bool stop = false;
	std::vector<std::string> snapshots;
	lldb::break_id_t breakpoint = LLDB_INVALID_BREAK_ID;
	lldb::SBDebugger debugger;
};
std::map<int, watch *> g_watches;

void watch_print(lldb::SBDebugger &debugger, const std::string &text)
{
	FILE *f = debugger.GetOutputFileHandle();
	fputs(text.c_str(), f ? f : stdout);
	fflush(f ? f : stdout);
}

bool watch_hit(void *baton, lldb::SBProcess &process, lldb::SBThread &,
	       lldb::SBBreakpointLocation &)
{
	watch *w = static_cast<watch *>(baton);
	if (++w->hits % w->every)
		return false;
	try {
		g_cache.reset(); // a new stop
		mkdir(w->dir.c_str(), 0777);
		char name[32];
		snprintf(name, sizeof(name), "/hit-%06u.json", w->hits);
		std::string path = w->dir + name;
		run_report(w->debugger, {"snapshot", "--output", path}, true);
		hd_session *s = open_session(w->debugger);
		w->snapshots.push_back(path);
		uint64_t st = 0;
		hd_error *err = hd_trace_locate(s, &st);
		if (!err)
			write32(process, st + kTraceEpoch, read32(process, st + kTraceEpoch) + 1);
		else
			hd_error_destroy(err);
		std::string out = "heap-watch " + std::to_string(w->id) + ": hit " +
				  std::to_string(w->hits) + " at " + w->location +
				  ": snapshot " + path + "\n";
		if (w->snapshots.size() >= 2) {
			std::vector<std::string> words = {"diff", w->snapshots[w->snapshots.size() - 2],
							  w->snapshots.back(), "--top", "5"};
			if (!w->what.empty()) {
				words.push_back("--what");
				words.push_back(w->what);
			}
			out += run_report(w->debugger, words, false);
		}
		watch_print(w->debugger, out);
	} catch (const failure &f) {
		watch_print(w->debugger, "heap-watch " + std::to_string(w->id) + ": " +
						 f.message + "\n");
	}
	return w->stop;
}

class watch_command : public heapdom_command {
public:
	void run(lldb::SBDebugger &debugger, const std::vector<std::string> &args,
		 lldb::SBCommandReturnObject &result) override
	{
		if (args.empty())
			throw failure{"heapdom: heapdom watch LOCATION [options] | list | delete N|all | report [N]"};
		if (args[0] == "list") {
			if (g_watches.empty())
				result.Printf("No heap watches.\n");
			for (auto &kv : g_watches)
				result.Printf("%d  %s  every %u%s  %u hits, %zu snapshots in %s\n",
					      kv.first, kv.second->location.c_str(), kv.second->every,
					      kv.second->stop ? ", stops" : "", kv.second->hits,
					      kv.second->snapshots.size(), kv.second->dir.c_str());
		} else if (args[0] == "delete") {
			if (args.size() != 2)
				throw failure{"heapdom: heapdom watch delete N|all"};
			std::vector<int> ids;
			for (auto &kv : g_watches)
				if (args[1] == "all" || args[1] == std::to_string(kv.first))
					ids.push_back(kv.first);
			if (ids.empty())
				throw failure{"heapdom: no heap watch " + args[1]};
			for (int id : ids) {
				debugger.GetSelectedTarget().BreakpointDelete(g_watches[id]->breakpoint);
				delete g_watches[id];
				g_watches.erase(id);
			}
		} else if (args[0] == "report") {
			size_t i = 1;
			int id = g_watches.empty() ? 0 : g_watches.rbegin()->first;
			if (i < args.size() && args[i].rfind("--", 0) != 0)
				id = atoi(args[i++].c_str());
			if (!g_watches.count(id))
				throw failure{"heapdom: no heap watch"};
			watch *w = g_watches[id];
			if (w->snapshots.empty())
				throw failure{"heapdom: heap watch " + std::to_string(id) + " has no snapshot yet"};
			std::vector<std::string> words{"diff"};
			words.insert(words.end(), w->snapshots.begin(), w->snapshots.end());
			words.insert(words.end(), args.begin() + (long)i, args.end());
			result.Printf("%s", run_report(debugger, words, false).c_str());
		} else {
			create(debugger, args, result);
		}
	}

private:
	static void create(lldb::SBDebugger &debugger, const std::vector<std::string> &args,
			   lldb::SBCommandReturnObject &result)
	{
		watch *w = new watch;
		std::unique_ptr<watch> guard(w);
		for (size_t i = 0; i < args.size(); i++) {
			const std::string &a = args[i];
			if ((a == "--every" || a == "--what" || a == "--dir") && i + 1 < args.size()) {
				const std::string &v = args[++i];
				if (a == "--every") {
					char *end;
					unsigned long n = strtoul(v.c_str(), &end, 10);
					if (*end || n < 1)
						throw failure{"heapdom: --every takes a positive number, not " + v};
					w->every = (unsigned)n;
				} else if (a == "--what") {
					if (v != "stats" && v != "types" && v != "dominators")
						throw failure{"heapdom: --what takes stats, types or dominators"};
					w->what = v;
				} else {
					w->dir = v;
				}
			} else if (a == "--stop") {
				w->stop = true;
			} else if (a.rfind("--", 0) == 0) {
				throw failure{"heapdom: heapdom watch: unknown option " + a};
			} else if (w->location.empty()) {
				w->location = a;
			} else {
				throw failure{"heapdom: heapdom watch: one location only"};
			}
		}
		if (w->location.empty())
			throw failure{"heapdom: heapdom watch needs a location"};
		lldb::SBTarget target = debugger.GetSelectedTarget();
		if (!target.IsValid())
			throw failure{"heapdom: no target"};
		lldb::SBBreakpoint bp = target.BreakpointCreateByName(w->location.c_str());
		if (!bp.IsValid())
			throw failure{"heapdom: cannot set a breakpoint at " + w->location};
		w->id = g_watches.empty() ? 1 : g_watches.rbegin()->first + 1;
		if (w->dir.empty())
			w->dir = "heapdom-watch/" + std::to_string(w->id);
		mkdir("heapdom-watch", 0777);
		char real[4096];
		mkdir(w->dir.c_str(), 0777);
		if (realpath(w->dir.c_str(), real))
			w->dir = real;
		w->breakpoint = bp.GetID();
		w->debugger = debugger;
		bp.SetCallback(watch_hit, w);
		g_watches[w->id] = guard.release();
		result.Printf("heap-watch %d at %s: a snapshot %s into %s\n", w->id,
			      w->location.c_str(),
			      w->every > 1 ? ("every " + std::to_string(w->every) + " hits").c_str()
					   : "at every hit",
			      w->dir.c_str());
	}
};

// ---------------------------------------------------------------- sampling
// The sampler holds the process with ptrace itself: lldb detaches while it
// runs and attaches again to stop the process for the report.
class sample_command : public heapdom_command {
public:
	void run(lldb::SBDebugger &debugger, const std::vector<std::string> &args,
		 lldb::SBCommandReturnObject &result) override
	{
		std::vector<std::string> words{"sample"};
		words.insert(words.end(), args.begin(), args.end());
		std::vector<char *> cargv = c_argv(words);
		lldb::SBTarget target = debugger.GetSelectedTarget();
		lldb::SBProcess process = target.GetProcess();
		if (!process.IsValid() || process.GetState() != lldb::eStateStopped ||
		    target.GetNumModules() == 0 || process.GetPluginName() == nullptr ||
		    std::string(process.GetPluginName()) == "elf-core")
			throw failure{"heapdom: heapdom sample needs a live, stopped local process"};
		hd_sample_job *job = nullptr;
		check(hd_sample_job_create((int)cargv.size(), cargv.data(), &job));
		std::unique_ptr<hd_sample_job, void (*)(hd_sample_job *)> guard(
			job, hd_sample_job_destroy);
		lldb::pid_t pid = process.GetProcessID();
		g_cache.reset();
		lldb::SBError derr = process.Detach();
		if (derr.Fail())
			throw failure{std::string("heapdom: cannot detach to sample: ") +
				      (derr.GetCString() ? derr.GetCString() : "")};
		hd_error *err = hd_sample_job_run(job, (int)pid);
		// The process may have exited meanwhile.
		char proc[64];
		snprintf(proc, sizeof(proc), "/proc/%llu", (unsigned long long)pid);
		bool alive = access(proc, F_OK) == 0;
		if (alive) {
			lldb::SBError aerr;
			lldb::SBListener listener = debugger.GetListener();
			target.AttachToProcessWithID(listener, pid, aerr);
			if (aerr.Fail()) {
				hd_error_destroy(err);
				throw failure{std::string("heapdom: cannot attach again after sampling: ") +
					      (aerr.GetCString() ? aerr.GetCString() : "")};
			}
		}
		check(err);
		hd_session *s = alive ? open_session(debugger) : nullptr;
		char *text = nullptr;
		check(hd_sample_job_report(job, s, &text));
		result.Printf("%s", text ? text : "");
		hd_free(text);
	}
};

struct subcommand {
	const char *name, *help, *syntax;
};

const subcommand kCommands[] = {
	{"stats", "Heap totals per arena and overall: used, free by list, internal, mmapped, overhead, size classes.",
	 "heapdom stats [--json] [--output FILE] [--allocator NAME[,NAME]]"},
	{"blocks", "Every heap block: address, usable size, chunk size, state (used, free on which list, internal), arena.",
	 "heapdom blocks [--state used|free|internal] [--json] [--output FILE] [--allocator NAME[,NAME]]"},
	{"dominators", "What keeps memory alive: the blocks that hold the most (retained size), what holds them, and with --depth what they hold.",
	 "heapdom dominators [--top N] [--depth D] [--min-size SIZE] [--json] [--all] [--plain] [--semantic] [--framework NAME|PATH]... [--output FILE] [--allocator NAME[,NAME]]"},
	{"why", "The shortest chain of references to the block holding an address from the strongest class of roots reaching it (globals, TLS, locals, stack frames, registers), then one chain from each other class; --exclude ignores classes (comma-separated). Takes any expression.",
	 "heapdom why EXPRESSION [--exclude globals,tls,locals,stack,registers] [--json] [--output FILE] [--allocator NAME[,NAME]]"},
	{"leaks", "Used blocks that no root reaches, grouped by size, unreferenced ones first, each with the memory it retains.",
	 "heapdom leaks [--json] [--output FILE] [--allocator NAME[,NAME]]"},
	{"graph", "Export the object graph (roots, used blocks, references) as JSON or DOT, whole or from one block.",
	 "heapdom graph [--format json|dot] [--from EXPRESSION] [--depth D] [--output FILE] [--allocator NAME[,NAME]]"},
	{"types", "A heap histogram by type: instances, bytes, and the memory all instances of a type keep alive together.",
	 "heapdom types [--sort bytes|count|retained] [--top N] [--all] [--json] [--output FILE] [--allocator NAME[,NAME]]"},
	{"frameworks", "The framework modules: what each is, whether it found its framework in this process, what it did and could not understand.",
	 "heapdom frameworks [--framework NAME|PATH]... [--json] [--output FILE] [--allocator NAME[,NAME]]"},
	{"snapshot", "A heap snapshot at this stop (totals, size classes, types, largest subtrees by root path), for heapdom diff.",
	 "heapdom snapshot [--output FILE] [--json] [--top N] [--depth D] [--allocator NAME[,NAME]]"},
	{"diff", "What grew between heap snapshots (files) or cores, matched by type and root path; three or more give the series.",
	 "heapdom diff A B [C...] [--json] [--top N] [--what stats|types|dominators] [--output FILE]"},
};

// Commands that change memory or registers without a new stop.
bool drop_cache(void *, const char **)
{
	g_cache.reset();
	return false; // let the command run
}

} // namespace

bool lldb::PluginInitialize(lldb::SBDebugger debugger)
{
	lldb::SBCommandInterpreter interp = debugger.GetCommandInterpreter();
	lldb::SBCommand multi = interp.AddMultiwordCommand(
		"heapdom", "Heap analysis: stats, blocks, dominators, why, leaks, graph, types, frameworks, trace.");
	if (!multi.IsValid())
		return false;
	for (const subcommand &c : kCommands) {
		multi.AddCommand(c.name, new report_command(c.name), c.help, c.syntax);
		// gdb's names, for people who use both debuggers.
		std::string alias = std::string("command alias heap-") + c.name +
				    " heapdom " + c.name;
		lldb::SBCommandReturnObject ignored;
		interp.HandleCommand(alias.c_str(), ignored);
	}
	multi.AddCommand("trace", new trace_command(),
			 "Allocation tracing inside the process (libheapdom-trace.so): start, on, off, epoch, status, report.",
			 "heapdom trace start [--off] | on | off | epoch | status | report [--by site|file|size|age] [--top N] [--all] [--json] [--output FILE]");
	multi.AddCommand("sample", new sample_command(),
			 "Where each thread's loads and stores go: lldb detaches, the process runs while every thread is sampled, lldb attaches again and the addresses are mapped onto heap blocks, types, subtrees and regions.",
			 "heapdom sample [--duration S] [--hz N] [--threads LIST] [--pc-range A-B] [--addr-range A-B] [--nearest N] [--granularity BYTES] [--top N] [--json] [--output FILE.svg]");
	multi.AddCommand("watch", new watch_command(),
			 "Heap snapshots at a breakpoint (every Nth hit) and what grew between them.",
			 "heapdom watch LOCATION [--every N] [--what stats|types|dominators] [--stop] [--dir DIR] | list | delete N|all | report [N] [--json] [--top K]");
	{
		lldb::SBCommandReturnObject ignored;
		interp.HandleCommand("command alias heap-trace heapdom trace", ignored);
		interp.HandleCommand("command alias heap-watch heapdom watch", ignored);
		interp.HandleCommand("command alias heap-sample heapdom sample", ignored);
	}
	// An analysis is kept for one stop; these change the process within
	// a stop (scripts writing through the SB API are not seen).
	for (const char *cmd : {"expression", "memory write", "register write",
				"process load", "process unload"})
		interp.SetCommandOverrideCallback(cmd, drop_cache, nullptr);
	return true;
}

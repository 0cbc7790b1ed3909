// heapdom: the command-line front-end. Parses arguments, opens the target,
// and hands a session to the shared renderer.
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapdom.h"

static const char usage[] =
	"usage: heapdom COMMAND CORE [ARGS] [options]\n"
	"       heapdom diff A B [C ...] [options]   (snapshot files or cores)\n"
	"       heapdom COMMAND --pid PID [ARGS] [options]\n"
	"\n"
	"commands:\n"
	"  stats            heap totals per region (glibc: arena), free lists, size classes\n"
	"  blocks           every heap block: address, size, state, list, region\n"
	"  dominators       what keeps memory alive: top holders by retained size\n"
	"  why ADDR         the shortest chain to the block at ADDR from the\n"
	"                   strongest class of roots reaching it (globals, tls,\n"
	"                   locals, stack, registers), then one from each other\n"
	"                   class (--exclude CLASSES)\n"
	"  leaks            used blocks no root reaches, grouped by size\n"
	"  graph            export the object graph (--format dot|json)\n"
	"  types            heap histogram by type: count, bytes, retained\n"
	"  frameworks       framework modules: loaded, detected, what they did\n"
	"  snapshot         heap summary to keep (--output FILE: JSON): totals,\n"
	"                   size classes, types, largest subtrees by root path\n"
	"  diff A B [C..]   what grew between snapshots (files or cores); more\n"
	"                   than two: the series, and first to last\n"
	"  trace            what libheapdom-trace.so recorded: allocations by\n"
	"                   call site, file, size class, age (--by KEY)\n"
	"  sample --pid PID sample each thread's memory accesses for a while,\n"
	"                   then map them onto heap blocks, types, dominator\n"
	"                   subtrees and regions (docs/sampling.md): --duration S,\n"
	"                   --hz N, --threads LIST, --pc-range A-B, --addr-range\n"
	"                   A-B, --nearest N, --granularity BYTES, --output SVG\n"
	"\n"
	"options:\n"
	"  --pid PID         analyse a running process (stopped while analysed)\n"
	"  --exe PATH        the executable that produced the core (used only\n"
	"                    if its build-id is the core's, or unverifiable)\n"
	"  --sysroot DIR     prefix for the module paths recorded in the core\n"
	"                    or its dynamic linker's list, as gdb's sysroot\n"
	"  --debug-dir DIR   where separate debug files are (default\n"
	"                    /usr/lib/debug); an empty directory disables them\n"
	"  --state STATE     blocks: only used, free or internal blocks\n"
	"  --top N           dominators: holders (and children) shown (20)\n"
	"  --depth D         dominators: levels of children; graph: BFS depth\n"
	"  --min-size SIZE   dominators: hide holders retaining less (e.g. 64K)\n"
	"  --all             dominators --json: every used block\n"
	"  --plain           dominators: the exact dominator tree, every reference\n"
	"                    counted (default: root precedence, docs/ownership.md)\n"
	"  --from ADDR       graph: only what ADDR's block reaches in --depth steps\n"
	"  --sort KEY        types: by bytes (default), count or retained\n"
	"  --by KEY          trace: by site (default), file, size or age\n"
	"  --exclude LIST    why: ignore roots of these classes, comma-separated:\n"
	"                    globals, tls, locals, stack, registers\n"
	"  --semantic        dominators: the semantic tree of the framework modules\n"
	"  --framework M     run framework module M (a built-in's name or a .so\n"
	"                    path; repeatable; implies --semantic); default: the\n"
	"                    built-ins and the .so files on HEAPDOM_FRAMEWORK_PATH\n"
	"  --untyped         no DWARF typing: scan every block conservatively\n"
	"  --allocator NAMES walk only these allocators (comma-separated:\n"
	"                    glibc, poolalloc, ...); default: every allocator\n"
	"                    the process uses, merged into one heap\n"
	"  --partial         a truncated core: report what it holds, labelled\n"
	"                    partial (without it, an error naming what is missing)\n"
	"  --format FMT      text, json, or dot (graph)\n"
	"  --json            same as --format json (see docs/json-format.md)\n"
	"  --output FILE     write the report to FILE\n"
	"  --profile         print phase times and memory use to stderr\n"
	"  --jobs N          analyse with N threads (default: HEAPDOM_JOBS, else one\n"
	"                    per CPU, at most 8); the output does not depend on it\n"
	"  -h, --help        this text\n"
	"  --version         print the version\n";

struct args {
	const char *core;
	int pid;
	struct hd_target_options target;
	struct hd_session_options session;
	bool profile;
	// The report's words: command first, then its options (parsed by
	// hd_command_parse, shared with the debugger front-ends).
	char **words;
	int nwords;
};

static int fail(const char *fmt, const char *arg)
{
	fputs("heapdom: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

// Options of the report that take a value, to tell values from the core.
static bool takes_value(const char *a)
{
	static const char *const opts[] = {"--top", "--depth", "--min-size",
					   "--state", "--format", "--from",
					   "--sort", "--output", "--framework", "--by",
					   "--exclude"};
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		if (strcmp(a, opts[i]) == 0)
			return true;
	return false;
}

// "--opt value" or "--opt=value" for the target options.
static const char *target_opt(int argc, char **argv, int *i, const char *opt)
{
	size_t n = strlen(opt);
	if (strncmp(argv[*i], opt, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] != '\0')
		return NULL;
	if (*i + 1 >= argc) {
		fail("%s needs a value", opt);
		exit(2);
	}
	return argv[++*i];
}

static int parse_args(int argc, char **argv, struct args *a)
{
	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->words = calloc((size_t)argc + 1, sizeof(char *));
	if (!a->words)
		return fail("%s", "out of memory");
	const char *v;
	for (int i = 1; i < argc; i++) {
		if ((v = target_opt(argc, argv, &i, "--pid"))) {
			char *end;
			long pid = strtol(v, &end, 10);
			if (*end || pid <= 0 || pid > INT32_MAX)
				return fail("--pid takes a process id, not '%s'", v);
			a->pid = (int)pid;
		} else if ((v = target_opt(argc, argv, &i, "--exe"))) {
			a->target.exe = v;
		} else if ((v = target_opt(argc, argv, &i, "--sysroot"))) {
			a->target.sysroot = v;
		} else if ((v = target_opt(argc, argv, &i, "--debug-dir"))) {
			a->session.debug.debug_dir = v;
		} else if ((v = target_opt(argc, argv, &i, "--allocator"))) {
			struct hd_error *err = hd_heap_check_allocators(v);
			if (err) {
				fprintf(stderr, "heapdom: %s\n", err->message);
				hd_error_destroy(err);
				exit(2);
			}
			a->session.allocators = v;
		} else if (strcmp(argv[i], "--profile") == 0) {
			a->profile = true;
		} else if (strcmp(argv[i], "--untyped") == 0) {
			a->session.untyped = true;
		} else if ((v = target_opt(argc, argv, &i, "--jobs"))) {
			char *end;
			unsigned long n = strtoul(v, &end, 10);
			if (*end || n < 1 || n > 64) {
				fprintf(stderr, "heapdom: --jobs takes a number from 1 to 64, not '%s'\n", v);
				exit(2);
			}
			a->session.threads = (unsigned)n;
		} else if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
			fputs(usage, stdout);
			exit(0);
		} else if (strcmp(argv[i], "--version") == 0) {
			puts("heapdom 0.1.0");
			exit(0);
		} else {
			a->words[a->nwords++] = argv[i];
			if (takes_value(argv[i]) && i + 1 < argc)
				a->words[a->nwords++] = argv[++i];
		}
	}
	if (a->nwords == 0 || a->words[0][0] == '-') {
		fputs(usage, stderr);
		return 2;
	}
	// diff's words are all its operands: no core of its own.
	bool diff = strcmp(a->words[0], "diff") == 0;
	if (diff && a->pid >= 0)
		return fail("%s: compares snapshot files or cores, not --pid", "diff");
	// sample watches a running process: there is no core to find.
	if (strcmp(a->words[0], "sample") == 0) {
		if (a->pid < 0)
			return fail("%s: needs --pid PID (it samples a running process)",
				    "sample");
		return 0;
	}
	if (a->pid < 0 && !diff) {
		// The first word after the command that is no option or
		// option value is the core.
		for (int i = 1; i < a->nwords; i++) {
			if (a->words[i][0] == '-') {
				i += takes_value(a->words[i]);
				continue;
			}
			a->core = a->words[i];
			memmove(&a->words[i], &a->words[i + 1],
				(size_t)(a->nwords - i - 1) * sizeof(char *));
			a->nwords--;
			break;
		}
		if (!a->core)
			return fail("%s: give a core file or --pid PID", a->words[0]);
	}
	return 0;
}

static void on_signal(int sig)
{
	// Never leave the process stopped: detach before dying.
	hd_live_release_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

// The first SIGINT ends the sampling early (the report follows); a second
// one, like SIGTERM, lets the process go and ends heapdom.
static void on_sample_interrupt(int sig)
{
	static volatile sig_atomic_t seen;
	if (seen++)
		on_signal(sig);
	hd_sample_stop();
}

// The exit status of a report: 1 with one line on stderr if it could not
// be made or written, else 0.
static int finish(struct hd_error *err)
{
	if (fflush(stdout) != 0 && !err) {
		fprintf(stderr, "heapdom: cannot write the report: %m\n");
		return 1;
	}
	if (err) {
		fprintf(stderr, "heapdom: %s\n", err->message);
		hd_error_destroy(err);
		return 1;
	}
	return 0;
}

// `heapdom sample --pid PID`: sample, then stop the process once to map
// the addresses onto its heap, and report.
static int run_sample(struct args *a)
{
	struct hd_sample_options o;
	struct hd_error *err = hd_sample_parse(a->nwords, a->words, &o);
	if (err) {
		fprintf(stderr, "heapdom: %s (try --help)\n", err->message);
		hd_error_destroy(err);
		free(a->words);
		return 2;
	}
	o.pid = a->pid;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	struct sigaction si = {.sa_handler = on_sample_interrupt};
	sigaction(SIGINT, &si, NULL);
	struct hd_samples *r = NULL;
	struct hd_session *s = NULL;
	err = hd_sample_run(&o, &r);
	if (!err) {
		sigaction(SIGINT, &sa, NULL);
		// The process may have exited meanwhile: then the report
		// has the addresses only.
		struct hd_target *t = NULL;
		struct hd_error *aerr = hd_target_attach_pid(o.pid, &a->target, &t);
		if (!aerr && (aerr = hd_session_create(t, &a->session, &s)))
			hd_target_destroy(t);
		if (aerr && aerr->code != HD_ERROR_NOT_FOUND) {
			err = aerr;
		} else {
			hd_error_destroy(aerr);
			if (s)
				hd_session_prepare_types(s);
			err = hd_render_sample(stdout, r, s, &o);
		}
		// Let the process go before the picture is drawn.
		hd_session_destroy(s);
		if (!err && o.output)
			err = hd_sample_write_svg(o.output, r, &o);
	}
	hd_samples_destroy(r);
	free(a->words);
	return finish(err);
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

// Anonymous resident memory: what the analysis allocated, without the
// pages of a mapped core file.
static long rss_anon_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "RssAnon: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void print_profile(struct hd_session *s, double open, double total)
{
	double walk, types, graph, dom;
	hd_session_times(s, &walk, &types, &graph, &dom);
	const struct hd_heap *h;
	const struct hd_graph *g = NULL;
	const struct hd_dom *d = NULL;
	struct hd_error *err = hd_session_heap(s, &h);
	if (err) {
		hd_error_destroy(err); // the command itself already said why
		return;
	}
	size_t n = hd_heap_num_blocks(h);
	size_t table = hd_heap_table_bytes(h), gbytes = 0, dbytes = 0;
	fprintf(stderr, "profile: open %.3f s, walk %.3f s", open, walk);
	double frames = hd_session_frames_seconds(s);
	if (frames > 0)
		fprintf(stderr, ", frames %.3f s (%zu frames and locals)", frames,
			hd_target_num_frames(hd_session_target(s)));
	unsigned threads;
	uint64_t refs;
	double scan = hd_session_scan_seconds(s, &threads, &refs);
	if (scan > 0)
		fprintf(stderr, ", scan %.3f s (%u thread%s, %" PRIu64 " references)",
			scan, threads, threads == 1 ? "" : "s", refs);
	const struct hd_typing *ty;
	if (types > 0 && !hd_session_typing(s, &ty)) {
		struct hd_typing_info ti;
		hd_typing_get_info(ty, &ti);
		fprintf(stderr, ", types %.3f s (DWARF index %.3f s in the background, %.3f s waited: %zu modules, %zu types; propagation %.3f s (%u thread%s): %" PRIu64 " typed blocks, %" PRIu64 " by vtable, %" PRIu64 " ambiguous)",
			types, ti.index_seconds, ti.index_wait_seconds,
			ti.modules_indexed, ti.types_indexed,
			ti.propagate_seconds, ti.propagate_threads,
			ti.propagate_threads == 1 ? "" : "s", ti.typed_blocks, ti.vtable_blocks,
			ti.ambiguous_blocks);
	}
	if (graph > 0 && !hd_session_graph(s, &g)) {
		struct hd_graph_info gi;
		hd_graph_get_info(g, &gi);
		gbytes = gi.bytes;
		fprintf(stderr, ", graph %.3f s (%" PRIu64 " words, %" PRIu64 " edges: %" PRIu64 " typed, %" PRIu64 " conservative) (%" PRIu64 " words never populated, skipped)",
			graph, gi.words_scanned, gi.edges, gi.typed_edges,
			gi.conservative_edges, gi.words_skipped);
	}
	if (dom > 0 && !hd_session_dom(s, &d)) {
		dbytes = hd_dom_bytes(d);
		fprintf(stderr, ", dominators %.3f s", dom);
	}
	double sem = hd_session_semantic_seconds(s);
	if (sem > 0)
		fprintf(stderr, ", semantic %.3f s (modules, its graph, dominators)", sem);
	fprintf(stderr, ", report %.3f s; total %.3f s\n",
		total - open - walk - frames - scan - types - graph - dom - sem, total);
	char names[256];
	if (hd_session_names_note(s, names, sizeof(names)))
		fprintf(stderr, "profile: block names: %s\n", names);
	{
		struct hd_target *t = hd_session_target(s);
		uint64_t un = hd_target_unpopulated_bytes(t);
		fprintf(stderr, "profile: never-populated memory: %s; %.1f MiB of the readable mappings, not read\n",
			hd_target_sparse_source(t), un / 1048576.0);
	}
	fprintf(stderr,
		"profile: %zu blocks, %.1f M blocks/s walked; block table %.1f bytes/block",
		n, walk > 0 ? n / walk / 1e6 : 0.0, n ? (double)table / n : 0.0);
	if (g) {
		struct hd_graph_info gi;
		hd_graph_get_info(g, &gi);
		size_t tbytes = 0;
		const struct hd_typing *ty;
		if (types > 0 && !hd_session_typing(s, &ty) && ty) {
			struct hd_typing_info ti;
			hd_typing_get_info(ty, &ti);
			tbytes = ti.bytes;
		}
		fprintf(stderr, ", graph %zu bytes, dominators %zu bytes, types %zu bytes: %.1f bytes/block + %u bytes/edge",
			gbytes, dbytes, tbytes,
			n ? (double)(table + dbytes + gbytes + tbytes -
				     (size_t)gi.bytes_per_edge * gi.edges) / n : 0.0,
			gi.bytes_per_edge);
	}
	fprintf(stderr, "; anonymous RSS %ld KiB\n", rss_anon_kib());
}

int main(int argc, char **argv)
{
	struct args a;
	int r = parse_args(argc, argv, &a);
	if (r)
		return r;
	if (strcmp(a.words[0], "sample") == 0)
		return run_sample(&a);
	struct hd_command cmd;
	struct hd_error *err = hd_command_parse(a.nwords, a.words, &cmd);
	if (err) {
		fprintf(stderr, "heapdom: %s (try --help)\n", err->message);
		hd_error_destroy(err);
		return 2;
	}
	// Colour only for a person at a terminal.
	const char *term = getenv("TERM");
	cmd.render.color = !cmd.output && isatty(STDOUT_FILENO) &&
			   !getenv("NO_COLOR") && term && strcmp(term, "dumb") != 0;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	double t0 = now();
	struct hd_target *t = NULL;
	struct hd_session *s = NULL;
	cmd.target = &a.target;
	cmd.session = &a.session;
	if (cmd.report == HD_REPORT_DIFF)
		err = NULL; // opens its operands itself
	else
		err = a.core ? hd_target_open_core(a.core, &a.target, &t)
			     : hd_target_attach_pid(a.pid, &a.target, &t);
	if (!err && t) {
		err = hd_session_create(t, &a.session, &s);
		if (err)
			hd_target_destroy(t);
	}
	double t1 = now();
	if (!err)
		err = hd_command_run(s, &cmd, stdout);
	if (a.profile && s)
		print_profile(s, t1 - t0, now() - t0);
	hd_session_destroy(s);
	free(a.words);
	return finish(err);
}

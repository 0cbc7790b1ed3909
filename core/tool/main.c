// heapdom: the command-line front-end. Parses arguments, opens the target,
// and hands a session to the shared renderer.
#include <getopt.h>
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
	"       heapdom COMMAND --pid PID [ARGS] [options]\n"
	"\n"
	"commands:\n"
	"  stats            heap totals per arena, free lists, size classes\n"
	"  blocks           every heap block: address, size, state, list, arena\n"
	"  dominators       what keeps memory alive: top holders by retained size\n"
	"  why ADDR         the shortest chain from a root to the block at ADDR\n"
	"  leaks            used blocks no root reaches, grouped by size\n"
	"  graph            export the object graph (--format dot|json)\n"
	"\n"
	"options:\n"
	"  --pid PID         analyse a running process (stopped while analysed)\n"
	"  --exe PATH        the executable that produced the core\n"
	"  --sysroot DIR     prefix for the module paths recorded in the core\n"
	"  --debug-dir DIR   where separate debug files are (default\n"
	"                    /usr/lib/debug); an empty directory disables them\n"
	"  --state STATE     blocks: only used, free or internal blocks\n"
	"  --top N           dominators: holders (and children) shown (20)\n"
	"  --depth D         dominators: levels of children; graph: BFS depth\n"
	"  --min-size SIZE   dominators: hide holders retaining less (e.g. 64K)\n"
	"  --all             dominators --json: every used block\n"
	"  --from ADDR       graph: only what ADDR's block reaches in --depth steps\n"
	"  --format FMT      text, json, or dot (graph)\n"
	"  --json            same as --format json (see docs/json-format.md)\n"
	"  --output FILE     write the report to FILE\n"
	"  --profile         print phase times and memory use to stderr\n"
	"  -h, --help        this text\n"
	"  --version         print the version\n";

enum command { CMD_STATS, CMD_BLOCKS, CMD_DOMINATORS, CMD_WHY, CMD_LEAKS,
	       CMD_GRAPH };
static const char *const command_names[] = {
	"stats", "blocks", "dominators", "why", "leaks", "graph",
};

struct args {
	enum command command;
	const char *core;
	int pid;
	struct hd_target_options target;
	struct hd_session_options session;
	struct hd_render_options render;
	const char *output;
	bool profile;
	bool format_set;
};

static int fail(const char *fmt, const char *arg)
{
	fputs("heapdom: ", stderr);
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	return 2;
}

static bool parse_u64(const char *s, uint64_t *ret, bool suffixes)
{
	char *end;
	if (!*s || *s == '-')
		return false;
	unsigned long long v = strtoull(s, &end, 0);
	uint64_t mult = 1;
	if (suffixes && *end) {
		switch (*end++) {
		case 'k': case 'K': mult = 1ULL << 10; break;
		case 'm': case 'M': mult = 1ULL << 20; break;
		case 'g': case 'G': mult = 1ULL << 30; break;
		default: return false;
		}
		if (*end == 'i')
			end++;
		if (*end == 'B' || *end == 'b')
			end++;
	}
	if (*end)
		return false;
	*ret = v * mult;
	return true;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { OPT_PID = 256, OPT_EXE, OPT_SYSROOT, OPT_DEBUG_DIR, OPT_STATE,
	       OPT_JSON, OPT_OUTPUT, OPT_VERSION, OPT_PROFILE, OPT_TOP,
	       OPT_DEPTH, OPT_MIN_SIZE, OPT_ALL, OPT_FROM, OPT_FORMAT };
	static const struct option opts[] = {
		{"pid", required_argument, NULL, OPT_PID},
		{"exe", required_argument, NULL, OPT_EXE},
		{"sysroot", required_argument, NULL, OPT_SYSROOT},
		{"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
		{"state", required_argument, NULL, OPT_STATE},
		{"json", no_argument, NULL, OPT_JSON},
		{"output", required_argument, NULL, OPT_OUTPUT},
		{"profile", no_argument, NULL, OPT_PROFILE},
		{"top", required_argument, NULL, OPT_TOP},
		{"depth", required_argument, NULL, OPT_DEPTH},
		{"min-size", required_argument, NULL, OPT_MIN_SIZE},
		{"all", no_argument, NULL, OPT_ALL},
		{"from", required_argument, NULL, OPT_FROM},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		{0},
	};
	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->render.state_filter = -1;
	int c;
	uint64_t v;
	// GNU getopt moves the positional arguments after the options.
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_PID:
			if (!parse_u64(optarg, &v, false) || v == 0 || v > INT32_MAX)
				return fail("--pid takes a process id, not '%s'", optarg);
			a->pid = (int)v;
			break;
		case OPT_EXE: a->target.exe = optarg; break;
		case OPT_SYSROOT: a->target.sysroot = optarg; break;
		case OPT_DEBUG_DIR: a->session.debug.debug_dir = optarg; break;
		case OPT_STATE:
			if (strcmp(optarg, "used") == 0)
				a->render.state_filter = HD_STATE_USED;
			else if (strcmp(optarg, "free") == 0)
				a->render.state_filter = HD_STATE_FREE;
			else if (strcmp(optarg, "internal") == 0)
				a->render.state_filter = HD_STATE_INTERNAL;
			else
				return fail("--state takes used, free or internal, not '%s'", optarg);
			break;
		case OPT_JSON:
			a->render.format = HD_FORMAT_JSON;
			a->format_set = true;
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "json") == 0)
				a->render.format = HD_FORMAT_JSON;
			else if (strcmp(optarg, "dot") == 0)
				a->render.format = HD_FORMAT_DOT;
			else if (strcmp(optarg, "text") == 0)
				a->render.format = HD_FORMAT_TEXT;
			else
				return fail("--format takes text, json or dot, not '%s'", optarg);
			a->format_set = true;
			break;
		case OPT_OUTPUT: a->output = optarg; break;
		case OPT_PROFILE: a->profile = true; break;
		case OPT_TOP:
			if (!parse_u64(optarg, &v, false) || v == 0)
				return fail("--top takes a positive number, not '%s'", optarg);
			a->render.top = (size_t)v;
			break;
		case OPT_DEPTH:
			if (!parse_u64(optarg, &v, false) || v > 1000000)
				return fail("--depth takes a number, not '%s'", optarg);
			a->render.depth = (unsigned)v;
			a->render.depth_set = true;
			break;
		case OPT_MIN_SIZE:
			if (!parse_u64(optarg, &v, true))
				return fail("--min-size takes bytes (e.g. 4096, 64K, 1M), not '%s'", optarg);
			a->render.min_size = v;
			break;
		case OPT_ALL: a->render.all = true; break;
		case OPT_FROM:
			if (!parse_u64(optarg, &a->render.address, false))
				return fail("--from takes an address, not '%s'", optarg);
			a->render.has_address = true;
			break;
		case 'h': fputs(usage, stdout); exit(0);
		case OPT_VERSION: puts("heapdom 0.1.0"); exit(0);
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind >= argc) {
		fputs(usage, stderr);
		return 2;
	}
	const char *cmd = argv[optind++];
	size_t ncmd = sizeof(command_names) / sizeof(command_names[0]);
	a->command = ncmd;
	for (size_t i = 0; i < ncmd; i++)
		if (strcmp(cmd, command_names[i]) == 0)
			a->command = (enum command)i;
	if (a->command == ncmd)
		return fail("unknown command '%s' (try --help)", cmd);
	if (a->pid < 0) {
		if (optind >= argc)
			return fail("%s: give a core file or --pid PID", cmd);
		a->core = argv[optind++];
	}
	if (a->command == CMD_WHY) {
		if (optind >= argc)
			return fail("%s needs the address of a block (heapdom why CORE ADDR)", cmd);
		if (!parse_u64(argv[optind], &a->render.address, false))
			return fail("not an address: '%s'", argv[optind]);
		a->render.has_address = true;
		optind++;
	}
	if (optind < argc)
		return fail("unexpected argument '%s' (try --help)", argv[optind]);
	if (a->command == CMD_GRAPH && !a->format_set)
		a->render.format = HD_FORMAT_JSON;
	if (a->render.format == HD_FORMAT_DOT && a->command != CMD_GRAPH)
		return fail("--format dot is for the graph command only%s", "");
	return 0;
}

static void on_signal(int sig)
{
	// Never leave the process stopped: detach before dying.
	hd_live_release_all();
	signal(sig, SIG_DFL);
	raise(sig);
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
	double walk, graph, dom;
	hd_session_times(s, &walk, &graph, &dom);
	const struct hd_heap *h;
	const struct hd_graph *g = NULL;
	const struct hd_dom *d = NULL;
	if (hd_session_heap(s, &h))
		return;
	size_t n = hd_heap_num_blocks(h);
	size_t table = hd_heap_table_bytes(h), gbytes = 0, dbytes = 0;
	fprintf(stderr, "profile: open %.3f s, walk %.3f s", open, walk);
	if (graph > 0 && !hd_session_graph(s, &g)) {
		struct hd_graph_info gi;
		hd_graph_get_info(g, &gi);
		gbytes = gi.bytes;
		fprintf(stderr, ", graph %.3f s (%" PRIu64 " words, %" PRIu64 " edges)",
			graph, gi.words_scanned, gi.edges);
	}
	if (dom > 0 && !hd_session_dom(s, &d)) {
		dbytes = hd_dom_bytes(d);
		fprintf(stderr, ", dominators %.3f s", dom);
	}
	fprintf(stderr, ", report %.3f s; total %.3f s\n", total - open - walk - graph - dom,
		total);
	fprintf(stderr,
		"profile: %zu blocks, %.1f M blocks/s walked; block table %.1f bytes/block",
		n, walk > 0 ? n / walk / 1e6 : 0.0, n ? (double)table / n : 0.0);
	if (g) {
		struct hd_graph_info gi;
		hd_graph_get_info(g, &gi);
		fprintf(stderr, ", graph+index %zu bytes, dominators %zu bytes: %.1f bytes/block + %.1f bytes/edge",
			gbytes, dbytes,
			n ? (double)(table + dbytes + gbytes - 8 * gi.edges) / n : 0.0,
			8.0);
	}
	fprintf(stderr, "; anonymous RSS %ld KiB\n", rss_anon_kib());
}

int main(int argc, char **argv)
{
	struct args a;
	int r = parse_args(argc, argv, &a);
	if (r)
		return r;
	FILE *out = stdout;
	if (a.output && !(out = fopen(a.output, "w"))) {
		fprintf(stderr, "heapdom: %s: cannot write: %m\n", a.output);
		return 1;
	}
	// Colour only for a person at a terminal.
	const char *term = getenv("TERM");
	a.render.color = isatty(fileno(out)) && !getenv("NO_COLOR") && term &&
			 strcmp(term, "dumb") != 0;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	double t0 = now();
	struct hd_target *t = NULL;
	struct hd_session *s = NULL;
	struct hd_error *err = a.core ? hd_target_open_core(a.core, &a.target, &t)
				      : hd_target_attach_pid(a.pid, &a.target, &t);
	if (!err)
		err = hd_session_create(t, &a.session, &s);
	else
		t = NULL;
	if (err)
		hd_target_destroy(t);
	double t1 = now();
	if (!err) {
		static struct hd_error *(*const render[])(
			FILE *, struct hd_session *,
			const struct hd_render_options *) = {
			[CMD_STATS] = hd_render_stats,
			[CMD_BLOCKS] = hd_render_blocks,
			[CMD_DOMINATORS] = hd_render_dominators,
			[CMD_WHY] = hd_render_why,
			[CMD_LEAKS] = hd_render_leaks,
			[CMD_GRAPH] = hd_render_graph,
		};
		err = render[a.command](out, s, &a.render);
	}
	if (a.profile && s)
		print_profile(s, t1 - t0, now() - t0);
	hd_session_destroy(s);
	if (out != stdout && fclose(out) != 0 && !err) {
		fprintf(stderr, "heapdom: %s: cannot write: %m\n", a.output);
		return 1;
	}
	if (err) {
		fprintf(stderr, "heapdom: %s\n", err->message);
		hd_error_destroy(err);
		return 1;
	}
	return 0;
}

// heapdom: the command-line front-end. Parses arguments, opens the target,
// runs the analysis and hands the result to the shared renderer.
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "heapdom.h"

static const char usage[] =
	"usage: heapdom COMMAND CORE [options]\n"
	"       heapdom COMMAND --pid PID [options]\n"
	"\n"
	"commands:\n"
	"  stats     heap totals per arena, free lists, size classes\n"
	"  blocks    every heap block: address, size, state, free list, arena\n"
	"\n"
	"options:\n"
	"  --pid PID         analyse a running process (stopped while analysed)\n"
	"  --exe PATH        the executable that produced the core\n"
	"  --sysroot DIR     prefix for the module paths recorded in the core\n"
	"  --debug-dir DIR   where separate debug files are (default\n"
	"                    /usr/lib/debug); an empty directory disables them\n"
	"  --state STATE     blocks: only used, free or internal blocks\n"
	"  --json            machine-readable output (see docs/json-format.md)\n"
	"  --output FILE     write the report to FILE\n"
	"  --profile         print phase times and memory use to stderr\n"
	"  -h, --help        this text\n"
	"  --version         print the version\n";

struct args {
	const char *command;
	const char *core;
	int pid;
	struct hd_target_options target;
	struct hd_debuginfo_options debug;
	struct hd_render_options render;
	const char *output;
	bool profile;
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
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

static int fail(const char *msg)
{
	fprintf(stderr, "heapdom: %s\n", msg);
	return 2;
}

static int parse_state(const char *s)
{
	if (strcmp(s, "used") == 0)
		return HD_STATE_USED;
	if (strcmp(s, "free") == 0)
		return HD_STATE_FREE;
	if (strcmp(s, "internal") == 0)
		return HD_STATE_INTERNAL;
	return -2;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	enum { OPT_PID = 256, OPT_EXE, OPT_SYSROOT, OPT_DEBUG_DIR, OPT_STATE,
	       OPT_JSON, OPT_OUTPUT, OPT_VERSION, OPT_PROFILE };
	static const struct option opts[] = {
		{"pid", required_argument, NULL, OPT_PID},
		{"exe", required_argument, NULL, OPT_EXE},
		{"sysroot", required_argument, NULL, OPT_SYSROOT},
		{"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
		{"state", required_argument, NULL, OPT_STATE},
		{"json", no_argument, NULL, OPT_JSON},
		{"output", required_argument, NULL, OPT_OUTPUT},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, OPT_VERSION},
		{"profile", no_argument, NULL, OPT_PROFILE},
		{0},
	};
	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->render.state_filter = -1;
	int c;
	// GNU getopt moves the command and core after the options.
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		char *end;
		switch (c) {
		case OPT_PID:
			a->pid = (int)strtol(optarg, &end, 10);
			if (*end || a->pid <= 0)
				return fail("--pid takes a process id");
			break;
		case OPT_EXE: a->target.exe = optarg; break;
		case OPT_SYSROOT: a->target.sysroot = optarg; break;
		case OPT_DEBUG_DIR: a->debug.debug_dir = optarg; break;
		case OPT_STATE:
			a->render.state_filter = parse_state(optarg);
			if (a->render.state_filter == -2)
				return fail("--state takes used, free or internal");
			break;
		case OPT_JSON: a->render.format = HD_FORMAT_JSON; break;
		case OPT_OUTPUT: a->output = optarg; break;
		case OPT_PROFILE: a->profile = true; break;
		case 'h': fputs(usage, stdout); exit(0);
		case OPT_VERSION: puts("heapdom 0.1.0"); exit(0);
		default: fputs(usage, stderr); return 2;
		}
	}
	if (optind < argc)
		a->command = argv[optind++];
	if (optind < argc)
		a->core = argv[optind++];
	if (optind < argc)
		return fail("too many arguments (try --help)");
	if (!a->command) {
		fputs(usage, stderr);
		return 2;
	}
	if (strcmp(a->command, "stats") != 0 && strcmp(a->command, "blocks") != 0) {
		fprintf(stderr, "heapdom: unknown command '%s' (try --help)\n",
			a->command);
		return 2;
	}
	if ((a->core != NULL) == (a->pid > 0))
		return fail("give either a core file or --pid PID");
	return 0;
}

static void on_signal(int sig)
{
	// Never leave the process stopped: detach before dying.
	hd_live_release_all();
	signal(sig, SIG_DFL);
	raise(sig);
}

static int report(struct hd_error *err)
{
	fprintf(stderr, "heapdom: %s\n", err->message);
	hd_error_destroy(err);
	return 1;
}

int main(int argc, char **argv)
{
	struct args a;
	int r = parse_args(argc, argv, &a);
	if (r)
		return r;
	FILE *out = stdout;
	if (a.output && !(out = fopen(a.output, "w"))) {
		perror(a.output);
		return 1;
	}
	a.render.color = false;
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	struct hd_target *t = NULL;
	struct hd_debuginfo *di = NULL;
	struct hd_heap *h = NULL;
	double t0 = now();
	struct hd_error *err = a.core ? hd_target_open_core(a.core, &a.target, &t)
				      : hd_target_attach_pid(a.pid, &a.target, &t);
	if (!err)
		err = hd_debuginfo_create(t, &a.debug, &di);
	double t1 = now();
	if (!err) {
		struct hd_heap_options ho = {.use_debuginfo = true};
		err = hd_heap_walk(t, di, &ho, &h);
	}
	double t2 = now();
	if (!err && strcmp(a.command, "stats") == 0)
		err = hd_render_stats(out, t, h, &a.render);
	else if (!err)
		err = hd_render_blocks(out, t, h, &a.render);
	if (a.profile && h) {
		size_t n = hd_heap_num_blocks(h);
		fprintf(stderr,
			"profile: open %.3f s, walk %.3f s, report %.3f s; %zu blocks, %.1f M blocks/s; block table %zu bytes (%.1f bytes/block); anonymous RSS %ld KiB\n",
			t1 - t0, t2 - t1, now() - t2, n,
			n / (t2 - t1) / 1e6, hd_heap_table_bytes(h),
			n ? (double)hd_heap_table_bytes(h) / n : 0.0,
			rss_anon_kib());
	}
	hd_heap_destroy(h);
	hd_debuginfo_destroy(di);
	hd_target_destroy(t);
	if (out != stdout && fclose(out) != 0 && !err) {
		perror(a.output);
		return 1;
	}
	return err ? report(err) : 0;
}

// Report commands parsed from words: one parser for the CLI, gdb and lldb,
// so every option means the same everywhere.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"
#include "report/report_internal.h"
#include "report/snapshot.h"
#include "session/session_internal.h"

static const char *const report_names[] = {
	[HD_REPORT_STATS] = "stats",
	[HD_REPORT_BLOCKS] = "blocks",
	[HD_REPORT_DOMINATORS] = "dominators",
	[HD_REPORT_WHY] = "why",
	[HD_REPORT_LEAKS] = "leaks",
	[HD_REPORT_GRAPH] = "graph",
	[HD_REPORT_TYPES] = "types",
	[HD_REPORT_FRAMEWORKS] = "frameworks",
	[HD_REPORT_TRACE] = "trace",
	[HD_REPORT_SNAPSHOT] = "snapshot",
	[HD_REPORT_DIFF] = "diff",
};

static bool parse_u64(const char *s, uint64_t *ret, bool suffixes)
{
	char *end;
	if (!*s || *s == '-')
		return false;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno)
		return false;
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
	if (*end || (mult > 1 && v > UINT64_MAX / mult))
		return false;
	*ret = v * mult;
	return true;
}

// The value of an option: "--opt=value" or the next word.
static const char *value_of(int argc, char *const *argv, int *i,
			    const char *opt, bool *bad)
{
	size_t n = strlen(opt);
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 >= argc) {
		*bad = true;
		return NULL;
	}
	return argv[++*i];
}

static bool is_opt(const char *arg, const char *opt)
{
	size_t n = strlen(opt);
	return strncmp(arg, opt, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

// "registers,stack": the root classes of hd_root_rank_name, as a mask.
static struct hd_error *parse_exclude(const char *v, unsigned *mask)
{
	char names[128] = "";
	for (unsigned k = 0; k < HD_ROOT_RANKS; k++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", k ? ", " : "", hd_root_rank_name(k));
	if (!v || !*v)
		return hd_error_create(HD_ERROR_INVALID,
				       "--exclude takes root classes, comma-separated: %s",
				       names);
	const char *p = v;
	do {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);
		unsigned r = 0;
		while (r < HD_ROOT_RANKS && !(strlen(hd_root_rank_name(r)) == n &&
					      strncmp(p, hd_root_rank_name(r), n) == 0))
			r++;
		if (r == HD_ROOT_RANKS)
			return hd_error_create(HD_ERROR_INVALID,
					       "--exclude: unknown root class '%.*s' in '%s': the classes are %s",
					       (int)n, p, v, names);
		*mask |= 1u << r;
		p = end ? end + 1 : NULL;
	} while (p);
	return NULL;
}

struct hd_error *hd_command_parse(int argc, char *const *argv,
				  struct hd_command *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->render.state_filter = -1;
	if (argc < 1)
		return hd_error_create(HD_ERROR_INVALID, "no report named");
	size_t n = sizeof(report_names) / sizeof(report_names[0]), k = n;
	for (size_t i = 0; i < n; i++)
		if (strcmp(argv[0], report_names[i]) == 0)
			k = i;
	if (k == n)
		return hd_error_create(HD_ERROR_INVALID,
				       "unknown command '%s': stats, blocks, dominators, why, leaks, graph, types, frameworks, trace, snapshot or diff",
				       argv[0]);
	ret->report = (enum hd_report)k;
	struct hd_render_options *o = &ret->render;
	bool format_set = false;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		bool bad = false;
		uint64_t u;
		if (is_opt(a, "--top")) {
			v = value_of(argc, argv, &i, "--top", &bad);
			if (bad || !parse_u64(v, &u, false) || u == 0)
				return hd_error_create(HD_ERROR_INVALID,
						       "--top takes a positive number%s%s",
						       v ? ", not " : "", v ? v : "");
			o->top = (size_t)u;
		} else if (is_opt(a, "--depth")) {
			v = value_of(argc, argv, &i, "--depth", &bad);
			if (bad || !parse_u64(v, &u, false) || u > 1000000)
				return hd_error_create(HD_ERROR_INVALID,
						       "--depth takes a number%s%s",
						       v ? ", not " : "", v ? v : "");
			o->depth = (unsigned)u;
			o->depth_set = true;
		} else if (is_opt(a, "--min-size")) {
			v = value_of(argc, argv, &i, "--min-size", &bad);
			if (bad || !parse_u64(v, &u, true))
				return hd_error_create(HD_ERROR_INVALID,
						       "--min-size takes bytes (4096, 64K, 1M)%s%s",
						       v ? ", not " : "", v ? v : "");
			o->min_size = u;
		} else if (is_opt(a, "--state")) {
			v = value_of(argc, argv, &i, "--state", &bad);
			if (!bad && strcmp(v, "used") == 0)
				o->state_filter = HD_STATE_USED;
			else if (!bad && strcmp(v, "free") == 0)
				o->state_filter = HD_STATE_FREE;
			else if (!bad && strcmp(v, "internal") == 0)
				o->state_filter = HD_STATE_INTERNAL;
			else
				return hd_error_create(HD_ERROR_INVALID,
						       "--state takes used, free or internal%s%s",
						       v ? ", not " : "", v ? v : "");
		} else if (is_opt(a, "--format")) {
			v = value_of(argc, argv, &i, "--format", &bad);
			if (!bad && strcmp(v, "json") == 0)
				o->format = HD_FORMAT_JSON;
			else if (!bad && strcmp(v, "dot") == 0)
				o->format = HD_FORMAT_DOT;
			else if (!bad && strcmp(v, "text") == 0)
				o->format = HD_FORMAT_TEXT;
			else
				return hd_error_create(HD_ERROR_INVALID,
						       "--format takes text, json or dot%s%s",
						       v ? ", not " : "", v ? v : "");
			format_set = true;
		} else if (is_opt(a, "--from")) {
			v = value_of(argc, argv, &i, "--from", &bad);
			if (bad || !parse_u64(v, &o->address, false))
				return hd_error_create(HD_ERROR_INVALID,
						       "--from takes an address%s%s",
						       v ? ", not " : "", v ? v : "");
			o->has_address = true;
		} else if (is_opt(a, "--sort")) {
			v = value_of(argc, argv, &i, "--sort", &bad);
			if (!bad && strcmp(v, "bytes") == 0)
				o->sort = 0;
			else if (!bad && strcmp(v, "count") == 0)
				o->sort = 1;
			else if (!bad && strcmp(v, "retained") == 0)
				o->sort = 2;
			else
				return hd_error_create(HD_ERROR_INVALID,
						       "--sort takes count, bytes or retained%s%s",
						       v ? ", not " : "", v ? v : "");
		} else if (is_opt(a, "--output")) {
			v = value_of(argc, argv, &i, "--output", &bad);
			if (bad || !*v)
				return hd_error_create(HD_ERROR_INVALID,
						       "--output takes a file name");
			ret->output = v;
		} else if (is_opt(a, "--framework")) {
			v = value_of(argc, argv, &i, "--framework", &bad);
			if (bad || !*v)
				return hd_error_create(HD_ERROR_INVALID,
						       "--framework takes a module name or the path of a shared object");
			if (o->num_frameworks == HD_MAX_FRAMEWORK_OPTIONS)
				return hd_error_create(HD_ERROR_INVALID,
						       "more than %d --framework options",
						       HD_MAX_FRAMEWORK_OPTIONS);
			ret->frameworks[o->num_frameworks++] = v;
		} else if (is_opt(a, "--what")) {
			v = value_of(argc, argv, &i, "--what", &bad);
			static const char *const what[] = {"all", "stats", "types", "dominators"};
			size_t k = 0;
			while (!bad && k < 4 && strcmp(v, what[k]) != 0)
				k++;
			if (bad || k == 4)
				return hd_error_create(HD_ERROR_INVALID,
						       "--what takes stats, types, dominators or all%s%s",
						       v ? ", not " : "", v ? v : "");
			o->what = (int)k;
		} else if (is_opt(a, "--by")) {
			v = value_of(argc, argv, &i, "--by", &bad);
			static const char *const by[] = {"site", "file", "size", "age"};
			size_t k = 0;
			while (!bad && k < 4 && strcmp(v, by[k]) != 0)
				k++;
			if (bad || k == 4)
				return hd_error_create(HD_ERROR_INVALID,
						       "--by takes site, file, size or age%s%s",
						       v ? ", not " : "", v ? v : "");
			o->trace_by = (int)k;
		} else if (is_opt(a, "--exclude")) {
			v = value_of(argc, argv, &i, "--exclude", &bad);
			struct hd_error *err = parse_exclude(bad ? NULL : v, &o->exclude);
			if (err)
				return err;
		} else if (is_opt(a, "--allocator")) {
			v = value_of(argc, argv, &i, "--allocator", &bad);
			struct hd_error *err = hd_heap_check_allocators(bad ? NULL : v);
			if (err)
				return err;
			ret->allocators = v;
		} else if (strcmp(a, "--semantic") == 0) {
			o->semantic = true;
		} else if (strcmp(a, "--partial") == 0) {
			o->partial = true;
		} else if (strcmp(a, "--json") == 0) {
			o->format = HD_FORMAT_JSON;
			format_set = true;
		} else if (strcmp(a, "--all") == 0) {
			o->all = true;
		} else if (strcmp(a, "--plain") == 0) {
			o->plain = true;
		} else if (strcmp(a, "--color") == 0 || strcmp(a, "--colour") == 0) {
			o->color = true;
		} else if (strcmp(a, "--no-color") == 0 || strcmp(a, "--no-colour") == 0) {
			o->color = false;
		} else if (a[0] == '-' && a[1] == '-') {
			return hd_error_create(HD_ERROR_INVALID,
					       "unknown option %s for %s", a, argv[0]);
		} else if (ret->report == HD_REPORT_DIFF) {
			if (ret->num_operands == HD_MAX_DIFF_OPERANDS)
				return hd_error_create(HD_ERROR_INVALID,
						       "diff takes at most %d snapshots",
						       HD_MAX_DIFF_OPERANDS);
			ret->operands[ret->num_operands++] = a;
		} else if (ret->report == HD_REPORT_WHY && !o->has_address) {
			if (!parse_u64(a, &o->address, false))
				return hd_error_create(HD_ERROR_INVALID,
						       "not an address: %s", a);
			o->has_address = true;
		} else {
			return hd_error_create(HD_ERROR_INVALID,
					       "unexpected argument '%s' for %s", a,
					       argv[0]);
		}
	}
	if (ret->report == HD_REPORT_WHY && !o->has_address)
		return hd_error_create(HD_ERROR_INVALID,
				       "why needs the address of a block");
	if (ret->report == HD_REPORT_GRAPH && !format_set)
		o->format = HD_FORMAT_JSON;
	if (ret->report == HD_REPORT_DIFF && ret->num_operands < 2)
		return hd_error_create(HD_ERROR_INVALID,
				       "diff needs two snapshot files or cores (or more, for a series)");
	// A saved snapshot is what diff reads back.
	if (ret->report == HD_REPORT_SNAPSHOT && ret->output)
		o->format = HD_FORMAT_JSON;
	if (o->plain && ret->report != HD_REPORT_DOMINATORS)
		return hd_error_create(HD_ERROR_INVALID,
				       "--plain is for dominators");
	if (o->plain && o->semantic)
		return hd_error_create(HD_ERROR_INVALID,
				       "--plain is for the dominator tree of the graph, not --semantic");
	if ((o->semantic || o->num_frameworks) &&
	    ret->report != HD_REPORT_DOMINATORS && ret->report != HD_REPORT_FRAMEWORKS)
		return hd_error_create(HD_ERROR_INVALID,
				       "--semantic and --framework are for dominators and frameworks");
	if (o->exclude && ret->report != HD_REPORT_WHY)
		return hd_error_create(HD_ERROR_INVALID, "--exclude is for why");
	// Naming a framework asks for its tree.
	if (o->num_frameworks && ret->report == HD_REPORT_DOMINATORS)
		o->semantic = true;
	if (o->format == HD_FORMAT_DOT && ret->report != HD_REPORT_GRAPH)
		return hd_error_create(HD_ERROR_INVALID,
				       "--format dot is for the graph command only");
	return NULL;
}

struct hd_error *hd_command_check(int argc, char *const *argv)
{
	struct hd_command c;
	return hd_command_parse(argc, argv, &c);
}

struct hd_error *hd_command_run(struct hd_session *s, const struct hd_command *c,
				FILE *out)
{
	static struct hd_error *(*const render[])(
		FILE *, struct hd_session *, const struct hd_render_options *) = {
		[HD_REPORT_STATS] = hd_render_stats,
		[HD_REPORT_BLOCKS] = hd_render_blocks,
		[HD_REPORT_DOMINATORS] = hd_render_dominators,
		[HD_REPORT_WHY] = hd_render_why,
		[HD_REPORT_LEAKS] = hd_render_leaks,
		[HD_REPORT_GRAPH] = hd_render_graph,
		[HD_REPORT_TYPES] = hd_render_types,
		[HD_REPORT_FRAMEWORKS] = hd_render_frameworks,
		[HD_REPORT_TRACE] = hd_render_trace,
		[HD_REPORT_SNAPSHOT] = hd_render_snapshot,
	};
	struct hd_render_options o = c->render;
	o.frameworks = c->frameworks;
	// diff reads files and cores of its own: no session.
	if (!s && c->report != HD_REPORT_DIFF)
		return hd_error_create(HD_ERROR_INVALID, "no process or core to analyse");
	// A truncated core answers only when a partial answer is asked for.
	if (s) {
		struct hd_error *err = hd_check_complete(hd_session_target(s),
							 o.partial);
		// The allocators this command walks (a debugger's session
		// outlives commands: without --allocator, its default again).
		if (!err)
			err = hd_session_select_allocators(s, c->allocators);
		if (err)
			return err;
	}
	FILE *f = out;
	if (c->output) {
		f = fopen(c->output, "w");
		if (!f)
			return hd_error_os(errno, c->output, "cannot write");
		o.color = false;
	}
	// Reports that type blocks read DWARF while the heap is walked; stats
	// and the tracer's report type nothing.
	if (c->report != HD_REPORT_STATS && c->report != HD_REPORT_DIFF &&
	    c->report != HD_REPORT_TRACE)
		hd_session_prepare_types(s);
	// Reports without a heap header say what the target lacks here.
	if (o.format == HD_FORMAT_TEXT &&
	    (c->report == HD_REPORT_WHY || c->report == HD_REPORT_TRACE ||
	     c->report == HD_REPORT_FRAMEWORKS))
		hd_text_target_notes(f, hd_session_target(s), o.color);
	struct hd_error *err = c->report == HD_REPORT_DIFF
				       ? hd_run_diff(f, c, &o)
				       : render[c->report](f, s, &o);
	if (c->output && fclose(f) != 0 && !err)
		err = hd_error_os(errno, c->output, "cannot write");
	if (err && s)
		err = hd_error_in_truncated(hd_session_target(s), err);
	// The command's DWARF reading ends with it (typing joins it when it
	// ran; a report that failed before typing must not leave it running).
	if (s)
		hd_session_join_prefetch(s);
	return err;
}

struct hd_error *hd_command_run_string(struct hd_session *s, int argc,
				       char *const *argv, char **text)
{
	struct hd_command c;
	struct hd_error *err = hd_command_parse(argc, argv, &c);
	if (err)
		return err;
	size_t len;
	*text = NULL;
	FILE *out = open_memstream(text, &len);
	if (!out)
		return &hd_error_no_memory;
	err = hd_command_run(s, &c, out);
	if (fclose(out) != 0 && !err)
		err = &hd_error_no_memory;
	if (err) {
		free(*text);
		*text = NULL;
	}
	return err;
}

void hd_free(void *p)
{
	free(p);
}

// Where mallocng's state is: the hidden global __malloc_context. A static
// program with a symbol table names it; musl's libc.so exports no such
// symbol (Debian strips its .symtab), so there it is found from the data:
// an initialised context in the libc's writable memory whose first meta
// area starts with the context's 64-bit random secret, which no other data
// repeats by chance.
#include <stdio.h>
#include <string.h>

#include "heap/musl/musl_internal.h"

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

// musl's dynamic loader is its libc: /lib/ld-musl-x86_64.so.1, on Debian
// a link to /usr/lib/x86_64-linux-musl/libc.so (the name a core and
// /proc/PID/maps give); Alpine's is libc.musl-x86_64.so.1.
static bool musl_module(const struct hd_module *m)
{
	const char *b = base_name(m->name);
	return strncmp(b, "ld-musl-", 8) == 0 ||
	       strncmp(b, "libc.musl-", 10) == 0 ||
	       (strcmp(b, "libc.so") == 0 && strstr(m->name, "musl"));
}

static const struct hd_module *find_musl_module(struct hd_target *t)
{
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		if (musl_module(m))
			return m;
	}
	return NULL;
}

// A program without shared libraries (the vdso aside): musl's malloc, if
// any, is linked into the executable.
static const struct hd_module *static_exe(struct hd_target *t)
{
	const struct hd_module *exe = NULL;
	for (size_t i = 0; i < hd_target_num_modules(t); i++) {
		const struct hd_module *m = hd_target_module(t, i);
		if (m->is_exe)
			exe = m;
		else if (!strstr(m->name, "vdso"))
			return NULL;
	}
	return exe;
}

static bool use_symbols(const struct hd_heap_source *src)
{
	return src->di && (!src->opts || src->opts->use_debuginfo);
}

static bool read_ctx(struct hd_target *t, uint64_t addr, uint8_t *raw)
{
	struct hd_error *err = hd_target_read(t, addr, raw, MUSL_CTX_SIZE);
	hd_error_destroy(err);
	return !err;
}

// The cheap part of the check, from the context's bytes alone.
static bool ctx_shape(const uint8_t *raw)
{
	uint64_t head = musl_u64(raw + MUSL_CTX_META_AREA_HEAD);
	uint64_t tail = musl_u64(raw + MUSL_CTX_META_AREA_TAIL);
	return musl_u32(raw + MUSL_CTX_INIT_DONE) == 1 &&
	       musl_u64(raw + MUSL_CTX_SECRET) != 0 && head &&
	       !(head & (MUSL_PAGE - 1)) && tail && !(tail & (MUSL_PAGE - 1)) &&
	       musl_u64(raw + MUSL_CTX_AVAIL_META_COUNT) <= MUSL_AREA_SLOTS;
}

bool musl_ctx_plausible(struct hd_target *t, const uint8_t *raw)
{
	uint64_t check;
	if (!ctx_shape(raw))
		return false;
	struct hd_error *err = hd_target_read_u64(
		t, musl_u64(raw + MUSL_CTX_META_AREA_HEAD), &check);
	hd_error_destroy(err);
	return !err && check == musl_u64(raw + MUSL_CTX_SECRET);
}

// Scans one writable mapping for a context; its address or 0.
static uint64_t scan_mapping(struct hd_target *t, const struct hd_mapping *mp)
{
	if (!(mp->prot & HD_PROT_WRITE) || !mp->readable ||
	    mp->end - mp->start < MUSL_CTX_SIZE || mp->end - mp->start > (64u << 20))
		return 0;
	struct hd_view v;
	struct hd_error *err = hd_target_view(t, mp->start, mp->end - mp->start, &v);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	uint64_t found = 0;
	for (size_t off = 0; off + MUSL_CTX_SIZE <= v.len && !found; off += 8)
		if (ctx_shape(v.data + off) && musl_ctx_plausible(t, v.data + off))
			found = mp->start + off;
	hd_view_deinit(&v);
	return found;
}

// Scans the writable memory of module m for a context: its mappings and
// the anonymous one right after them (the rest of its .bss, where a static
// program keeps the context); its address or 0.
static uint64_t scan_module(struct hd_target *t, const struct hd_module *m)
{
	for (size_t i = 0; i < hd_target_num_mappings(t); i++) {
		const struct hd_mapping *mp = hd_target_mapping(t, i);
		bool bss = mp->start == m->end && !mp->path;
		if (!bss && (mp->end <= m->start || mp->start >= m->end))
			continue;
		uint64_t found = scan_mapping(t, mp);
		if (found)
			return found;
	}
	return 0;
}

// musl's release, from its libc file: the dynamic loader prints
// "Version %s" with the release string, the only string of the file shaped
// 1.N.N. False when the file is absent or the string is not found once.
static bool libc_version(const char *file, char *ret, size_t len)
{
	FILE *f = file ? fopen(file, "rb") : NULL;
	if (!f)
		return false;
	static const char banner[] = "Version %s";
	char buf[1 << 16], found[16] = "";
	size_t n, keep = 0, hits = 0, run = 0;
	bool has_banner = false;
	char cur[16];
	// One pass, string by string (NUL-terminated runs of bytes).
	while ((n = fread(buf + keep, 1, sizeof(buf) - keep, f)) > 0) {
		size_t end = keep + n;
		if (!has_banner && memmem(buf, end, banner, sizeof(banner) - 1))
			has_banner = true;
		size_t tail = end > sizeof(banner) ? end - sizeof(banner) : 0;
		for (size_t i = keep; i < end; i++) {
			char c = buf[i];
			if (c == 0) {
				cur[run < sizeof(cur) ? run : sizeof(cur) - 1] = 0;
				unsigned a, b, d;
				char extra;
				if (run && run < sizeof(cur) &&
				    sscanf(cur, "%u.%u.%u%c", &a, &b, &d, &extra) == 3 &&
				    cur[0] >= '0' && cur[0] <= '9' && hits++ == 0)
					memcpy(found, cur, sizeof(found));
				run = 0;
			} else {
				if (run < sizeof(cur))
					cur[run] = c;
				run++;
			}
		}
		// Keep the end of the window for a banner across reads.
		keep = end - tail;
		memmove(buf, buf + tail, keep);
	}
	fclose(f);
	if (!has_banner || hits != 1)
		return false;
	snprintf(ret, len, "%s", found);
	return true;
}

bool musl_detect(const struct hd_heap_source *src, char *evidence,
		 size_t len)
{
	const struct hd_module *m = find_musl_module(src->t);
	if (m) {
		snprintf(evidence, len, "%s", base_name(m->name));
		return true;
	}
	uint64_t addr, size;
	if (use_symbols(src)) {
		struct hd_error *err = hd_debuginfo_find_symbol(
			src->di, NULL, MUSL_CTX_SYMBOL, &addr, &size);
		if (!err) {
			snprintf(evidence, len, "symbol %s", MUSL_CTX_SYMBOL);
			return true;
		}
		hd_error_destroy(err);
		err = hd_debuginfo_find_symbol(src->di, NULL, MUSL_SIMPLE_SYMBOL,
					       &addr, &size);
		if (!err) {
			snprintf(evidence, len, "symbol %s", MUSL_SIMPLE_SYMBOL);
			return true;
		}
		hd_error_destroy(err);
	}
	// A stripped static program: its data holds the context.
	m = static_exe(src->t);
	if (m && scan_module(src->t, m)) {
		snprintf(evidence, len, "a mallocng context in %s's data",
			 base_name(m->name));
		return true;
	}
	return false;
}

struct hd_error *musl_find_ctx(const struct hd_heap_source *src,
			       struct musl_ctx *ret)
{
	struct hd_target *t = src->t;
	uint64_t addr, size;
	if (use_symbols(src)) {
		struct hd_error *err = hd_debuginfo_find_symbol(
			src->di, NULL, MUSL_CTX_SYMBOL, &addr, &size);
		if (!err && read_ctx(t, addr, ret->raw)) {
			ret->addr = addr;
			ret->method = "symbol";
			snprintf(ret->how, sizeof(ret->how),
				 "context from the symbol %s", MUSL_CTX_SYMBOL);
			return NULL;
		}
		hd_error_destroy(err);
	}
	// A static program that never calls free links musl's bump
	// allocator instead of mallocng.
	if (use_symbols(src)) {
		struct hd_error *err = hd_debuginfo_find_symbol(
			src->di, NULL, MUSL_SIMPLE_SYMBOL, &addr, &size);
		if (!err)
			return hd_error_create(HD_ERROR_UNSUPPORTED,
					       "%s: this program allocates with musl's bump allocator (%s: a static program that never frees, without mallocng), which heapdom does not walk",
					       hd_target_name(t), MUSL_SIMPLE_SYMBOL);
		hd_error_destroy(err);
	}
	const struct hd_module *m = find_musl_module(t);
	if (!m)
		m = static_exe(t);
	if (!m)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: musl's libc is not among the loaded modules and the program is not static",
				       hd_target_name(t));
	addr = scan_module(t, m);
	if (!addr)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "%s: no initialised mallocng context (__malloc_context) in the writable data of %s: musl's malloc was never used, or its state is damaged",
				       hd_target_name(t), base_name(m->name));
	if (!read_ctx(t, addr, ret->raw))
		return hd_error_create(HD_ERROR_FAULT,
				       "%s: the mallocng context at 0x%llx is unreadable",
				       hd_target_name(t), (unsigned long long)addr);
	ret->addr = addr;
	ret->method = "heuristic";
	if (!m->is_exe)
		libc_version(m->file, ret->version, sizeof(ret->version));
	snprintf(ret->how, sizeof(ret->how),
		 "context found in %s's data (its first meta area's check word is its secret)",
		 base_name(m->name));
	return NULL;
}

// glibc's malloc layouts by version, and how the walk decides which
// version made a heap: libc's DWARF, the shape of the data, libc's name or
// its version banner.
//
// Offsets are x86-64 (SIZE_SZ 8, MALLOC_ALIGNMENT 16 in every release),
// read from each release's malloc/malloc.c and malloc/arena.c:
// - malloc_state: {int mutex; int flags; fastbinsY[10]; top;
//   last_remainder; bins[254]; unsigned binmap[4]; next; next_free;
//   system_mem; max_system_mem} in 2.17-2.22; attached_threads before
//   system_mem from 2.23; int have_fastchunks after flags from 2.27;
//   fastbinsY and have_fastchunks removed in 2.43's development tree.
// - heap_info: {ar_ptr; prev; size; mprotect_size} (32 bytes); pagesize
//   added in 2.35 (48 bytes with its pad).
// - tcache_perthread_struct (2.26+): {char counts[64]; entries[64]}
//   (chunk 0x250); uint16_t counts from 2.30 (0x290); 2.42 keeps
//   uint16_t num_slots[76], the room left per bin, and 12 large bins
//   (0x300).
// - tcache_entry: {next} in 2.26-2.28; key = its tcache from 2.29; key =
//   the random tcache_key from 2.34. Safe-linking from 2.32.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heap/glibc/glibc_internal.h"

#define NO_TCACHE 0, 0, 0, 0, false
#define TCACHE_CHAR 1, 64, 64, 0x250, false
#define TCACHE_U16 2, 64, 128, 0x290, false
#define TCACHE_SLOTS 2, 76, 152, 0x300, true
// bins at 104: no have_fastchunks; bins at 112: have_fastchunks.
#define STATE_2_17 8, 10, 88, 104, 2152, 2168, 2184
#define STATE_2_23 8, 10, 88, 104, 2152, 2176, 2192
#define STATE_2_27 16, 10, 96, 112, 2160, 2184, 2200
#define STATE_2_43 0, 0, 8, 24, 2072, 2096, 2112

const struct glibc_version glibc_versions[] = {
	// 2.12-2.16 as built with PER_THREAD (the default from 2.15, and
	// RHEL 6's 2.12); without it next_free is absent, a layout this
	// table does not hold.
	{12, 22, STATE_2_17, 32, NO_TCACHE, GLIBC_KEY_NONE, false},
	{23, 25, STATE_2_23, 32, NO_TCACHE, GLIBC_KEY_NONE, false},
	{26, 26, STATE_2_23, 32, TCACHE_CHAR, GLIBC_KEY_NONE, false},
	{27, 28, STATE_2_27, 32, TCACHE_CHAR, GLIBC_KEY_NONE, false},
	{29, 29, STATE_2_27, 32, TCACHE_CHAR, GLIBC_KEY_TCACHE, false},
	{30, 31, STATE_2_27, 32, TCACHE_U16, GLIBC_KEY_TCACHE, false},
	{32, 33, STATE_2_27, 32, TCACHE_U16, GLIBC_KEY_TCACHE, true},
	{34, 34, STATE_2_27, 32, TCACHE_U16, GLIBC_KEY_RANDOM, true},
	{35, 41, STATE_2_27, 48, TCACHE_U16, GLIBC_KEY_RANDOM, true},
	{42, 42, STATE_2_27, 48, TCACHE_SLOTS, GLIBC_KEY_RANDOM, true},
	{43, 43, STATE_2_43, 48, TCACHE_SLOTS, GLIBC_KEY_RANDOM, true},
};
const size_t glibc_num_versions =
	sizeof(glibc_versions) / sizeof(glibc_versions[0]);

void glibc_layout_from_version(struct glibc_layout *lay,
			       const struct glibc_version *v)
{
	lay->off_fastbins = v->off_fastbins;
	lay->nfastbins = v->nfastbins;
	lay->off_top = v->off_top;
	lay->off_bins = v->off_bins;
	lay->nbins = 254;
	lay->off_next = v->off_next;
	lay->off_system_mem = v->off_system_mem;
	lay->state_size = v->state_size;
	lay->heap_off_ar_ptr = 0;
	lay->heap_off_prev = 8;
	lay->heap_off_size = 16;
	lay->heap_max_size = 64ULL << 20;
	lay->tcache_off_counts = 0;
	lay->tcache_count_size = v->tcache_count_size;
	lay->tcache_nbins = v->tcache_nbins;
	lay->tcache_off_entries = v->tcache_off_entries;
	lay->tcache_struct_chunk = v->tcache_struct_chunk;
	lay->tcache_slots = v->tcache_slots;
	lay->tcache_small_bins = 64;
}

uint32_t glibc_rows_matching_layout(const struct glibc_layout *lay)
{
	uint32_t mask = 0;
	for (size_t i = 0; i < glibc_num_versions; i++) {
		const struct glibc_version *v = &glibc_versions[i];
		if (v->off_bins != lay->off_bins || v->off_top != lay->off_top ||
		    v->off_next != lay->off_next ||
		    v->off_system_mem != lay->off_system_mem ||
		    v->state_size != lay->state_size ||
		    v->nfastbins != lay->nfastbins)
			continue;
		if (lay->heap_info_size && v->heap_info_size != lay->heap_info_size)
			continue;
		// DWARF without tcache_perthread_struct: a build without
		// tcache, which any row's data layout fits.
		if (lay->tcache_struct_chunk &&
		    (v->tcache_struct_chunk != lay->tcache_struct_chunk ||
		     v->tcache_slots != lay->tcache_slots))
			continue;
		mask |= 1u << i;
	}
	return mask;
}

bool glibc_narrow(struct glibc_walk *w, uint32_t mask)
{
	uint32_t left = w->candidates & mask;
	if (!left || left == w->candidates)
		return false;
	w->candidates = left;
	return true;
}

// The version in libc's name: libc-2.17.so (glibc before 2.34 installs
// libc.so.6 as a link to it, and a core's NT_FILE names the target).
static bool version_from_name(const char *path, unsigned *minor)
{
	const char *base = path ? strrchr(path, '/') : NULL;
	base = base ? base + 1 : path;
	unsigned maj, min;
	char rest[8];
	if (base && sscanf(base, "libc-%u.%u%7s", &maj, &min, rest) == 3 &&
	    maj == 2 && strncmp(rest, ".so", 3) == 0) {
		*minor = min;
		return true;
	}
	return false;
}

// The version in libc's banner ("GNU C Library (Debian GLIBC 2.36-9)
// stable release version 2.36.") if data[0..len) holds one.
static bool banner_in(const uint8_t *data, size_t len, unsigned *minor)
{
	static const char lib[] = "GNU C Library";
	static const char rel[] = "release version 2.";
	const uint8_t *p = data, *end = data + len;
	while ((p = memmem(p, (size_t)(end - p), lib, sizeof(lib) - 1))) {
		size_t span = (size_t)(end - p) < 256 ? (size_t)(end - p) : 256;
		const uint8_t *r = memmem(p, span, rel, sizeof(rel) - 1);
		unsigned min;
		if (r && r + sizeof(rel) + 2 <= end &&
		    sscanf((const char *)r + sizeof(rel) - 1, "%2u", &min) == 1) {
			*minor = min;
			return true;
		}
		p += sizeof(lib) - 1;
	}
	return false;
}

// The banner in the target's read-only memory: libc's if the target knows
// libc, any read-only mapping if it knows no module (a core without
// NT_FILE whose dumper kept file-backed text, as old gcores did).
static bool version_from_memory(struct glibc_walk *w,
				const struct hd_module *libc, unsigned *minor)
{
	if (!libc && hd_target_num_modules(w->t))
		return false;
	uint64_t budget = 256ULL << 20;
	for (size_t j = 0; j < hd_target_num_mappings(w->t); j++) {
		const struct hd_mapping *m = hd_target_mapping(w->t, j);
		uint64_t len = m->end - m->start;
		if (!m->readable || (m->prot & HD_PROT_WRITE) || len > budget ||
		    len > (64ULL << 20))
			continue;
		if (libc && (m->start < libc->start || m->start >= libc->end))
			continue;
		budget -= len;
		struct hd_view v;
		struct hd_error *err = hd_target_view(w->t, m->start, len, &v);
		if (err) {
			hd_error_destroy(err);
			continue;
		}
		bool found = banner_in(v.data, len, minor);
		hd_view_deinit(&v);
		if (found)
			return true;
	}
	return false;
}

// The banner in libc's .rodata, read from libc's file on this machine
// when the target found one with the core's build-id.
static bool version_from_banner(const char *file, unsigned *minor)
{
	FILE *f = file ? fopen(file, "rb") : NULL;
	if (!f)
		return false;
	static const char needle[] = "release version 2.";
	char buf[65536 + sizeof(needle)];
	size_t keep = 0, n;
	bool found = false;
	while (!found && (n = fread(buf + keep, 1, sizeof(buf) - keep, f)) > 0) {
		size_t len = keep + n;
		for (size_t i = 0; i + sizeof(needle) + 2 < len && !found; i++) {
			if (buf[i] != 'r' ||
			    memcmp(buf + i, needle, sizeof(needle) - 1) != 0)
				continue;
			unsigned min;
			if (sscanf(buf + i + sizeof(needle) - 1, "%u", &min) == 1) {
				*minor = min;
				found = true;
			}
		}
		keep = len < sizeof(needle) + 8 ? len : sizeof(needle) + 8;
		memmove(buf, buf + len - keep, keep);
	}
	fclose(f);
	return found;
}

static void append(char *buf, size_t size, const char *fmt, const char *s)
{
	size_t len = strlen(buf);
	if (len < size)
		snprintf(buf + len, size - len, fmt, s);
}

// The release libc's file name or banner names, and which said it; NULL
// if neither is at hand. The name first, then the banner in libc's file
// on this machine (same build-id as the target's, or the target would not
// have it), then in the target's memory (costlier through a debugger).
static const char *exact_version(struct glibc_walk *w, unsigned *minor)
{
	const struct hd_module *m = glibc_libc_module(w->t);
	if (m && version_from_name(m->name, minor))
		return "libc's file name";
	for (size_t j = 0; j < hd_target_num_mappings(w->t); j++)
		if (version_from_name(hd_target_mapping(w->t, j)->path, minor))
			return "libc's file name";
	if (m && version_from_banner(m->file, minor))
		return "libc's version banner";
	if (version_from_memory(w, m, minor))
		return "libc's version banner";
	return NULL;
}

void glibc_decide_version(struct glibc_walk *w)
{
	struct glibc_evidence *ev = &w->ev;
	char why[200] = "";
	// What the data says, each kept only if some row agrees with it (a
	// distribution may backport a feature, as RHEL 8 did safe-linking).
	if (ev->heap_info) {
		uint32_t m = 0;
		for (size_t i = 0; i < glibc_num_versions; i++)
			if (glibc_versions[i].heap_info_size == ev->heap_info)
				m |= 1u << i;
		if (glibc_narrow(w, m))
			append(why, sizeof(why), "%s",
			       ev->heap_info == 48 ? ", heap_info has pagesize"
						   : ", heap_info has no pagesize");
	}
	if (ev->entries) {
		uint32_t m = 0;
		enum glibc_tcache_key k =
			ev->keys_tcache == ev->entries ? GLIBC_KEY_TCACHE
			: ev->keys_same == ev->entries && ev->entries >= 2 &&
					ev->first_key
				? GLIBC_KEY_RANDOM
				: GLIBC_KEY_NONE;
		for (size_t i = 0; i < glibc_num_versions; i++) {
			enum glibc_tcache_key vk = glibc_versions[i].key;
			// One entry with a key that is not its tcache: the
			// random key, or an old entry's leftover bytes.
			bool ok = vk == k ||
				  (k == GLIBC_KEY_NONE && vk == GLIBC_KEY_RANDOM &&
				   !ev->keys_zero && ev->keys_tcache == 0);
			if (ok)
				m |= 1u << i;
		}
		if (glibc_narrow(w, m))
			append(why, sizeof(why), "%s",
			       k == GLIBC_KEY_TCACHE ? ", tcache keys point at their tcache"
			       : k == GLIBC_KEY_RANDOM ? ", tcache keys are one random value"
						       : ", tcache entries have no key");
	}
	if (ev->safe_votes) {
		uint32_t m = 0;
		for (size_t i = 0; i < glibc_num_versions; i++)
			if (glibc_versions[i].safe_linking == (ev->safe_votes > 0))
				m |= 1u << i;
		if (glibc_narrow(w, m))
			append(why, sizeof(why), "%s",
			       ev->safe_votes > 0 ? ", safe-linked lists"
						  : ", lists not safe-linked");
	}
	unsigned lo = 0, hi = 0;
	for (size_t i = 0; i < glibc_num_versions; i++) {
		if (!(w->candidates & (1u << i)))
			continue;
		if (!lo)
			lo = glibc_versions[i].lo;
		hi = glibc_versions[i].hi;
	}
	if (!lo) {
		// Only DWARF leads here (the data path keeps at least one
		// row): a release newer than the table, walked with its own
		// offsets; its name or banner may still say which.
		unsigned minor;
		const char *how = exact_version(w, &minor);
		if (how)
			snprintf(w->version, sizeof(w->version), "2.%u", minor);
		else
			snprintf(w->version, sizeof(w->version), "unknown");
		snprintf(w->version_source, sizeof(w->version_source),
			 "layout from libc's DWARF, which no release of 2.12-2.43 has%s%s",
			 how ? "; version from " : "", how ? how : "");
		return;
	}
	if (lo == hi)
		snprintf(w->version, sizeof(w->version), "2.%u", lo);
	else
		snprintf(w->version, sizeof(w->version), "2.%u-2.%u", lo, hi);
	const struct glibc_layout *lay = &w->lay;
	if (ev->from_dwarf) {
		snprintf(w->version_source, sizeof(w->version_source),
			 "layout from libc's DWARF%s", why);
	} else {
		snprintf(w->version_source, sizeof(w->version_source),
			 "%slayout from the data: bins at %llu%s%s%s",
			 ev->arena_by_symbol ? "main_arena by its symbol, " : "",
			 (unsigned long long)lay->off_bins,
			 lay->off_bins == 104
				 ? (lay->off_system_mem == 2168 ? ", no attached_threads"
								 : ", attached_threads")
				 : "",
			 !ev->tcache_chunk ? ", no tcache seen"
			 : lay->tcache_count_size == 1 ? ", tcache counts are bytes"
			 : lay->tcache_slots ? ", 76 tcache bins of free slots"
					     : ", tcache counts are 16-bit",
			 why);
	}
	// An exact version from libc's name or banner, if the layout agrees.
	unsigned minor = 0;
	const char *how = exact_version(w, &minor);
	if (!how)
		return;
	char note[128];
	if (minor >= lo && minor <= hi) {
		snprintf(w->version, sizeof(w->version), "2.%u", minor);
		snprintf(note, sizeof(note), "; 2.%u from %s", minor, how);
	} else {
		snprintf(note, sizeof(note),
			 "; %s says 2.%u, which this layout is not", how, minor);
	}
	append(w->version_source, sizeof(w->version_source), "%s", note);
}

// jemalloc's layouts per version, its size classes, and its version
// string. The offsets were read from jemalloc's sources (tag 5.3.0:
// include/jemalloc/internal/{edata,rtree,mutex,arena_structs,bin,base,
// cache_bin,tcache_structs,sc,bitmap}.h) for x86-64 (LG_VADDR 48, 4 KiB
// pages, 16-byte quantum) and the configuration Debian builds (statistics
// and profiling on, debug off); the walk checks them against the data.
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heap/jemalloc/jemalloc_internal.h"

const struct je_layout je_layout_5_3_0 = {
	.version = "5.3.0",
	.lg_page = 12, .lg_quantum = 4, .lg_vaddr = 48,
	.nsizes = 232, .nbins = 36, .tcache_nbins_max = 73,
	.arena_limit = 4095,
	.edata_size = 128, .edata_addr = 8, .edata_size_esn = 16,
	.edata_slab_bitmap = 64,
	.bitmap_groups = 8, .slab_maxregs = 512,
	// e_bits: arena 12 bits, slab, committed, pai, zeroed, guarded,
	// state 3 bits, szind 8 bits, nfree 10 bits, bin shard, is_head.
	.bits_arena_width = 12, .bits_slab_shift = 12, .bits_state_shift = 17,
	.bits_szind_shift = 20, .bits_szind_width = 8,
	.bits_nfree_shift = 28, .bits_nfree_width = 10,
	// rtree_t { base_t *base; malloc_mutex_t init_lock (112 bytes);
	// root[1 << 18] }, two levels of 18 key bits each.
	.rtree_base = 0, .rtree_root = 120,
	.rtree_bits0 = 18, .rtree_bits1 = 18,
	.edata_align = 128,
	.arena_size = 78952, .arena_tcache_ql = 10392, .arena_ind = 78928,
	.arena_base = 78936, .arena_bins = 78952, .arena_mapped = 48,
	.bin_size = 224, .bin_curregs = 136, .bin_curslabs = 176,
	.base_blocks = 160, .base_allocated = 3880, .base_resident = 3888,
	.base_mapped = 3896, .base_block_next = 8,
	.tslow_arena = 40, .tslow_dyn_alloc = 160, .tslow_tcache = 168,
	.tslow_size = 176,
	.tcache_bins = 8, .cache_bin_size = 24, .cache_bin_full = 18,
	.cache_bin_empty = 20,
};

// sc.c's classes: one tiny class (8), then the quantum's multiples up to
// 4 quanta, then groups of four per doubling, each step a quarter of the
// group's base.
uint64_t je_index2size(const struct je_layout *l, unsigned szind)
{
	if (szind >= l->nsizes)
		return 0;
	uint64_t q = 1ULL << l->lg_quantum;
	unsigned ntiny = l->lg_quantum - 3;
	if (szind < ntiny)
		return 8ULL << szind;
	szind -= ntiny;
	if (szind < 4)
		return q * (szind + 1);
	szind -= 4;
	unsigned g = szind / 4, k = szind % 4 + 1;
	if (g + l->lg_quantum + 2 >= 62)
		return 0;
	uint64_t base = (q * 4) << g;
	return base + k * (base >> 2);
}

static bool hex40(const char *p, const char *end)
{
	if (end - p < 40)
		return false;
	for (int i = 0; i < 40; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

// jemalloc's configure writes the version as "X.Y.Z-N-g<40 hex>" (the
// `version` mallctl, in .rodata): the first such string of the file.
bool je_find_version(const char *file, char *ret, size_t len)
{
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	struct stat st;
	bool found = false;
	if (fstat(fd, &st) == 0 && st.st_size > 64 &&
	    st.st_size < (1LL << 32)) {
		const char *m = mmap(NULL, (size_t)st.st_size, PROT_READ,
				     MAP_PRIVATE, fd, 0);
		if (m != MAP_FAILED) {
			const char *end = m + st.st_size;
			for (const char *p = m; p + 48 < end && !found;) {
				p = memmem(p, (size_t)(end - p), "-g", 2);
				if (!p)
					break;
				if (!hex40(p + 2, end) || (p + 42 < end && p[42])) {
					p += 2;
					continue;
				}
				// Back to the string's start: digits, dots, a dash.
				const char *s = p;
				while (s > m && s > p - 24 &&
				       ((s[-1] >= '0' && s[-1] <= '9') ||
					s[-1] == '.' || s[-1] == '-'))
					s--;
				int dots = 0;
				for (const char *c = s; c < p; c++)
					dots += *c == '.';
				if (dots == 2 && s[-1] == '\0' && s < p &&
				    s[0] >= '0' && s[0] <= '9') {
					snprintf(ret, len, "%.*s", (int)(p + 42 - s), s);
					found = true;
				}
				p += 2;
			}
			munmap((void *)m, (size_t)st.st_size);
		}
	}
	close(fd);
	return found;
}

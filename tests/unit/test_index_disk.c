// Unit test of the on-disk type index cache (core/types/index_disk.h and
// hd_index_cache_build).
//
// Usage: test_index_disk SAMPLE...
//
// Each SAMPLE is an ELF file with DWARF (type_sample.c, type_sample_cpp.cpp
// builds). libc's separate debug file is used too when it is installed.
// An index written and read back must equal the one built from the DWARF
// (every field, every name, and what the queries answer); a cache file
// truncated, damaged or made for another file must be refused; a damaged
// file whose checksums were made to fit must be refused or read without a
// fault, never followed out of bounds.
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "heapdom.h"
#include "types/index_cache.h"
#include "types/index_disk.h"
#include "types/type_index.h"
#include "util/elf_read.h"
#include "check_util.h"

static const char *samples[16];
static int num_samples;
static char tmpdir[] = "/tmp/test_index_disk.XXXXXX";

// Header offsets of the two checksums (docs/index-cache.md).
#define HEADER_SIZE 392
#define PAYLOAD_CRC_OFF 384
#define HEADER_CRC_OFF 388

static struct hd_type_index *build(const char *path)
{
	struct hd_type_index *ix = NULL;
	ck_assert_no_error(hd_type_index_build(path, &ix));
	return ix;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

// Every field, every name, and the queries' answers.
static void assert_equal(const struct hd_type_index *a,
			 const struct hd_type_index *b)
{
	ck_assert_uint_eq(a->num_types, b->num_types);
	ck_assert_uint_eq(a->num_members, b->num_members);
	ck_assert_uint_eq(a->num_variables, b->num_variables);
	static struct hd_ptr_slot sa[512], sb[512];
	char na[512], nb[512];
	for (size_t i = 0; i < a->num_types; i++) {
		const struct hd_type *x = &a->types[i], *y = &b->types[i];
		ck_assert_int_eq(x->kind, y->kind);
		ck_assert_msg(same_str(x->name, y->name), "type %zu's name", i);
		ck_assert_uint_eq(x->size, y->size);
		ck_assert_uint_eq(x->target, y->target);
		ck_assert_uint_eq(x->count, y->count);
		ck_assert_uint_eq(x->first_member, y->first_member);
		ck_assert_uint_eq(x->num_members, y->num_members);
		ck_assert_int_eq(x->declaration, y->declaration);
		ck_assert_int_eq(x->is_class, y->is_class);
		ck_assert_int_eq(x->is_char, y->is_char);
		ck_assert_int_eq(x->has_vptr, y->has_vptr);
		ck_assert_uint_eq(hd_type_strip(a, (uint32_t)i),
				  hd_type_strip(b, (uint32_t)i));
		hd_type_name(a, (uint32_t)i, na, sizeof(na));
		hd_type_name(b, (uint32_t)i, nb, sizeof(nb));
		ck_assert_str_eq(na, nb);
		if (x->name && (x->kind == HD_TYPE_STRUCT ||
				x->kind == HD_TYPE_UNION ||
				x->kind == HD_TYPE_TYPEDEF))
			ck_assert_uint_eq(hd_type_find_struct(a, x->name),
					  hd_type_find_struct(b, x->name));
		if (x->kind == HD_TYPE_STRUCT && !x->declaration) {
			size_t ta, tb;
			size_t n = hd_type_pointer_slots(a, (uint32_t)i, sa, 512, &ta);
			size_t m = hd_type_pointer_slots(b, (uint32_t)i, sb, 512, &tb);
			ck_assert_uint_eq(n, m);
			ck_assert_uint_eq(ta, tb);
			ck_assert(memcmp(sa, sb, n * sizeof(*sa)) == 0);
			hd_type_member_path(a, (uint32_t)i, x->size / 2, na, sizeof(na));
			hd_type_member_path(b, (uint32_t)i, x->size / 2, nb, sizeof(nb));
			ck_assert_str_eq(na, nb);
		}
	}
	for (size_t i = 0; i < a->num_members; i++) {
		const struct hd_member *x = &a->members[i], *y = &b->members[i];
		ck_assert(same_str(x->name, y->name));
		ck_assert_uint_eq(x->offset, y->offset);
		ck_assert_uint_eq(x->type, y->type);
		ck_assert_int_eq(x->is_base, y->is_base);
		ck_assert_int_eq(x->bitfield, y->bitfield);
	}
	for (size_t i = 0; i < a->num_variables; i++) {
		const struct hd_variable *x = &a->variables[i], *y = &b->variables[i];
		ck_assert(same_str(x->name, y->name));
		ck_assert_uint_eq(x->addr, y->addr);
		ck_assert_uint_eq(x->type, y->type);
	}
	ck_assert_uint_eq(hd_type_find_struct(a, "no_such_struct_anywhere"),
			  HD_TYPE_NONE);
	ck_assert_uint_eq(hd_type_find_struct(b, "no_such_struct_anywhere"),
			  HD_TYPE_NONE);
}

static uint8_t *slurp(const char *file, size_t *size)
{
	int fd = open(file, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	struct stat st;
	ck_assert_int_eq(fstat(fd, &st), 0);
	uint8_t *buf = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	close(fd);
	*size = (size_t)st.st_size;
	return buf;
}

static void spit(const char *file, const uint8_t *buf, size_t size)
{
	int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, size), (ssize_t)size);
	close(fd);
}

static void expect_error(struct hd_error *err, enum hd_error_code code,
			 const char *what)
{
	ck_assert_msg(err, "%s: accepted", what);
	ck_assert_msg(err->code == code, "%s: error %d (%s), not %d", what,
		      err->code, err->message, code);
	hd_error_destroy(err);
}

// Recomputes both checksums after a change, so that the structure checks
// behind them are what is tested.
static void fix_crcs(uint8_t *buf, size_t size)
{
	uint32_t c = (uint32_t)crc32_z(0, buf + HEADER_SIZE, size - HEADER_SIZE);
	memcpy(buf + PAYLOAD_CRC_OFF, &c, 4);
	memset(buf + HEADER_CRC_OFF, 0, 4);
	c = (uint32_t)crc32_z(0, buf, HEADER_SIZE);
	memcpy(buf + HEADER_CRC_OFF, &c, 4);
}

static void round_trip(const char *path)
{
	struct hd_type_index *fresh = build(path);
	struct hd_index_key key;
	ck_assert_no_error(hd_index_disk_key(path, NULL, &key));
	char file[4096];
	ck_assert(hd_index_disk_file(tmpdir, &key, file, sizeof(file)));
	ck_assert_no_error(hd_index_disk_write(fresh, &key, file));
	struct hd_type_index *back = NULL;
	ck_assert_no_error(hd_index_disk_read(file, &key, &back));
	assert_equal(fresh, back);
	hd_type_index_destroy(back);

	// Written twice, the same bytes: nothing uninitialised goes out.
	size_t size, size2;
	uint8_t *buf = slurp(file, &size);
	ck_assert_no_error(hd_index_disk_write(fresh, &key, file));
	uint8_t *buf2 = slurp(file, &size2);
	ck_assert_uint_eq(size, size2);
	ck_assert(memcmp(buf, buf2, size) == 0);
	free(buf2);
	hd_type_index_destroy(fresh);

	// Made for another file, another unit filter, another mtime.
	struct hd_index_key other = key;
	other.build_id[0] ^= 1;
	expect_error(hd_index_disk_read(file, &other, &back), HD_ERROR_MISMATCH,
		     "another build-id");
	other = key;
	strcpy(other.suffix, "malloc.c");
	expect_error(hd_index_disk_read(file, &other, &back), HD_ERROR_MISMATCH,
		     "another suffix");
	other = key;
	other.mtime_nsec++;
	expect_error(hd_index_disk_read(file, &other, &back), HD_ERROR_MISMATCH,
		     "another mtime");
	other = key;
	other.file_crc ^= 1;
	expect_error(hd_index_disk_read(file, &other, &back), HD_ERROR_MISMATCH,
		     "other bytes");
	other = key;
	other.lib_id[0] ^= 1;
	expect_error(hd_index_disk_read(file, &other, &back), HD_ERROR_MISMATCH,
		     "another libheapdom");

	// Written on a machine of the other byte order: its version reads
	// swapped, whatever else the checksums say.
	{
		uint8_t *swapped = malloc(size);
		memcpy(swapped, buf, size);
		uint32_t v;
		memcpy(&v, swapped + 8, 4);
		v = __builtin_bswap32(v);
		memcpy(swapped + 8, &v, 4);
		fix_crcs(swapped, size);
		struct hd_error *err = hd_index_disk_parse(swapped, size, &key, &back);
		ck_assert_msg(err && err->code == HD_ERROR_MISMATCH &&
				      strstr(err->message, "byte order"),
			      "a byte-swapped file: %s", err ? err->message : "accepted");
		ck_assert_ptr_null(back);
		hd_error_destroy(err);
		free(swapped);
	}

	// Truncated anywhere, or longer.
	size_t cuts[] = {0, 1, HEADER_SIZE - 1, HEADER_SIZE, HEADER_SIZE + 1,
			 size / 2, size - 1};
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		spit(file, buf, cuts[i]);
		expect_error(hd_index_disk_read(file, &key, &back),
			     HD_ERROR_FORMAT, "truncated");
		ck_assert_ptr_null(back);
	}
	uint8_t *longer = calloc(size + 8, 1);
	memcpy(longer, buf, size);
	spit(file, longer, size + 8);
	expect_error(hd_index_disk_read(file, &key, &back), HD_ERROR_FORMAT,
		     "longer");
	free(longer);

	// A flipped bit anywhere: a checksum (or the magic) catches it.
	for (size_t i = 0; i < 64; i++) {
		size_t at = (size_t)rand() % size;
		uint8_t bit = (uint8_t)(1u << (rand() % 8));
		buf[at] ^= bit;
		struct hd_error *err = hd_index_disk_parse(buf, size, &key, &back);
		ck_assert_msg(err && err->code == HD_ERROR_FORMAT,
			      "flipped byte %zu accepted", at);
		hd_error_destroy(err);
		buf[at] ^= bit;
	}
	free(buf);

	// Damage with matching checksums: refused, or read into an index
	// every query can walk without a fault.
	ck_assert_no_error(hd_index_disk_write(fresh = build(path), &key, file));
	hd_type_index_destroy(fresh);
	buf = slurp(file, &size);
	uint8_t *work = malloc(size);
	// libc's index is 13 MB: fewer rounds.
	int rounds = size > (4 << 20) ? 4 : 300;
	for (int round = 0; round < rounds; round++) {
		memcpy(work, buf, size);
		for (int k = 0; k < 1 + round % 4; k++) {
			size_t at = HEADER_SIZE + (size_t)rand() % (size - HEADER_SIZE);
			work[at] = (uint8_t)rand();
		}
		if (round % 10 == 0) {
			// A count in the header.
			size_t at = 320 + (size_t)(rand() % 64);
			work[at] = (uint8_t)rand();
		}
		fix_crcs(work, size);
		struct hd_error *err = hd_index_disk_parse(work, size, &key, &back);
		if (err) {
			ck_assert_ptr_null(back);
			hd_error_destroy(err);
			continue;
		}
		char name[256];
		static struct hd_ptr_slot slots[64];
		for (size_t i = 0; i < back->num_types; i++) {
			size_t total;
			hd_type_strip(back, (uint32_t)i);
			hd_type_name(back, (uint32_t)i, name, sizeof(name));
			hd_type_pointer_slots(back, (uint32_t)i, slots, 64, &total);
			hd_type_member_path(back, (uint32_t)i, 8, name, sizeof(name));
			if (back->types[i].name)
				hd_type_find_struct(back, back->types[i].name);
		}
		hd_type_index_destroy(back);
	}
	free(work);
	free(buf);
	unlink(file);
}

START_TEST(test_round_trip)
{
	for (int i = 0; i < num_samples; i++)
		round_trip(samples[i]);
}
END_TEST

// Garbage of every length up to a few headers: refused, no fault.
START_TEST(test_garbage)
{
	uint8_t buf[4 * HEADER_SIZE];
	struct hd_type_index *ix;
	for (int round = 0; round < 2000; round++) {
		size_t n = (size_t)rand() % sizeof(buf);
		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand();
		if (round % 2 && n >= 8)
			memcpy(buf, "HDTYIDX\n", 8);
		if (round % 4 == 1 && n >= HEADER_SIZE)
			fix_crcs(buf, n);
		struct hd_error *err = hd_index_disk_parse(buf, n, NULL, &ix);
		ck_assert_msg(err, "garbage of %zu bytes accepted", n);
		ck_assert_ptr_null(ix);
		hd_error_destroy(err);
	}
	// A file that is not there.
	expect_error(hd_index_disk_read("/nonexistent/x.idx", NULL, &ix),
		     HD_ERROR_NOT_FOUND, "missing file");
}
END_TEST

static size_t count_files(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "ls -1 %s 2>/dev/null | wc -l", dir);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (p) {
		if (fscanf(p, "%zu", &n) != 1)
			n = 0;
		pclose(p);
	}
	return n;
}

// hd_index_cache_build: written on the first build, read on the second,
// a damaged file rebuilt and replaced, nothing when off.
START_TEST(test_cache_build)
{
	const char *path = samples[0];
	char xdg[4096], dir[4200];
	snprintf(xdg, sizeof(xdg), "%s/xdg", tmpdir);
	snprintf(dir, sizeof(dir), "%s/heapdom", xdg);
	setenv("XDG_CACHE_HOME", xdg, 1);
	unsetenv("HEAPDOM_INDEX_CACHE");
	struct hd_type_index *fresh = build(path), *a, *b, *c;
	bool from_disk = true;
	ck_assert_no_error(hd_index_cache_build(path, NULL, &a, &from_disk));
	ck_assert(!from_disk);
	assert_equal(fresh, a);
	ck_assert_uint_eq(count_files(dir), 1);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &b, &from_disk));
	ck_assert(from_disk);
	assert_equal(fresh, b);

	// The filtered index is a file of its own.
	struct hd_type_index *fa, *fb, *ff;
	ck_assert_no_error(hd_type_index_build_filtered(path, "type_sample.c", &ff));
	ck_assert_no_error(hd_index_cache_build(path, "type_sample.c", &fa, &from_disk));
	ck_assert(!from_disk);
	ck_assert_no_error(hd_index_cache_build(path, "type_sample.c", &fb, &from_disk));
	ck_assert(from_disk);
	assert_equal(ff, fb);
	ck_assert_uint_eq(count_files(dir), 2);
	hd_type_index_destroy(fa);
	hd_type_index_destroy(fb);
	hd_type_index_destroy(ff);

	// Damage the file: it is rebuilt, and the rebuilt one is used next.
	struct hd_index_key key;
	char file[4400];
	ck_assert_no_error(hd_index_disk_key(path, NULL, &key));
	ck_assert(hd_index_disk_file(dir, &key, file, sizeof(file)));
	size_t size;
	uint8_t *buf = slurp(file, &size);
	buf[size - 3] ^= 0x40;
	spit(file, buf, size);
	free(buf);
	// ... and the warning names the file and what is wrong with it.
	char errfile[4400];
	snprintf(errfile, sizeof(errfile), "%s/stderr", tmpdir);
	fflush(stderr);
	int saved = dup(2);
	int efd = open(errfile, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(efd, 0);
	dup2(efd, 2);
	close(efd);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ck_assert(!from_disk);
	assert_equal(fresh, c);
	hd_type_index_destroy(c);
	size_t elen;
	char *said = (char *)slurp(errfile, &elen);
	said = realloc(said, elen + 1);
	said[elen] = '\0';
	ck_assert_msg(strstr(said, file) && strstr(said, "checksum"),
		      "the warning was: %s", said);
	free(said);
	unlink(errfile);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	ck_assert(from_disk);
	hd_type_index_destroy(c);

	// Over the budget: the least recently used files go, the one just
	// written stays. A sparse file stands for old, big indexes.
	char old[4400], other[4400];
	snprintf(old, sizeof(old), "%s/types-0000.idx", dir);
	snprintf(other, sizeof(other), "%s/notes.txt", dir);
	int fd = open(old, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)600 << 20), 0);
	close(fd);
	spit(other, (const uint8_t *)"x", 1);
	struct timespec times[2] = {{1000000000, 0}, {1000000000, 0}};
	ck_assert_int_eq(utimensat(AT_FDCWD, old, times, 0), 0);
	// A writer's temporary file, left by a process killed while
	// writing: removed when old, kept while it may still be written.
	char tmp_old[4400], tmp_new[4400];
	snprintf(tmp_old, sizeof(tmp_old), "%s/types-0001.idx.a1B2c3", dir);
	snprintf(tmp_new, sizeof(tmp_new), "%s/types-0002.idx.d4E5f6", dir);
	spit(tmp_old, (const uint8_t *)"x", 1);
	spit(tmp_new, (const uint8_t *)"x", 1);
	ck_assert_int_eq(utimensat(AT_FDCWD, tmp_old, times, 0), 0);
	unlink(file);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	ck_assert(!from_disk);
	hd_type_index_destroy(c);
	ck_assert_int_ne(access(tmp_old, F_OK), 0);
	ck_assert_int_eq(access(tmp_new, F_OK), 0);
	unlink(tmp_new);
	ck_assert_int_ne(access(old, F_OK), 0);
	ck_assert_int_eq(access(file, F_OK), 0);
	ck_assert_int_eq(access(other, F_OK), 0); // not ours: left alone
	unlink(other);

	// The same file rewritten in place, same size and mtime (as within
	// one clock tick): its bytes differ, so the cache file is not used.
	char copy[4400];
	snprintf(copy, sizeof(copy), "%s/sample-copy", tmpdir);
	buf = slurp(path, &size);
	spit(copy, buf, size);
	ck_assert_no_error(hd_index_cache_build(copy, NULL, &c, &from_disk));
	ck_assert(!from_disk);
	hd_type_index_destroy(c);
	ck_assert_no_error(hd_index_cache_build(copy, NULL, &c, &from_disk));
	ck_assert(from_disk);
	hd_type_index_destroy(c);
	struct stat st;
	ck_assert_int_eq(stat(copy, &st), 0);
	uint8_t *gcc = memmem(buf, size, "GCC: ", 5); // .comment
	ck_assert_ptr_nonnull(gcc);
	gcc[0] = 'g';
	spit(copy, buf, size);
	free(buf);
	struct timespec same[2] = {st.st_atim, st.st_mtim};
	ck_assert_int_eq(utimensat(AT_FDCWD, copy, same, 0), 0);
	ck_assert_no_error(hd_index_cache_build(copy, NULL, &c, &from_disk));
	ck_assert(!from_disk);
	assert_equal(fresh, c);
	hd_type_index_destroy(c);
	unlink(copy);

	// A directory others may write to is not used.
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	hd_type_index_destroy(c); // the copy's file replaced by path's
	ck_assert_int_eq(chmod(dir, 0777), 0);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	ck_assert(!from_disk);
	hd_type_index_destroy(c);
	ck_assert_int_eq(chmod(dir, 0700), 0);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	ck_assert(from_disk);
	hd_type_index_destroy(c);

	// Off: neither read nor written.
	setenv("HEAPDOM_INDEX_CACHE", "0", 1);
	unlink(file);
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	ck_assert(!from_disk);
	ck_assert_int_ne(access(file, F_OK), 0);
	assert_equal(fresh, c);
	hd_type_index_destroy(c);
	unsetenv("HEAPDOM_INDEX_CACHE");

	hd_type_index_destroy(a);
	hd_type_index_destroy(b);
	hd_type_index_destroy(fresh);
}
END_TEST

// Processes building the same index at once, into an empty cache: each
// gets the index, and one whole file is left (writes go through a temporary
// file renamed over the name), which the next process uses.
START_TEST(test_concurrent_writers)
{
	const char *path = samples[num_samples - 1]; // libc's when installed
	char xdg[4096], dir[4200];
	snprintf(xdg, sizeof(xdg), "%s/xdg-concurrent", tmpdir);
	snprintf(dir, sizeof(dir), "%s/heapdom", xdg);
	setenv("XDG_CACHE_HOME", xdg, 1);
	unsetenv("HEAPDOM_INDEX_CACHE");
	struct hd_type_index *fresh = build(path);
	enum { N = 4 };
	pid_t pids[N];
	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ck_assert_int_ge(pids[i], 0);
		if (pids[i] == 0) {
			struct hd_type_index *ix;
			bool from_disk;
			struct hd_error *err = hd_index_cache_build(path, NULL, &ix, &from_disk);
			_exit(err || ix->num_types != fresh->num_types ? 1 : 0);
		}
	}
	for (int i = 0; i < N; i++) {
		int status;
		ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
			      "writer %d ended with status 0x%x", i, status);
	}
	ck_assert_uint_eq(count_files(dir), 1); // no temporary file left
	struct hd_type_index *c;
	bool from_disk = false;
	ck_assert_no_error(hd_index_cache_build(path, NULL, &c, &from_disk));
	ck_assert(from_disk);
	assert_equal(fresh, c);
	hd_type_index_destroy(c);
	hd_type_index_destroy(fresh);
}
END_TEST

static int find_libc(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	if (!strstr(info->dlpi_name, "/libc.so"))
		return 0;
	snprintf(arg, 4096, "%s", info->dlpi_name);
	return 1;
}

// libc's separate debug file, when installed.
static const char *libc_debug(void)
{
	static char lib[4096], path[4096];
	struct hd_elf_info info;
	if (!dl_iterate_phdr(find_libc, lib))
		return NULL;
	struct hd_error *err = hd_elf_read_info(lib, &info);
	if (err || info.build_id_len < 2) {
		hd_error_destroy(err);
		return NULL;
	}
	int off = snprintf(path, sizeof(path), "/usr/lib/debug/.build-id/%02x/",
			   info.build_id[0]);
	for (size_t i = 1; i < info.build_id_len; i++)
		off += snprintf(path + off, sizeof(path) - (size_t)off, "%02x",
				info.build_id[i]);
	snprintf(path + off, sizeof(path) - (size_t)off, ".debug");
	return access(path, R_OK) == 0 ? path : NULL;
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc && num_samples < 15; i++)
		samples[num_samples++] = argv[i];
	const char *libc = libc_debug();
	if (libc)
		samples[num_samples++] = libc;
	else
		fprintf(stderr, "test_index_disk: libc's debug file not installed, not used\n");
	if (num_samples == 0) {
		fprintf(stderr, "usage: test_index_disk SAMPLE...\n");
		return 2;
	}
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 2;
	}
	srand(1);
	Suite *s = suite_create("index_disk");
	TCase *tc = tcase_create("index_disk");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_cache_build);
	tcase_add_test(tc, test_concurrent_writers);
	suite_add_tcase(s, tc);
	int failed = hd_run_suite(s);
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "test_index_disk: could not remove %s\n", tmpdir);
	return failed ? 1 : 0;
}

// The on-disk form of a type index: see index_disk.h and
// docs/index-cache.md for the format.
//
// A file is one header and one payload. The header says what the index was
// made from (the key) and how many records of each kind follow; both parts
// carry a CRC-32. Records have fixed sizes and native byte order (the
// header's magic, version and record sizes reject a file from another
// layout); names are offsets into a string table at the end. Reading
// checks every count, id and name offset before anything points into the
// data, so a damaged file is rejected, never followed.
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "heapdom.h"
#include "types/index_disk.h"
#include "types/type_index_impl.h"
#include "util/elf_read.h"

#define MAGIC "HDTYIDX\n"
// Bump when the meaning of a field changes; the record sizes and
// libheapdom's build-id catch most other changes by themselves.
#define FORMAT_VERSION 1
// Bigger files are not ours (libc's index is about 15 MB).
#define MAX_FILE_SIZE (UINT64_C(1) << 31)

struct disk_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t type_size, member_size, variable_size, file_crc;
	uint8_t build_id[64];
	uint32_t build_id_len;
	uint8_t lib_id[64];
	uint32_t lib_id_len;
	uint64_t file_size;
	int64_t mtime_sec, mtime_nsec;
	char suffix[128];
	uint64_t num_types, num_members, num_variables, num_decl_defs,
		num_fn_returns, names_cap, names_len, strings_size;
	uint32_t payload_crc, header_crc;
};
_Static_assert(sizeof(struct disk_header) == 392, "no hidden padding");

// Names: 0 for none, else 1 + the offset in the string table.
struct disk_type {
	uint64_t size, count;
	uint32_t name, target, first_member, num_members;
	uint8_t kind, flags, bits, pad[5];
};
_Static_assert(sizeof(struct disk_type) == 40, "no hidden padding");

enum { BIT_DECL = 1, BIT_CLASS = 2, BIT_CHAR = 4, BIT_VPTR = 8,
       BIT_BASE = 1, BIT_BITFIELD = 2 };

struct disk_member {
	uint64_t offset;
	uint32_t name, type;
	uint8_t bits, pad[7];
};
_Static_assert(sizeof(struct disk_member) == 24, "no hidden padding");

struct disk_variable {
	uint64_t addr;
	uint32_t name, type;
};
_Static_assert(sizeof(struct disk_variable) == 16, "no hidden padding");

// ---------------------------------------------------------------- key

struct lib_id {
	uint8_t id[64];
	size_t len;
};

static struct lib_id lib_id;
static pthread_once_t lib_id_once = PTHREAD_ONCE_INIT;

// The build-id of the object (libheapdom.so, or the program it is linked
// into) that holds this code.
static int find_lib_id(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	uintptr_t self = (uintptr_t)arg;
	bool ours = false;
	for (size_t i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
		if (ph->p_type == PT_LOAD && self >= lo && self - lo < ph->p_memsz)
			ours = true;
	}
	if (!ours)
		return 0;
	for (size_t i = 0; i < info->dlpi_phnum && !lib_id.len; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_NOTE)
			lib_id.len = hd_elf_find_build_id(
				(const uint8_t *)(info->dlpi_addr + ph->p_vaddr),
				ph->p_filesz, lib_id.id, sizeof(lib_id.id));
	}
	return 1;
}

static void read_lib_id(void)
{
	dl_iterate_phdr(find_lib_id, (void *)(uintptr_t)read_lib_id);
	if (lib_id.len > sizeof(lib_id.id))
		lib_id.len = 0;
}

struct hd_error *hd_index_disk_key(const char *path, const char *cu_suffix,
				   struct hd_index_key *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (!cu_suffix)
		cu_suffix = "";
	if (strlen(cu_suffix) >= sizeof(ret->suffix))
		return hd_error_create(HD_ERROR_INVALID,
				       "unit name suffix too long to cache");
	strcpy(ret->suffix, cu_suffix);
	pthread_once(&lib_id_once, read_lib_id);
	if (!lib_id.len)
		return hd_error_create(HD_ERROR_NOT_FOUND,
				       "libheapdom has no build-id");
	memcpy(ret->lib_id, lib_id.id, lib_id.len);
	ret->lib_id_len = (uint32_t)lib_id.len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hd_error_os(errno, path, "cannot open");
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return hd_error_os(e, path, "cannot stat");
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return hd_error_file(HD_ERROR_NOT_FOUND, path,
				     "not a regular file: not cached");
	}
	ret->file_size = (uint64_t)st.st_size;
	ret->mtime_sec = st.st_mtim.tv_sec;
	ret->mtime_nsec = st.st_mtim.tv_nsec;
	// The whole file's CRC too: a file rewritten in place keeps its
	// build-id and size, and within a clock tick its mtime. A few
	// milliseconds for libc's debug file, a fraction of its index's build.
	ret->file_crc = crc32_z(0, NULL, 0);
	// Read, not mapped: a mapping of an ELF file in this process would be
	// inherited by a fork's child analysing itself, whose module list is
	// read from its mappings.
	size_t chunk = 1 << 20;
	uint8_t *buf = malloc(chunk);
	if (!buf) {
		close(fd);
		return &hd_error_no_memory;
	}
	for (off_t off = 0; off < st.st_size;) {
		ssize_t r = pread(fd, buf, chunk, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return hd_error_os(e, path, "cannot read");
		}
		ret->file_crc = (uint32_t)crc32_z(ret->file_crc, buf, (size_t)r);
		off += r;
	}
	free(buf);
	close(fd);
	struct hd_elf_info info;
	struct hd_error *err = hd_elf_read_info(path, &info);
	if (err)
		return err;
	if (!info.build_id_len || info.build_id_len > sizeof(ret->build_id))
		return hd_error_file(HD_ERROR_NOT_FOUND, path, "no build-id");
	memcpy(ret->build_id, info.build_id, info.build_id_len);
	ret->build_id_len = (uint32_t)info.build_id_len;
	return NULL;
}

bool hd_index_disk_file(const char *dir, const struct hd_index_key *key,
			char *buf, size_t len)
{
	char hex[2 * sizeof(key->build_id) + 1];
	for (uint32_t i = 0; i < key->build_id_len && i < sizeof(key->build_id); i++)
		snprintf(hex + 2 * i, 3, "%02x", key->build_id[i]);
	hex[2 * (key->build_id_len < sizeof(key->build_id) ? key->build_id_len
							    : sizeof(key->build_id))] = '\0';
	int n;
	if (key->suffix[0]) {
		// The suffix may hold '/': its FNV-1a hash names the file,
		// the header keeps it whole.
		uint32_t h = 2166136261u;
		for (const char *s = key->suffix; *s; s++)
			h = (h ^ (unsigned char)*s) * 16777619u;
		n = snprintf(buf, len, "%s/types-%s-%08x.idx", dir, hex, h);
	} else {
		n = snprintf(buf, len, "%s/types-%s.idx", dir, hex);
	}
	return n > 0 && (size_t)n < len;
}

static bool key_matches(const struct disk_header *h,
			const struct hd_index_key *key)
{
	return h->build_id_len == key->build_id_len &&
	       memcmp(h->build_id, key->build_id, sizeof(h->build_id)) == 0 &&
	       h->lib_id_len == key->lib_id_len &&
	       memcmp(h->lib_id, key->lib_id, sizeof(h->lib_id)) == 0 &&
	       h->file_size == key->file_size &&
	       h->file_crc == key->file_crc &&
	       h->mtime_sec == key->mtime_sec &&
	       h->mtime_nsec == key->mtime_nsec &&
	       memcmp(h->suffix, key->suffix, sizeof(h->suffix)) == 0;
}

static uint32_t crc(const void *p, size_t n)
{
	return (uint32_t)crc32_z(crc32_z(0, NULL, 0), p, n);
}

static uint32_t header_crc(const struct disk_header *h)
{
	struct disk_header copy = *h;
	copy.header_crc = 0;
	return crc(&copy, sizeof(copy));
}

// -------------------------------------------------------------- writing

struct chunk_ref {
	const char *data;
	size_t used, base; // base: its offset in the string table
};

static int cmp_chunk(const void *a, const void *b)
{
	const struct chunk_ref *x = a, *y = b;
	return x->data < y->data ? -1 : x->data > y->data;
}

struct strings {
	struct chunk_ref *chunks;
	size_t n;
	bool bad; // a name outside the pool: the index is not written
};

static uint32_t name_ref(struct strings *s, const char *name)
{
	if (!name)
		return 0;
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct chunk_ref *c = &s->chunks[mid];
		if (name < c->data)
			hi = mid;
		else if (name >= c->data + c->used)
			lo = mid + 1;
		else {
			uint64_t off = c->base + (size_t)(name - c->data);
			if (off >= UINT32_MAX - 1) {
				s->bad = true;
				return 0;
			}
			return (uint32_t)off + 1;
		}
	}
	s->bad = true;
	return 0;
}

static bool write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return false;
		b += w;
		n -= (size_t)w;
	}
	return true;
}

struct hd_error *hd_index_disk_write(const struct hd_type_index *ix,
				     const struct hd_index_key *key,
				     const char *file)
{
	const struct impl *im = ix->impl;
	struct strings s = {0};
	for (const struct pool_chunk *c = im->pool; c; c = c->next)
		s.n++;
	s.chunks = calloc(s.n ? s.n : 1, sizeof(*s.chunks));
	if (!s.chunks)
		return &hd_error_no_memory;
	size_t strings_size = 0, i = 0;
	for (const struct pool_chunk *c = im->pool; c; c = c->next)
		s.chunks[i++] = (struct chunk_ref){c->data, c->used, 0};
	qsort(s.chunks, s.n, sizeof(*s.chunks), cmp_chunk);
	for (i = 0; i < s.n; i++) {
		s.chunks[i].base = strings_size;
		strings_size += s.chunks[i].used;
	}

	struct disk_header h = {
		.version = FORMAT_VERSION,
		.header_size = sizeof(h),
		.type_size = sizeof(struct disk_type),
		.member_size = sizeof(struct disk_member),
		.variable_size = sizeof(struct disk_variable),
		.build_id_len = key->build_id_len,
		.lib_id_len = key->lib_id_len,
		.file_size = key->file_size,
		.file_crc = key->file_crc,
		.mtime_sec = key->mtime_sec,
		.mtime_nsec = key->mtime_nsec,
		.num_types = ix->num_types,
		.num_members = ix->num_members,
		.num_variables = ix->num_variables,
		.num_decl_defs = im->num_decl_defs,
		.num_fn_returns = im->num_fn_returns,
		.names_cap = im->names.cap,
		.names_len = im->names.len,
		.strings_size = strings_size,
	};
	memcpy(h.magic, MAGIC, sizeof(h.magic));
	memcpy(h.build_id, key->build_id, sizeof(h.build_id));
	memcpy(h.lib_id, key->lib_id, sizeof(h.lib_id));
	memcpy(h.suffix, key->suffix, sizeof(h.suffix));

	size_t payload = ix->num_types * sizeof(struct disk_type) +
			 ix->num_members * sizeof(struct disk_member) +
			 ix->num_variables * sizeof(struct disk_variable) +
			 (im->num_decl_defs + im->num_fn_returns) *
				 sizeof(struct id_pair) +
			 im->names.cap * sizeof(struct name_entry) + strings_size;
	uint8_t *buf = calloc(payload ? payload : 1, 1);
	if (!buf) {
		free(s.chunks);
		return &hd_error_no_memory;
	}
	uint8_t *p = buf;
	for (i = 0; i < ix->num_types; i++, p += sizeof(struct disk_type)) {
		const struct hd_type *t = &ix->types[i];
		struct disk_type d = {
			.size = t->size,
			.count = t->count,
			.name = name_ref(&s, t->name),
			.target = t->target,
			.first_member = t->first_member,
			.num_members = t->num_members,
			.kind = (uint8_t)t->kind,
			.flags = im->flags[i],
			.bits = (uint8_t)((t->declaration ? BIT_DECL : 0) |
					  (t->is_class ? BIT_CLASS : 0) |
					  (t->is_char ? BIT_CHAR : 0) |
					  (t->has_vptr ? BIT_VPTR : 0)),
		};
		memcpy(p, &d, sizeof(d));
	}
	for (i = 0; i < ix->num_members; i++, p += sizeof(struct disk_member)) {
		const struct hd_member *m = &ix->members[i];
		struct disk_member d = {
			.offset = m->offset,
			.name = name_ref(&s, m->name),
			.type = m->type,
			.bits = (uint8_t)((m->is_base ? BIT_BASE : 0) |
					  (m->bitfield ? BIT_BITFIELD : 0)),
		};
		memcpy(p, &d, sizeof(d));
	}
	for (i = 0; i < ix->num_variables; i++, p += sizeof(struct disk_variable)) {
		const struct hd_variable *v = &ix->variables[i];
		struct disk_variable d = {
			.addr = v->addr,
			.name = name_ref(&s, v->name),
			.type = v->type,
		};
		memcpy(p, &d, sizeof(d));
	}
	if (im->num_decl_defs)
		memcpy(p, im->decl_defs, im->num_decl_defs * sizeof(struct id_pair));
	p += im->num_decl_defs * sizeof(struct id_pair);
	if (im->num_fn_returns)
		memcpy(p, im->fn_returns, im->num_fn_returns * sizeof(struct id_pair));
	p += im->num_fn_returns * sizeof(struct id_pair);
	if (im->names.cap)
		memcpy(p, im->names.slots, im->names.cap * sizeof(struct name_entry));
	p += im->names.cap * sizeof(struct name_entry);
	for (i = 0; i < s.n; i++) {
		memcpy(p, s.chunks[i].data, s.chunks[i].used);
		p += s.chunks[i].used;
	}
	free(s.chunks);
	if (s.bad) {
		free(buf);
		return hd_error_create(HD_ERROR_UNSUPPORTED,
				       "a type name outside the index's string pool");
	}
	h.payload_crc = crc(buf, payload);
	h.header_crc = header_crc(&h);

	size_t len = strlen(file);
	char *tmp = malloc(len + 8);
	if (!tmp) {
		free(buf);
		return &hd_error_no_memory;
	}
	memcpy(tmp, file, len);
	memcpy(tmp + len, ".XXXXXX", 8);
	struct hd_error *err = NULL;
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		err = hd_error_os(errno, file, "cannot create the index cache file");
	} else {
		bool ok = write_all(fd, &h, sizeof(h)) && write_all(fd, buf, payload);
		int saved = errno;
		if (close(fd) != 0 && ok) {
			ok = false;
			saved = errno;
		}
		if (ok && rename(tmp, file) != 0) {
			ok = false;
			saved = errno;
		}
		if (!ok) {
			err = hd_error_os(saved, file,
					  "cannot write the index cache file");
			unlink(tmp);
		}
	}
	free(tmp);
	free(buf);
	return err;
}

// -------------------------------------------------------------- reading

static struct hd_error *corrupt(const char *what)
{
	return hd_error_create(HD_ERROR_FORMAT, "index cache file: %s", what);
}

static bool id_ok(uint32_t id, uint64_t n)
{
	return id == HD_TYPE_NONE || id < n;
}

// A name reference, checked: the table ends with a NUL (checked once), so
// any offset inside it starts a terminated string.
static bool name_ok(uint32_t ref, const char *strings, uint64_t size,
		    const char **ret)
{
	if (ref == 0) {
		*ret = NULL;
		return true;
	}
	if (ref - 1 >= size)
		return false;
	*ret = strings + (ref - 1);
	return true;
}

static struct hd_error *parse_payload(const struct disk_header *h,
				      const uint8_t *p,
				      struct hd_type_index *ix,
				      struct impl *im)
{
	uint64_t nt = h->num_types;
	ix->types = calloc(nt ? nt : 1, sizeof(*ix->types));
	ix->members = calloc(h->num_members ? h->num_members : 1,
			     sizeof(*ix->members));
	ix->variables = calloc(h->num_variables ? h->num_variables : 1,
			       sizeof(*ix->variables));
	im->flags = calloc(nt ? nt : 1, 1);
	im->decl_defs = calloc(h->num_decl_defs ? h->num_decl_defs : 1,
			       sizeof(struct id_pair));
	im->fn_returns = calloc(h->num_fn_returns ? h->num_fn_returns : 1,
				sizeof(struct id_pair));
	if (h->names_cap)
		im->names.slots = calloc(h->names_cap, sizeof(struct name_entry));
	im->pool = malloc(sizeof(*im->pool) + (h->strings_size ? h->strings_size : 1));
	if (im->pool)
		im->pool->next = NULL;
	if (!ix->types || !ix->members || !ix->variables || !im->flags ||
	    !im->decl_defs || !im->fn_returns || !im->pool ||
	    (h->names_cap && !im->names.slots))
		return &hd_error_no_memory;

	// The string table is the payload's tail.
	uint64_t strings_off =
		nt * sizeof(struct disk_type) +
		h->num_members * sizeof(struct disk_member) +
		h->num_variables * sizeof(struct disk_variable) +
		(h->num_decl_defs + h->num_fn_returns) * sizeof(struct id_pair) +
		h->names_cap * sizeof(struct name_entry);
	im->pool->used = im->pool->cap = h->strings_size;
	memcpy(im->pool->data, p + strings_off, h->strings_size);
	const char *strings = im->pool->data;
	if (h->strings_size && strings[h->strings_size - 1] != '\0')
		return corrupt("the string table is not terminated");

	for (uint64_t i = 0; i < nt; i++, p += sizeof(struct disk_type)) {
		struct disk_type d;
		memcpy(&d, p, sizeof(d));
		struct hd_type *t = &ix->types[i];
		if (d.kind > HD_TYPE_OTHER || !id_ok(d.target, nt) ||
		    (uint64_t)d.first_member + d.num_members > h->num_members ||
		    !name_ok(d.name, strings, h->strings_size, &t->name))
			return corrupt("a type is out of range");
		t->kind = d.kind;
		t->size = d.size;
		t->target = d.target;
		t->count = d.count;
		t->first_member = d.first_member;
		t->num_members = d.num_members;
		t->declaration = d.bits & BIT_DECL;
		t->is_class = d.bits & BIT_CLASS;
		t->is_char = d.bits & BIT_CHAR;
		t->has_vptr = d.bits & BIT_VPTR;
		im->flags[i] = d.flags;
	}
	for (uint64_t i = 0; i < h->num_members; i++, p += sizeof(struct disk_member)) {
		struct disk_member d;
		memcpy(&d, p, sizeof(d));
		struct hd_member *m = &ix->members[i];
		if (!id_ok(d.type, nt) ||
		    !name_ok(d.name, strings, h->strings_size, &m->name))
			return corrupt("a member is out of range");
		m->offset = d.offset;
		m->type = d.type;
		m->is_base = d.bits & BIT_BASE;
		m->bitfield = d.bits & BIT_BITFIELD;
	}
	for (uint64_t i = 0; i < h->num_variables; i++, p += sizeof(struct disk_variable)) {
		struct disk_variable d;
		memcpy(&d, p, sizeof(d));
		struct hd_variable *v = &ix->variables[i];
		if (!id_ok(d.type, nt) ||
		    !name_ok(d.name, strings, h->strings_size, &v->name))
			return corrupt("a variable is out of range");
		v->addr = d.addr;
		v->type = d.type;
	}
	struct {
		struct id_pair *pairs;
		uint64_t n;
	} lists[] = {{im->decl_defs, h->num_decl_defs},
		     {im->fn_returns, h->num_fn_returns}};
	for (size_t l = 0; l < 2; l++) {
		if (lists[l].n)
			memcpy(lists[l].pairs, p, lists[l].n * sizeof(struct id_pair));
		p += lists[l].n * sizeof(struct id_pair);
		for (uint64_t i = 0; i < lists[l].n; i++)
			if (lists[l].pairs[i].from >= nt ||
			    !id_ok(lists[l].pairs[i].to, nt))
				return corrupt("a type pair is out of range");
	}
	im->num_decl_defs = h->num_decl_defs;
	im->num_fn_returns = h->num_fn_returns;
	uint64_t used = 0;
	if (h->names_cap)
		memcpy(im->names.slots, p, h->names_cap * sizeof(struct name_entry));
	for (uint64_t i = 0; i < h->names_cap; i++) {
		uint32_t id = im->names.slots[i].id;
		if (id == HD_TYPE_NONE)
			continue;
		// Lookups compare the type's name: it must have one.
		if (id >= nt || !ix->types[id].name)
			return corrupt("a name map entry is out of range");
		used++;
	}
	// Lookups stop at an empty slot: the map must have one.
	if (used != h->names_len || (h->names_cap && used >= h->names_cap))
		return corrupt("the name map's count is wrong");
	im->names.cap = h->names_cap;
	im->names.len = h->names_len;
	ix->num_types = nt;
	ix->num_members = h->num_members;
	ix->num_variables = h->num_variables;
	return NULL;
}

struct hd_error *hd_index_disk_parse(const uint8_t *data, size_t size,
				     const struct hd_index_key *key,
				     struct hd_type_index **ret)
{
	*ret = NULL;
	struct disk_header h;
	if (size < sizeof(h))
		return corrupt("shorter than its header");
	memcpy(&h, data, sizeof(h));
	if (memcmp(h.magic, MAGIC, sizeof(h.magic)) != 0)
		return corrupt("not a heapdom index cache file");
	if (header_crc(&h) != h.header_crc)
		return corrupt("the header's checksum is wrong");
	if (h.version == __builtin_bswap32(FORMAT_VERSION))
		return hd_error_create(HD_ERROR_MISMATCH,
				       "index cache file: written on a machine of the other byte order");
	if (h.version != FORMAT_VERSION || h.header_size != sizeof(h) ||
	    h.type_size != sizeof(struct disk_type) ||
	    h.member_size != sizeof(struct disk_member) ||
	    h.variable_size != sizeof(struct disk_variable))
		return hd_error_create(HD_ERROR_MISMATCH,
				       "index cache file: format version %u, not %u",
				       h.version, FORMAT_VERSION);
	if (key && !key_matches(&h, key))
		return hd_error_create(HD_ERROR_MISMATCH,
				       "index cache file: made from another file or by another libheapdom");
	// Every id is 32 bits (HD_TYPE_NONE excluded); the map's size is a
	// power of two. Bounded so the size sum below cannot overflow.
	const uint64_t max = UINT32_MAX - 1;
	if (h.num_types > max || h.num_members > max ||
	    h.num_variables > max || h.num_decl_defs > max ||
	    h.num_fn_returns > max || h.names_cap > max ||
	    h.strings_size > max || h.names_len > h.names_cap ||
	    (h.names_cap & (h.names_cap - 1)) != 0)
		return corrupt("a count is out of range");
	uint64_t payload = h.num_types * sizeof(struct disk_type) +
			   h.num_members * sizeof(struct disk_member) +
			   h.num_variables * sizeof(struct disk_variable) +
			   (h.num_decl_defs + h.num_fn_returns) *
				   sizeof(struct id_pair) +
			   h.names_cap * sizeof(struct name_entry) +
			   h.strings_size;
	if (payload != size - sizeof(h))
		return corrupt(payload > size - sizeof(h)
				       ? "truncated"
				       : "longer than its header says");
	const uint8_t *p = data + sizeof(h);
	if (crc(p, payload) != h.payload_crc)
		return corrupt("the data's checksum is wrong");

	struct hd_type_index *ix = calloc(1, sizeof(*ix));
	struct impl *im = calloc(1, sizeof(*im));
	if (!ix || !im) {
		free(ix);
		free(im);
		return &hd_error_no_memory;
	}
	ix->impl = im;
	struct hd_error *err = parse_payload(&h, p, ix, im);
	if (err) {
		hd_type_index_destroy(ix);
		return err;
	}
	*ret = ix;
	return NULL;
}

struct hd_error *hd_index_disk_read(const char *file,
				    const struct hd_index_key *key,
				    struct hd_type_index **ret)
{
	*ret = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT
			       ? hd_error_file(HD_ERROR_NOT_FOUND, file,
					       "no index cache file")
			       : hd_error_os(errno, file, "cannot open");
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > MAX_FILE_SIZE) {
		close(fd);
		return hd_error_file(HD_ERROR_FORMAT, file,
				     "not an index cache file");
	}
	size_t size = (size_t)st.st_size;
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf) {
		close(fd);
		return &hd_error_no_memory;
	}
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	struct hd_error *err = hd_index_disk_parse(buf, got, key, ret);
	free(buf);
	return err;
}

// Walks in the libstdc++ framework module: the validation and recording
// every walker uses, and the containers that keep their elements in
// buffers: std::vector, std::basic_string and std::deque. Each walker
// fills c->blocks and c->elems, or sets w->why when the container does
// not look like gcc 12's.
#include <stdio.h>
#include <string.h>

#include "frameworks/libstdcxx_internal.h"
#include "semantic/fw_fast.h"

// The used heap block starting at p with at least need usable bytes.
bool stl_block_at(struct hd_fw *fw, uint64_t p, uint64_t need, uint32_t *v,
		  uint64_t *usable)
{
	return hd_fw_used_block_at(fw, p, need, v, usable);
}

struct hd_error *stl_own(struct ctx *c, uint32_t v, uint64_t fwb, int name)
{
	struct hd_error *err = stl_grow((void **)&c->blocks, &c->cap_blocks,
					c->num_blocks, sizeof(*c->blocks));
	if (err)
		return err;
	c->blocks[c->num_blocks++] = (struct owned){ fwb, v, (uint8_t)name };
	return NULL;
}

void stl_name_node(struct ctx *c, const char *tmpl)
{
	if (c->short_elem)
		c->node = (struct name_spec){ HOW_NODE, tmpl, 0 };
}

// A pointer type as the DWARF typing writes it: "Item *", "char **"
// (template arguments spell it "Item*").
static void pointer_spelling(const char *type, char *buf, size_t len)
{
	size_t n = strlen(type), stars = 0;
	while (stars < n && type[n - 1 - stars] == '*')
		stars++;
	if (stars && stars < n && type[n - 1 - stars] != ' ')
		snprintf(buf, len, "%.*s %s", (int)(n - stars), type, type + n - stars);
	else
		snprintf(buf, len, "%s", type);
}

void stl_name_buffer(struct ctx *c, const char *elem, uint64_t n)
{
	if (elem)
		c->buffer = (struct name_spec){ HOW_ELEMS, elem, n };
}

void stl_name_render(const struct ctx *c, const struct name_spec *spec,
		     char *buf)
{
	char e[480];
	switch (spec->how) {
	case HOW_NODE:
		snprintf(buf, 512, "%s<%s>", spec->a, c->short_elem);
		break;
	case HOW_HASH_NODE:
		snprintf(buf, 512, "std::__detail::_Hash_node<%s, %s>",
			 c->short_elem, spec->n ? "true" : "false");
		break;
	case HOW_ELEMS:
		pointer_spelling(spec->a, e, sizeof(e));
		snprintf(buf, 512, "%s[%llu]", e, (unsigned long long)spec->n);
		break;
	case HOW_LITERAL:
		snprintf(buf, 512, "%s", spec->a);
		break;
	case HOW_STRING:
		snprintf(buf, 512, "%s", c->node_name);
		break;
	default:
		buf[0] = '\0';
		break;
	}
}

struct hd_error *stl_elem(struct ctx *c, uint64_t addr, uint32_t holder)
{
	struct hd_error *err = stl_grow((void **)&c->elems, &c->cap_elems,
					c->num_elems, sizeof(*c->elems));
	if (err)
		return err;
	c->elems[c->num_elems++] = (struct element){ addr, holder };
	return NULL;
}

struct hd_error *stl_push(struct ctx *c, uint64_t x, uint32_t v)
{
	struct hd_error *err = stl_grow((void **)&c->stack, &c->cap_stack,
					c->num_stack, sizeof(*c->stack));
	if (err)
		return err;
	c->stack[c->num_stack++] = (struct stl_node){ x, v };
	return NULL;
}

// A read that failed is memory we do not understand: *bad set, no error.
bool stl_rd(struct hd_fw *fw, uint64_t addr, uint64_t *v)
{
	struct hd_error *err = hd_fw_read_u64(fw, addr, v);
	if (err) {
		hd_error_destroy(err);
		return false;
	}
	return true;
}

void stl_fail(struct walk *w, uint64_t addr, const char *why)
{
	w->why = why;
	w->why_addr = addr;
}

// ---------------------------------------------------------------- buffers

struct hd_error *stl_walk_vector(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t start, finish, eos;
	bool bits = stl_starts(p->t->name, "std::vector<bool,");
	if (p->size != (bits ? 40 : 24))
		return stl_fail(w, p->addr, "std::vector of an unknown size"), NULL;
	if (!stl_rd(c->fw, p->addr, &start) ||
	    !stl_rd(c->fw, p->addr + (bits ? 16 : 8), &finish) ||
	    !stl_rd(c->fw, p->addr + (bits ? 32 : 16), &eos))
		return stl_fail(w, p->addr, "std::vector not readable"), NULL;
	if (!start) {
		w->empty = true;
		return NULL;
	}
	if (start > finish || finish > eos)
		return stl_fail(w, p->addr, "std::vector whose start, finish and end_of_storage are out of order"), NULL;
	uint32_t v;
	if (!stl_block_at(c->fw, start, eos - start, &v, NULL))
		return stl_fail(w, start, "std::vector buffer is not a used heap block of its capacity"), NULL;
	if (!bits && w->elem_size && !((eos - start) % w->elem_size))
		stl_name_buffer(c, c->short_elem, (eos - start) / w->elem_size);
	struct hd_error *err = stl_own(c, v, bits ? 0 : eos - finish, NAME_BUFFER);
	if (err || bits || !w->elem_size)
		return err;
	if ((finish - start) % w->elem_size)
		return NULL; // not the element type we think: no nesting
	for (uint64_t a = start; a < finish; a += w->elem_size) {
		if ((err = stl_elem(c, a, v)))
			return err;
	}
	return NULL;
}

static uint64_t char_size(const char *type)
{
	char arg[64];
	if (!stl_template_arg(type, 0, arg, sizeof(arg)))
		return 0;
	if (!strcmp(arg, "char") || !strcmp(arg, "char8_t"))
		return 1;
	if (!strcmp(arg, "char16_t"))
		return 2;
	if (!strcmp(arg, "char32_t") || !strcmp(arg, "wchar_t"))
		return 4;
	return 0;
}

struct hd_error *stl_walk_string(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	struct stl_type *ty = (struct stl_type *)p->t;
	if (!ty->str_ready) {
		char elem[64];
		ty->str_cs = char_size(ty->name);
		if (stl_template_arg(ty->name, 0, elem, sizeof(elem)) &&
		    !(ty->str_elem = strdup(elem)))
			return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		ty->str_ready = true;
	}
	uint64_t ptr, len, cap, cs = ty->str_cs;
	if (p->size != 32 || !cs)
		return stl_fail(w, p->addr, "std::basic_string of an unknown size or character"), NULL;
	if (!stl_rd(c->fw, p->addr, &ptr) || !stl_rd(c->fw, p->addr + 8, &len) ||
	    !stl_rd(c->fw, p->addr + 16, &cap))
		return stl_fail(w, p->addr, "std::basic_string not readable"), NULL;
	if (ptr == p->addr + 16) {
		w->empty = true; // the local buffer
		return NULL;
	}
	uint32_t v;
	if (len > cap || cap > (UINT64_MAX / cs) - 1 ||
	    !stl_block_at(c->fw, ptr, (cap + 1) * cs, &v, NULL))
		return stl_fail(w, p->addr, "std::basic_string: its buffer is not a used heap block of its capacity"), NULL;
	stl_name_buffer(c, ty->str_elem, cap + 1);
	return stl_own(c, v, (cap - len) * cs, NAME_BUFFER);
}

struct hd_error *stl_walk_deque(struct ctx *c, struct walk *w)
{
	const struct pending *p = w->p;
	uint64_t map, map_size, first_node, last_node;
	if (p->size != 80)
		return stl_fail(w, p->addr, "std::deque of an unknown size"), NULL;
	if (!stl_rd(c->fw, p->addr, &map) || !stl_rd(c->fw, p->addr + 8, &map_size) ||
	    !stl_rd(c->fw, p->addr + 40, &first_node) || !stl_rd(c->fw, p->addr + 72, &last_node))
		return stl_fail(w, p->addr, "std::deque not readable"), NULL;
	if (!map) {
		w->empty = true;
		return NULL;
	}
	uint32_t v;
	if (map_size > MAX_NODES || !stl_block_at(c->fw, map, map_size * 8, &v, NULL) ||
	    first_node < map || last_node < first_node ||
	    last_node >= map + map_size * 8 || (last_node - first_node) % 8)
		return stl_fail(w, map, "std::deque map is not a used heap block holding its nodes"), NULL;
	// Each chunk holds 512 bytes of elements, or one larger element
	// (libstdc++'s __deque_buf_size).
	if (c->short_elem) {
		struct stl_type *ty = (struct stl_type *)p->t;
		if (!ty->deque_ptr) {
			char ptr[512];
			snprintf(ptr, sizeof(ptr), "%s*", c->short_elem);
			if (!(ty->deque_ptr = strdup(ptr)))
				return hd_error_create(HD_ERROR_NO_MEMORY, "out of memory");
		}
		stl_name_buffer(c, ty->deque_ptr, map_size);
		if (w->elem_size)
			c->chunk = (struct name_spec){ HOW_ELEMS, c->short_elem,
				w->elem_size < 512 ? 512 / w->elem_size : 1 };
	}
	struct hd_error *err = stl_own(c, v, UINT64_MAX, NAME_BUFFER);
	for (uint64_t n = first_node; !err && n <= last_node; n += 8) {
		uint64_t chunk;
		if (!stl_rd(c->fw, n, &chunk) || !stl_block_at(c->fw, chunk, 1, &v, NULL))
			return stl_fail(w, n, "std::deque chunk is not a used heap block"), NULL;
		err = stl_own(c, v, 0, NAME_CHUNK);
	}
	return err;
}

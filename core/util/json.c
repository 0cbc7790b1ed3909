// A strict JSON reader for heapdom's own documents (see json.h): one pass
// over a private copy of the text, strings unescaped in place, values in
// one array linked by index, an explicit stack instead of recursion.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"

// Deeper documents are not ours; refusing them bounds the stack.
#define MAX_DEPTH 64

struct parser {
	struct hd_json *doc;
	size_t cap;
	size_t len;
	size_t pos;
};

// "PATH: byte OFF: message": every error names the file and the offset.
static struct hd_error *vfail(const char *path, size_t off, const char *fmt,
			      va_list ap)
{
	char *msg = NULL;
	if (vasprintf(&msg, fmt, ap) < 0)
		return &hd_error_no_memory;
	struct hd_error *err = hd_error_file(HD_ERROR_FORMAT, path,
					     "byte %zu: %s", off, msg);
	free(msg);
	return err;
}

static struct hd_error *fail_at(const struct parser *p, size_t off,
				const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static struct hd_error *fail_at(const struct parser *p, size_t off,
				const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hd_error *err = vfail(p->doc->path, off, fmt, ap);
	va_end(ap);
	return err;
}

// What is at off, for messages: "end of file" or the character.
static const char *what(const struct parser *p, size_t off, char *buf,
			size_t len)
{
	if (off >= p->len)
		return "end of file";
	unsigned char c = (unsigned char)p->doc->text[off];
	if (c >= 0x20 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

static void skip_ws(struct parser *p)
{
	const char *t = p->doc->text;
	while (p->pos < p->len && (t[p->pos] == ' ' || t[p->pos] == '\t' ||
				   t[p->pos] == '\n' || t[p->pos] == '\r'))
		p->pos++;
}

static struct hd_error *new_value(struct parser *p, enum hd_json_kind kind,
				  size_t off, uint32_t *ret)
{
	struct hd_json *d = p->doc;
	if (d->num_values >= UINT32_MAX - 1)
		return fail_at(p, off, "too many values");
	if (d->num_values == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		struct hd_json_value *v = realloc(d->values, cap * sizeof(*v));
		if (!v)
			return &hd_error_no_memory;
		d->values = v;
		p->cap = cap;
	}
	d->values[d->num_values] = (struct hd_json_value){
		.kind = kind,
		.first = HD_JSON_NONE,
		.next = HD_JSON_NONE,
		.offset = off,
	};
	*ret = (uint32_t)d->num_values++;
	return NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool read_hex4(const struct parser *p, size_t at, unsigned *ret)
{
	if (at + 4 > p->len)
		return false;
	unsigned v = 0;
	for (size_t i = 0; i < 4; i++) {
		int h = hexval(p->doc->text[at + i]);
		if (h < 0)
			return false;
		v = v * 16 + (unsigned)h;
	}
	*ret = v;
	return true;
}

// A string at p->pos (the opening quote), unescaped in place: the result
// is never longer than its source, so it overwrites only bytes already read.
static struct hd_error *parse_string(struct parser *p, const char **ret)
{
	char *t = p->doc->text;
	size_t start = p->pos++;
	char *w = t + p->pos;
	*ret = w;
	for (;;) {
		if (p->pos >= p->len)
			return fail_at(p, start, "string not terminated");
		unsigned char c = (unsigned char)t[p->pos];
		if (c == '"') {
			p->pos++;
			*w = '\0';
			return NULL;
		}
		if (c < 0x20)
			return fail_at(p, p->pos,
				       "control character 0x%02x in a string", c);
		if (c != '\\') {
			*w++ = (char)c;
			p->pos++;
			continue;
		}
		size_t esc = p->pos;
		if (esc + 1 >= p->len)
			return fail_at(p, start, "string not terminated");
		char e = t[esc + 1];
		p->pos += 2;
		switch (e) {
		case '"': *w++ = '"'; continue;
		case '\\': *w++ = '\\'; continue;
		case '/': *w++ = '/'; continue;
		case 'b': *w++ = '\b'; continue;
		case 'f': *w++ = '\f'; continue;
		case 'n': *w++ = '\n'; continue;
		case 'r': *w++ = '\r'; continue;
		case 't': *w++ = '\t'; continue;
		case 'u': break;
		default:
			return fail_at(p, esc, "bad escape '\\%c' in a string",
				       e >= 0x20 && e < 0x7f ? e : '?');
		}
		unsigned cp;
		if (!read_hex4(p, p->pos, &cp))
			return fail_at(p, esc, "\\u needs four hex digits");
		p->pos += 4;
		if (cp >= 0xd800 && cp < 0xdc00) {
			unsigned lo;
			if (p->pos + 2 > p->len || t[p->pos] != '\\' ||
			    t[p->pos + 1] != 'u' || !read_hex4(p, p->pos + 2, &lo) ||
			    lo < 0xdc00 || lo >= 0xe000)
				return fail_at(p, esc, "unpaired surrogate in a string");
			p->pos += 6;
			cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		} else if (cp >= 0xdc00 && cp < 0xe000) {
			return fail_at(p, esc, "unpaired surrogate in a string");
		}
		if (cp == 0)
			return fail_at(p, esc, "\\u0000 in a string");
		if (cp < 0x80) {
			*w++ = (char)cp;
		} else if (cp < 0x800) {
			*w++ = (char)(0xc0 | (cp >> 6));
			*w++ = (char)(0x80 | (cp & 0x3f));
		} else if (cp < 0x10000) {
			*w++ = (char)(0xe0 | (cp >> 12));
			*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*w++ = (char)(0x80 | (cp & 0x3f));
		} else {
			*w++ = (char)(0xf0 | (cp >> 18));
			*w++ = (char)(0x80 | ((cp >> 12) & 0x3f));
			*w++ = (char)(0x80 | ((cp >> 6) & 0x3f));
			*w++ = (char)(0x80 | (cp & 0x3f));
		}
	}
}

static struct hd_error *parse_int(struct parser *p, struct hd_json_value *v)
{
	const char *t = p->doc->text;
	size_t start = p->pos;
	if (t[p->pos] == '-') {
		v->negative = true;
		p->pos++;
	}
	if (p->pos >= p->len || t[p->pos] < '0' || t[p->pos] > '9')
		return fail_at(p, start, "'-' without digits");
	if (t[p->pos] == '0' && p->pos + 1 < p->len && t[p->pos + 1] >= '0' &&
	    t[p->pos + 1] <= '9')
		return fail_at(p, start, "a number with a leading zero");
	uint64_t u = 0;
	while (p->pos < p->len && t[p->pos] >= '0' && t[p->pos] <= '9') {
		unsigned d = (unsigned)(t[p->pos] - '0');
		if (u > (UINT64_MAX - d) / 10)
			return fail_at(p, start, "integer too large");
		u = u * 10 + d;
		p->pos++;
	}
	if (p->pos < p->len &&
	    (t[p->pos] == '.' || t[p->pos] == 'e' || t[p->pos] == 'E'))
		return fail_at(p, start, "only integers are expected here");
	v->u = u;
	if (v->negative && u == 0)
		v->negative = false;
	return NULL;
}

static bool literal(struct parser *p, const char *word)
{
	size_t n = strlen(word);
	if (p->len - p->pos < n || memcmp(p->doc->text + p->pos, word, n) != 0)
		return false;
	p->pos += n;
	return true;
}

struct level {
	uint32_t index; // the container
	uint32_t last;  // its last child so far
};

// Links child as the next child of the innermost container.
static void link_child(struct hd_json *d, struct level *lv, uint32_t child)
{
	struct hd_json_value *c = &d->values[lv->index];
	if (lv->last == HD_JSON_NONE)
		c->first = child;
	else
		d->values[lv->last].next = child;
	lv->last = child;
	c->count++;
}

static struct hd_error *parse(struct parser *p)
{
	struct hd_json *d = p->doc;
	const char *t = d->text;
	struct level stack[MAX_DEPTH];
	size_t depth = 0;
	char wb[16];
	skip_ws(p);
	if (p->pos >= p->len)
		return fail_at(p, p->pos, "empty file: expected a JSON document");
	for (;;) {
		// A value is expected (inside an object after its key).
		const char *key = NULL;
		if (depth && d->values[stack[depth - 1].index].kind == HD_JSON_OBJECT) {
			skip_ws(p);
			if (p->pos >= p->len || t[p->pos] != '"')
				return fail_at(p, p->pos,
					       "expected a member name in quotes, found %s",
					       what(p, p->pos, wb, sizeof(wb)));
			struct hd_error *err = parse_string(p, &key);
			if (err)
				return err;
			skip_ws(p);
			if (p->pos >= p->len || t[p->pos] != ':')
				return fail_at(p, p->pos,
					       "expected ':' after member name \"%s\", found %s",
					       key, what(p, p->pos, wb, sizeof(wb)));
			p->pos++;
		}
		skip_ws(p);
		size_t off = p->pos;
		if (off >= p->len)
			return fail_at(p, off, "unexpected end of file: expected a value");
		char c = t[off];
		enum hd_json_kind kind;
		if (c == '{')
			kind = HD_JSON_OBJECT;
		else if (c == '[')
			kind = HD_JSON_ARRAY;
		else if (c == '"')
			kind = HD_JSON_STRING;
		else if (c == '-' || (c >= '0' && c <= '9'))
			kind = HD_JSON_INT;
		else if (c == 't' || c == 'f')
			kind = HD_JSON_BOOL;
		else if (c == 'n')
			kind = HD_JSON_NULL;
		else
			return fail_at(p, off, "expected a value, found %s",
				       what(p, off, wb, sizeof(wb)));
		uint32_t idx = 0;
		struct hd_error *err = new_value(p, kind, off, &idx);
		if (err)
			return err;
		d->values[idx].key = key;
		if (depth)
			link_child(d, &stack[depth - 1], idx);
		bool complete = true;
		switch (kind) {
		case HD_JSON_OBJECT:
		case HD_JSON_ARRAY:
			if (depth == MAX_DEPTH)
				return fail_at(p, off, "nested more than %d levels",
					       MAX_DEPTH);
			p->pos++;
			skip_ws(p);
			if (p->pos < p->len &&
			    t[p->pos] == (kind == HD_JSON_OBJECT ? '}' : ']')) {
				p->pos++; // empty
			} else {
				stack[depth++] = (struct level){idx, HD_JSON_NONE};
				complete = false;
			}
			break;
		case HD_JSON_STRING: {
			const char *s;
			err = parse_string(p, &s);
			if (err)
				return err;
			d->values[idx].str = s;
			break;
		}
		case HD_JSON_INT:
			err = parse_int(p, &d->values[idx]);
			if (err)
				return err;
			break;
		case HD_JSON_BOOL:
			d->values[idx].boolean = c == 't';
			if (!literal(p, c == 't' ? "true" : "false"))
				return fail_at(p, off, "expected a value, found %s",
					       what(p, off, wb, sizeof(wb)));
			break;
		case HD_JSON_NULL:
			if (!literal(p, "null"))
				return fail_at(p, off, "expected a value, found %s",
					       what(p, off, wb, sizeof(wb)));
			break;
		}
		if (!complete)
			continue;
		// After a complete value: a separator or the closing of its
		// container (which completes that container in turn).
		for (;;) {
			skip_ws(p);
			if (!depth) {
				if (p->pos < p->len)
					return fail_at(p, p->pos,
						       "unexpected %s after the end of the document",
						       what(p, p->pos, wb, sizeof(wb)));
				return NULL;
			}
			bool obj = d->values[stack[depth - 1].index].kind == HD_JSON_OBJECT;
			char close = obj ? '}' : ']';
			if (p->pos < p->len && t[p->pos] == ',') {
				p->pos++;
				break;
			}
			if (p->pos < p->len && t[p->pos] == close) {
				p->pos++;
				depth--;
				continue;
			}
			return fail_at(p, p->pos, "expected ',' or '%c' in %s, found %s",
				       close, obj ? "an object" : "an array",
				       what(p, p->pos, wb, sizeof(wb)));
		}
	}
}

struct hd_error *hd_json_parse(const char *path, const char *text, size_t len,
			       struct hd_json **ret)
{
	struct hd_json *d = calloc(1, sizeof(*d));
	if (!d)
		return &hd_error_no_memory;
	d->path = strdup(path);
	d->text = malloc(len + 1);
	if (!d->path || !d->text) {
		hd_json_destroy(d);
		return &hd_error_no_memory;
	}
	memcpy(d->text, text, len);
	d->text[len] = '\0';
	struct parser p = {.doc = d, .len = len};
	struct hd_error *err = parse(&p);
	if (err) {
		hd_json_destroy(d);
		return err;
	}
	*ret = d;
	return NULL;
}

struct hd_error *hd_json_read_file(const char *path, struct hd_json **ret)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return hd_error_os(errno, path, "cannot open");
	char *buf = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			char *b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(f);
				return &hd_error_no_memory;
			}
			buf = b;
		}
		size_t n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	struct hd_error *err = NULL;
	if (ferror(f))
		err = hd_error_os(errno, path, "cannot read");
	fclose(f);
	if (!err)
		err = hd_json_parse(path, buf, len, ret);
	free(buf);
	return err;
}

void hd_json_destroy(struct hd_json *doc)
{
	if (!doc)
		return;
	free(doc->path);
	free(doc->text);
	free(doc->values);
	free(doc);
}

struct hd_error *hd_json_error(const struct hd_json *doc,
			       const struct hd_json_value *v, const char *fmt,
			       ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hd_error *err = vfail(doc->path, v->offset, fmt, ap);
	va_end(ap);
	return err;
}

const struct hd_json_value *hd_json_find(const struct hd_json *doc,
					 const struct hd_json_value *obj,
					 const char *key)
{
	if (obj->kind != HD_JSON_OBJECT)
		return NULL;
	for (uint32_t i = obj->first; i != HD_JSON_NONE; i = doc->values[i].next)
		if (strcmp(doc->values[i].key, key) == 0)
			return &doc->values[i];
	return NULL;
}

static const char *kind_name(enum hd_json_kind k)
{
	static const char *const names[] = {
		[HD_JSON_NULL] = "null", [HD_JSON_BOOL] = "a boolean",
		[HD_JSON_INT] = "an integer", [HD_JSON_STRING] = "a string",
		[HD_JSON_ARRAY] = "an array", [HD_JSON_OBJECT] = "an object",
	};
	return names[k];
}

struct hd_error *hd_json_member(const struct hd_json *doc,
				const struct hd_json_value *obj,
				const char *key, enum hd_json_kind kind,
				const struct hd_json_value **ret)
{
	if (obj->kind != HD_JSON_OBJECT)
		return hd_json_error(doc, obj, "expected an object, found %s",
				     kind_name(obj->kind));
	const struct hd_json_value *v = hd_json_find(doc, obj, key);
	if (!v)
		return hd_json_error(doc, obj, "member \"%s\" is missing", key);
	if (v->kind != kind)
		return hd_json_error(doc, v, "\"%s\" must be %s, not %s", key,
				     kind_name(kind), kind_name(v->kind));
	*ret = v;
	return NULL;
}

struct hd_error *hd_json_get_u64(const struct hd_json *doc,
				 const struct hd_json_value *obj,
				 const char *key, uint64_t *ret)
{
	const struct hd_json_value *v;
	struct hd_error *err = hd_json_member(doc, obj, key, HD_JSON_INT, &v);
	if (err)
		return err;
	if (v->negative)
		return hd_json_error(doc, v, "\"%s\" must not be negative", key);
	*ret = v->u;
	return NULL;
}

struct hd_error *hd_json_get_string(const struct hd_json *doc,
				    const struct hd_json_value *obj,
				    const char *key, const char **ret)
{
	const struct hd_json_value *v;
	struct hd_error *err = hd_json_member(doc, obj, key, HD_JSON_STRING, &v);
	if (err)
		return err;
	*ret = v->str;
	return NULL;
}

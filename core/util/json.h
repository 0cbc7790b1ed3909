// A small, strict JSON reader for the documents heapdom writes itself
// (snapshots): objects, arrays, strings, integers, true, false, null. No
// fractions or exponents. Iterative (no recursion), nesting limited, and
// every error names the file and the byte offset where the input went wrong.
#ifndef HD_UTIL_JSON_H
#define HD_UTIL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapdom.h"

enum hd_json_kind {
	HD_JSON_NULL,
	HD_JSON_BOOL,
	HD_JSON_INT,
	HD_JSON_STRING,
	HD_JSON_ARRAY,
	HD_JSON_OBJECT,
};

#define HD_JSON_NONE UINT32_MAX

// One value; containers link their children by index.
struct hd_json_value {
	enum hd_json_kind kind;
	bool negative;     // HD_JSON_INT: the value is -u
	bool boolean;      // HD_JSON_BOOL
	uint64_t u;        // HD_JSON_INT: magnitude
	const char *str;   // HD_JSON_STRING: unescaped, NUL-terminated
	const char *key;   // member name when inside an object, else NULL
	uint32_t first;    // containers: first child, HD_JSON_NONE if empty
	uint32_t next;     // next sibling, HD_JSON_NONE if last
	uint32_t count;    // containers: number of children
	size_t offset;     // byte offset of the value in the file
};

struct hd_json {
	char *path;                  // file named in errors
	char *text;                  // the file's bytes; strings point here
	struct hd_json_value *values; // values[0] is the document
	size_t num_values;
};

// Parses text[0..len) (copied); path names the source in errors.
struct hd_error *hd_json_parse(const char *path, const char *text, size_t len,
			       struct hd_json **ret);
// Reads and parses a file.
struct hd_error *hd_json_read_file(const char *path, struct hd_json **ret);
void hd_json_destroy(struct hd_json *doc);

static inline const struct hd_json_value *
hd_json_at(const struct hd_json *doc, uint32_t i)
{
	return i == HD_JSON_NONE ? NULL : &doc->values[i];
}

// An error about value v: "PATH: byte OFFSET: MESSAGE".
struct hd_error *hd_json_error(const struct hd_json *doc,
			       const struct hd_json_value *v, const char *fmt,
			       ...) __attribute__((format(printf, 3, 4)));

// Typed access to an object's members: each fails with an error naming
// the file, the offset and the member when it is missing or of the wrong
// kind. The _opt forms leave *ret alone when the member is absent.
struct hd_error *hd_json_member(const struct hd_json *doc,
				const struct hd_json_value *obj,
				const char *key, enum hd_json_kind kind,
				const struct hd_json_value **ret);
struct hd_error *hd_json_get_u64(const struct hd_json *doc,
				 const struct hd_json_value *obj,
				 const char *key, uint64_t *ret);
struct hd_error *hd_json_get_string(const struct hd_json *doc,
				    const struct hd_json_value *obj,
				    const char *key, const char **ret);
// A member that must be present; NULL when absent.
const struct hd_json_value *hd_json_find(const struct hd_json *doc,
					 const struct hd_json_value *obj,
					 const char *key);

#endif

// Names in the libstdc++ framework module: which kind of container a DWARF
// type name is, its element type from the template arguments, and the
// short label a C++ programmer would write for it.
#include <stdlib.h>
#include <string.h>

#include "frameworks/libstdcxx_internal.h"

bool stl_starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

enum kind stl_kind_of(const char *type)
{
	static const struct {
		const char *prefix;
		enum kind kind;
	} kinds[] = {
		{"std::vector<", K_VECTOR},
		{"std::__cxx11::list<", K_LIST},
		{"std::list<", K_LIST},
		{"std::forward_list<", K_FLIST},
		{"std::map<", K_TREE},
		{"std::multimap<", K_TREE},
		{"std::set<", K_TREE},
		{"std::multiset<", K_TREE},
		{"std::unordered_", K_HASH},
		{"std::__cxx11::basic_string<", K_STRING},
		{"std::basic_string<", K_STRING},
		{"std::shared_ptr<", K_SHARED},
		{"std::deque<", K_DEQUE},
	};
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		if (stl_starts(type, kinds[i].prefix))
			return kinds[i].kind;
	}
	return K_NONE;
}

// Template argument k (0-based) of name, or the last one for k < 0, into
// buf; false if there is none.
bool stl_template_arg(const char *name, int k, char *buf, size_t len)
{
	const char *p = strchr(name, '<');
	if (!p)
		return false;
	const char *arg = p + 1, *last = NULL, *last_end = NULL;
	int depth = 1, i = 0;
	for (const char *q = p + 1; *q && depth > 0; q++) {
		if (*q == '<' || *q == '(') {
			depth++;
		} else if (*q == '>' || *q == ')') {
			depth--;
		}
		if ((depth == 1 && *q == ',') || depth == 0) {
			if (i == k) {
				last = arg;
				last_end = q;
				break;
			}
			last = arg;
			last_end = q;
			i++;
			arg = q + 1;
		}
	}
	if (!last || (k >= 0 && i != k))
		return false;
	while (*last == ' ')
		last++;
	while (last_end > last && last_end[-1] == ' ')
		last_end--;
	size_t n = (size_t)(last_end - last);
	if (!n || n + 1 > len)
		return false;
	memcpy(buf, last, n);
	buf[n] = '\0';
	return true;
}

// The element type of a container named type: the allocator's argument
// (the last template argument) for maps, sets and hash tables — their
// value type, std::pair<const K, T> for maps — else the first argument.
bool stl_value_type(const char *type, enum kind k, char *buf, size_t len)
{
	if (k == K_TREE || k == K_HASH) {
		char alloc[1024];
		if (!stl_template_arg(type, -1, alloc, sizeof(alloc)) ||
		    !stl_starts(alloc, "std::allocator<"))
			return false;
		return stl_template_arg(alloc, 0, buf, len);
	}
	return stl_template_arg(type, 0, buf, len);
}

uint64_t stl_scalar_size(const char *type)
{
	static const struct {
		const char *name;
		uint64_t size;
	} scalars[] = {
		{"bool", 1}, {"char", 1}, {"signed char", 1}, {"unsigned char", 1},
		{"char8_t", 1}, {"short", 2}, {"short int", 2},
		{"unsigned short", 2}, {"short unsigned int", 2}, {"char16_t", 2},
		{"int", 4}, {"unsigned int", 4}, {"float", 4}, {"char32_t", 4},
		{"wchar_t", 4}, {"long", 8}, {"long int", 8}, {"unsigned long", 8},
		{"long unsigned int", 8}, {"long long", 8}, {"long long int", 8},
		{"long long unsigned int", 8}, {"double", 8}, {"long double", 16},
	};
	size_t n = strlen(type);
	if (n && type[n - 1] == '*')
		return 8;
	for (size_t i = 0; i < sizeof(scalars) / sizeof(scalars[0]); i++) {
		if (!strcmp(type, scalars[i].name))
			return scalars[i].size;
	}
	return 0;
}

static const char *const defaults[] = {
	"std::less<", "std::allocator<", "std::hash<", "std::equal_to<",
	"std::char_traits<",
};

static bool is_default(const char *s)
{
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++) {
		if (stl_starts(s, defaults[i]))
			return true;
	}
	return false;
}

// Replaces every from in s (in place; to is not longer than from).
static void replace_all(char *s, const char *from, const char *to)
{
	size_t fl = strlen(from), tl = strlen(to);
	char *p = s;
	while ((p = strstr(p, from))) {
		memmove(p + tl, p + fl, strlen(p + fl) + 1);
		memcpy(p, to, tl);
		p += tl;
	}
}

// The name a C++ programmer writes: default arguments (std::less<…>,
// std::allocator<…>, std::hash<…>, std::equal_to<…>,
// std::char_traits<…>) dropped, std::__cxx11:: made std::, std::string for
// std::basic_string<char>. Returns a malloc'd string or NULL.
char *stl_short_type(const char *type)
{
	size_t n = strlen(type);
	char *out = malloc(n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	bool arg_start = false;
	for (size_t i = 0; i < n;) {
		if (stl_starts(type + i, "std::__cxx11::")) {
			memcpy(out + o, "std::", 5);
			o += 5;
			i += strlen("std::__cxx11::");
			arg_start = false;
			continue;
		}
		if (arg_start && is_default(type + i)) {
			// Skip the argument to the ',' or '>' that ends it.
			int depth = 0;
			while (i < n) {
				char ch = type[i];
				if (ch == '<')
					depth++;
				else if (ch == '>' && depth-- == 0)
					break;
				else if (ch == ',' && depth == 0)
					break;
				i++;
			}
			// Drop ", " before it; after '<' drop the ", " after.
			while (o && out[o - 1] == ' ')
				o--;
			if (o && out[o - 1] == ',') {
				o--;
			} else if (i < n && type[i] == ',') {
				i++;
				while (i < n && type[i] == ' ')
					i++;
			}
			arg_start = false;
			continue;
		}
		char ch = type[i++];
		out[o++] = ch;
		if (ch == '<' || ch == ',')
			arg_start = true;
		else if (ch != ' ')
			arg_start = false;
	}
	out[o] = '\0';
	replace_all(out, " >", ">");
	replace_all(out, "<>", "");
	replace_all(out, "std::basic_string<char>", "std::string");
	return out;
}

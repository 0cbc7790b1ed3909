// The cpython module's hard-coded 3.11 layout (core/frameworks/
// cpython_layout.h) against offsetof()/sizeof() on the installed 3.11
// headers: a wrong table entry fails this test.
#define Py_BUILD_CORE 1
#include <Python.h>
#include <internal/pycore_dict.h>
#include <internal/pycore_gc.h>
#include <internal/pycore_interp.h>
#include <internal/pycore_moduleobject.h>
#include <internal/pycore_runtime.h>
#include <stddef.h>
#include <stdio.h>

#include "frameworks/cpython_layout.h"

static int checked, failed;

static void check(const char *what, unsigned long table, unsigned long real)
{
	checked++;
	if (table != real) {
		failed++;
		printf("MISMATCH %s: table %lu, headers %lu\n", what, table,
		       real);
	}
}

#define CHECK_OFFSET(name, value, type, member) \
	check(#type "." #member, HD_PY311_##name, offsetof(type, member));
#define CHECK_SIZE(name, value, type) \
	check("sizeof(" #type ")", HD_PY311_SIZEOF_##name, sizeof(type));
#define CHECK_FLAG(name, value, expr) \
	check(#expr, HD_PY311_##name, (unsigned long)(expr));

int main(void)
{
	HD_PY311_OFFSETS(CHECK_OFFSET)
	HD_PY311_SIZES(CHECK_SIZE)
	HD_PY311_FLAGS(CHECK_FLAG)
	// The module refuses other versions: the headers must be 3.11's.
	check("PY_VERSION_HEX & 0xffff0000", HD_PY311_VERSION_HEX_3_11,
	      PY_VERSION_HEX & 0xffff0000ul);
	printf("cpython layout: %d entries checked against %s headers, "
	       "%d mismatches\n", checked, PY_VERSION, failed);
	return failed ? 1 : 0;
}

// Fixture for test_dwarf_layout: built with -g so that its DWARF describes
// the types of dwarf_sample.h; the globals make the compiler emit them.
#include "dwarf_sample.h"

struct sample sample_global;
inner_t inner_global;
struct outer *outer_global;

static int use_local(void)
{
	struct local_s DWARF_SAMPLE_LOCAL_BODY local = { 1, "abcd", 0 };
	return local.x + local.y[1];
}

int main(void)
{
	return use_local() == 0 && sample_global.c == 1 && inner_global.s == 1 &&
	       outer_global != 0;
}

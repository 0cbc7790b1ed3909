// The C sample of test_type_index: built with -g, only read, never run by
// the test. Every type of type_sample.h is used by a global so the
// compiler emits its DWARF.
#include <stdio.h>

#include "type_sample.h"

int g_counter = 5;
struct ts_cache g_cache;
const char *g_names[3] = {"a", "b", "c"};
struct ts_slots g_slots;
struct ts_arrays g_arrays;
struct ts_names g_names_sample;
union ts_mixed g_mixed;
__thread int g_tls;
static struct ts_leaf *g_head; // file-local
ts_const_leaf_t g_const_leaf;

int ts_count_calls(void)
{
	static int s_calls; // a static local: DW_OP_addr inside a function
	int local = ++s_calls; // an ordinary local: not a variable
	return local;
}

int main(void)
{
	static struct ts_leaf leaf;
	g_head = &leaf;
	g_tls = ts_count_calls();
	printf("%d %p\n", g_counter + g_tls, (void *)g_head);
	return 0;
}

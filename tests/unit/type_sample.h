// Types and globals whose DWARF test_type_index.c reads back from
// type_sample.c's binary. The test includes this header too, so expected
// offsets and sizes come from the compiler (offsetof, sizeof), never from
// hand-written numbers.
#ifndef TYPE_SAMPLE_H
#define TYPE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

struct ts_leaf {
	int value;
	struct ts_leaf *next;
};

typedef struct ts_leaf ts_leaf_t;
typedef const ts_leaf_t ts_const_leaf_t; // typedef -> const -> typedef

union ts_word {
	void *p;
	long l;
};

struct ts_inner {
	long x;
	struct ts_leaf *leaf;
};

struct ts_opaque; // never defined anywhere

// One member of each kind the pointer slots must tell apart.
struct ts_slots {
	struct ts_leaf *typed;      // typed slot
	void *untyped;              // conservative
	uintptr_t addr;             // conservative (typedef name)
	union ts_word word;         // conservative (a union)
	struct ts_leaf *arr[4];     // four typed slots
	struct ts_inner inner;      // inner.leaf typed
	void (*fn)(int);            // code: no slot
	unsigned int flags : 3;     // bit-fields: no slot
	unsigned int more : 5;
	char name[16];              // no slot
	const char *label;          // typed, pointee char through const
	size_t count;               // an integer: no slot
	struct ts_opaque *opaque;   // typed, pointee a declaration
	ts_const_leaf_t *const_leaf; // typed, pointee through typedefs
};

// A union bigger than a word: each word a member may put a pointer in
// is one conservative slot, the others none.
union ts_mixed {
	struct {
		long tag;
		void *ptr;
	} two;
	double d;
	long l[3];
};

struct ts_list {
	struct ts_list *next, *prev;
};

struct ts_hdr {
	int kind; // followed by 4 bytes of padding
	struct ts_list list;
};

// Member paths: nested structs, arrays, an anonymous union, a flexible
// array member.
struct ts_cache {
	struct ts_hdr hdr;
	struct ts_leaf *buckets[32];
	union {
		int i;
		float f;
	};
	union ts_mixed mixed;
	size_t count;
	char tail[];
};

typedef int ts_row[4];

// Arrays: dimensions multiply; an array of arrays through a typedef.
struct ts_arrays {
	int grid[3][4];
	ts_row rows[2];
	struct ts_inner pairs[3];
	struct ts_leaf *big[1000];
};

// Spellings for hd_type_name.
struct ts_names {
	int *const cp;
	const int *pc;
	int (*rows)[4];
	char *(*get)(void);
	const char name[16];
	struct ts_leaf *leaves[2];
	volatile unsigned long vul;
	enum ts_color { TS_RED, TS_GREEN } color;
};

// Globals, checked against the symbol table.
extern int g_counter; // defined with DW_AT_specification in DWARF
extern struct ts_cache g_cache;
extern const char *g_names[3];
extern struct ts_slots g_slots;
extern struct ts_arrays g_arrays;
extern struct ts_names g_names_sample;
extern union ts_mixed g_mixed;
extern __thread int g_tls; // thread-local: not in the index

int ts_count_calls(void); // has a static local, s_calls

#endif

// Types whose DWARF test_dwarf_layout.c reads back from dwarf_sample.c's
// binary; the test includes this header too, so every expected offset and
// size comes from the compiler rather than from hand-written numbers.
#ifndef DWARF_SAMPLE_H
#define DWARF_SAMPLE_H

struct sample {
	char c;
	long l;
	int arr[3][4]; // one DWARF array with two subranges
	struct sample *next;
	const volatile unsigned short cv; // size through qualifiers
	double d;
};

typedef struct inner_s {
	short s;
} inner_t;

// An array of arrays through a typedef: two array DIEs, not one.
typedef int row_t[4];

struct outer {
	inner_t in;
	row_t rows[2];
	union {
		int i;
		float f;
	} u;
	unsigned int bits : 3; // DW_AT_data_bit_offset in DWARF 4+
	int after_bits;
	struct nested { // C puts the nested definition at file scope
		long x;
	} n;
	char flex[]; // no upper bound: size 0, count 0
};

// Defined inside a function in dwarf_sample.c, so its DIE is a child of a
// DW_TAG_subprogram; the test defines the same body to get the layout.
#define DWARF_SAMPLE_LOCAL_BODY \
	{                       \
		int x;          \
		char y[5];      \
		void *p;        \
	}

#endif

// Code of lines_sample.c that sits in a header, so that a unit's line table
// names two files.
#ifndef LINES_SAMPLE_H
#define LINES_SAMPLE_H

void *lines_leaf(void);

// Inlined even at -O0: its call site belongs to the caller's function but
// to this file's line.
static inline __attribute__((always_inline)) void *sample_in_header(void)
{
	return lines_leaf(); // MARK header
}

#endif

// C++ symbol names as people write them, through libstdc++'s demangler
// when one can be loaded (a C program's heapdom needs no libstdc++).
#ifndef HD_UTIL_DEMANGLE_H
#define HD_UTIL_DEMANGLE_H

// A malloc'd demangled name, or NULL if name is not a mangled C++ name
// (or no demangler is available).
char *hd_demangle(const char *name);

#endif

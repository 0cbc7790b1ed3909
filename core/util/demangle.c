#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/demangle.h"

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn demangler;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void find_demangler(void)
{
	void *fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!fn) {
		void *lib = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
		if (lib)
			fn = dlsym(lib, "__cxa_demangle");
	}
	demangler = (demangle_fn)fn;
}

char *hd_demangle(const char *name)
{
	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	pthread_once(&once, find_demangler);
	if (!demangler)
		return NULL;
	int status = -1;
	char *d = demangler(name, NULL, NULL, &status);
	if (status != 0) {
		free(d);
		return NULL;
	}
	return d;
}

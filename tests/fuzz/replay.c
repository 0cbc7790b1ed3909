// Runs a harness's LLVMFuzzerTestOneInput over files, without libFuzzer:
// the default build replays tests/fuzz/regress/ with it, so every input a
// fuzzer once crashed on stays a test under gcc (and under ASan in a
// sanitizer build). Arguments: files or directories (their files);
// NAME.gz files are decompressed.
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "util/sort.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

// Files are read through zlib, so a regression input may be committed
// gzip-compressed (NAME.gz: a core of mostly zeros) or plain.
static int run_file(const char *path)
{
	gzFile f = gzopen(path, "rb");
	if (!f) {
		perror(path);
		return 1;
	}
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap);
	int r;
	while (buf && (r = gzread(f, buf + n, (unsigned)(cap - n))) > 0) {
		n += (size_t)r;
		if (n == cap)
			buf = realloc(buf, cap *= 2);
	}
	gzclose(f);
	if (!buf) {
		fprintf(stderr, "%s: out of memory\n", path);
		return 1;
	}
	printf("replay %s (%zu bytes)\n", path, n);
	fflush(stdout);
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	int rc = 0, files = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (!S_ISDIR(st.st_mode)) {
			rc |= run_file(argv[i]);
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		char **names = NULL;
		size_t n = 0;
		struct dirent *e;
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.' || !strcmp(e->d_name, "README"))
				continue;
			names = realloc(names, (n + 1) * sizeof(*names));
			if (!names || asprintf(&names[n++], "%s/%s", argv[i], e->d_name) < 0)
				abort();
		}
		closedir(d);
		// An empty folder (no finding yet) leaves names NULL.
		hd_qsort(names, n, sizeof(*names), cmp);
		for (size_t k = 0; k < n; k++) {
			rc |= run_file(names[k]);
			files++;
			free(names[k]);
		}
		free(names);
	}
	printf("%d inputs replayed\n", files);
	return rc;
}

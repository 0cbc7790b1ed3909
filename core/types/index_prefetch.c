// Types read ahead for a debugger front-end: as the debugger loads each
// module, its DWARF types (and the struct layouts the heap walker will ask
// of it) are read on a thread of the library, so that the first report at
// a stop finds them made instead of reading libc's DWARF then.
#include <stdlib.h>
#include <string.h>

#include "debuginfo/debuginfo_internal.h"
#include "heap/heap_internal.h"
#include "types/index_cache.h"
#include "util/elf_read.h"

void hd_prefetch_types(const char *path, const char *debug_dir)
{
	if (!path || !path[0])
		return;
	struct hd_elf_info info;
	struct hd_error *err = hd_elf_read_info(path, &info);
	if (err) {
		hd_error_destroy(err);
		return;
	}
	// The file a session's typing will index for a module of this file,
	// found the same way, so that it finds this index in the process.
	struct hd_module m = {.file = (char *)path};
	if (info.build_id_len <= sizeof(m.build_id)) {
		memcpy(m.build_id, info.build_id, info.build_id_len);
		m.build_id_len = info.build_id_len;
	}
	char *debug = hd_debuginfo_find_debug_file(
		debug_dir ? debug_dir : "/usr/lib/debug", debug_dir != NULL, &m);
	hd_index_cache_prefetch_background(debug ? debug : path,
					   hd_heap_layout_unit(path));
	free(debug);
}

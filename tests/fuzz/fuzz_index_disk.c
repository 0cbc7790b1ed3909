// The reader of the type index cache on disk (core/types/index_disk.c)
// over mutated cache files (seeds: types-*.idx files of a cache directory,
// docs/index-cache.md, e.g. after `heapdom` ran on the unit tests' type
// samples). The checksums are made to fit the mutated bytes first, or
// nearly every input would stop there: what is fuzzed is the checking of
// counts, ids and names behind them. An index that is accepted is queried
// the way typing queries it.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "types/index_disk.h"
#include "types/type_index.h"

// docs/index-cache.md: header size and the two checksums' offsets.
#define HEADER_SIZE 392
#define PAYLOAD_CRC_OFF 384
#define HEADER_CRC_OFF 388

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (size >= HEADER_SIZE) {
		uint32_t c = (uint32_t)crc32_z(0, buf + HEADER_SIZE, size - HEADER_SIZE);
		memcpy(buf + PAYLOAD_CRC_OFF, &c, 4);
		memset(buf + HEADER_CRC_OFF, 0, 4);
		c = (uint32_t)crc32_z(0, buf, HEADER_SIZE);
		memcpy(buf + HEADER_CRC_OFF, &c, 4);
	}
	struct hd_type_index *ix = NULL;
	struct hd_error *err = hd_index_disk_parse(buf, size, NULL, &ix);
	if (err) {
		if (ix)
			abort(); // an error leaves nothing behind
		hd_error_destroy(err);
		free(buf);
		return 0;
	}
	char name[256];
	struct hd_ptr_slot slots[32];
	size_t total;
	for (size_t i = 0; i < ix->num_types && i < 4096; i++) {
		uint32_t t = (uint32_t)i;
		hd_type_name(ix, t, name, sizeof(name));
		uint32_t s = hd_type_strip(ix, t);
		if (s == HD_TYPE_NONE)
			continue;
		hd_type_pointer_slots(ix, s, slots, 32, &total);
		hd_type_member_path(ix, s, ix->types[s].size / 2, name, sizeof(name));
		if (ix->types[i].name)
			hd_type_find_struct(ix, ix->types[i].name);
	}
	for (size_t i = 0; i < ix->num_variables && i < 1024; i++)
		hd_type_name(ix, ix->variables[i].type, name, sizeof(name));
	hd_type_find_struct(ix, "session");
	hd_type_index_destroy(ix);
	free(buf);
	return 0;
}

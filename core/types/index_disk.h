// The on-disk form of a type index (docs/index-cache.md): what
// hd_type_index_build made from a file's DWARF, written once and read back
// by later processes instead of reading the DWARF again.
#ifndef HD_INDEX_DISK_H
#define HD_INDEX_DISK_H

#include <stdbool.h>
#include <stdint.h>

#include "types/type_index.h"

// What an index file must have been made from: the ELF file (build-id,
// size, modification time, CRC-32 of its bytes), the units indexed (cu_suffix, "" for all) and
// the code that made it (libheapdom's own build-id: any change to the
// builder gives a new one). All of it is checked when a file is read.
struct hd_index_key {
	uint8_t build_id[64];
	uint32_t build_id_len;
	uint8_t lib_id[64];
	uint32_t lib_id_len;
	uint64_t file_size;
	int64_t mtime_sec, mtime_nsec;
	uint32_t file_crc; // CRC-32 of the whole file
	char suffix[128];
};

// The key of the ELF file at path indexed with cu_suffix (NULL: all
// units). HD_ERROR_NOT_FOUND when the file or libheapdom has no build-id
// (such files are not cached), HD_ERROR_INVALID for a suffix too long.
struct hd_error *hd_index_disk_key(const char *path, const char *cu_suffix,
				   struct hd_index_key *ret);

// The cache file for key under dir: dir/types-BUILDID[-SUFFIXHASH].idx.
// false if it does not fit in len.
bool hd_index_disk_file(const char *dir, const struct hd_index_key *key,
			char *buf, size_t len);

// Writes ix to file (through a temporary file renamed over it, so that a
// reader never sees half a file).
struct hd_error *hd_index_disk_write(const struct hd_type_index *ix,
				     const struct hd_index_key *key,
				     const char *file);

// Reads the index in file if it was made for key. HD_ERROR_NOT_FOUND when
// there is no file; HD_ERROR_MISMATCH when it was made for another key (or
// by another format version); HD_ERROR_FORMAT when it is truncated,
// corrupt (checksums) or inconsistent (an id out of range). Never trusts
// the file: every id and name is checked before it is used.
struct hd_error *hd_index_disk_read(const char *file,
				    const struct hd_index_key *key,
				    struct hd_type_index **ret);

// Same, from a buffer (the file's bytes): the fuzzing entry point.
struct hd_error *hd_index_disk_parse(const uint8_t *data, size_t size,
				     const struct hd_index_key *key,
				     struct hd_type_index **ret);

#endif

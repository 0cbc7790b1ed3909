// hd_dwarf_open: the file, its ELF magic, libdwarf's handle.
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "debuginfo/dwarf_open.h"
#include "debuginfo/rnglists_check.h"
#include "util/elf_read.h"

struct hd_error *hd_dwarf_open(const char *path, int *fd_ret, Dwarf_Debug *dbg)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return hd_error_os(errno, path, "cannot open");
	struct hd_error *err = hd_elf_check_magic(fd, path);
	// Before libdwarf: it frees memory twice on some corrupt
	// .debug_rnglists headers (rnglists_check.c).
	if (!err)
		err = hd_dwarf_check_rnglists(fd, path);
	if (err) {
		close(fd);
		return err;
	}
	Dwarf_Error derr = NULL;
	int rc = dwarf_init_b(fd, DW_DLC_READ, DW_GROUPNUMBER_ANY, NULL, NULL,
			      dbg, &derr);
	if (rc == DW_DLV_NO_ENTRY) {
		close(fd);
		return hd_error_file(HD_ERROR_NOT_FOUND, path, "no DWARF debug info");
	}
	if (rc != DW_DLV_OK) {
		err = hd_error_file(HD_ERROR_FORMAT, path, "cannot load DWARF: %s",
				    derr ? dwarf_errmsg(derr) : "unknown libdwarf error");
		// The error belongs to no Dwarf_Debug.
		if (derr)
			dwarf_dealloc_error(NULL, derr);
		close(fd);
		return err;
	}
	*fd_ret = fd;
	return NULL;
}

void hd_dwarf_close(int fd, Dwarf_Debug dbg)
{
	dwarf_finish(dbg, NULL);
	close(fd);
}

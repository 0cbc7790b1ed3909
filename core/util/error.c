// One error type for the whole library: see heapdom.h.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heapdom.h"

struct hd_error hd_error_no_memory = {
	.code = HD_ERROR_NO_MEMORY,
	.message = "out of memory",
	.is_static = true,
};

static struct hd_error *error_vcreate(enum hd_error_code code, const char *fmt,
				      va_list ap)
{
	struct hd_error *err = calloc(1, sizeof(*err));
	if (!err)
		return &hd_error_no_memory;
	err->code = code;
	if (vasprintf(&err->message, fmt, ap) < 0) {
		free(err);
		return &hd_error_no_memory;
	}
	return err;
}

struct hd_error *hd_error_create(enum hd_error_code code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hd_error *err = error_vcreate(code, fmt, ap);
	va_end(ap);
	return err;
}

struct hd_error *hd_error_file(enum hd_error_code code, const char *path,
			       const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hd_error *err = error_vcreate(code, fmt, ap);
	va_end(ap);
	if (err->is_static)
		return err;
	char *msg;
	if (asprintf(&msg, "%s: %s", path, err->message) >= 0) {
		free(err->message);
		err->message = msg;
	}
	err->path = strdup(path);
	return err;
}

struct hd_error *hd_error_os(int errnum, const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hd_error *err = error_vcreate(HD_ERROR_OS, fmt, ap);
	va_end(ap);
	if (err->is_static)
		return err;
	err->errnum = errnum;
	char *msg;
	int r = path ? asprintf(&msg, "%s: %s: %s", path, err->message,
				strerror(errnum))
		     : asprintf(&msg, "%s: %s", err->message, strerror(errnum));
	if (r >= 0) {
		free(err->message);
		err->message = msg;
	}
	if (path)
		err->path = strdup(path);
	return err;
}

struct hd_error *hd_error_at(enum hd_error_code code, uint64_t address,
			     const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	struct hd_error *err = error_vcreate(code, fmt, ap);
	va_end(ap);
	if (err->is_static)
		return err;
	err->has_address = true;
	err->address = address;
	return err;
}

struct hd_error *hd_error_prefix(struct hd_error *err, const char *fmt, ...)
{
	if (!err || err->is_static)
		return err;
	char *prefix, *msg;
	va_list ap;
	va_start(ap, fmt);
	int r = vasprintf(&prefix, fmt, ap);
	va_end(ap);
	if (r < 0)
		return err;
	if (asprintf(&msg, "%s: %s", prefix, err->message) >= 0) {
		free(err->message);
		err->message = msg;
	}
	free(prefix);
	return err;
}

void hd_error_destroy(struct hd_error *err)
{
	if (!err || err->is_static)
		return;
	free(err->message);
	free(err->path);
	free(err);
}

struct hd_error *hd_error_new(enum hd_error_code code, uint64_t address,
			      const char *message)
{
	struct hd_error *err = calloc(1, sizeof(*err));
	if (!err)
		return &hd_error_no_memory;
	err->code = code;
	err->message = strdup(message ? message : "unknown error");
	if (!err->message) {
		free(err);
		return &hd_error_no_memory;
	}
	err->has_address = address != 0;
	err->address = address;
	return err;
}

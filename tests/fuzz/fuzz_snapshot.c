// The JSON reader (core/util/json.c) and the snapshot reader on top of it
// (core/report/snapshot.c), then what `heapdom diff` does with what was
// read: the input diffed against itself in text and JSON. Seeds: the
// snapshots `heapdom snapshot --json` writes of the synthetic cores.
#include <stdint.h>

#include "heapdom.h"
#include "util/json.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct hd_json *doc;
	struct hd_error *err = hd_json_parse("fuzz.json", (const char *)data, size, &doc);
	if (!err)
		hd_json_destroy(doc);
	hd_error_destroy(err);

	struct hd_snapshot *snap;
	err = hd_snapshot_read(hd_fuzz_file(data, size), &snap);
	if (err) {
		hd_error_destroy(err);
		return 0;
	}
	struct hd_snapshot *pair[3] = {snap, snap, snap};
	struct hd_render_options ro = {.format = HD_FORMAT_TEXT};
	hd_error_destroy(hd_render_diff(hd_fuzz_sink(), pair, 2, &ro));
	ro.format = HD_FORMAT_JSON;
	hd_error_destroy(hd_render_diff(hd_fuzz_sink(), pair, 3, &ro));
	hd_snapshot_destroy(snap);
	return 0;
}

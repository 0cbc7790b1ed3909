#!/bin/bash
# The test command: installs dependencies if missing, builds in build/,
# runs the unit and integration tests, ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps || exit 1
if [ ! -d build ]; then
	meson setup build || exit 1
fi
ninja -C build || exit 1
meson test -C build --print-errorlogs --num-processes 2 "$@"
rc=$?

# Fuzzers (tests/fuzz/run.sh, docs/fuzzing.md): each for a short fixed
# time when the whole suite runs; one passed/failed entry per fuzzer in the
# count below. HEAPDOM_FUZZ_SECONDS changes the time, 0 skips them.
fuzz_results=build/fuzz-results.txt
rm -f "$fuzz_results"
if [ $# -eq 0 ] && [ "${HEAPDOM_FUZZ_SECONDS:-20}" != 0 ]; then
	tests/fuzz/run.sh --results "$fuzz_results" "${HEAPDOM_FUZZ_SECONDS:-20}" || rc=1
	[ -s "$fuzz_results" ] || echo "fuzz-build FAIL" >"$fuzz_results"
fi
python3 - <<'PY'
import json
passed = failed = skipped = 0
try:
    with open("build/meson-logs/testlog.json") as f:
        for line in f:
            r = json.loads(line)
            if r.get("result") == "SKIP":
                skipped += 1
            elif r.get("result") in ("OK", "EXPECTEDFAIL"):
                passed += 1
            else:
                failed += 1
                print("FAILED:", r.get("name"))
except FileNotFoundError:
    failed += 1
try:
    with open("build/fuzz-results.txt") as f:
        for line in f:
            name, result = line.split()
            if result == "OK":
                passed += 1
            else:
                failed += 1
                print("FAILED:", name)
except FileNotFoundError:
    pass
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $rc

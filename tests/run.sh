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

# Sanitizers (docs/testing.md): libheapdom and the CLI built with
# ASan+UBSan in build-asan/, running the unit tests and the integration
# tests that drive only the CLI (suite cli). Any report aborts the process;
# ASan and LeakSanitizer reports are also kept in build-asan/sanitizer-logs/
# and, if there are any, count as one more failure below. Only on a whole
# run (no test names given); HEAPDOM_SANITIZE=0 leaves it out.
asan_ran=0
if [ $# -eq 0 ] && [ "${HEAPDOM_SANITIZE:-1}" != 0 ]; then
	asan_ran=1
	if [ ! -d build-asan ]; then
		meson setup build-asan -Dsanitize=true || exit 1
	fi
	ninja -C build-asan || exit 1
	rm -rf build-asan/sanitizer-logs && mkdir -p build-asan/sanitizer-logs
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1:log_path=$PWD/build-asan/sanitizer-logs/asan \
	UBSAN_OPTIONS=halt_on_error=1:abort_on_error=1:print_stacktrace=1 \
		meson test -C build-asan --print-errorlogs --num-processes 2 --suite unit --suite cli \
		|| rc=1
fi
HEAPDOM_ASAN_RAN=$asan_ran python3 - <<'PY'
import json
import glob, os
passed = failed = skipped = 0
def count(log, prefix):
    global passed, failed, skipped
    with open(log) as f:
        for line in f:
            r = json.loads(line)
            # A sanitizer report fails its test even if the test let a
            # crashed heapdom pass.
            out = (r.get("stdout") or "") + (r.get("stderr") or "")
            report = "Sanitizer" in out and "ERROR:" in out or "runtime error:" in out
            if r.get("result") == "SKIP":
                skipped += 1
            elif r.get("result") in ("OK", "EXPECTEDFAIL") and not report:
                passed += 1
            else:
                failed += 1
                print("FAILED:", prefix + r.get("name"))
try:
    count("build/meson-logs/testlog.json", "")
except FileNotFoundError:
    failed += 1
if os.environ.get("HEAPDOM_ASAN_RAN") == "1":
    try:
        count("build-asan/meson-logs/testlog.json", "asan: ")
    except FileNotFoundError:
        failed += 1
    # Reports seen by no test (a child heapdom ran, a test that ignored
    # its crash) count once, as one more failure.
    reps = sorted(glob.glob("build-asan/sanitizer-logs/*"))
    if reps:
        failed += 1
        print(f"FAILED: asan: {len(reps)} sanitizer report(s), first {reps[0]}")
if os.path.exists("build/fuzz-results.txt"):
    with open("build/fuzz-results.txt") as f:
        for line in f:
            name, result = line.split()
            if result == "OK":
                passed += 1
            else:
                failed += 1
                print("FAILED: fuzz:", name)
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $rc

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
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
exit $rc

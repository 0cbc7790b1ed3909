#!/bin/bash
# The main job on the bundled example: install what is missing, build,
# run examples/session_cache under gdb to its checkpoint, save a core and
# print heapdom's view of the heap.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
core=build/demo.core
rm -f "$core"
gdb -q -batch -ex 'break demo_checkpoint' -ex run -ex "gcore $core" -ex kill \
	build/examples/session_cache >/dev/null 2>&1
echo "== heapdom stats $core"
build/core/heapdom stats "$core"
echo
echo "== heapdom blocks $core --state free (first 15)"
build/core/heapdom blocks "$core" --state free | head -16

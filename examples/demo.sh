#!/bin/bash
# The main job on the bundled example: install what is missing, build, run
# examples/session_cache under gdb to its checkpoint and print heapdom's
# view of its heap (heap-stats, heap-dominators, heap-why, heap-leaks, the
# semantic tree), then
# the same from the command line on the core saved there.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/install-deps
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
rm -f build/demo.core
echo "== gdb -batch -x examples/demo.gdb build/examples/session_cache"
gdb -q -nx -batch -x examples/demo.gdb build/examples/session_cache 2>&1 |
	grep -v -e '^\[Thread debugging' -e '^Using host libthread_db' -e '^\[New Thread' \
		-e '^\[Inferior 1 .* killed\]'
echo
echo "== heapdom dominators build/demo.core --top 3 (the CLI on the core saved by gdb)"
build/core/heapdom dominators build/demo.core --top 3

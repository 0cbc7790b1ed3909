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
echo "== heapdom dominators $core --top 5 --depth 1"
build/core/heapdom dominators "$core" --top 5 --depth 1
echo
echo "== heapdom why $core <a block two levels below the top holder>"
addr=$(build/core/heapdom dominators "$core" --json --top 1 --depth 2 |
	python3 -c 'import json,sys; n=json.load(sys.stdin)["nodes"]; print(n[-1]["addr"])')
build/core/heapdom why "$core" "$addr"

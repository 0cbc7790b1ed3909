#!/bin/bash
# Writes the fuzzers' seed corpora into OUT/NAME/ from the test suite's own
# material, at run time (nothing large is committed):
#   core, heap  tests/synth/mkcore.py's synthetic cores of several glibc
#               versions (with and without NT_FILE), and a gdb core of a
#               small program when gdb can make one
#   dwarf       the unit tests' type and line samples (tests/unit/) built
#               at DWARF 5, 4 and 2, C and C++ (with type units), and the
#               frames fixture at -O0 and -O2 (blocks, inlined calls,
#               location lists)
#   snapshot    what `heapdom snapshot --json` writes of the synthetic cores
#   trace       tracer states (fuzz_trace.c's input format) with call sites,
#               shards and counts, written by seed_trace.py
#   decode      registers and code: slices of the samples' .text
#   unwind      .eh_frame / .debug_frame of the frames fixture, pcs in its
#               functions, registers and a stack (seed_unwind.py)
#   pool        poolalloc memory images: pools, blocks, free lists
#               (seed_pool.py)
#   mimalloc    mimalloc 2.0.9 segments: small, medium and huge pages,
#               free, local_free, thread_free and delayed-free lists
#               (seed_mimalloc.py)
#   musl        mallocng memory images: context, meta area, groups (one
#               nested, one mmapped), slots of every state (seed_musl.py)
#   jemalloc    jemalloc 5.3.0 memory images: slabs, large and dirty
#               extents, an arena, its base, a thread cache
#               (seed_jemalloc.py)
#   tcmalloc    gperftools 2.10 memory images: page heap and page map,
#               central free lists with a transfer cache slot, size map,
#               small, large and free spans, a thread cache
#               (seed_tcmalloc.py)
# usage: seeds.sh OUT HEAPDOM   (HEAPDOM: the fuzz build's CLI)
set -euo pipefail
out=$1
heapdom=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"/{core,heap,dwarf,snapshot,trace,decode,unwind,pool,mimalloc,musl,jemalloc,tcmalloc}

for v in 2.17 2.23 2.27 2.31 2.35 2.43; do
	python3 "$src/tests/synth/mkcore.py" --version "$v" "$tmp/glibc-$v.core" >/dev/null
	cp "$tmp/glibc-$v.core" "$out/heap/"
	cp "$tmp/glibc-$v.core" "$out/core/"
done
python3 "$src/tests/synth/mkcore.py" --version 2.31 --no-nt-file "$tmp/noteless.core" >/dev/null
cp "$tmp/noteless.core" "$out/core/"
cp "$tmp/noteless.core" "$out/heap/"

# A real core (gdb's gcore) of a program with a few blocks, if small.
if command -v gdb >/dev/null; then
	cat > "$tmp/small.c" <<'C'
#include <stdlib.h>
#include <string.h>
struct node { struct node *next; char name[24]; };
struct node *g_list;
int main(void)
{
	for (int i = 0; i < 20; i++) {
		struct node *n = malloc(sizeof(*n));
		strcpy(n->name, "node");
		n->next = g_list;
		g_list = n;
	}
	free(g_list->next);
	g_list->next = NULL;
	g_list->next = malloc(100);
	__builtin_trap();
}
C
	gcc -g -O0 -o "$tmp/small" "$tmp/small.c"
	if gdb -q -batch -ex run -ex "gcore $tmp/small.core" "$tmp/small" >/dev/null 2>&1 &&
	   [ -f "$tmp/small.core" ] && [ "$(stat -c %s "$tmp/small.core")" -lt 4000000 ]; then
		cp "$tmp/small.core" "$out/core/gdb-small.core"
		cp "$tmp/small.core" "$out/heap/gdb-small.core"
	fi
fi

for v in 5 4 2; do
	gcc -g -gdwarf-$v -O0 -o "$out/dwarf/type_sample_v$v" "$src/tests/unit/type_sample.c"
done
gcc -g -gdwarf-4 -O0 -o "$out/dwarf/lines_sample_v4" "$src/tests/unit/lines_sample.c"
# Locals, blocks, inlined calls, location lists for the scopes.
gcc -g -O0 -o "$out/dwarf/frames_fixture_O0" "$src/tests/fixtures/frames_fixture.c" -lpthread
gcc -g -O2 -o "$out/dwarf/frames_fixture_O2" "$src/tests/fixtures/frames_fixture.c" -lpthread
if command -v g++ >/dev/null; then
	g++ -g -gdwarf-5 -O0 -o "$out/dwarf/type_sample_cpp_v5" "$src/tests/unit/type_sample_cpp.cpp"
	g++ -g -gdwarf-4 -fdebug-types-section -O0 -o "$out/dwarf/type_sample_cpp_v4t" \
		"$src/tests/unit/type_sample_cpp.cpp"
fi

for v in 2.27 2.35; do
	ASAN_OPTIONS=detect_leaks=0 "$heapdom" snapshot --json "$tmp/glibc-$v.core" \
		> "$out/snapshot/glibc-$v.json"
done

python3 "$src/tests/fuzz/seed_trace.py" "$out/trace"

# unwind: .eh_frame of the frames fixture at -O0 and -O2, .debug_frame of
# a build without unwind tables.
gcc -g -O1 -fno-asynchronous-unwind-tables -o "$tmp/frames_fixture_df" \
	"$src/tests/fixtures/frames_fixture.c" -lpthread
python3 "$src/tests/fuzz/seed_unwind.py" "$out/unwind" "$out/dwarf/frames_fixture_O0" \
	"$out/dwarf/frames_fixture_O2" "$tmp/frames_fixture_df"
python3 "$src/tests/fuzz/seed_pool.py" "$out/pool"
python3 "$src/tests/fuzz/seed_mimalloc.py" "$out/mimalloc"
python3 "$src/tests/fuzz/seed_musl.py" "$out/musl"
python3 "$src/tests/fuzz/seed_jemalloc.py" "$out/jemalloc"
python3 "$src/tests/fuzz/seed_tcmalloc.py" "$out/tcmalloc"

# decode: 216 bytes of registers (struct hd_regs) then code.
objcopy -O binary --only-section=.text "$out/dwarf/type_sample_v5" "$tmp/text"
python3 - "$tmp/text" "$out/decode" <<'PY'
import struct, sys
text = open(sys.argv[1], "rb").read()
regs = list(range(0x1000, 0x1000 + 27 * 0x100, 0x100))
regs[16] = 0x401000                # rip
regs[19] = 0x7ffd0000              # rsp
regs[21] = 0x7f0000001000          # fs_base
head = struct.pack("<27Q", *regs)
samples = {
    "mov-load": bytes.fromhex("488b4308"),          # mov 0x8(%rbx),%rax
    "push-mem": bytes.fromhex("ff7510"),            # push 0x10(%rbp)
    "rep-movs": bytes.fromhex("f348a5"),            # rep movsq
    "fs-load": bytes.fromhex("64488b042528000000"), # mov %fs:0x28,%rax
    "nop-then-store": bytes.fromhex("90904889470c"),
}
for name, code in samples.items():
    open(f"{sys.argv[2]}/{name}", "wb").write(head + code)
for i, off in enumerate(range(0, min(len(text), 1024), 128)):
    open(f"{sys.argv[2]}/text-{i}", "wb").write(head + text[off:off + 64])
PY

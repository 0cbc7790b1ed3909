#!/bin/bash
# Builds the fuzz harnesses (build-fuzz/: clang-14, libFuzzer, ASan and
# UBSan) and runs each for SECONDS, one after the other, from the seeds
# seeds.sh makes, the regression inputs (regress/NAME/) and the corpus of
# earlier runs (build-fuzz/fuzz-corpus/NAME/). Prints per fuzzer its
# executions, coverage (libFuzzer's cov: edges, ft: features), corpus and
# findings; a finding (crash, leak, timeout, sanitizer report) is kept in
# build-fuzz/fuzz-findings/NAME/ and makes the exit status 1.
#
# usage: tests/fuzz/run.sh [--results FILE] [--only NAME[,NAME]] SECONDS
#   --results FILE: also write "NAME OK|FAIL" per fuzzer (tests/run.sh
#   counts them)
#   HD_FUZZ_JOBS: fuzzers run at once (default 1)
set -uo pipefail
cd "$(dirname "$0")/../.."
results= only=
while [ $# -gt 1 ]; do
	case $1 in
	--results) results=$2; shift 2 ;;
	--only) only=$2; shift 2 ;;
	*) break ;;
	esac
done
seconds=${1:?usage: tests/fuzz/run.sh [--results FILE] [--only NAMES] SECONDS}
targets="core heap dwarf index_disk snapshot trace decode unwind pool mimalloc musl jemalloc tcmalloc"
[ -n "$only" ] && targets=${only//,/ }
bd=build-fuzz

if [ ! -f "$bd/build.ninja" ]; then
	mkdir -p "$bd"
	CC=${HD_FUZZ_CC:-clang-14} meson setup "$bd" -Dfuzz=true -Db_lundef=false \
		>"$bd/setup.log" 2>&1 || { cat "$bd/setup.log"; exit 1; }
fi
ninja -C "$bd" >"$bd/build.log" 2>&1 || { tail -40 "$bd/build.log"; exit 1; }
if [ ! -f "$bd/fuzz-seeds/.done" ]; then
	rm -rf "$bd/fuzz-seeds"
	bash tests/fuzz/seeds.sh "$bd/fuzz-seeds" "$bd/core/heapdom" \
		>"$bd/seeds.log" 2>&1 || { cat "$bd/seeds.log"; exit 1; }
	touch "$bd/fuzz-seeds/.done"
fi

# ASan: leaks are findings; a fuzzer's own allocation limit, not the
# machine's, ends a runaway input (-rss_limit_mb, -malloc_limit_mb).
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export HD_FUZZ_CORE=$PWD/$bd/fuzz-seeds/heap/glibc-2.35.core

run_one() {
	local t=$1 corpus=$bd/fuzz-corpus/$1 art=$bd/fuzz-findings/$1/
	mkdir -p "$corpus" "$art"
	# The regression inputs first (plain copies of the .gz ones).
	local reg=$bd/fuzz-regress/$t
	rm -rf "$reg" && mkdir -p "$reg"
	for f in tests/fuzz/regress/$t/*; do
		[ -f "$f" ] || continue
		case $f in
		*.gz) gzip -dc "$f" >"$reg/$(basename "$f" .gz)" ;;
		*) cp "$f" "$reg/" ;;
		esac
	done
	# index_disk has no seeds of its own: its regression inputs are.
	mkdir -p "$bd/fuzz-seeds/$t"
	local dirs=("$corpus" "$reg" "$bd/fuzz-seeds/$t")
	"$bd/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=20 \
		-rss_limit_mb=2560 -malloc_limit_mb=2048 -print_final_stats=1 \
		-artifact_prefix="$art" "${dirs[@]}" >"$bd/fuzz-$t.log" 2>&1
	echo $? >"$bd/fuzz-$t.rc"
}

jobs=${HD_FUZZ_JOBS:-1}
for t in $targets; do
	while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
	run_one "$t" &
done
wait

[ -n "$results" ] && : >"$results"
status=0
printf '%-9s %6s %10s %7s %7s %7s  %s\n' fuzzer result execs exec/s cov ft findings
for t in $targets; do
	log=$bd/fuzz-$t.log
	rc=$(cat "$bd/fuzz-$t.rc" 2>/dev/null || echo 1)
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
	last=$(grep -E '^#[0-9]+.*cov: ' "$log" | tail -1)
	cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
	ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
	found=$(grep -m1 -E '^==[0-9]+==ERROR|^SUMMARY|runtime error|ERROR: libFuzzer' "$log")
	result=OK
	if [ "$rc" != 0 ] || [ -n "$found" ]; then
		result=FAIL
	fi
	[ "$result" = FAIL ] && status=1
	printf '%-9s %6s %10s %7s %7s %7s  %s\n' "$t" "$result" "${execs:-?}" "${speed:-?}" \
		"${cov:-?}" "${ft:-?}" "${found:-none}"
	[ "$result" = FAIL ] && grep -E 'Test unit written|^artifact_prefix' "$log" | sed 's/^/          /'
	[ -n "$results" ] && echo "fuzz-$t $result" >>"$results"
done
exit $status

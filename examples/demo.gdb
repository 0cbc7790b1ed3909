# The demo session (examples/demo.sh runs it): stop the example at its
# checkpoint and ask heapdom what holds its memory.
source gdb-plugin/heapdom.py
break demo_checkpoint
run
heap-stats
heap-dominators --top 5 --depth 1
heap-why g_cache->buckets[1]
heap-leaks
heap-dominators --semantic --top 3 --depth 2
gcore build/demo.core
kill

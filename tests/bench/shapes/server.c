// server.c -- a server-shaped heap for the performance benchmark (not a test).
//
//   server ENTRIES
//
// A cache as a server keeps one: a hash table of entries with chained buckets,
// each entry owning a key string and a small payload; a doubly linked LRU list
// through every entry; a binary search tree indexing one entry in eight; and
// about 2% of junk blocks whose pointers were dropped (leaked). Stops in
// bench_stop() for the benchmark's debugger to core it.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct payload {
	uint32_t hits;
	uint32_t flags;
	double score;
	char tag[8];
};

struct entry {
	struct entry *chain;      // next in the bucket
	struct entry *lru_prev;
	struct entry *lru_next;
	char *key;
	struct payload *value;
	uint64_t hash;
	uint32_t klen;
	uint32_t expires;
};

struct index_node {
	struct index_node *left;
	struct index_node *right;
	struct entry *entry;
	uint64_t hash;
};

struct cache {
	struct entry **buckets;
	size_t nbuckets;
	size_t count;
	struct entry *lru_head;
	struct entry *lru_tail;
	struct index_node *index;
};

static struct cache *cache;

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static void index_insert(struct index_node **root, struct entry *e)
{
	struct index_node *n = malloc(sizeof *n);
	n->left = n->right = NULL;
	n->entry = e;
	n->hash = e->hash;
	while (*root)
		root = e->hash < (*root)->hash ? &(*root)->left : &(*root)->right;
	*root = n;
}

static void cache_put(struct cache *c, const char *key, uint32_t hits)
{
	struct entry *e = malloc(sizeof *e);
	e->klen = (uint32_t)strlen(key);
	e->key = malloc(e->klen + 1);
	memcpy(e->key, key, e->klen + 1);
	e->hash = hash_str(key);
	e->value = malloc(sizeof *e->value);
	e->value->hits = hits;
	e->value->flags = 0;
	e->value->score = hits * 0.5;
	memcpy(e->value->tag, "payload", 8);
	e->expires = hits + 3600;
	size_t b = e->hash % c->nbuckets;
	e->chain = c->buckets[b];
	c->buckets[b] = e;
	e->lru_prev = NULL;
	e->lru_next = c->lru_head;
	if (c->lru_head)
		c->lru_head->lru_prev = e;
	else
		c->lru_tail = e;
	c->lru_head = e;
	c->count++;
	if (hits % 8 == 0)
		index_insert(&c->index, e);
}

__attribute__((noinline)) void bench_stop(size_t used, size_t leaked)
{
	printf("ready %zu used, %zu leaked\n", used, leaked);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2700000;
	cache = calloc(1, sizeof *cache);
	cache->nbuckets = n / 2 + 1;
	cache->buckets = calloc(cache->nbuckets, sizeof *cache->buckets);
	char key[48];
	size_t junk = 0;
	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof key, "user:%zu:session", i * 2654435761u % 1000000007u);
		cache_put(cache, key, (uint32_t)i);
		// a request's scratch buffer now and then forgotten (the leak)
		if (i % 16 == 0) {
			char *scratch = malloc(32 + i % 64);
			snprintf(scratch, 32, "req %zu", i);
			junk++;
		}
	}
	bench_stop(2 + 3 * n + n / 8 + junk, junk);
	return 0;
}

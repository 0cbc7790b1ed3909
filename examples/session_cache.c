// A toy server that keeps client sessions in a hash table, each session
// with a receive buffer and a history list, while a worker thread keeps
// its own scratch data. Some sessions expire and are freed, one large
// report buffer is mmapped by malloc: a small heap with every kind of block
// heapdom reports.
//
// Run it under gdb and stop at demo_checkpoint() to look at its heap:
//   gdb -batch -ex 'break demo_checkpoint' -ex run -ex 'gcore demo.core' ./session_cache
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUCKETS 64

struct history {
	struct history *next;
	char line[40];
};

struct session {
	struct session *next;
	int id;
	char *recv_buf;
	size_t recv_len;
	struct history *history;
};

struct cache {
	struct session *buckets[BUCKETS];
	size_t count;
};

struct cache *g_cache;
char *g_report;

static pthread_barrier_t ready, done;

// The breakpoint location of the demo and of docs/cli.md.
__attribute__((noinline)) void demo_checkpoint(void)
{
	__asm__ volatile("");
}

static struct session *session_create(int id)
{
	struct session *s = calloc(1, sizeof(*s));
	s->id = id;
	s->recv_len = 256 + (size_t)(id % 7) * 512;
	s->recv_buf = malloc(s->recv_len);
	memset(s->recv_buf, 'a' + id % 26, s->recv_len);
	for (int i = 0; i < id % 5 + 1; i++) {
		struct history *h = malloc(sizeof(*h));
		snprintf(h->line, sizeof(h->line), "session %d event %d", id, i);
		h->next = s->history;
		s->history = h;
	}
	return s;
}

static void session_destroy(struct session *s)
{
	while (s->history) {
		struct history *h = s->history;
		s->history = h->next;
		free(h);
	}
	free(s->recv_buf);
	free(s);
}

static void cache_expire(struct cache *c, int modulo)
{
	for (int b = 0; b < BUCKETS; b++) {
		struct session **pp = &c->buckets[b];
		while (*pp) {
			struct session *s = *pp;
			if (s->id % modulo == 0) {
				*pp = s->next;
				session_destroy(s);
				c->count--;
			} else {
				pp = &s->next;
			}
		}
	}
}

static void *worker(void *arg)
{
	(void)arg;
	// A thread's first malloc gets it its own arena.
	char **scratch = malloc(32 * sizeof(char *));
	for (int i = 0; i < 32; i++)
		scratch[i] = malloc(64 + i * 16);
	for (int i = 0; i < 32; i += 4)
		free(scratch[i]);
	pthread_barrier_wait(&ready);
	pthread_barrier_wait(&done);
	return NULL;
}

int main(void)
{
	pthread_t t;
	pthread_barrier_init(&ready, NULL, 2);
	pthread_barrier_init(&done, NULL, 2);
	pthread_create(&t, NULL, worker, NULL);

	g_cache = calloc(1, sizeof(*g_cache));
	for (int id = 1; id <= 500; id++) {
		struct session *s = session_create(id);
		s->next = g_cache->buckets[id % BUCKETS];
		g_cache->buckets[id % BUCKETS] = s;
		g_cache->count++;
	}
	cache_expire(g_cache, 3);
	g_report = malloc(512 * 1024);
	snprintf(g_report, 64, "%zu sessions", g_cache->count);

	pthread_barrier_wait(&ready);
	demo_checkpoint();
	pthread_barrier_wait(&done);
	pthread_join(t, NULL);
	printf("%s\n", g_report);
	return 0;
}

// list.c -- a list-heavy heap for the performance benchmark (not a test).
//
//   list JOBS
//
// A job scheduler as a long-running daemon keeps one: eight FIFO run queues
// (singly linked, head and tail) of jobs, each job owning its name and its
// command line; a doubly linked list of client sessions, each session owning
// its user name and a singly linked list of pending messages (a list of
// lists), each message owning its text. Jobs are submitted, run (dequeued
// and freed) and resubmitted, sessions come and go, so later nodes reuse the
// holes earlier ones left and the lists end up in no particular memory
// order. About 2% of the jobs run are dropped without being freed (an error
// path that forgets them): those and their strings are leaked. Stops in
// bench_stop() for the benchmark's debugger to core it.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NQUEUES 8

struct job {
	struct job *next;
	char *name;
	char *cmdline;
	uint64_t id;
	uint32_t priority;
	uint32_t attempts;
};

struct run_queue {
	struct job *head;
	struct job *tail;
	size_t length;
};

struct message {
	struct message *next;
	char *text;
	uint32_t len;
	uint32_t seq;
};

struct session {
	struct session *prev;
	struct session *next;
	char *user;
	struct message *inbox;   // newest first
	size_t pending;
	uint64_t opened;
};

struct scheduler {
	struct run_queue queues[NQUEUES];
	struct session *sessions;  // doubly linked, newest first
	size_t nsessions;
	uint64_t next_id;
	uint64_t done;
	uint64_t lost;
};

static struct scheduler *sched;

// A small deterministic generator (xorshift): the same run every time.
static uint64_t rng_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static char *dup_printf(size_t cap, const char *fmt, uint64_t a, uint64_t b)
{
	char *s = malloc(cap);
	snprintf(s, cap, fmt, a, b);
	return s;
}

static void submit(struct scheduler *s)
{
	struct job *j = malloc(sizeof *j);
	j->id = s->next_id++;
	j->priority = (uint32_t)(rnd() % NQUEUES);
	j->attempts = 0;
	j->name = dup_printf(24 + j->id % 16, "job-%llu-%llu",
			     (unsigned long long)j->id, (unsigned long long)j->priority);
	j->cmdline = dup_printf(40 + rnd() % 72, "/usr/bin/worker --task %llu --slot %llu",
				(unsigned long long)j->id, (unsigned long long)(j->id % 97));
	j->next = NULL;
	struct run_queue *q = &s->queues[j->priority];
	if (q->tail)
		q->tail->next = j;
	else
		q->head = j;
	q->tail = j;
	q->length++;
}

static struct job *dequeue(struct run_queue *q)
{
	struct job *j = q->head;
	if (!j)
		return NULL;
	q->head = j->next;
	if (!q->head)
		q->tail = NULL;
	q->length--;
	j->next = NULL;
	return j;
}

static void run_one(struct scheduler *s)
{
	struct job *j = dequeue(&s->queues[rnd() % NQUEUES]);
	if (!j)
		return;
	if (j->id % 50 == 7) {
		// the error path that forgets the job
		s->lost++;
		return;
	}
	free(j->name);
	free(j->cmdline);
	free(j);
	s->done++;
}

static struct session *open_session(struct scheduler *s)
{
	struct session *x = malloc(sizeof *x);
	x->opened = s->next_id;
	x->user = dup_printf(20 + rnd() % 24, "user%llu@host%llu",
			     (unsigned long long)(rnd() % 100000), (unsigned long long)(rnd() % 64));
	x->inbox = NULL;
	x->pending = 0;
	x->prev = NULL;
	x->next = s->sessions;
	if (s->sessions)
		s->sessions->prev = x;
	s->sessions = x;
	s->nsessions++;
	return x;
}

static void post(struct session *x, uint64_t seq)
{
	struct message *m = malloc(sizeof *m);
	m->seq = (uint32_t)seq;
	m->text = dup_printf(32 + seq % 96, "message %llu for session %llu",
			     (unsigned long long)seq, (unsigned long long)x->opened);
	m->len = (uint32_t)strlen(m->text);
	m->next = x->inbox;
	x->inbox = m;
	x->pending++;
}

static void close_session(struct scheduler *s, struct session *x)
{
	while (x->inbox) {
		struct message *m = x->inbox;
		x->inbox = m->next;
		free(m->text);
		free(m);
	}
	if (x->prev)
		x->prev->next = x->next;
	else
		s->sessions = x->next;
	if (x->next)
		x->next->prev = x->prev;
	free(x->user);
	free(x);
	s->nsessions--;
}

// Drop the oldest messages of a session beyond its newest KEEP.
static void trim_inbox(struct session *x, size_t keep)
{
	struct message **p = &x->inbox;
	while (*p && keep) {
		p = &(*p)->next;
		keep--;
	}
	while (*p) {
		struct message *m = *p;
		*p = m->next;
		free(m->text);
		free(m);
		x->pending--;
	}
}

__attribute__((noinline)) void bench_stop(size_t used, size_t leaked)
{
	printf("ready %zu used, %zu leaked\n", used, leaked);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 2100000;
	sched = calloc(1, sizeof *sched);
	struct session *recent[64] = {0};
	uint64_t seq = 0;
	// Steady state: per round 2 jobs in, about 1 run; a message or two per
	// round to some session; a session opened now and then, an old one
	// closed, inboxes trimmed -- so frees and allocations interleave.
	for (size_t i = 0; i < n; i++) {
		submit(sched);
		submit(sched);
		run_one(sched);
		if (i % 3 == 0)
			run_one(sched);
		if (i % 8 == 0) {
			struct session *x = open_session(sched);
			recent[(i / 8) % 64] = x;
		}
		struct session *x = recent[rnd() % 64];
		if (x) {
			post(x, seq++);
			post(x, seq++);
			if (rnd() % 4 == 0)
				post(x, seq++);
		}
		if (i % 97 == 0 && x && sched->nsessions > 64)
			trim_inbox(x, 8 + rnd() % 32);
		if (i % 24 == 0 && sched->nsessions > 64) {
			// close the oldest-but-one session reachable by walking a
			// few steps from the newest: not one of the recent ones
			struct session *old = sched->sessions;
			for (int k = 0; k < 70 && old && old->next; k++)
				old = old->next;
			if (old) {
				for (int r = 0; r < 64; r++)
					if (recent[r] == old)
						recent[r] = NULL;
				close_session(sched, old);
			}
		}
	}
	size_t used = 1;
	for (int q = 0; q < NQUEUES; q++)
		used += 3 * sched->queues[q].length;
	used += 3 * sched->lost;
	for (struct session *x = sched->sessions; x; x = x->next)
		used += 2 + 2 * x->pending;
	bench_stop(used, 3 * sched->lost);
	return 0;
}

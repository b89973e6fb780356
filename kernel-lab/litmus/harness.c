// SPDX-License-Identifier: GPL-2.0
/*
 * The klitmus-style harness: runs generated litmus tests (kstep.memory.klitmus; every one, or
 * those NAMEd) many times on real threads and counts the final states seen.
 *
 *	klitmus [-r RUNS] [-s SIZE] [NAME...]
 *
 * A run initialises SIZE instances of the test's locations, then every thread goes through the
 * instances in order; before each instance the threads meet at a start barrier of that instance
 * (a counter each thread increments, then waits on), so the threads run the same instance at the
 * same time, as klitmus's per-iteration synchronisation does.  A thread that has spun there
 * SPINS_BEFORE_SLEEP times sleeps on the counter (futex) until the last one to arrive wakes it:
 * on a loaded machine (more runnable threads than processors) a spinning or yielding waiter keeps
 * the others from the processor, and each instance then cost milliseconds of wall time (2,000
 * instances of SB took 5 s at a load of 22 on two cores); a woken sleeper runs again at once.
 * The last arriver makes the wake-up system call only when a thread sleeps, so on an idle
 * machine the threads leave the barrier together, racing.  Thread k is pinned to the k-th
 * processor the process may use (modulo their number).  After RUNS runs of a test, a line
 * "# NAME: ..." and one line per final state seen: the count, then each shown place's value (a location's address printed as its name), in the
 * order kstep.memory.verdict.observed() gives.  Bad arguments: one line, exit status 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "litmus.h"

#define MAX_REGS	8	/* registers per thread: kstep.memory.klitmus refuses more */
#define MAX_OUTCOMES	4096
#define SPINS_BEFORE_SLEEP	256
/* include/uapi/linux/futex.h (FUTEX_WAIT or FUTEX_WAKE | FUTEX_PRIVATE_FLAG): the lab's include
 * path has its own linux/types.h, which that header cannot be built with */
#define FUTEX_WAIT_PRIVATE	(0 | 128)
#define FUTEX_WAKE_PRIVATE	(1 | 128)

struct outcome {
	intptr_t key[LITMUS_MAX_PLACES];
	unsigned long count;
};

static const struct litmus_test *test;
static long runs = 1000, size = 100;
static struct litmus_slot *inst;	/* size instances of nlocs slots */
static intptr_t *out[LITMUS_MAX_THREADS];	/* per thread: size x MAX_REGS */
static int *go;				/* per instance: threads arrived at its start */
static int sleepers;			/* threads asleep (or about to sleep) at a start barrier */
static struct outcome outcomes[MAX_OUTCOMES];
static int noutcomes;
static int ncpus, cpus[CPU_SETSIZE];
static pthread_barrier_t run_barrier;

static struct litmus_slot *instance(long j)
{
	return inst + j * test->nlocs;
}

/* A place's value, with a location's address replaced by -1 - its index (printed by name). */
static intptr_t place_value(long j, const struct litmus_place *p)
{
	intptr_t v;
	int k;

	if (p->thread < 0)
		v = instance(j)[p->index].v;
	else if (p->index < 0)
		v = 0;
	else
		v = out[p->thread][j * MAX_REGS + p->index];
	for (k = 0; k < test->nlocs; k++)
		if (v == (intptr_t)&instance(j)[k].v)
			return -1 - k;
	if (v < 0) {
		fprintf(stderr, "%s: a negative value (%ld) the output cannot tell from a location\n",
			test->name, (long)v);
		exit(1);
	}
	return v;
}

static void tally(void)
{
	long j;
	int i, k;

	for (j = 0; j < size; j++) {
		intptr_t key[LITMUS_MAX_PLACES] = { 0 };

		for (i = 0; i < test->nplaces; i++)
			key[i] = place_value(j, &test->places[i]);
		for (k = 0; k < noutcomes; k++)
			if (!memcmp(outcomes[k].key, key, sizeof(key)))
				break;
		if (k == noutcomes) {
			if (noutcomes == MAX_OUTCOMES) {
				fprintf(stderr, "%s: more than %d final states\n", test->name, MAX_OUTCOMES);
				exit(1);
			}
			memcpy(outcomes[noutcomes].key, key, sizeof(key));
			outcomes[noutcomes++].count = 0;
		}
		outcomes[k].count++;
	}
}

static void init_run(void)
{
	long j;

	for (j = 0; j < size; j++) {
		test->init(instance(j));
		go[j] = 0;
	}
}

/*
 * A sleeper counts itself in sleepers before FUTEX_WAIT, which sleeps only while the counter still
 * holds what it read; the last arriver increments the counter before it reads sleepers.  Both are
 * sequentially consistent, so either the arriver sees the sleeper and wakes it, or the sleeper's
 * FUTEX_WAIT sees the new count and returns at once.
 */
static void start_barrier(int *counter)
{
	int seen, spins = 0;

	if (__atomic_add_fetch(counter, 1, __ATOMIC_SEQ_CST) == test->nthreads) {
		if (__atomic_load_n(&sleepers, __ATOMIC_SEQ_CST))
			syscall(SYS_futex, counter, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
		return;
	}
	while ((seen = __atomic_load_n(counter, __ATOMIC_ACQUIRE)) < test->nthreads) {
		if (++spins < SPINS_BEFORE_SLEEP)
			continue;
		__atomic_fetch_add(&sleepers, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, counter, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
		__atomic_fetch_sub(&sleepers, 1, __ATOMIC_SEQ_CST);
	}
}

static void *thread_main(void *arg)
{
	int t = (int)(intptr_t)arg;
	litmus_thread_fn *body = test->threads[t];
	cpu_set_t one;
	long r, j;

	CPU_ZERO(&one);
	CPU_SET(cpus[t % ncpus], &one);
	pthread_setaffinity_np(pthread_self(), sizeof(one), &one);	/* best effort */
	for (r = 0; r < runs; r++) {
		if (t == 0)
			init_run();
		pthread_barrier_wait(&run_barrier);
		for (j = 0; j < size; j++) {
			start_barrier(&go[j]);
			body(instance(j), &out[t][j * MAX_REGS]);
		}
		pthread_barrier_wait(&run_barrier);
		if (t == 0)
			tally();
	}
	return NULL;
}

static long count_arg(const char *opt, const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 1 || v > max) {
		fprintf(stderr, "klitmus: %s wants a whole number from 1 to %ld, not '%s'\n", opt, max, s);
		exit(2);
	}
	return v;
}

static const struct litmus_test *find(const char *name)
{
	const struct litmus_test *const *t;

	for (t = litmus_tests; *t; t++)
		if (!strcmp((*t)->name, name))
			return *t;
	fprintf(stderr, "klitmus: no test named '%s' in this build\n", name);
	exit(2);
}

static void run_test(void)
{
	pthread_t tid[LITMUS_MAX_THREADS];
	int i, k;

	noutcomes = 0;
	inst = aligned_alloc(LITMUS_LINE, size * test->nlocs * sizeof(*inst));
	go = calloc(size, sizeof(*go));
	for (i = 0; i < test->nthreads; i++)
		out[i] = calloc(size * MAX_REGS, sizeof(intptr_t));
	if (!inst || !go || !out[test->nthreads - 1]) {
		fprintf(stderr, "klitmus: no memory for %ld instances of %s\n", size, test->name);
		exit(2);
	}
	pthread_barrier_init(&run_barrier, NULL, test->nthreads);
	for (i = 0; i < test->nthreads; i++)
		if (pthread_create(&tid[i], NULL, thread_main, (void *)(intptr_t)i)) {
			fprintf(stderr, "klitmus: cannot start thread %d of %s\n", i, test->name);
			exit(1);
		}
	for (i = 0; i < test->nthreads; i++)
		pthread_join(tid[i], NULL);
	pthread_barrier_destroy(&run_barrier);

	printf("# %s: %ld runs of %ld instances, %d threads on %d processors\n",
	       test->name, runs, size, test->nthreads, ncpus);
	for (k = 0; k < noutcomes; k++) {
		printf("%lu", outcomes[k].count);
		for (i = 0; i < test->nplaces; i++) {
			intptr_t v = outcomes[k].key[i];

			if (v < 0)
				printf(" %s", test->loc_names[-1 - v]);
			else
				printf(" %ld", (long)v);
		}
		printf("\n");
	}
	fflush(stdout);
	free(inst);
	free(go);
	for (i = 0; i < test->nthreads; i++)
		free(out[i]);
}

int main(int argc, char **argv)
{
	const struct litmus_test *const *t;
	cpu_set_t allowed;
	int i, k, first = argc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc) {
			runs = count_arg("-r", argv[++i], 100000000);
		} else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			size = count_arg("-s", argv[++i], 100000);	/* <= 200 MB of instances */
		} else if (argv[i][0] == '-') {
			fprintf(stderr, "usage: %s [-r RUNS] [-s SIZE] [NAME...]\n", argv[0]);
			return 2;
		} else {
			first = i;
			break;
		}
	}
	for (i = first; i < argc; i++)
		find(argv[i]);	/* every name checked before the first run */
	if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
		for (k = 0; k < CPU_SETSIZE; k++)
			if (CPU_ISSET(k, &allowed))
				cpus[ncpus++] = k;
	if (ncpus == 0)
		cpus[ncpus++] = 0;

	if (first == argc) {
		for (t = litmus_tests; *t; t++) {
			test = *t;
			run_test();
		}
	}
	for (i = first; i < argc; i++) {
		test = find(argv[i]);
		run_test();
	}
	return 0;
}

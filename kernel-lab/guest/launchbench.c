/*
 * launchbench: the shape of an app launch (the per-VMA lock thread's headline workload).
 *
 *   launchbench MAPPERS FAULTERS ROUNDS PAGES
 *
 * MAPPERS threads each create ROUNDS thread stacks the way pthread_create() does: mmap() a
 * 256 KiB private region and mprotect() its lowest page PROT_NONE as the guard, then munmap()
 * it; both take mmap_lock for write (mmap_write_lock() in do_mmap()'s caller and in
 * do_mprotect_pkey(), __vm_munmap()).  FAULTERS threads each fault their own PAGES-page
 * working set ROUNDS times, MADV_DONTNEED after every pass so the next pass faults again;
 * each fault's latency is the time around the first write to its page.  Before 6.4 every
 * such fault takes mmap_read_lock() in do_user_addr_fault() and waits behind a mapper; from
 * 6.4 lock_vma_under_rcu() lets it through unless its own VMA is being changed.
 *
 * It prints one line:
 *   launchbench mappers=M faulters=F rounds=R pages=P faults=N p50_ns=.. p90_ns=.. p99_ns=..
 *   max_ns=.. makespan_ns=..
 * makespan is from the moment every thread is released to the moment the last one ends.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define STACK_BYTES (256UL << 10)
#define MAX_THREADS 64

static long rounds, pages, page_size;
static pthread_barrier_t go;
static uint64_t *lat; /* FAULTERS x ROUNDS x PAGES fault latencies */

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void wait_for_go(void)
{
	pthread_barrier_wait(&go);
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void *mapper(void *arg)
{
	(void)arg;
	wait_for_go();
	for (long r = 0; r < rounds; r++) {
		char *s = mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
		if (s == MAP_FAILED)
			die("mmap stack");
		if (mprotect(s, page_size, PROT_NONE))
			die("mprotect guard");
		if (munmap(s, STACK_BYTES))
			die("munmap stack");
	}
	return NULL;
}

static void *faulter(void *arg)
{
	long id = (long)arg;
	uint64_t *mine = lat + id * rounds * pages;
	char *ws = mmap(NULL, pages * page_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (ws == MAP_FAILED)
		die("mmap working set");
	wait_for_go();
	for (long r = 0; r < rounds; r++) {
		for (long p = 0; p < pages; p++) {
			uint64_t t0 = now_ns();

			*(volatile char *)(ws + p * page_size) = 1;
			*mine++ = now_ns() - t0;
		}
		if (madvise(ws, pages * page_size, MADV_DONTNEED))
			die("madvise");
	}
	munmap(ws, pages * page_size);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static long arg(const char *s, long lo, long hi, const char *name)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (*s == '\0' || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "launchbench: %s must be %ld..%ld, not '%s'\n", name, lo, hi, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	pthread_t t[2 * MAX_THREADS];
	long mappers, faulters, n, i;
	uint64_t start, end;

	if (argc != 5) {
		fprintf(stderr, "usage: launchbench MAPPERS FAULTERS ROUNDS PAGES\n");
		return 2;
	}
	mappers = arg(argv[1], 0, MAX_THREADS, "MAPPERS");
	faulters = arg(argv[2], 1, MAX_THREADS, "FAULTERS");
	rounds = arg(argv[3], 1, 100000, "ROUNDS");
	pages = arg(argv[4], 1, 65536, "PAGES");
	page_size = sysconf(_SC_PAGESIZE);
	n = faulters * rounds * pages;
	lat = malloc(n * sizeof(*lat));
	if (!lat)
		die("malloc");
	pthread_barrier_init(&go, NULL, faulters + mappers + 1);
	for (i = 0; i < faulters; i++)
		if (pthread_create(&t[i], NULL, faulter, (void *)i))
			die("pthread_create");
	for (i = 0; i < mappers; i++)
		if (pthread_create(&t[faulters + i], NULL, mapper, NULL))
			die("pthread_create");
	wait_for_go();
	start = now_ns();
	for (i = 0; i < faulters + mappers; i++)
		pthread_join(t[i], NULL);
	end = now_ns();
	qsort(lat, n, sizeof(*lat), cmp);
	printf("launchbench mappers=%ld faulters=%ld rounds=%ld pages=%ld faults=%ld p50_ns=%llu "
	       "p90_ns=%llu p99_ns=%llu max_ns=%llu makespan_ns=%llu\n",
	       mappers, faulters, rounds, pages, n, (unsigned long long)lat[n / 2],
	       (unsigned long long)lat[n * 9 / 10], (unsigned long long)lat[n * 99 / 100],
	       (unsigned long long)lat[n - 1], (unsigned long long)(end - start));
	return 0;
}

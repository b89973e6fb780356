/*
 * costs: measure, on this machine, the kinds of cost kstep's timed scheduler charges
 * (simulator/kstep/engine/costs.py KINDS) and print them as a kstep cost table (JSON) on stdout.
 *
 *   transfer   two threads pinned to two CPUs bounce one cache line (each waits for the other's
 *              store, then stores): a round trip is two transfers
 *   atomic     an uncontended lock-prefixed fetch-add on a line the CPU owns
 *   load/store a load and a plain store that hit the CPU's own cache
 *   step       one loop iteration of a few ALU ops (what an atomic step's own instructions cost)
 *   page_zero, page_copy   memset and memcpy of one 4 KiB page (already faulted in)
 *   tlb_flush  mprotect of one page back and forth on a single-threaded process
 *   ipi        what the same mprotect costs more while a second thread of the process runs on
 *              the other CPU (the kernel must shoot down its TLB with an IPI)
 *   page_fault first touch of a fresh anonymous page, minus page_zero (entry, allocation, return)
 *
 * Each is the fastest of BATCHES timed batches (CLOCK_MONOTONIC): on a shared, loaded machine a
 * batch that ran undisturbed (both threads on their CPUs at once, for the ping-pong) is the cost
 * itself, the slower ones add other processes' time.  The two mprotect timings take the median:
 * an IPI is only sent while the sibling thread runs, which the fastest batch may have missed.
 *
 * Usage: costs CPU_A CPU_B 'where and when' [BATCHES] > table.json (BATCHES 1..101, default 101;
 * a quick check takes few).  A failure prints one line naming the call and exits 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096
#define LINE 64
#define MAX_REPEATS 101
static int batches = MAX_REPEATS; /* timed batches per cost (argv[4]) */

static int cpu_a, cpu_b;

static void die(const char *what)
{
	fprintf(stderr, "costs: %s: %s\n", what, strerror(errno));
	exit(2);
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	if (errno)
		die("pthread_setaffinity_np");
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The IPI only happens while the sibling runs: the fastest batch may be one where it did not. */
static double median(double *v)
{
	qsort(v, batches, sizeof(*v), cmp);
	return v[batches / 2];
}

static double fastest(const double *v)
{
	double best = v[0];
	for (int r = 1; r < batches; r++)
		if (v[r] < best)
			best = v[r];
	return best;
}

/* -- transfer: cache-line ping-pong ------------------------------------------------------- */
static _Alignas(LINE) _Atomic long ball;
#define ROUNDS 5000

static void *pong(void *arg)
{
	pin(cpu_b);
	for (long i = 0; i < ROUNDS; i++) {
		while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
	}
	return arg;
}

static double transfer_ns(void)
{
	double v[MAX_REPEATS];
	for (int r = 0; r < batches; r++) {
		pthread_t t;
		atomic_store(&ball, 0);
		if ((errno = pthread_create(&t, NULL, pong, NULL)))
			die("pthread_create");
		double t0 = now_ns();
		for (long i = 0; i < ROUNDS; i++) {
			atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
			while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2)
				;
		}
		v[r] = (now_ns() - t0) / ROUNDS / 2;
		pthread_join(t, NULL);
	}
	return fastest(v);
}

/* -- what one CPU does alone --------------------------------------------------------------- */
#define LOOPS 1000000L
static _Alignas(LINE) _Atomic long counter;
static volatile long plain[LINE / sizeof(long)];

static double loop_ns(int kind)
{
	double v[MAX_REPEATS];
	for (int r = 0; r < batches; r++) {
		long sink = 0;
		double t0 = now_ns();
		for (long i = 0; i < LOOPS; i++) {
			switch (kind) {
			case 0: sink += i ^ (sink >> 3); __asm__ volatile("" : "+r"(sink)); break;
			case 1: sink += plain[0]; break;
			case 2: plain[0] = i; break;
			case 3: atomic_fetch_add_explicit(&counter, 1, memory_order_seq_cst); break;
			}
		}
		v[r] = (now_ns() - t0) / LOOPS;
		__asm__ volatile("" : : "r"(sink));
	}
	return fastest(v);
}

static double page_ns(int copy)
{
	static _Alignas(PAGE) char src[PAGE], dst[PAGE];
	double v[MAX_REPEATS];
	memset(src, 1, PAGE);
	memset(dst, 1, PAGE);
	for (int r = 0; r < batches; r++) {
		double t0 = now_ns();
		for (int i = 0; i < 2000; i++) {
			if (copy)
				memcpy(dst, src, PAGE);
			else
				memset(dst, 0, PAGE);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		v[r] = (now_ns() - t0) / 2000;
	}
	return fastest(v);
}

/* -- the kernel: mprotect (TLB flush, then with an IPI) and page faults -------------------- */
static _Atomic int spinning_stop;

static void *spinner(void *arg)
{
	pin(cpu_b);
	char *p = arg;
	while (!atomic_load(&spinning_stop))
		(void)*(volatile char *)p; /* runs in the mm, so the flush must reach this CPU */
	return NULL;
}

static double mprotect_ns(int with_sibling)
{
	char *p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	p[0] = 1;
	pthread_t t;
	atomic_store(&spinning_stop, 0);
	if (with_sibling && (errno = pthread_create(&t, NULL, spinner, p)))
		die("pthread_create");
	double v[MAX_REPEATS];
	for (int r = 0; r < batches; r++) {
		double t0 = now_ns();
		for (int i = 0; i < 200; i++)
			if (mprotect(p, PAGE, (i & 1) ? PROT_READ | PROT_WRITE : PROT_READ))
				die("mprotect");
		v[r] = (now_ns() - t0) / 200;
	}
	atomic_store(&spinning_stop, 1);
	if (with_sibling)
		pthread_join(t, NULL);
	munmap(p, PAGE);
	return median(v);
}

static double fault_ns(void)
{
	enum { PAGES = 512 };
	double v[MAX_REPEATS];
	for (int r = 0; r < batches; r++) {
		char *p = mmap(NULL, (size_t)PAGES * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			die("mmap");
		madvise(p, (size_t)PAGES * PAGE, MADV_NOHUGEPAGE);
		double t0 = now_ns();
		for (int i = 0; i < PAGES; i++)
			p[(size_t)i * PAGE] = 1;
		v[r] = (now_ns() - t0) / PAGES;
		munmap(p, (size_t)PAGES * PAGE);
	}
	return fastest(v);
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: costs CPU_A CPU_B 'where and when it runs' [BATCHES]\n");
		return 2;
	}
	if (argc == 5) {
		batches = atoi(argv[4]);
		if (batches < 1 || batches > MAX_REPEATS) {
			fprintf(stderr, "costs: BATCHES must be 1..%d\n", MAX_REPEATS);
			return 2;
		}
	}
	cpu_a = atoi(argv[1]);
	cpu_b = atoi(argv[2]);
	if (cpu_a == cpu_b || cpu_a < 0 || cpu_b < 0) {
		fprintf(stderr, "costs: CPU_A and CPU_B must be two different CPUs\n");
		return 2;
	}
	pin(cpu_a);
	double step = loop_ns(0), load = loop_ns(1), store = loop_ns(2), atomic = loop_ns(3);
	double transfer = transfer_ns(), zero = page_ns(0), copy = page_ns(1);
	double flush = mprotect_ns(0), flush_ipi = mprotect_ns(1), fault = fault_ns();
	double ipi = flush_ipi > flush ? flush_ipi - flush : 0, entry = fault > zero ? fault - zero : 0;
	printf("{\"format\": \"kstep-costs\", \"version\": 1,\n \"measured\": {\n"
	       "  \"where\": \"%s\",\n"
	       "  \"how\": \"kernel-lab/calibrate/costs.c natively, pinned to CPUs %d and %d; each cost the fastest "
	       "of %d timed batches (CLOCK_MONOTONIC), the two mprotect ones their median; transfer is half a ping-pong round trip, ipi the extra time "
	       "of mprotect while a sibling thread runs on the other CPU, page_fault a first touch minus page_zero\"\n"
	       " },\n \"ns\": {\"step\": %.2f, \"load\": %.2f, \"store\": %.2f, \"atomic\": %.2f, \"transfer\": %.1f,\n"
	       "        \"page_zero\": %.1f, \"page_copy\": %.1f, \"tlb_flush\": %.0f, \"ipi\": %.0f, \"page_fault\": %.0f}}\n",
	       argv[3], cpu_a, cpu_b, batches, step, load, store, atomic, transfer, zero, copy, flush, ipi, entry);
	return 0;
}

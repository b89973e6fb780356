/*
 * costs: measure, on this machine, the kinds of cost kstep's timed scheduler charges
 * (simulator/kstep/engine/costs.py KINDS) and print them as a kstep cost table (JSON) on stdout.
 *
 *   transfer   two threads on two CPUs bounce one cache line (each waits for the other's store,
 *              then stores): half a round trip is one transfer
 *   atomic     an uncontended lock-prefixed fetch-add on a line the CPU owns
 *   load/store a load and a plain store that hit the CPU's own cache
 *   step       one loop iteration of a few ALU ops (what an atomic step's own instructions cost)
 *   page_zero, page_copy   the kernel's clear_page (rep stosb, clear_page_erms) and copy_page
 *              (rep movsq) on x86-64, of cold pages: pages cycled through a buffer twice the size
 *              of the last-level cache, so a page is not in any cache when it is cleared or copied
 *   tlb_flush  mprotect making one page read-only (x86's pte_needs_flush: only taking a permission
 *              away flushes), single-threaded
 *   ipi        what that mprotect costs more while a sibling thread of the process runs on the
 *              other CPU, so flush_tlb_mm_range must shoot down its TLB with an IPI
 *   page_fault first write to a page of a fresh anonymous mapping, minus page_zero (the fault
 *              clears the page it allocates)
 *
 * Under load.  The measuring thread and its sibling run SCHED_FIFO when permitted, so no
 * ordinary process takes their CPU during a batch; each thread is created on its own CPU (a thread
 * inherits its creator's affinity: started on the measuring CPU, it could not run until that one
 * slept).  They rest 1 ms between batches (RT throttling allows 950 ms a second).  Every figure is
 * the median of its batches.  A batch with the sibling counts only if /proc/interrupts shows the
 * sibling's CPU took at least one TLB shootdown per flush during it (else it was not running, or
 * a paravirtual flush deferred it), so ipi is never a batch in which no IPI was sent.
 *
 * Usage: costs CPU_A CPU_B 'where it runs' [BATCHES] > table.json (BATCHES 1..101, default 101;
 * a quick check takes few).  A failure prints one line naming the call and exits 2.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
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
static int realtime; /* both threads run SCHED_FIFO */

static void die(const char *what)
{
	fprintf(stderr, "costs: %s: %s\n", what, strerror(errno));
	exit(2);
}

static void fail(const char *why)
{
	fprintf(stderr, "costs: %s\n", why);
	exit(2);
}

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

/* Between batches: other processes get the CPUs, and SCHED_FIFO never runs into RT throttling. */
static void rest(void)
{
	struct timespec ms = {0, 1000000};
	nanosleep(&ms, NULL);
}

static void on_cpu(cpu_set_t *set, int cpu)
{
	CPU_ZERO(set);
	CPU_SET(cpu, set);
}

/* The measuring thread: on CPU_A, and SCHED_FIFO if this process may (else a caveat says so). */
static void take_cpu_a(void)
{
	cpu_set_t set;
	struct sched_param fifo = {.sched_priority = 1};
	on_cpu(&set, cpu_a);
	if ((errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set)))
		die("pthread_setaffinity_np");
	realtime = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
}

static atomic_int started;

/* The sibling thread, created on CPU_B with the measuring thread's policy; back once it runs. */
static pthread_t sibling(void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	pthread_t t;
	cpu_set_t set;
	on_cpu(&set, cpu_b);
	atomic_store(&started, 0);
	if ((errno = pthread_attr_init(&attr)) || (errno = pthread_attr_setaffinity_np(&attr, sizeof(set), &set)) ||
	    (errno = pthread_attr_setinheritsched(&attr, PTHREAD_INHERIT_SCHED)))
		die("pthread_attr");
	if ((errno = pthread_create(&t, &attr, fn, arg)))
		die("pthread_create");
	pthread_attr_destroy(&attr);
	for (double t0 = now_ns(); !atomic_load(&started);)
		if (now_ns() - t0 > 1e9)
			fail("the sibling thread did not start on CPU_B within a second");
	return t;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* One timed batch of a cost: nanoseconds per operation, or NAN if the batch did not measure it. */
typedef double batch_fn(int arg);

/* The median of the batches that measured the cost (how many did: *kept); NAN if none did. */
static double median_of(batch_fn *batch, int arg, int *kept)
{
	double v[MAX_REPEATS];
	int n = 0;
	for (int r = 0; r < batches; r++) {
		double x = batch(arg);
		if (!isnan(x))
			v[n++] = x;
		rest();
	}
	if (kept)
		*kept = n;
	if (!n)
		return NAN;
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* -- transfer: cache-line ping-pong ------------------------------------------------------- */
static _Alignas(LINE) _Atomic long ball;
#define ROUNDS 5000

static void *pong(void *arg)
{
	atomic_store(&started, 1);
	for (long i = 0; i < ROUNDS; i++) {
		while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 1)
			;
		atomic_store_explicit(&ball, 2 * i + 2, memory_order_release);
	}
	return arg;
}

static double transfer_batch(int unused)
{
	(void)unused;
	atomic_store(&ball, 0);
	pthread_t t = sibling(pong, NULL);
	double t0 = now_ns();
	for (long i = 0; i < ROUNDS; i++) {
		atomic_store_explicit(&ball, 2 * i + 1, memory_order_release);
		while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i + 2)
			;
	}
	double ns = (now_ns() - t0) / ROUNDS / 2;
	pthread_join(t, NULL);
	return ns;
}

/* -- what one CPU does alone --------------------------------------------------------------- */
#define LOOPS 1000000L
enum { STEP, LOAD, STORE, ATOMIC };
static _Alignas(LINE) _Atomic long counter;
static volatile long plain[LINE / sizeof(long)];

static double loop_batch(int kind)
{
	long sink = 0;
	double t0 = now_ns();
	for (long i = 0; i < LOOPS; i++) {
		switch (kind) {
		case STEP: sink += i ^ (sink >> 3); __asm__ volatile("" : "+r"(sink)); break;
		case LOAD: sink += plain[0]; break;
		case STORE: plain[0] = i; break;
		case ATOMIC: atomic_fetch_add_explicit(&counter, 1, memory_order_seq_cst); break;
		}
	}
	__asm__ volatile("" : : "r"(sink));
	return (now_ns() - t0) / LOOPS;
}

/* -- cold pages: clear_page and copy_page ------------------------------------------------ */
static char *cold;
static size_t cold_pages, cursor;
#define STRIDE 4099 /* pages (prime): the next page is never the neighbour a prefetcher fetched */
#define PAGE_OPS 1000

/* The largest cache CPU_A has (sysfs), in bytes; 0 if sysfs does not say. */
static size_t last_level_cache(void)
{
	size_t best = 0;
	for (int i = 0; i < 8; i++) {
		char path[96], unit = 0;
		unsigned long size;
		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cache/index%d/size", cpu_a, i);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%lu%c", &size, &unit) == 2)
			size <<= unit == 'K' ? 10 : unit == 'M' ? 20 : 0;
		else
			size = 0;
		fclose(f);
		if (size > best)
			best = size;
	}
	return best;
}

/* The COLUMN-th number after KEY on the line of FILE that starts with it (blanks aside), -1 if none. */
static long proc_number(const char *file, const char *key, int column)
{
	char line[4096];
	long n = -1;
	FILE *f = fopen(file, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *p = line + strspn(line, " ");
		if (strncmp(p, key, strlen(key)))
			continue;
		p += strlen(key);
		for (int c = 0; c <= column; c++)
			n = strtol(p, &p, 10);
		break;
	}
	fclose(f);
	return n;
}

/* A buffer of twice the last-level cache (at least 256 MiB), populated, in huge pages if the
 * kernel gives them (its direct map, where clear_page runs, is in huge pages: no TLB misses). */
static size_t map_cold(void)
{
	size_t bytes = 2 * last_level_cache();
	if (bytes < ((size_t)256 << 20))
		bytes = (size_t)256 << 20;
	cold_pages = bytes / PAGE | 1; /* odd, and so coprime with STRIDE unless a multiple of it */
	if (cold_pages % STRIDE == 0)
		cold_pages += 2;
	cold = mmap(NULL, cold_pages * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (cold == MAP_FAILED)
		die("mmap of the cold buffer");
	madvise(cold, cold_pages * PAGE, MADV_HUGEPAGE);
	for (size_t k = 0; k < cold_pages; k++)
		cold[k * PAGE] = 1; /* fault it all in now, not in a timed batch */
	return cold_pages * PAGE;
}

static void clear_page(void *page)
{
#ifdef __x86_64__
	unsigned long n = PAGE;
	__asm__ volatile("rep stosb" : "+D"(page), "+c"(n) : "a"(0) : "memory");
#else
	memset(page, 0, PAGE);
#endif
}

static void copy_page(void *to, void *from)
{
#ifdef __x86_64__
	unsigned long n = PAGE / 8;
	__asm__ volatile("rep movsq" : "+D"(to), "+S"(from), "+c"(n) : : "memory");
#else
	memcpy(to, from, PAGE);
#endif
}

/* Page k is copied to page k + half the buffer: between two touches of a page the whole buffer
 * (twice the cache) has gone through. */
static double page_batch(int copy)
{
	double t0 = now_ns();
	for (int i = 0; i < PAGE_OPS; i++) {
		cursor = (cursor + STRIDE) % cold_pages;
		char *page = cold + cursor * PAGE;
		if (copy)
			copy_page(cold + (cursor + cold_pages / 2) % cold_pages * PAGE, page);
		else
			clear_page(page);
	}
	return (now_ns() - t0) / PAGE_OPS;
}

/* -- the kernel: mprotect (TLB flush, then with an IPI) and page faults -------------------- */
static _Atomic int spinning_stop;
static char *protected;
#define FLUSHES 100

static void *spinner(void *arg)
{
	atomic_store(&started, 1);
	while (!atomic_load(&spinning_stop))
		(void)*(volatile char *)arg; /* runs in the mm, so the flush must reach this CPU */
	return NULL;
}

/* TLB shootdowns CPU_B has taken (the TLB line of /proc/interrupts), -1 if there is none. */
static long shootdowns(void)
{
	return proc_number("/proc/interrupts", "TLB:", cpu_b);
}

/* Only the calls that make the page read-only are timed: they flush, the others need not. */
static double mprotect_batch(int with_sibling)
{
	double ns = 0;
	long before = shootdowns();
	for (int i = 0; i < FLUSHES; i++) {
		double t0 = now_ns();
		if (mprotect(protected, PAGE, PROT_READ))
			die("mprotect");
		ns += now_ns() - t0;
		if (mprotect(protected, PAGE, PROT_READ | PROT_WRITE))
			die("mprotect");
	}
	if (with_sibling && (before < 0 || shootdowns() - before < FLUSHES))
		return NAN;
	return ns / FLUSHES;
}

static double mprotect_ns(int with_sibling, int *kept)
{
	protected = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (protected == MAP_FAILED)
		die("mmap");
	protected[0] = 1;
	pthread_t t;
	atomic_store(&spinning_stop, 0);
	if (with_sibling)
		t = sibling(spinner, protected);
	double ns = median_of(mprotect_batch, with_sibling, kept);
	atomic_store(&spinning_stop, 1);
	if (with_sibling)
		pthread_join(t, NULL);
	munmap(protected, PAGE);
	return ns;
}

/* Each batch faults pages no batch touched before, from one mapping made for them all. */
#define FAULTS 512
static char *faulting;
static size_t faulted;

static double fault_batch(int unused)
{
	(void)unused;
	char *p = faulting + faulted * PAGE;
	double t0 = now_ns();
	for (int i = 0; i < FAULTS; i++)
		p[(size_t)i * PAGE] = 1;
	faulted += FAULTS;
	return (now_ns() - t0) / FAULTS;
}

static double fault_ns(void)
{
	size_t bytes = (size_t)batches * FAULTS * PAGE;
	faulting = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (faulting == MAP_FAILED)
		die("mmap");
	madvise(faulting, bytes, MADV_NOHUGEPAGE);
	faulted = 0;
	double ns = median_of(fault_batch, 0, NULL);
	munmap(faulting, bytes);
	return ns;
}

static void now_utc(char *buf, size_t size)
{
	time_t t = time(NULL);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", gmtime(&t));
}

static void loadavg(char *buf, size_t size)
{
	FILE *f = fopen("/proc/loadavg", "r");
	if (!f || !fgets(buf, (int)size, f))
		die("/proc/loadavg");
	fclose(f);
	*strchr(buf, ' ') = 0; /* the 1-minute average */
}

int main(int argc, char **argv)
{
	if (argc != 4 && argc != 5) {
		fprintf(stderr, "usage: costs CPU_A CPU_B 'where it runs' [BATCHES]\n");
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
	char start[32], end[32], load_start[32], load_end[32];
	now_utc(start, sizeof(start));
	loadavg(load_start, sizeof(load_start));
	take_cpu_a();

	double step = median_of(loop_batch, STEP, NULL), load = median_of(loop_batch, LOAD, NULL);
	double store = median_of(loop_batch, STORE, NULL), atomic = median_of(loop_batch, ATOMIC, NULL);
	double transfer = median_of(transfer_batch, 0, NULL);
	int ipis_kept;
	double flush = mprotect_ns(0, NULL), flush_ipi = mprotect_ns(1, &ipis_kept);
	if (isnan(flush_ipi))
		fail("no batch with the sibling thread had its CPU take a TLB shootdown per flush "
		     "(/proc/interrupts): no ipi measured");
	if (flush_ipi <= flush)
		fail("mprotect was no slower with the sibling thread: no ipi measured");
	double fault = fault_ns();
	size_t cold_bytes = map_cold();
	long huge = proc_number("/proc/self/smaps_rollup", "AnonHugePages:", 0); /* kB */
	double zero = median_of(page_batch, 0, NULL), copy = median_of(page_batch, 1, NULL);
	munmap(cold, cold_bytes);

	now_utc(end, sizeof(end));
	loadavg(load_end, sizeof(load_end));
	if (fault <= zero)
		fail("a first-touch fault took no longer than clearing a cold page: no page_fault measured");
	printf("{\"format\": \"kstep-costs\", \"version\": 1,\n \"measured\": {\n"
	       "  \"where\": \"%s\",\n"
	       "  \"when\": \"%s to %s, by kernel-lab/calibrate/costs.c\",\n"
	       "  \"load\": \"1-minute load average %s at the start, %s at the end\",\n"
	       "  \"how\": \"natively, the measuring thread on CPU %d and its sibling on CPU %d, %s; every cost the "
	       "median of its %d timed batches (CLOCK_MONOTONIC), 1 ms apart; transfer is half a ping-pong round trip; "
	       "page_zero and page_copy are rep stosb and rep movsq (x86's clear_page_erms and copy_page) of pages cycled "
	       "with a stride of %d pages through a %zu MiB buffer (twice the last-level cache, %ld MiB of it in huge "
	       "pages); tlb_flush is an mprotect that makes one page read-only; ipi is what that mprotect costs more "
	       "while the sibling thread runs, from the %d batches of %d in which the sibling's CPU took at least one "
	       "TLB shootdown per flush (/proc/interrupts); page_fault is a first write to a page of a fresh mapping, "
	       "minus page_zero\",\n"
	       "  \"caveats\": \"%sa virtual machine's IPIs and faults go through the hypervisor, which can also stop a "
	       "vCPU during a batch (the median leaves such batches out); the kernel's allocator hands out recently "
	       "freed pages first, so the pages a fault or a fork clears or copies may be warmer than these cold ones; "
	       "a fault here clears its page like page_zero but the two pages need not be equally cold\"\n"
	       " },\n \"ns\": {\"step\": %.2f, \"load\": %.2f, \"store\": %.2f, \"atomic\": %.2f, \"transfer\": %.1f,\n"
	       "        \"page_zero\": %.1f, \"page_copy\": %.1f, \"tlb_flush\": %.0f, \"ipi\": %.0f, \"page_fault\": %.0f}}\n",
	       argv[3], start, end, load_start, load_end, cpu_a, cpu_b,
	       realtime ? "both SCHED_FIFO (priority 1), so no ordinary process ran on their CPUs during a batch"
			: "at normal priority (SCHED_FIFO was refused)",
	       batches, STRIDE, cold_bytes >> 20, huge < 0 ? -1 : huge >> 10, ipis_kept, batches, realtime ? "" :
	       "SCHED_FIFO was refused, so other processes' time may be in the medians under load; ",
	       step, load, store, atomic, transfer, zero, copy, flush, flush_ipi - flush, fault - zero);
	return 0;
}

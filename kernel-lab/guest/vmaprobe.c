/*
 * vmaprobe: page faults on one anonymous VMA, alone or beside a writer that splits it.
 *
 *   vmaprobe SECONDS faults [MARKER]
 *                              two threads fault an 8 MiB range, MADV_DONTNEED after every
 *                              pass so the next pass faults again
 *   vmaprobe SECONDS writer [MARKER]
 *                              the same, plus a thread that flips PROT_EXEC on one page of the
 *                              same VMA (outside the faulted range) and back: each mprotect()
 *                              splits or merges the VMA under mmap_write_lock() and
 *                              vma_start_write(), so a fault that meets it cannot take the
 *                              per-VMA lock (lock_vma_under_rcu() returns NULL) or must retry
 *   vmaprobe SECONDS hot SEED [MAP_MIB HOT_KIB [TLB]]
 *                              no faults after the first touch: two threads keep writing a
 *                              HOT_KIB hot range (8192) at a SEED-chosen page offset of a MAP_MIB
 *                              VMA (64), DAMON's target; no mmap, munmap or mprotect of it
 *                              while it runs.  TLB says what empties the CPUs' TLBs meanwhile
 *                              (below): yield (the default), alone or flush.
 *
 * MARKER is tracefs's trace_marker: "kstep-vma window start" is written to it once every
 * thread is ready, "kstep-vma window stop" once they have stopped, so that a trace tells the
 * workload's faults from the process's start-up (exec, the first touch of each [vdso] page,
 * pthread_create()).  It prints "vmaprobe mode=M pid=PID passes=N pages=P pgfault=F" (F:
 * /proc/vmstat pgfault over the same window), then its /proc/self/maps, each line after its
 * PID, so a traced fault address can be named.  Hot mode prints "vmaprobe mode=hot pid=PID
 * hot=START-END" as soon as its threads run (the monitor needs the range while the workload
 * runs), and nothing maps or unmaps after it.
 *
 * DAMON clears a PTE's accessed bit (damon_ptep_mkold(): ptep_test_and_clear_young()) and
 * flushes no TLB, on x86, arm64 and powerpc alike, so a CPU that still holds the page's
 * translation writes the page without setting the bit again: the bit comes back only once the
 * entry is gone.  QEMU's TCG TLB can hold the whole hot range, and it is emptied when the vCPU
 * switches to another address space or the kernel flushes.  TLB chooses how often that happens:
 *   yield  a child that only calls sched_yield(), so the hot threads' vCPUs keep switching to
 *          another process (x86 writes CR3; QEMU drops the whole TLB);
 *   alone  no such child: only what else runs in the guest switches address spaces;
 *   flush  the child, and a third thread that every FLUSH_US makes a separate shared 1 MiB
 *          mapping PROT_NONE and back: mprotect() of more pages than a ranged flush covers
 *          flushes the whole mm on every CPU that runs it (flush_tlb_mm_range()), so every
 *          hot page's next write walks the page table and sets the bit.
 * A shared mapping never merges with the private ones, so the maps DAMON reads stay the same.
 * None of them changes the target's hot VMA.  Hot mode also prints clk_tck=, the unit of
 * /proc/PID/stat's utime and stime, and SIGTERM ends it early: it then prints its passes and
 * how long its threads ran (seconds=), so a monitor can tell how often each hot page was written,
 * and how many times the flush thread flushed (flushes=).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define FAULTERS 2
#define FLUSH_BYTES MIB
#define FLUSH_US 1000

static unsigned long map_bytes = 64 * MIB;
static unsigned long hot_bytes = 8 * MIB;
static char *flushed;

static char *map;
static char *hot;
static long page;
static atomic_int stop;
static atomic_long passes;
static atomic_long flushes;
static int dontneed;
static pthread_barrier_t start;

static long pgfault(void)
{
	char line[128];
	long value = -1;
	FILE *f = fopen("/proc/vmstat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "pgfault ", 8))
			value = strtol(line + 8, NULL, 10);
	fclose(f);
	return value;
}

static void mark(const char *marker, const char *text)
{
	FILE *f;

	if (!marker)
		return;
	f = fopen(marker, "w");
	if (!f || fputs(text, f) < 0 || fclose(f)) {
		perror(marker);
		exit(1);
	}
}

static void print_maps(void)
{
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f) {
		perror("vmaprobe: /proc/self/maps");
		exit(1);
	}
	while (fgets(line, sizeof(line), f))
		printf("%d %s", getpid(), line);
	fclose(f);
}

static void *faulter(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	while (!atomic_load(&stop)) {
		for (size_t off = 0; off < hot_bytes; off += page)
			hot[off]++;
		if (dontneed)
			madvise(hot, hot_bytes, MADV_DONTNEED);
		atomic_fetch_add(&passes, 1);
	}
	return NULL;
}

static void *writer(void *arg)
{
	char *flip = map + map_bytes - page;

	(void)arg;
	pthread_barrier_wait(&start);
	while (!atomic_load(&stop)) {
		mprotect(flip, page, PROT_READ | PROT_WRITE | PROT_EXEC);
		mprotect(flip, page, PROT_READ | PROT_WRITE);
	}
	return NULL;
}

static void *flusher(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	while (!atomic_load(&stop)) {
		mprotect(flushed, FLUSH_BYTES, PROT_NONE);
		mprotect(flushed, FLUSH_BYTES, PROT_READ | PROT_WRITE);
		atomic_fetch_add(&flushes, 1);
		usleep(FLUSH_US);
	}
	return NULL;
}

/* splitmix64, kstep's PRNG, so a seed names the same offset everywhere */
static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void on_term(int sig)
{
	(void)sig;  /* only ends main's sleep() */
}

static unsigned long size_arg(const char *text, unsigned long unit, const char *name)
{
	char *end;
	unsigned long n = strtoul(text, &end, 10);

	if (*end || !n || n > (4096 * MIB) / unit) {
		fprintf(stderr, "vmaprobe: %s is not a size in %s (1..4 GiB)\n", text, name);
		exit(2);
	}
	return n * unit;
}

int main(int argc, char **argv)
{
	pthread_t threads[FAULTERS + 1];
	int nthreads = 0;
	const char *mode;
	const char *marker = argc > 3 ? argv[3] : NULL;
	const char *tlb = "yield";
	int hot_mode, writer_mode;
	struct timespec began, ended;
	sigset_t term;
	long faults;
	int seconds;

	if (argc < 3 || (seconds = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: vmaprobe SECONDS faults|writer [MARKER] | "
			"vmaprobe SECONDS hot SEED [MAP_MIB HOT_KIB [yield|alone|flush]]\n");
		return 2;
	}
	/*
	 * The first clock_gettime() faults in the vDSO's [vvar] page, a special mapping whose fault
	 * retries under the VMA lock: make it here, before the window the vma probe checks.
	 */
	clock_gettime(CLOCK_MONOTONIC, &began);
	mode = argv[2];
	hot_mode = !strcmp(mode, "hot");
	writer_mode = !strcmp(mode, "writer");
	if (!hot_mode && !writer_mode && strcmp(mode, "faults")) {
		fprintf(stderr, "vmaprobe: unknown mode %s\n", mode);
		return 2;
	}
	page = sysconf(_SC_PAGESIZE);
	if (hot_mode && argc > 5) {
		map_bytes = size_arg(argv[4], MIB, "MiB");
		hot_bytes = size_arg(argv[5], 1024, "KiB");
		tlb = argc > 6 ? argv[6] : tlb;
		if (hot_bytes >= map_bytes || hot_bytes % page || (strcmp(tlb, "yield") && strcmp(tlb, "alone") && strcmp(tlb, "flush"))) {
			fprintf(stderr, "vmaprobe: hot %s KiB of %s MiB with %s: the hot range must be whole pages "
				"smaller than the map, and TLB one of yield, alone, flush\n", argv[5], argv[4], tlb);
			return 2;
		}
	}
	map = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		perror("vmaprobe: mmap");
		return 1;
	}
	hot = map;
	if (hot_mode) {
		uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
		uint64_t slots = (map_bytes - hot_bytes) / page;

		/* DAMON's target keeps THP where the kernel gives it */
		memset(map, 1, map_bytes);
		hot = map + (splitmix64(&seed) % slots) * page;
		marker = NULL;
		if (strcmp(tlb, "alone") && fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				sched_yield();
		}
		if (!strcmp(tlb, "flush")) {
			flushed = mmap(NULL, FLUSH_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
			if (flushed == MAP_FAILED) {
				perror("vmaprobe: mmap");
				return 1;
			}
			memset(flushed, 1, FLUSH_BYTES);
		}
	} else {
		/* 4K pages, so every touch of a fresh page is one fault */
		madvise(map, map_bytes, MADV_NOHUGEPAGE);
		/*
		 * The VMA's first fault allocates its anon_vma, which under the VMA lock needs
		 * mmap_read_trylock() (__vmf_anon_prepare); pthread_create() holds mmap_lock for
		 * write while it maps a stack, so that first fault could retry.  Make it here, and
		 * start the threads together once all exist.
		 */
		hot[0] = 1;
		dontneed = 1;
	}
	pthread_barrier_init(&start, NULL, FAULTERS + writer_mode + (flushed != NULL) + 1);
	/* the threads inherit SIGTERM blocked, so it reaches main, whose sleep() it ends */
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &term, NULL);
	for (int i = 0; i < FAULTERS; i++)
		pthread_create(&threads[nthreads++], NULL, faulter, NULL);
	if (writer_mode)
		pthread_create(&threads[nthreads++], NULL, writer, NULL);
	if (flushed)
		pthread_create(&threads[nthreads++], NULL, flusher, NULL);
	if (hot_mode) {
		struct sigaction sa = { .sa_handler = on_term };

		sigaction(SIGTERM, &sa, NULL);
	}
	pthread_sigmask(SIG_UNBLOCK, &term, NULL);
	mark(marker, "kstep-vma window start");
	faults = pgfault();
	pthread_barrier_wait(&start);
	clock_gettime(CLOCK_MONOTONIC, &began);
	if (hot_mode) {
		printf("vmaprobe mode=hot pid=%d hot=%lx-%lx map_mib=%lu hot_kib=%lu tlb=%s clk_tck=%ld\n",
		       getpid(), (unsigned long)hot, (unsigned long)(hot + hot_bytes), map_bytes / MIB, hot_bytes / 1024, tlb,
		       sysconf(_SC_CLK_TCK));
		fflush(stdout);
	}
	sleep(seconds);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	clock_gettime(CLOCK_MONOTONIC, &ended);
	mark(marker, "kstep-vma window stop");
	faults = pgfault() - faults;
	printf("vmaprobe mode=%s pid=%d passes=%ld pages=%lu pgfault=%ld flushes=%ld seconds=%.3f\n", mode,
	       getpid(), atomic_load(&passes), hot_bytes / page, faults, atomic_load(&flushes),
	       (ended.tv_sec - began.tv_sec) + (ended.tv_nsec - began.tv_nsec) / 1e9);
	print_maps();
	return 0;
}

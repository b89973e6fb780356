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
 *   vmaprobe SECONDS hot SEED  no faults after the first touch: two threads keep writing an
 *                              8 MiB hot range at a SEED-chosen page offset of a 64 MiB VMA
 *                              (DAMON's target); no mmap, munmap or mprotect while it runs
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
 * Hot mode also forks a child that only calls sched_yield().  DAMON clears a PTE's accessed
 * bit without flushing the TLB (x86 does not need to: the bit is set again once the entry is
 * evicted), and QEMU's TCG TLB holds the whole hot range, so on an emulated x86 the bit would
 * never come back.  Switching to another process writes CR3, which empties QEMU's TLB; the
 * child makes those switches happen.  It changes nothing in the target's address space.
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

#define MAP_BYTES (64UL << 20)
#define HOT_BYTES (8UL << 20)
#define FAULTERS 2

static char *map;
static char *hot;
static long page;
static atomic_int stop;
static atomic_long passes;
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
		for (size_t off = 0; off < HOT_BYTES; off += page)
			hot[off]++;
		if (dontneed)
			madvise(hot, HOT_BYTES, MADV_DONTNEED);
		atomic_fetch_add(&passes, 1);
	}
	return NULL;
}

static void *writer(void *arg)
{
	char *flip = map + MAP_BYTES - page;

	(void)arg;
	pthread_barrier_wait(&start);
	while (!atomic_load(&stop)) {
		mprotect(flip, page, PROT_READ | PROT_WRITE | PROT_EXEC);
		mprotect(flip, page, PROT_READ | PROT_WRITE);
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

int main(int argc, char **argv)
{
	pthread_t threads[FAULTERS + 1];
	int nthreads = 0;
	const char *mode;
	const char *marker = argc > 3 ? argv[3] : NULL;
	long faults;
	int seconds;

	if (argc < 3 || (seconds = atoi(argv[1])) <= 0) {
		fprintf(stderr, "usage: vmaprobe SECONDS faults|writer [MARKER] | vmaprobe SECONDS hot SEED\n");
		return 2;
	}
	mode = argv[2];
	page = sysconf(_SC_PAGESIZE);
	map = mmap(NULL, MAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (map == MAP_FAILED) {
		perror("vmaprobe: mmap");
		return 1;
	}
	/* 4K pages, so every touch of a fresh page is one fault (DAMON's target keeps THP) */
	if (strcmp(mode, "hot"))
		madvise(map, MAP_BYTES, MADV_NOHUGEPAGE);
	hot = map;
	if (!strcmp(mode, "hot")) {
		uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
		uint64_t slots = (MAP_BYTES - HOT_BYTES) / page;

		memset(map, 1, MAP_BYTES);
		hot = map + (splitmix64(&seed) % slots) * page;
		marker = NULL;
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				sched_yield();
		}
	} else if (!strcmp(mode, "faults") || !strcmp(mode, "writer")) {
		/*
		 * The VMA's first fault allocates its anon_vma, which under the VMA lock needs
		 * mmap_read_trylock() (__vmf_anon_prepare); pthread_create() holds mmap_lock for
		 * write while it maps a stack, so that first fault could retry.  Make it here, and
		 * start the threads together once all exist.
		 */
		hot[0] = 1;
		dontneed = 1;
	} else {
		fprintf(stderr, "vmaprobe: unknown mode %s\n", mode);
		return 2;
	}
	pthread_barrier_init(&start, NULL, FAULTERS + !strcmp(mode, "writer") + 1);
	for (int i = 0; i < FAULTERS; i++)
		pthread_create(&threads[nthreads++], NULL, faulter, NULL);
	if (!strcmp(mode, "writer"))
		pthread_create(&threads[nthreads++], NULL, writer, NULL);
	mark(marker, "kstep-vma window start");
	faults = pgfault();
	pthread_barrier_wait(&start);
	if (!strcmp(mode, "hot")) {
		printf("vmaprobe mode=hot pid=%d hot=%lx-%lx\n", getpid(), (unsigned long)hot,
		       (unsigned long)(hot + HOT_BYTES));
		fflush(stdout);
	}
	sleep(seconds);
	atomic_store(&stop, 1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(threads[i], NULL);
	mark(marker, "kstep-vma window stop");
	faults = pgfault() - faults;
	printf("vmaprobe mode=%s pid=%d passes=%ld pages=%lu pgfault=%ld\n", mode, getpid(),
	       atomic_load(&passes), HOT_BYTES / page, faults);
	print_maps();
	return 0;
}

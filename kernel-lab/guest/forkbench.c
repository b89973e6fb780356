/*
 * forkbench MODE N: time fork() of a process with 256 MiB of populated private memory.
 *
 * /init sets the THP policy; MODE says how the memory is mapped:
 *   4k      MADV_NOHUGEPAGE: 65536 4K PTEs for copy_pte_range() to copy one by one
 *   64k     MADV_HUGEPAGE with only hugepages-64kB enabled: 64K folios, whose PTEs
 *           copy_present_ptes() copies in batches (folio_pte_batch())
 *   2m      MADV_HUGEPAGE with hugepages-2048kB: one PMD per 2 MiB (copy_huge_pmd())
 *   2m-pte  2m, then mprotect() of one 4K page and back in every 2 MiB block: the PMD
 *           mappings split (thp_split_pmd) but the 2M folios do not (thp_split_page), so
 *           fork copies PTEs of large folios, batched up to the PMD
 * It forks N times (the child exits at once), timing fork() in the parent, and prints
 * "mode=M n=N mean_us=.. sd_us=.. min_us=.. median_us=.. anon_huge_kb=.. split_pmd=.. split_page=..
 * first_us=.. mthp64_alloc=.. mthp64_fallback=..".  The first fork copies writable, exclusive PTEs
 * and write-protects them; the later ones copy read-only, shared PTEs: first_us is the first
 * fork's time alone (the other statistics cover all N).  mthp64_alloc and mthp64_fallback are
 * how much hugepages-64kB's anon_fault_alloc and anon_fault_fallback grew while the memory was
 * populated (-1 where the kernel has no such counter): a 64k run without a 64K folio measures 4K.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BYTES (256UL << 20)
#define ALIGN (32UL << 20)
#define PMD_BYTES (2UL << 20)

static long counter(const char *path, const char *key)
{
	char line[256];
	size_t n = strlen(key);
	long value = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && (line[n] == ' ' || line[n] == ':')) {
			value = strtol(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return value;
}

/* a sysfs file holding one number, or -1 */
static long sysfs_long(const char *path)
{
	long value = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%ld", &value) != 1)
			value = -1;
		fclose(f);
	}
	return value;
}

#define MTHP64 "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/stats/"

static long grew(long before, long after)
{
	return before < 0 || after < 0 ? -1 : after - before;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int n = argc > 2 ? atoi(argv[2]) : 0;
	long split_pmd, split_page, alloc, fallback;
	double *t, sum = 0, sq = 0, first;
	char *raw, *buf;

	if (n < 2 || (strcmp(mode, "4k") && strcmp(mode, "64k") && strcmp(mode, "2m") &&
		      strcmp(mode, "2m-pte"))) {
		fprintf(stderr, "usage: forkbench 4k|64k|2m|2m-pte N (N >= 2)\n");
		return 2;
	}
	t = calloc(n, sizeof(*t));
	raw = mmap(NULL, BYTES + ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED || !t) {
		perror("forkbench");
		return 1;
	}
	buf = (char *)(((unsigned long)raw + ALIGN - 1) & ~(ALIGN - 1));
	madvise(buf, BYTES, strcmp(mode, "4k") ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	alloc = sysfs_long(MTHP64 "anon_fault_alloc");
	fallback = sysfs_long(MTHP64 "anon_fault_fallback");
	memset(buf, 1, BYTES);
	alloc = grew(alloc, sysfs_long(MTHP64 "anon_fault_alloc"));
	fallback = grew(fallback, sysfs_long(MTHP64 "anon_fault_fallback"));
	split_pmd = counter("/proc/vmstat", "thp_split_pmd");
	split_page = counter("/proc/vmstat", "thp_split_page");
	if (!strcmp(mode, "2m-pte"))
		for (unsigned long off = 0; off < BYTES; off += PMD_BYTES) {
			mprotect(buf + off, 4096, PROT_READ);
			mprotect(buf + off, 4096, PROT_READ | PROT_WRITE);
		}
	for (int i = 0; i < n; i++) {
		double start = now_us();
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		t[i] = now_us() - start;
		if (pid < 0 || waitpid(pid, NULL, 0) != pid) {
			perror("forkbench: fork");
			return 1;
		}
		sum += t[i];
	}
	first = t[0];
	for (int i = 0; i < n; i++)
		sq += (t[i] - sum / n) * (t[i] - sum / n);
	qsort(t, n, sizeof(*t), cmp);
	printf("mode=%s n=%d mean_us=%.0f sd_us=%.0f min_us=%.0f median_us=%.0f anon_huge_kb=%ld "
	       "split_pmd=%ld split_page=%ld first_us=%.0f mthp64_alloc=%ld mthp64_fallback=%ld\n",
	       mode, n, sum / n, sqrt(sq / (n - 1)), t[0], t[n / 2],
	       counter("/proc/self/smaps_rollup", "AnonHugePages"),
	       counter("/proc/vmstat", "thp_split_pmd") - split_pmd,
	       counter("/proc/vmstat", "thp_split_page") - split_page, first, alloc, fallback);
	return 0;
}

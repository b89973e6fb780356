// SPDX-License-Identifier: GPL-2.0
/*
 * vma-locks-torture: fault threads against mmap, munmap and split (mprotect) writers and fork, on
 * the ported 6.12 per-VMA lock paths, with an observation log that `kstep check vma-locks` replays.
 *
 *   vma-locks-torture [--variant NAME] [--faulters N] [--repeat R] [--writer-repeat R] [--seed S] [--log FILE]
 *                     [--hang-seconds T] [--step-delay NS] [--stall-before LABEL:US]
 *   vma-locks-torture --bench SECONDS [--variant v6.12|no-per-vma-lock] [--faulters N]
 *   vma-locks-torture --list
 *
 * Every step runs under one step mutex and, with --log, writes one line (log format 2):
 *
 *   # kstep-log 2 vma-locks variant=V seed=S vmas=... thread=... thread=...
 *   <ticket> <actor> <label> <mm_lock_seq> <mmap_lock count> <vma> <vm_lock_seq> <vma lock count> <detached> <in tree>
 *   # kstep-log end steps=N
 *
 * <vma> is the VMA the step touched, or "-" (then the four fields after it are "-"); a freed VMA
 * logs "freed" for its vm_lock_seq and "-" for its lock and detached flag.  The rwsem counts are
 * sem->count as 6.12 lays it out (rwsem.c).  RCU: rcu_read_lock/unlock are liburcu (urcu-memb)
 * read-side sections; the "rcu" actor is a grace-period thread that logs rcu_gp_init, waits in
 * liburcu's synchronize_rcu(), logs rcu_gp_cleanup and invokes each ready callback as rcu_do_batch,
 * with 6.12's gp_seq arithmetic deciding which callbacks are ready.  The quiescent-state reports
 * the model has (rcu_report_qs_rdp, rcu_gp_fqs) happen inside liburcu and are not logged: the
 * checker takes each as soon as the model allows it.  gp-ends-early and early-callback are
 * liburcu misuse: the grace-period thread ends the grace period without synchronize_rcu() (once
 * one CPU is outside a section), or invokes callbacks before it.
 *
 * --step-delay waits a seeded random time below NS before each step; --stall-before sleeps US
 * microseconds before every step LABEL a thread takes, widening one race window as rcutorture's
 * delays do: vma_start_read:3000 lets writers detach and free the VMA a fault has just found,
 * rwsem_wake:20000 lets a writer take, detach and free the VMA whose lock a fault has just
 * released.
 *
 * A run fails (exit 1, the log without its end marker) when a step touches a freed VMA (poisoned,
 * never reused) or when no step happens for --hang-seconds (a deadlock: each thread's waiting
 * step is printed).  --bench runs fault threads on one VMA against a writer splitting and merging
 * another (mprotect) for SECONDS and prints {"faults": N, "seconds": S} without logging.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <urcu/urcu-memb.h>

#include "splitmix64.h"
#include "vma_locks.h"

const char *const variant_names[NR_VARIANTS] = {
#define VARIANT_NAME(id, name) name,
	VARIANTS(VARIANT_NAME)
#undef VARIANT_NAME
};
static const char *const counter_names[] = {	/* struct vma_counters, in order */
	"per-VMA successes", "aborts", "retries", "misses", "mmap_lock faults", "SIGSEGV",
};
const char *const label_names[NR_LABELS] = {
#define LABEL_NAME(name) #name,
	LABELS(LABEL_NAME)
#undef LABEL_NAME
};

enum variant variant;
struct mm_struct mm;
struct lab_thread threads[MAX_THREADS];
int nr_threads;
struct vma_counters counters[MAX_THREADS];
__thread struct lab_thread *current;

static pthread_mutex_t step_mutex = PTHREAD_MUTEX_INITIALIZER;
static FILE *obs_log;
static unsigned long ticket;
static long step_delay_ns;
static int stall_label = -1;		/* --stall-before: sleep before each of these steps ... */
static long stall_us;			/* ... this long */
static __thread struct splitmix64 delay_prng;
static struct lab_thread rcu_actor = { .idx = -1, .name = "rcu", .waiting = -1 };
static int workers_done;
bool lab_bench;
static volatile int bench_stop;

/* --- steps ------------------------------------------------------------------------------------- */

static void delay(void)
{
	if (step_delay_ns) {
		struct timespec ts = { 0, (long)(splitmix64_next(&delay_prng) % (uint64_t)step_delay_ns) };

		nanosleep(&ts, NULL);
	}
}

static bool uses_step_mutex(void)
{
	return !lab_bench || current == &rcu_actor;
}

void step_begin(enum label label)
{
	delay();
	if ((int)label == stall_label && current != &rcu_actor)
		usleep(stall_us);
	if (uses_step_mutex())
		pthread_mutex_lock(&step_mutex);
}

static bool in_tree(int id)
{
	int k;

	for (k = 0; k < mm.tree->n; k++)
		if (mm.tree->ids[k] == id)
			return true;
	return false;
}

static void log_line(enum label label, int vma)
{
	fprintf(obs_log, "%lu %s %s %lld 0x%08x ", ticket, current->name, label_names[label],
		(long long)mm.mm_lock_seq, rwsem_count(&mm.mmap_lock.state));
	if (vma == NO_VMA) {
		fputs("- - - - -\n", obs_log);
		return;
	}
	struct vm_area_struct *v = mm.vmas[vma];

	if (v->magic != VMA_MAGIC) {
		fprintf(obs_log, "%d freed - - %d\n", vma, in_tree(vma));
		return;
	}
	if (v->vm_lock_seq == VM_LOCK_SEQ_NONE)
		fprintf(obs_log, "%d - ", vma);
	else
		fprintf(obs_log, "%d %lld ", vma, (long long)v->vm_lock_seq);
	fprintf(obs_log, "0x%08x %d %d\n", rwsem_count(&v->lock.state), v->detached, in_tree(vma));
}

void step_end(enum label label, int vma)
{
	if (obs_log)
		log_line(label, vma);
	__atomic_fetch_add(&ticket, 1, __ATOMIC_RELAXED);
	current->waiting = -1;
	if (uses_step_mutex())
		pthread_mutex_unlock(&step_mutex);
}

void step_wait(enum label label, bool (*cond)(void *), void *arg)
{
	current->waiting = label;
	for (;;) {
		step_begin(label);
		if (cond(arg))
			return;
		if (uses_step_mutex())
			pthread_mutex_unlock(&step_mutex);
		if (current == &rcu_actor)	/* the kthread sleeps until there is work */
			usleep(20);
		else
			sched_yield();
	}
}

static void fail_run(const char *what)
{
	fputs(what, stderr);
	if (obs_log)
		fflush(obs_log);
	_exit(1);
}

struct vm_area_struct *vma_get(int id, enum label label)
{
	struct vm_area_struct *v = mm.vmas[id];
	char msg[160];

	if (v->magic != VMA_MAGIC) {
		snprintf(msg, sizeof(msg), "vma-locks-torture: use-after-free: %s touched VMA %d in %s after it was "
			 "freed (poison 0x%02x)\n", current->name, id, label_names[label], ((unsigned char *)v)[0]);
		fail_run(msg);
	}
	return v;
}

void vma_poison(int id)
{
	memset(mm.vmas[id], VMA_POISON, sizeof(*mm.vmas[id]));
}

/* --- RCU: liburcu read-side sections, the grace-period thread ------------------------------------ */

#define RCU_SEQ_STATE_MASK	3UL
#define ULONG_CMP_GE(a, b)	(~0UL / 2 >= (a) - (b))
#define ULONG_CMP_LT(a, b)	(~0UL / 2 < (a) - (b))

static unsigned long gp_seq = (0UL - 300UL) << 2;	/* kernel/rcu/tree.c: rcu_state.gp_seq */

struct rcu_cb {
	int vma;
	unsigned long wait;			/* rcu_seq_snap at call_rcu */
};
static struct rcu_cb *cbs;
static int nr_cbs, cbs_cap;

void lab_rcu_read_lock(void)
{
	step_begin(L_rcu_read_lock);
	urcu_memb_read_lock();
	current->rcu_nesting++;
	step_end(L_rcu_read_lock, NO_VMA);
}

void lab_rcu_read_unlock(void)
{
	step_begin(L_rcu_read_unlock);
	current->rcu_nesting--;
	urcu_memb_read_unlock();
	step_end(L_rcu_read_unlock, NO_VMA);
}

void lab_call_rcu(int vma)
{
	if (lab_bench)
		pthread_mutex_lock(&step_mutex);
	if (nr_cbs == cbs_cap) {
		cbs_cap = cbs_cap ? 2 * cbs_cap : 64;
		cbs = realloc(cbs, sizeof(*cbs) * cbs_cap);
		if (!cbs)
			abort();
	}
	cbs[nr_cbs++] = (struct rcu_cb){ vma, (gp_seq + 2 * RCU_SEQ_STATE_MASK + 1) & ~RCU_SEQ_STATE_MASK };
	if (lab_bench)
		pthread_mutex_unlock(&step_mutex);
}

static bool gp_running(void)
{
	return gp_seq & RCU_SEQ_STATE_MASK;
}

static bool cb_ready(const struct rcu_cb *cb)
{
	if (variant == VARIANT_EARLY_CALLBACK)	/* BUG: rcu_seq_started, not rcu_seq_done */
		return ULONG_CMP_LT((cb->wait - 1) & ~RCU_SEQ_STATE_MASK, gp_seq);
	return ULONG_CMP_GE(gp_seq, cb->wait);
}

static int first_ready(void)
{
	int k;

	for (k = 0; k < nr_cbs; k++)
		if (cb_ready(&cbs[k]))
			return k;
	return -1;
}

static bool gp_needed(void)
{
	int k;

	if (gp_running())
		return false;
	for (k = 0; k < nr_cbs; k++)
		if (!ULONG_CMP_GE(gp_seq, cbs[k].wait))
			return true;
	return false;
}

static bool rcu_has_work(void *arg)
{
	return (workers_done == nr_threads && !nr_cbs) || gp_needed() || first_ready() >= 0;
}

/* gp-ends-early's cleanup may come once one CPU can have reported: one is outside every section. */
static bool one_cpu_outside(void *arg)
{
	int k;

	for (k = 0; k < nr_threads; k++)
		if (!threads[k].rcu_nesting)
			return true;
	return false;
}

/* rcu_do_batch: invoke the oldest ready callback, vm_area_free_rcu_cb (poison and keep the VMA). */
static void rcu_do_batch(int k)
{
	int v = cbs[k].vma;

	memmove(&cbs[k], &cbs[k + 1], sizeof(*cbs) * (nr_cbs - k - 1));
	nr_cbs--;
	vma_poison(v);
	step_end(L_rcu_do_batch, v);
}

static void *rcu_gp_kthread(void *arg)
{
	int k;

	current = &rcu_actor;
	urcu_memb_register_thread();
	for (;;) {
		step_wait(L_rcu_gp_init, rcu_has_work, NULL);
		k = first_ready();
		if (k >= 0) {
			rcu_do_batch(k);
			continue;
		}
		if (!gp_needed()) {		/* every worker finished, every callback ran */
			pthread_mutex_unlock(&step_mutex);
			break;
		}
		gp_seq++;			/* rcu_seq_start */
		step_end(L_rcu_gp_init, NO_VMA);
		if (variant == VARIANT_GP_ENDS_EARLY) {	/* BUG: no synchronize_rcu() */
			step_wait(L_rcu_gp_cleanup, one_cpu_outside, NULL);
		} else {
			if (variant == VARIANT_EARLY_CALLBACK) {	/* BUG: callbacks before synchronize_rcu() */
				step_begin(L_rcu_do_batch);
				while ((k = first_ready()) >= 0) {
					rcu_do_batch(k);
					step_begin(L_rcu_do_batch);
				}
				pthread_mutex_unlock(&step_mutex);
			}
			urcu_memb_synchronize_rcu();
			step_begin(L_rcu_gp_cleanup);
		}
		gp_seq = (gp_seq | RCU_SEQ_STATE_MASK) + 1;	/* rcu_seq_end */
		step_end(L_rcu_gp_cleanup, NO_VMA);
	}
	urcu_memb_unregister_thread();
	return NULL;
}

/* --- the workload ------------------------------------------------------------------------------- */

enum op_kind { OP_MMAP, OP_MUNMAP, OP_MPROTECT, OP_FORK };
static const char *const op_names[] = { "mmap", "munmap", "mprotect", "fork" };

struct op {
	enum op_kind kind;
	unsigned long start, end;
	bool writable;
};

struct plan {
	int repeat;
	int nr;				/* faults or ops */
	unsigned long faults[16];
	struct op ops[16];
};
static struct plan plans[MAX_THREADS];

struct init_vma {
	unsigned long start, end;
	bool writable, anon;
};

/*
 * The address space at the start, and the writers: one maps and unmaps (munmap splits [16, 32),
 * MAP_FIXED mmap puts the hole back and merges, mmap over [4, 8) gathers and splits [0, 16)), one
 * splits and merges with mprotect, then forks.  Faults go anywhere mapped except the hole.
 */
static const struct init_vma init_vmas[] = {
	{ 0, 16, true, true }, { 16, 32, true, false }, { 32, 48, false, true }, { 48, 64, true, true },
};
static const struct op mapper_ops[] = {
	{ OP_MUNMAP, 20, 24, false }, { OP_MMAP, 20, 24, true }, { OP_MMAP, 4, 8, true },
};
static const struct op splitter_ops[] = {
	{ OP_MPROTECT, 36, 40, true }, { OP_MPROTECT, 36, 40, false }, { OP_FORK, 0, 0, false },
};
/* --bench: faults in [0, 16) while the writer splits and merges [32, 48) */
static const struct op bench_ops[] = {
	{ OP_MPROTECT, 36, 40, true }, { OP_MPROTECT, 36, 40, false },
};

static void plan_faults(struct plan *p, struct splitmix64 *prng, unsigned long lo, unsigned long hi)
{
	int k;

	for (k = 0; k < 16; k++) {
		unsigned long a;

		do
			a = lo + splitmix64_below(prng, hi - lo);
		while (a >= 20 && a < 24);
		p->faults[k] = a;
	}
	p->nr = 16;
}

static void plan_ops(struct plan *p, const struct op *ops, int n)
{
	memcpy(p->ops, ops, sizeof(*ops) * n);
	p->nr = n;
}

static void write_header(uint64_t seed)
{
	int k, j;

	fprintf(obs_log, "# kstep-log 2 vma-locks variant=%s seed=%llu vmas=", variant_names[variant],
		(unsigned long long)seed);
	for (k = 0; k < (int)(sizeof(init_vmas) / sizeof(init_vmas[0])); k++)
		fprintf(obs_log, "%s%lu-%lu:%s:%s", k ? "," : "", init_vmas[k].start, init_vmas[k].end,
			init_vmas[k].writable ? "rw" : "r", init_vmas[k].anon ? "anon" : "none");
	for (k = 0; k < nr_threads; k++) {
		fprintf(obs_log, " thread=%s:%s:%d:", threads[k].name, threads[k].writer ? "writer" : "fault",
			plans[k].repeat);
		for (j = 0; j < plans[k].nr; j++) {
			const struct op *o = &plans[k].ops[j];

			if (!threads[k].writer)
				fprintf(obs_log, "%s%lu", j ? "." : "", plans[k].faults[j]);
			else if (o->kind == OP_FORK)
				fprintf(obs_log, "%sfork", j ? "," : "");
			else if (o->kind == OP_MUNMAP)
				fprintf(obs_log, "%smunmap-%lu-%lu", j ? "," : "", o->start, o->end);
			else
				fprintf(obs_log, "%s%s-%lu-%lu-%s", j ? "," : "", op_names[o->kind], o->start, o->end,
					o->writable ? "rw" : "r");
		}
	}
	fputc('\n', obs_log);
}

static void run_op(const struct op *o)
{
	switch (o->kind) {
	case OP_MMAP:
		sys_mmap(o->start, o->end, o->writable);
		break;
	case OP_MUNMAP:
		sys_munmap(o->start, o->end);
		break;
	case OP_MPROTECT:
		sys_mprotect(o->start, o->end, o->writable);
		break;
	case OP_FORK:
		sys_fork();
		break;
	}
}

static unsigned long bench_faults[MAX_THREADS];

static void *worker(void *arg)
{
	struct lab_thread *t = arg;
	struct plan *p = &plans[t->idx];
	int r, k;

	current = t;
	splitmix64_seed(&delay_prng, 0x9e3779b97f4a7c15ULL * (t->idx + 1));
	urcu_memb_register_thread();
	for (r = 0; (lab_bench ? !bench_stop : r < p->repeat) && !t->died; r++) {
		for (k = 0; k < p->nr && !t->died; k++) {
			if (t->writer) {
				run_op(&p->ops[k]);
			} else {
				do_user_addr_fault(p->faults[k]);
				bench_faults[t->idx]++;
			}
		}
	}
	urcu_memb_unregister_thread();
	pthread_mutex_lock(&step_mutex);
	workers_done++;
	pthread_mutex_unlock(&step_mutex);
	return NULL;
}

/* --- main ----------------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fputs("usage: vma-locks-torture [--variant NAME] [--faulters N] [--repeat R] [--writer-repeat R]\n"
	      "                         [--seed S] [--log FILE]\n"
	      "                         [--hang-seconds T] [--step-delay NS] [--stall-before LABEL:US]\n"
	      "       vma-locks-torture --bench SECONDS [--variant v6.12|no-per-vma-lock] [--faulters N] | --list\n", f);
}

static long number(const char *opt, const char *text, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || *end || end == text || v < lo || v > hi) {
		fprintf(stderr, "vma-locks-torture: %s %s: expected a whole number %ld..%ld\n", opt, text, lo, hi);
		exit(2);
	}
	return v;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int faulters = 2, repeat = 3, writer_repeat = 0, hang_s = 10, k;
	double bench_s = 0, t0;
	uint64_t seed = 1;
	struct splitmix64 prng;
	const char *log_path = NULL;
	pthread_t tids[MAX_THREADS], gp;
	unsigned long last = ~0UL, total;
	int still = 0;

	for (k = 1; k < argc; k++) {
		const char *a = argv[k], *v = k + 1 < argc ? argv[k + 1] : NULL;

		if (!strcmp(a, "--list")) {
			for (int j = 0; j < NR_VARIANTS; j++)
				puts(variant_names[j]);
			return 0;
		}
		if (!strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		k++;
		if (!strcmp(a, "--variant")) {
			int j;

			for (j = 0; j < NR_VARIANTS && strcmp(v, variant_names[j]); j++)
				;
			if (j == NR_VARIANTS) {
				fprintf(stderr, "vma-locks-torture: unknown variant %s (--list shows them)\n", v);
				return 2;
			}
			variant = j;
		} else if (!strcmp(a, "--faulters")) {
			faulters = number(a, v, 1, MAX_THREADS - 2);
		} else if (!strcmp(a, "--repeat")) {
			repeat = number(a, v, 1, 50);
		} else if (!strcmp(a, "--writer-repeat")) {
			writer_repeat = number(a, v, 1, 50);
		} else if (!strcmp(a, "--seed")) {
			seed = number(a, v, 0, 1L << 62);
		} else if (!strcmp(a, "--log")) {
			log_path = v;
		} else if (!strcmp(a, "--hang-seconds")) {
			hang_s = number(a, v, 1, 3600);
		} else if (!strcmp(a, "--step-delay")) {
			step_delay_ns = number(a, v, 0, 999999999);
		} else if (!strcmp(a, "--stall-before")) {
			const char *colon = strchr(v, ':');

			for (stall_label = 0; stall_label < NR_LABELS; stall_label++)
				if (colon && !strncmp(v, label_names[stall_label], colon - v) &&
				    !label_names[stall_label][colon - v])
					break;
			if (stall_label == NR_LABELS) {
				fprintf(stderr, "vma-locks-torture: --stall-before %s: expected LABEL:MICROSECONDS "
					"with one of the port's step labels\n", v);
				return 2;
			}
			stall_us = number(a, colon + 1, 1, 1000000);
		} else if (!strcmp(a, "--bench")) {
			bench_s = number(a, v, 1, 600);
			lab_bench = true;
		} else {
			fprintf(stderr, "vma-locks-torture: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (lab_bench && (log_path || (variant != VARIANT_V6_12 && variant != VARIANT_NO_PER_VMA_LOCK))) {
		fputs("vma-locks-torture: --bench runs v6.12 or no-per-vma-lock, without a log\n", stderr);
		return 2;
	}
	if (log_path) {
		obs_log = fopen(log_path, "w");
		if (!obs_log) {
			fprintf(stderr, "vma-locks-torture: %s: %s\n", log_path, strerror(errno));
			return 2;
		}
	}

	for (k = 0; k < (int)(sizeof(init_vmas) / sizeof(init_vmas[0])); k++)
		mm_init_vma(init_vmas[k].start, init_vmas[k].end, init_vmas[k].writable, init_vmas[k].anon);
	splitmix64_seed(&prng, seed);
	nr_threads = faulters + (lab_bench ? 1 : 2);
	for (k = 0; k < nr_threads; k++) {
		struct lab_thread *t = &threads[k];

		t->idx = k;
		t->vma = NO_VMA;
		t->waiting = -1;
		t->writer = k >= faulters;
		plans[k].repeat = t->writer && writer_repeat ? writer_repeat : repeat;
		if (!t->writer) {
			snprintf(t->name, sizeof(t->name), "F%d", k + 1);
			plan_faults(&plans[k], &prng, 0, lab_bench ? 16 : 64);
		} else {
			snprintf(t->name, sizeof(t->name), "W%d", k - faulters + 1);
			if (lab_bench)
				plan_ops(&plans[k], bench_ops, 2);
			else if (k == faulters)
				plan_ops(&plans[k], mapper_ops, 3);
			else
				plan_ops(&plans[k], splitter_ops, 3);
		}
	}
	if (obs_log)
		write_header(seed);

	t0 = now_s();
	pthread_create(&gp, NULL, rcu_gp_kthread, NULL);
	for (k = 0; k < nr_threads; k++)
		pthread_create(&tids[k], NULL, worker, &threads[k]);
	for (;;) {
		usleep(100000);
		pthread_mutex_lock(&step_mutex);
		if (workers_done == nr_threads && !nr_cbs) {
			pthread_mutex_unlock(&step_mutex);
			break;
		}
		if (lab_bench && now_s() - t0 >= bench_s && !bench_stop)
			bench_stop = 1;
		if (ticket != last) {
			last = ticket;
			still = 0;
		} else if (++still >= hang_s * 10) {
			fprintf(stderr, "vma-locks-torture: hang: no step for %d s; waiting:", hang_s);
			for (k = 0; k < nr_threads; k++)
				if (threads[k].waiting >= 0)
					fprintf(stderr, " %s at %s", threads[k].name, label_names[threads[k].waiting]);
			fputc('\n', stderr);
			if (obs_log)
				fflush(obs_log);
			_exit(1);
		}
		pthread_mutex_unlock(&step_mutex);
	}
	for (k = 0; k < nr_threads; k++)
		pthread_join(tids[k], NULL);
	pthread_join(gp, NULL);
	if (lab_bench) {
		for (total = 0, k = 0; k < nr_threads; k++)
			total += bench_faults[k];
		printf("{\"faults\": %lu, \"seconds\": %.3f}\n", total, now_s() - t0);
		return 0;
	}
	if (obs_log) {
		fprintf(obs_log, "# kstep-log end steps=%lu\n", ticket);
		fclose(obs_log);
	}
	fprintf(stderr, "vma-locks-torture: %s: %lu steps, %d threads", variant_names[variant], ticket, nr_threads);
	for (int c = 0; c < (int)(sizeof(struct vma_counters) / sizeof(unsigned long)); c++) {
		for (total = 0, k = 0; k < nr_threads; k++)
			total += ((unsigned long *)&counters[k])[c];
		fprintf(stderr, "%s %s %lu", c ? "," : ";", counter_names[c], total);
	}
	fputc('\n', stderr);
	return 0;
}

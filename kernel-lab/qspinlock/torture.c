// SPDX-License-Identifier: GPL-2.0
/*
 * qspinlock-torture: a locktorture-style harness for the lab's locks.
 *
 * N CPU threads each take the lock M times.  Inside the critical section an unprotected counter
 * is read, a seeded random delay passes, and the counter is written back, so any overlap loses
 * an update; an owner field is checked on entry and exit.  Seeded random delays outside the
 * critical section (and, with --step-delay, before the qspinlock's own steps) widen the race
 * windows.  A watchdog reports a hang when no CPU completes an acquisition for --hang-timeout
 * seconds: for a lock, a hang is a caught bug (deadlock or lost wake-up), not a stuck test.
 *
 * The torture build (LAB_HOOKS=1) counts every labelled step per CPU and fails a run in which
 * the pending path, the queue or set_locked never ran: such a run proves nothing.  It can also
 * write the observation log that "kstep check" reads (--log).  The benchmark build (LAB_HOOKS=0,
 * qspinlock-bench) has no step hooks at all and is what --duration throughput runs should use.
 *
 * Exit status: 0 clean, 1 violation (mutual exclusion, lost update), 2 bad input, 3 hang,
 * 4 inconclusive (a required path never ran).  The last line on stdout is a JSON summary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#include <linux/compiler.h>
#include <linux/percpu.h>
#include <asm/processor.h>
#include <lab/hooks.h>

#include "../common/check.h"
#include "../common/splitmix64.h"
#include "lab_lock.h"
#include "variants.h"

#ifndef LAB_ARCH
#error "LAB_ARCH (x86_64, arm64, ppc64le) comes from the Makefile"
#endif

#if LAB_HOOKS
#define TOOL "qspinlock-torture"
#else
#define TOOL "qspinlock-bench"
#endif

enum { EXIT_CLEAN = 0, EXIT_VIOLATION = 1, EXIT_USAGE = 2, EXIT_HANG = 3, EXIT_INCONCLUSIVE = 4 };

/* ---- the locks ------------------------------------------------------------------------- */

#define LAB_DECLARE_VARIANT(id, name, broken, doc)			\
	extern const struct lab_lock_ops lab_qspinlock_##id##_pb8;	\
	extern const struct lab_lock_ops lab_qspinlock_##id##_pb1;
LAB_QSPINLOCK_VARIANTS(LAB_DECLARE_VARIANT)
extern const struct lab_lock_ops lab_ticket;

struct lab_lock {
	const char *lock;		/* --lock */
	const char *variant;		/* --variant */
	int broken;
	const char *doc;
	const struct lab_lock_ops *pb8, *pb1;
	int steps;			/* has labelled steps (can be logged, has path counts) */
};

static pthread_spinlock_t *as_spin(void *p) { return p; }
static pthread_mutex_t *as_mutex(void *p) { return p; }
static void spin_init(void *l) { LAB_CHECK(pthread_spin_init(as_spin(l), PTHREAD_PROCESS_PRIVATE) == 0); }
static void spin_lock(void *l) { pthread_spin_lock(as_spin(l)); }
static void spin_unlock(void *l) { pthread_spin_unlock(as_spin(l)); }
static void mutex_init(void *l) { LAB_CHECK(pthread_mutex_init(as_mutex(l), NULL) == 0); }
static void mutex_lock(void *l) { pthread_mutex_lock(as_mutex(l)); }
static void mutex_unlock(void *l) { pthread_mutex_unlock(as_mutex(l)); }

static const struct lab_lock_ops pthread_spin_ops = { .init = spin_init, .lock = spin_lock, .unlock = spin_unlock };
static const struct lab_lock_ops pthread_mutex_ops = { .init = mutex_init, .lock = mutex_lock, .unlock = mutex_unlock };

_Static_assert(sizeof(pthread_spinlock_t) <= sizeof(union lab_lock_storage), "spinlock too big");
_Static_assert(sizeof(pthread_mutex_t) <= sizeof(union lab_lock_storage), "mutex too big");

static const struct lab_lock locks[] = {
#define LAB_VARIANT_ENTRY(id, name, broken, doc)			\
	{ "qspinlock", name, broken, doc, &lab_qspinlock_##id##_pb8, &lab_qspinlock_##id##_pb1, 1 },
	LAB_QSPINLOCK_VARIANTS(LAB_VARIANT_ENTRY)
	{ "ticket", "v6.12", 0, "Linux 6.12 generic ticket lock (include/asm-generic/spinlock.h)",
	  &lab_ticket, NULL, 1 },
	{ "pthread-spin", "glibc", 0, "pthread_spin_lock (glibc)", &pthread_spin_ops, NULL, 0 },
	{ "pthread-mutex", "glibc", 0, "pthread_mutex_lock (glibc, default attributes)",
	  &pthread_mutex_ops, NULL, 0 },
};
#define NR_LOCKS (sizeof(locks) / sizeof(locks[0]))


/* ---- options ----------------------------------------------------------------------------- */

static struct {
	const char *lock, *variant, *log_path, *schedule;
	int pending_bits, threads;
	uint64_t acquisitions, seed, delay_in, delay_out;
	int64_t step_delay, spin_yield;
	double duration, hang_timeout;
} opt = {
	.lock = "qspinlock", .variant = "v6.12", .pending_bits = 8, .threads = 2,
	.acquisitions = 100000, .seed = 1, .delay_in = 10, .delay_out = 10,
	.step_delay = -1, .spin_yield = -1, .hang_timeout = 10.0,
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: " TOOL " [options]\n"
"  --lock NAME          qspinlock (default), ticket, pthread-spin, pthread-mutex\n"
"  --variant NAME       qspinlock variant (default v6.12); --list shows them all\n"
"  --pending-bits 8|1   qspinlock word layout: CONFIG_NR_CPUS < 16K (8) or >= 16K (1); default 8\n"
"  --threads N          CPUs, one thread each (default 2; 1.." "64)\n"
"  --acquisitions M     lock/unlock pairs per CPU (default 100000)\n"
"  --duration S         stop after S seconds instead (throughput runs); M stays the cap\n"
"  --seed S             seed of the splitmix64 delays (default 1)\n"
"  --delay-in N         at most N cpu_relax() inside the critical section (default 10)\n"
"  --delay-out N        at most N cpu_relax() between acquisitions (default 10)\n"
"  --step-delay N       before 1 in 8 lock steps, at most N cpu_relax() (default 0; torture build)\n"
"  --spin-yield N       waiters yield every N polls (0: never; default 256 when there are more\n"
"                       threads than processors, else 0; torture build)\n"
"  --log FILE           write the observation log for 'kstep check' (torture build): the steps\n"
"                       run one at a time in an order drawn from --seed, so the log repeats\n"
"  --schedule TEXT      with --log: take the steps in this order instead, a CPU per step as\n"
"                       kstep writes a run's schedule ('C0 C1*4 C2', e.g. kstep run --timed)\n"
"  --hang-timeout S     report a hang after S seconds without an acquisition (default 10)\n"
"  --list               list the locks and variants\n"
"exit status: 0 clean, 1 violation (or a --schedule the port cannot follow), 2 bad input, 3 hang,\n"
"4 inconclusive\n");
}

static void __attribute__((__noreturn__, __format__(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	fputs(TOOL ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see --help)\n", stderr);
	exit(EXIT_USAGE);
}

/*
 * Numbers are decimal, as everywhere in kstep: no sign, no blanks, no 0x or leading-zero octal
 * (strtoull's base 0 read "010" as 8), so "010" is ten.
 */
static uint64_t parse_uint(const char *name, const char *s, uint64_t lo, uint64_t hi)
{
	uint64_t v = 0;
	const char *p = s;

	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (*p - '0')) / 10)
			break;
		v = v * 10 + (*p - '0');
	}
	if (p == s || *p || v < lo || v > hi)
		bad("%s: '%s' is not a decimal integer in %" PRIu64 "..%" PRIu64, name, s, lo, hi);
	return v;
}

/* Seconds: decimal digits with an optional fraction ("2", "0.5"); strtod alone took "0x1p3" and "inf". */
static double parse_seconds(const char *name, const char *s, double lo, double hi)
{
	size_t whole = strspn(s, "0123456789");
	size_t frac = s[whole] == '.' ? strspn(s + whole + 1, "0123456789") : 0;
	size_t len = whole + (s[whole] == '.' ? 1 + frac : 0);
	double v = 0;

	if (whole + frac && !s[len])
		v = strtod(s, NULL);
	if (!(whole + frac) || s[len] || !(v >= lo && v <= hi))
		bad("%s: '%s' is not a decimal number of seconds in %g..%g", name, s, lo, hi);
	return v;
}

static void list_locks(void)
{
	for (size_t i = 0; i < NR_LOCKS; i++)
		printf("%-14s %-18s %s\n", locks[i].lock, locks[i].variant, locks[i].doc);
}

static void parse_options(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			exit(EXIT_CLEAN);
		}
		if (!strcmp(a, "--list")) {
			list_locks();
			exit(EXIT_CLEAN);
		}
		if (strncmp(a, "--", 2))
			bad("unexpected argument '%s'", a);
		if (!v)
			bad("%s needs a value", a);
		i++;
		if (!strcmp(a, "--lock"))
			opt.lock = v;
		else if (!strcmp(a, "--variant"))
			opt.variant = v;
		else if (!strcmp(a, "--pending-bits"))
			opt.pending_bits = parse_uint(a, v, 1, 8);
		else if (!strcmp(a, "--threads"))
			opt.threads = parse_uint(a, v, 1, LAB_MAX_CPUS);
		else if (!strcmp(a, "--acquisitions"))
			opt.acquisitions = parse_uint(a, v, 1, UINT64_MAX / LAB_MAX_CPUS);
		else if (!strcmp(a, "--duration"))
			opt.duration = parse_seconds(a, v, 0.001, 3600);
		else if (!strcmp(a, "--seed"))
			opt.seed = parse_uint(a, v, 0, UINT64_MAX);
		else if (!strcmp(a, "--delay-in"))
			opt.delay_in = parse_uint(a, v, 0, 1000000);
		else if (!strcmp(a, "--delay-out"))
			opt.delay_out = parse_uint(a, v, 0, 1000000);
		else if (!strcmp(a, "--step-delay"))
			opt.step_delay = parse_uint(a, v, 0, 1000000);
		else if (!strcmp(a, "--spin-yield"))
			opt.spin_yield = parse_uint(a, v, 0, 1U << 30);
		else if (!strcmp(a, "--log"))
			opt.log_path = v;
		else if (!strcmp(a, "--schedule"))
			opt.schedule = v;
		else if (!strcmp(a, "--hang-timeout"))
			opt.hang_timeout = parse_seconds(a, v, 0.1, 3600);
		else
			bad("unknown option '%s'", a);
	}
	if (opt.pending_bits != 8 && opt.pending_bits != 1)
		bad("--pending-bits: %d is neither 8 nor 1", opt.pending_bits);
#if LAB_HOOKS
	if (opt.threads < 2)
		bad("--threads: a torture run needs at least 2 CPUs (qspinlock-bench runs 1)");
#else
	if (opt.log_path || opt.schedule || opt.step_delay > 0 || opt.spin_yield > 0)
		bad("--log, --schedule, --step-delay and --spin-yield need the step hooks: use qspinlock-torture");
#endif
}

static const struct lab_lock *find_lock(void)
{
	int known_lock = 0;

	for (size_t i = 0; i < NR_LOCKS; i++) {
		if (strcmp(locks[i].lock, opt.lock))
			continue;
		known_lock = 1;
		if (strcmp(opt.lock, "qspinlock") && !strcmp(opt.variant, "v6.12"))
			return &locks[i];	/* the default variant name fits every lock */
		if (!strcmp(locks[i].variant, opt.variant))
			return &locks[i];
	}
	if (!known_lock)
		bad("--lock: unknown lock '%s' (choose from qspinlock, ticket, pthread-spin, pthread-mutex)",
		    opt.lock);
	bad("--variant: '%s' is not a variant of %s (--list shows them)", opt.variant, opt.lock);
}

/* ---- the run ----------------------------------------------------------------------------- */

struct cpu_ctx {
	int cpu;
	uint64_t done;			/* acquisitions completed (read by the watchdog) */
	double finished;		/* when it completed its last acquisition (now()) */
	struct splitmix64 prng;		/* the critical-section and between-acquisition delays */
	pthread_t thread;
} __attribute__((__aligned__(64)));

static struct cpu_ctx cpus[LAB_MAX_CPUS];
static union lab_lock_storage lock_storage;
static void *const the_lock = &lock_storage;
static const struct lab_lock *lk;
static const struct lab_lock_ops *ops;

/* What the critical section protects, on a line of its own. */
static struct {
	uint64_t counter;
	int owner;
} __attribute__((__aligned__(64))) shared = { 0, -1 };

static pthread_barrier_t start_line;
static int stop;			/* --duration ran out */
static int finished_cpus;

static void __attribute__((__noreturn__)) violation(int cpu, uint64_t n, const char *what, int other);

/*
 * Who holds the lock, checked as it is taken and given up.  An unlogged run checks it around the
 * critical section itself.  In a logged run only the lock's steps are serialised (other code runs
 * at any time), so the step hooks take it at the critical_section step and give it up at the
 * unlock step, both under the turn: an overlap in the log's order is caught even when the two
 * critical sections happened not to overlap in time.
 */
static void owner_enter(int cpu, uint64_t n)
{
	int owner = READ_ONCE(shared.owner);

	if (owner != -1)
		violation(cpu, n, "entered the critical section held by", owner);
	WRITE_ONCE(shared.owner, cpu);
}

static void owner_leave(int cpu, uint64_t n)
{
	int owner = READ_ONCE(shared.owner);

	if (owner != cpu)
		violation(cpu, n, "found in its critical section", owner);
	WRITE_ONCE(shared.owner, -1);
}

static uint32_t lock_word(void)
{
	return __atomic_load_n((uint32_t *)the_lock, __ATOMIC_RELAXED);
}

static void relax_n(uint64_t n)
{
	while (n--)
		cpu_relax();
}

static void delay(struct splitmix64 *r, uint64_t max)
{
	if (max)
		relax_n(splitmix64_below(r, max + 1));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

#if LAB_HOOKS
/* ---- step hooks: counts, last steps, step delays, the observation log ------------------- */

const char *const lab_label_names[] = {
#define LAB_LABEL_NAME(name) #name,
	LAB_LABELS(LAB_LABEL_NAME)
#undef LAB_LABEL_NAME
};

static struct lab_cpu lab_cpus[LAB_MAX_CPUS];
__thread struct lab_cpu *lab_this_cpu;
int lab_hook_mode;

static FILE *log_file;
static uint64_t log_ticket;

static uint32_t word_of(const void *lock)
{
	return __atomic_load_n((const uint32_t *)lock, __ATOMIC_RELAXED);
}

/*
 * The step scheduler of a logged run.  Exactly one CPU has the turn; only it may run a step
 * (its memory action and its log line), and when the step ends -- or a waiting step polls and
 * finds its condition false -- the turn goes to a CPU drawn by splitmix64 from those not yet
 * finished.  Every access of the lock's shared state is inside a step, so the order of steps,
 * and with it the whole log, is a function of the seed: a logged run is a seeded random
 * schedule that can be run again, like the simulator's.
 */
static struct {
	int turn;			/* the CPU that may take the next step; -1: all finished */
	int nr_active;
	int active[LAB_MAX_CPUS];	/* CPUs not finished, in CPU order */
	int sleepers;			/* CPUs asleep in log_lock(), waiting for the turn */
	struct splitmix64 prng;
} sched;

/*
 * --schedule: who takes each logged step, written as kstep writes a run's schedule ("C0 C1*4 C2"):
 * the turn goes down this list instead of to a CPU drawn from the seed, so the port takes the steps
 * of a simulator run (its timed scheduler's, say) in the same order.  The model could take each
 * listed step at that point; a waiting step whose condition the port finds false there, a step with
 * no entry left, or an entry for a CPU that has done all its acquisitions (entries left over at the
 * end are one) is where the port and the model disagree, and the run stops there (exit status 1).
 */
#define LAB_MAX_SCHEDULE (1L << 24)
static struct {
	int *cpu;			/* the CPU of each step; NULL: draw from the seed */
	long len, pos;			/* entries, and how many the turn has taken */
	int left[LAB_MAX_CPUS];		/* the CPU has done all its acquisitions */
} order;

static void __attribute__((__noreturn__)) order_broken(const char *fmt, ...);

/* "C0 C1*4 C2": a CPU of --threads per step (kstep's ACTOR:label entries name steps it cannot). */
static void parse_schedule(const char *text)
{
	char *copy = strdup(text), *save, *word;

	LAB_CHECK(copy != NULL);
	for (word = strtok_r(copy, " \t\n", &save); word; word = strtok_r(NULL, " \t\n", &save)) {
		char *star = strchr(word, '*');
		uint64_t count = star ? (*star = 0, parse_uint("--schedule: a repeat", star + 1, 1, LAB_MAX_SCHEDULE)) : 1;

		if (word[0] != 'C' || !word[1] || strchr(word, ':'))
			bad("--schedule: '%s' is not a CPU (C0 .. C%d, with *N to repeat)", word, opt.threads - 1);
		int cpu = (int)parse_uint("--schedule: a CPU", word + 1, 0, opt.threads - 1);

		if (order.len + (long)count > LAB_MAX_SCHEDULE)
			bad("--schedule: more than %ld steps", LAB_MAX_SCHEDULE);
		order.cpu = realloc(order.cpu, (order.len + count) * sizeof(int));
		LAB_CHECK(order.cpu != NULL);
		while (count--)
			order.cpu[order.len++] = cpu;
	}
	free(copy);
	if (!order.len)
		bad("--schedule: no step in '%s'", text);
}

/*
 * A CPU waiting for its turn sleeps on sched.turn (a futex) after a short spin: with more CPU
 * threads than processors, or on a busy machine, spinners would take the processor from the
 * one CPU that may step.  Sleeping changes no step's order: that is the seed's alone.
 */
/* The futex operations of the kernel's uapi <linux/futex.h>, which the lab's <linux/types.h> keeps out. */
#define LAB_FUTEX_WAIT_PRIVATE	128
#define LAB_FUTEX_WAKE_PRIVATE	129

static void sched_pass_turn(void)
{
	int next;

	if (order.cpu)
		next = order.pos < order.len ? order.cpu[order.pos++] : -1;
	else
		next = sched.nr_active ? sched.active[splitmix64_below(&sched.prng, sched.nr_active)] : -1;
	__atomic_store_n(&sched.turn, next, __ATOMIC_SEQ_CST);
	/* Turn, then left; sched_leave() stores left, then reads the turn: one of the two sees the other. */
	if (order.cpu && next >= 0 && __atomic_load_n(&order.left[next], __ATOMIC_SEQ_CST))
		order_broken("step %" PRIu64 " is C%d's, which has done all its acquisitions", log_ticket + 1, next);
	if (__atomic_load_n(&sched.sleepers, __ATOMIC_SEQ_CST))
		syscall(SYS_futex, &sched.turn, LAB_FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

static void log_lock(void)
{
	int turn;

	for (unsigned int spins = 1; (turn = __atomic_load_n(&sched.turn, __ATOMIC_ACQUIRE)) != lab_cpu_id; spins++) {
		if (order.cpu && turn < 0)
			order_broken("the schedule has no step left for C%d, which has one to take", lab_cpu_id);
		if (spins < 64)
			continue;
		__atomic_add_fetch(&sched.sleepers, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&sched.turn, __ATOMIC_SEQ_CST) == turn)
			syscall(SYS_futex, &sched.turn, LAB_FUTEX_WAIT_PRIVATE, turn, NULL, NULL, 0);
		__atomic_sub_fetch(&sched.sleepers, 1, __ATOMIC_SEQ_CST);
	}
}

static void log_unlock(void)
{
	sched_pass_turn();
}

static void sched_start(uint64_t seed)
{
	splitmix64_seed(&sched.prng, seed);
	sched.nr_active = opt.threads;
	for (int i = 0; i < opt.threads; i++)
		sched.active[i] = i;
	sched_pass_turn();
}

/* A CPU that has done all its acquisitions leaves the schedule (in its turn). */
static void sched_leave(void)
{
	int i = 0;

	if (!(lab_hook_mode & LAB_MODE_LOG))
		return;
	if (order.cpu) {	/* the list, not the active set, passes the turn: leave without it */
		__atomic_store_n(&order.left[lab_cpu_id], 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&sched.turn, __ATOMIC_SEQ_CST) == lab_cpu_id)
			order_broken("step %" PRIu64 " is C%d's, which has done all its acquisitions",
				     log_ticket + 1, lab_cpu_id);
		return;
	}
	log_lock();
	while (sched.active[i] != lab_cpu_id)
		i++;
	memmove(&sched.active[i], &sched.active[i + 1], (--sched.nr_active - i) * sizeof(int));
	sched_pass_turn();
}

void lab_step_begin_slow(enum lab_label label, const void *lock)
{
	struct lab_cpu *c = lab_this_cpu;

	if (lab_hook_mode & LAB_MODE_STEP_DELAY) {
		struct splitmix64 r = { c->prng };
		uint64_t x = splitmix64_next(&r);

		c->prng = r.state;
		if ((x & 7) == 0)
			relax_n((x >> 3) % (opt.step_delay + 1));
	}
	if (lab_hook_mode & LAB_MODE_LOG) {
		log_lock();
		c->in_step = 1;
		c->step_lock = lock;
		c->before = word_of(lock);
	}
	(void)label;
}

/* The <cpu>/<idx> an MCS next pointer names; nothing else may be in node->next. */
static void print_node(const void *node)
{
	for (int k = 0; k < opt.threads; k++)
		for (int i = 0; i < LAB_MAX_NODES; i++)
			if (ops->node(k, i) == node) {
				fprintf(log_file, "%d/%d", k, i);
				return;
			}
	LAB_CHECK(!"a node->next that names no CPU's qnodes[]");
}

/* One observation-log line (format 2): the step, the word before and after, the MCS fields after. */
static void log_step(enum lab_label label, const void *lock)
{
	struct lab_mcs m = { .count = 0, .idx = -1 };

	if (ops->mcs)
		ops->mcs(lab_cpu_id, &m);
	fprintf(log_file, "%" PRIu64 " %d %s 0x%08x 0x%08x %d ", log_ticket++, lab_cpu_id,
		lab_label_names[label], lab_this_cpu->before, word_of(lock), m.count);
	if (m.idx < 0) {
		fputs("- - -\n", log_file);
		return;
	}
	fprintf(log_file, "%d ", m.idx);
	if (m.next)
		print_node(m.next);
	else
		fputc('-', log_file);
	fprintf(log_file, " %d\n", m.locked);
}

void lab_step_end_slow(enum lab_label label, const void *lock)
{
	struct lab_cpu *c = lab_this_cpu;
	uint64_t n = __atomic_load_n(&cpus[lab_cpu_id].done, __ATOMIC_RELAXED);

	log_step(label, lock);
	if (label == LAB_critical_section)
		owner_enter(lab_cpu_id, n);
	else if (label == LAB_queued_spin_unlock || label == LAB_arch_spin_unlock)
		owner_leave(lab_cpu_id, n);
	c->in_step = 0;
	log_unlock();
}

/*
 * Between two polls of a waiting step.  A logged step lets the others run: its memory action
 * is the poll that finds the condition true, so the word is read again after every poll.
 * With more CPU threads than processors, a waiter yields every --spin-yield polls: the CPU it
 * waits for may be a preempted thread, which the kernel's non-preemptible spinners never wait on.
 */
void lab_spin_hook_slow(void)
{
	struct lab_cpu *c = lab_this_cpu;

	if (!c)
		return;
	if ((lab_hook_mode & LAB_MODE_YIELD) && ++c->polls >= opt.spin_yield) {
		c->polls = 0;
		if (!c->in_step)
			sched_yield();
	}
	if (!c->in_step)
		return;
	if (order.cpu)
		order_broken("step %" PRIu64 " is C%d's %s, whose condition is false here", log_ticket + 1,
			     lab_cpu_id, lab_label_names[c->last]);
	log_unlock();
	sched_yield();
	log_lock();
	c->before = word_of(c->step_lock);
}

/*
 * O_NONBLOCK so that a FIFO nobody reads is an error (ENXIO) instead of an open() that waits
 * forever; once open, the log is written blocking as usual.
 */
static void open_log(void)
{
	int fd = open(opt.log_path, O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC, 0666);

	if (fd >= 0 && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0)
		log_file = fdopen(fd, "w");
	if (!log_file) {
		fprintf(stderr, TOOL ": --log: cannot write '%s': %s\n", opt.log_path,
			errno == ENXIO ? "a FIFO that no process is reading" : strerror(errno));
		exit(EXIT_USAGE);
	}
	setvbuf(log_file, NULL, _IOFBF, 1 << 20);
	/* The ticket lock is the Python qspinlock model's "ticket" variant; its word has no
	 * pending bits, the header field is there because every qspinlock header has it. */
	fprintf(log_file, "# kstep-log 2 qspinlock variant=%s cpus=%d acquisitions=%" PRIu64
		" pending_bits=%d\n", strcmp(lk->lock, "ticket") ? lk->variant : "ticket", opt.threads,
		opt.acquisitions, opt.pending_bits);
	lab_hook_mode |= LAB_MODE_LOG;
}

/* Only a run in which every CPU finished ends its log with the marker: kstep check fails the rest. */
static void end_log(void)
{
	fprintf(log_file, "# kstep-log end steps=%" PRIu64 "\n", log_ticket);
}

/* Flush what was logged before a report ends the program (stdio streams lock themselves). */
static void flush_log(void)
{
	if (log_file)
		fflush(log_file);
}

static uint64_t count_of(enum lab_label label)
{
	uint64_t n = 0;

	for (int i = 0; i < opt.threads; i++)
		n += lab_cpus[i].counts[label];
	return n;
}

static const char *last_step(int cpu)
{
	return lab_label_names[__atomic_load_n(&lab_cpus[cpu].last, __ATOMIC_RELAXED)];
}
#else
static void flush_log(void) { }
static void sched_leave(void) { }
static const char *last_step(int cpu) { (void)cpu; return "(no step hooks in the benchmark build)"; }
#endif /* LAB_HOOKS */

static void print_state(FILE *f)
{
	uint32_t w = lock_word();

	fprintf(f, "  lock word 0x%08x", w);
	if (!strcmp(lk->lock, "qspinlock")) {
		int shift = ops->pending_bits == 8 ? 16 : 9;	/* _Q_TAIL_OFFSET */
		uint32_t tail = w >> shift;

		fprintf(f, ": (tail, pending, locked) = (%s", tail ? "C" : "0");
		if (tail)
			fprintf(f, "%u/idx %u", (tail >> 2) - 1, tail & 3);
		fprintf(f, ", %u, %u)", (w >> 8) & (ops->pending_bits == 8 ? 0xff : 1), w & 0xff);
	} else if (!strcmp(lk->lock, "ticket")) {
		fprintf(f, ": next ticket %u, owner %u", w >> 16, w & 0xffff);
	}
	fputc('\n', f);
	for (int i = 0; i < opt.threads; i++)
		fprintf(f, "  C%d: %" PRIu64 " of %" PRIu64 " acquisitions done, last step begun: %s\n",
			i, __atomic_load_n(&cpus[i].done, __ATOMIC_RELAXED), opt.acquisitions,
			last_step(i));
}

static void summary(const char *verdict, double seconds, const char *why);

static void __attribute__((__noreturn__)) violation(int cpu, uint64_t n, const char *what, int other)
{
	static int reported;

	if (__atomic_exchange_n(&reported, 1, __ATOMIC_SEQ_CST))
		for (;;)
			pause();	/* another CPU is reporting */
	flush_log();
	fflush(stdout);
	fprintf(stderr, TOOL ": violation on %s: C%d, acquisition %" PRIu64 ", %s C%d\n",
		LAB_ARCH, cpu, n + 1, what, other);
	print_state(stderr);
	summary("violation", 0, what);
	exit(EXIT_VIOLATION);
}

#if LAB_HOOKS
/* --schedule could not be followed: what the log holds so far is the port's side of the disagreement. */
static void __attribute__((__noreturn__)) order_broken(const char *fmt, ...)
{
	static int reported;
	char why[200];
	va_list ap;

	if (__atomic_exchange_n(&reported, 1, __ATOMIC_SEQ_CST))
		for (;;)
			pause();	/* another CPU is reporting */
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	flush_log();
	fflush(stdout);
	fprintf(stderr, TOOL ": --schedule: %s: the port and the model disagree\n", why);
	print_state(stderr);
	summary("disagreement", 0, why);
	exit(EXIT_VIOLATION);
}
#endif

static void critical_section(struct cpu_ctx *c, uint64_t n)
{
	uint64_t v;
	int logged = 0;		/* the step hooks keep the owner (see owner_enter()) */

#if LAB_HOOKS
	if (lk->steps)
		STEP(the_lock, critical_section) { }
	logged = lab_hook_mode & LAB_MODE_LOG;
#endif
	if (!logged)
		owner_enter(c->cpu, n);
	v = READ_ONCE(shared.counter);
	delay(&c->prng, opt.delay_in);
	WRITE_ONCE(shared.counter, v + 1);
	if (!logged)
		owner_leave(c->cpu, n);
}

static void *cpu_main(void *arg)
{
	struct cpu_ctx *c = arg;
	uint64_t n;

	lab_percpu_register(c->cpu);
#if LAB_HOOKS
	lab_this_cpu = &lab_cpus[c->cpu];
	lab_this_cpu->prng = splitmix64_next(&c->prng);
#endif
	pthread_barrier_wait(&start_line);
	for (n = 0; n < opt.acquisitions && !READ_ONCE(stop); n++) {
		delay(&c->prng, opt.delay_out);
		ops->lock(the_lock);
		critical_section(c, n);
		ops->unlock(the_lock);
		__atomic_store_n(&c->done, n + 1, __ATOMIC_RELAXED);
	}
	c->finished = now();
	sched_leave();
	__atomic_fetch_add(&finished_cpus, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static uint64_t total_done(void)
{
	uint64_t n = 0;

	for (int i = 0; i < opt.threads; i++)
		n += __atomic_load_n(&cpus[i].done, __ATOMIC_RELAXED);
	return n;
}

static void summary(const char *verdict, double seconds, const char *why)
{
	uint64_t total = total_done();

	printf("{\"tool\": \"" TOOL "\", \"arch\": \"%s\", \"lock\": \"%s\", \"variant\": \"%s\", "
	       "\"pending_bits\": %d, \"threads\": %d, \"acquisitions\": %" PRIu64 ", \"seed\": %" PRIu64
	       ", \"delay_in\": %" PRIu64 ", \"delay_out\": %" PRIu64 ", \"step_delay\": %" PRId64
	       ", \"total\": %" PRIu64 ", \"seconds\": %.6f, \"per_s\": %.0f",
	       LAB_ARCH, lk->lock, lk->variant, ops->pending_bits, opt.threads, opt.acquisitions,
	       opt.seed, opt.delay_in, opt.delay_out, opt.step_delay > 0 ? opt.step_delay : 0,
	       total, seconds, seconds > 0 ? total / seconds : 0.0);
	printf(", \"per_cpu\": [");
	for (int i = 0; i < opt.threads; i++)
		printf("%s%" PRIu64, i ? ", " : "", __atomic_load_n(&cpus[i].done, __ATOMIC_RELAXED));
	printf("]");
#if LAB_HOOKS
	if (lk->steps) {
		const char *sep = "";

		printf(", \"steps\": {");
		for (int l = 0; l < LAB_NR_LABELS; l++) {
			uint64_t n = count_of(l);

			if (n) {
				printf("%s\"%s\": %" PRIu64, sep, lab_label_names[l], n);
				sep = ", ";
			}
		}
		printf("}");
	}
#endif
	printf(", \"verdict\": \"%s\", \"why\": \"%s\"}\n", verdict, why);
	fflush(stdout);
}

#if LAB_HOOKS
/*
 * A run proves something only if it went through the paths that race: the pending path, the
 * MCS queue and the queue head's hand-over (set_locked in 6.12; the contended cmpxchg claim,
 * followed by an MCS hand-off, before patch 07/11).  For the ticket lock: waiting for a turn.
 */
static const char *missing_path(void)
{
	if (!strcmp(lk->lock, "ticket"))
		return count_of(LAB_wait_ticket) ? NULL : "wait_ticket";
	if (strcmp(lk->lock, "qspinlock"))
		return NULL;
	if (!count_of(LAB_clear_pending_set_locked))
		return "clear_pending_set_locked (the pending path)";
	if (!count_of(LAB_node_count_inc))
		return "node_count_inc (the queue)";
	if (!strcmp(lk->variant, "before-set-locked"))
		return count_of(LAB_mcs_handoff) ? NULL : "mcs_handoff (a contended claim)";
	return count_of(LAB_set_locked) ? NULL : "set_locked";
}
#endif

int main(int argc, char **argv)
{
	struct splitmix64 seeder;
	double start, end, last_progress;
	uint64_t last_total = 0;

	parse_options(argc, argv);
	lk = find_lock();
	ops = opt.pending_bits == 1 ? lk->pb1 : lk->pb8;
	if (!ops)
		bad("--pending-bits 1 is a qspinlock word layout; %s has none", lk->lock);
	if (opt.log_path && !lk->steps)
		bad("--log: %s has no labelled steps to log", lk->lock);
	if (opt.step_delay > 0 && !lk->steps)
		bad("--step-delay: %s has no labelled steps to delay", lk->lock);
#if LAB_HOOKS
	if (opt.schedule && !opt.log_path)
		bad("--schedule orders a logged run's steps: give --log too");
	if (opt.schedule)
		parse_schedule(opt.schedule);
	if (opt.log_path)
		open_log();
	if (opt.step_delay < 0)
		opt.step_delay = 0;
	if (opt.step_delay)
		lab_hook_mode |= LAB_MODE_STEP_DELAY;
	if (opt.spin_yield < 0)
		opt.spin_yield = opt.threads > sysconf(_SC_NPROCESSORS_ONLN) ? 256 : 0;
	if (opt.spin_yield > 0)
		lab_hook_mode |= LAB_MODE_YIELD;
#endif
	ops->init(the_lock);

	splitmix64_seed(&seeder, opt.seed);
	LAB_CHECK(pthread_barrier_init(&start_line, NULL, opt.threads + 1) == 0);
	for (int i = 0; i < opt.threads; i++) {
		cpus[i].cpu = i;
		splitmix64_seed(&cpus[i].prng, splitmix64_next(&seeder));
		LAB_CHECK(pthread_create(&cpus[i].thread, NULL, cpu_main, &cpus[i]) == 0);
	}
#if LAB_HOOKS
	if (lab_hook_mode & LAB_MODE_LOG)
		sched_start(splitmix64_next(&seeder));
#endif
	/*
	 * The run's time is from here to the last CPU's last acquisition, not to when the watchdog
	 * (this thread, polling every 20 ms) sees it; read after the barrier, a loaded host could run
	 * every CPU to its end before this thread read the clock (runs of 750,000 acquisitions timed
	 * 0.000 s on a 2-CPU host at load 20).
	 */
	start = last_progress = now();
	pthread_barrier_wait(&start_line);

	/* The watchdog: the main thread. */
	while (__atomic_load_n(&finished_cpus, __ATOMIC_SEQ_CST) < opt.threads) {
		struct timespec tick = { 0, 20 * 1000 * 1000 };
		uint64_t total;
		double t;

		nanosleep(&tick, NULL);
		t = now();
		total = total_done();
		if (total != last_total) {
			last_total = total;
			last_progress = t;
		} else if (t - last_progress > opt.hang_timeout) {
			flush_log();
			fflush(stdout);
			fprintf(stderr, TOOL ": hang on %s: no CPU completed an acquisition for %.1f s"
				" (a deadlock or a lost wake-up)\n", LAB_ARCH, opt.hang_timeout);
			print_state(stderr);
			summary("hang", t - start, "no acquisition within --hang-timeout");
			exit(EXIT_HANG);
		}
		if (opt.duration && t - start >= opt.duration)
			WRITE_ONCE(stop, 1);
	}
	end = start;
	for (int i = 0; i < opt.threads; i++) {
		LAB_CHECK(pthread_join(cpus[i].thread, NULL) == 0);
		if (cpus[i].finished > end)
			end = cpus[i].finished;
	}

#if LAB_HOOKS
	if (log_file)
		end_log();
	if (log_file && fclose(log_file) != 0) {
		fprintf(stderr, TOOL ": --log: writing '%s' failed: %s\n", opt.log_path, strerror(errno));
		return EXIT_USAGE;
	}
#endif
	if (shared.counter != total_done()) {
		char why[160];

		snprintf(why, sizeof(why), "counter is %" PRIu64 " after %" PRIu64
			 " acquisitions: updates lost", shared.counter, total_done());
		fprintf(stderr, TOOL ": violation on %s: %s\n", LAB_ARCH, why);
		summary("violation", end - start, why);
		return EXIT_VIOLATION;
	}
#if LAB_HOOKS
	if (missing_path()) {
		char why[160];

		snprintf(why, sizeof(why), "%s never ran: the run proves nothing", missing_path());
		fprintf(stderr, TOOL ": inconclusive on %s: %s (more CPUs, acquisitions or"
			" --step-delay may help; two x86_64 CPUs rarely queue, as its pending"
			" hand-over wait polls 512 times)\n", LAB_ARCH, why);
		summary("inconclusive", end - start, why);
		return EXIT_INCONCLUSIVE;
	}
#endif
	summary("clean", end - start, "");
	return EXIT_CLEAN;
}

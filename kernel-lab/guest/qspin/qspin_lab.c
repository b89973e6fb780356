// SPDX-License-Identifier: GPL-2.0
/*
 * qspin_lab: watch one spinlock's word while kthreads fight over it.
 *
 * nthreads kthreads, bound to CPUs 0..nthreads-1, take and release one spinlock_t in a loop
 * (holding it for `hold` cpu_relax() rounds); a sampler bound to the next CPU reads the lock
 * word and counts each distinct value, at least `samples` times, until the lockers have made
 * `min_acquisitions` or `acquisitions_ms` have passed (an emulated, oversubscribed vCPU may run
 * little; x86's TCG-emulated PAUSE keeps its lockers to a few thousand a minute), and until the
 * kinds of word the lab's checks ask for have been seen, for at most `max_ms`.  Loading the
 * module runs the whole experiment and prints one line per word seen, "qspin_lab: word=0x...
 * count=N", then
 * "qspin_lab: samples=N acquisitions=M distinct=D ..."; /init reads them from the log.
 * The word is the arch's own: asm-generic's (tail, pending, locked) on x86 and arm64,
 * powerpc's (tail, must-queue, sleepy, owner, locked) on ppc64.
 */
#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/spinlock.h>

#define MAX_WORDS 256
#define MAX_THREADS 15

static int nthreads = 2;
module_param(nthreads, int, 0444);
static unsigned long samples = 1000000;
module_param(samples, ulong, 0444);
static int hold = 50;
module_param(hold, int, 0444);
static long min_acquisitions = 100000;
module_param(min_acquisitions, long, 0444);
static int acquisitions_ms = 5000;
module_param(acquisitions_ms, int, 0444);
static int max_ms = 60000;	/* a guard only: the sampler stops once it has seen each kind */
module_param(max_ms, int, 0444);

static DEFINE_SPINLOCK(lab_lock);
static atomic_t running = ATOMIC_INIT(1);
static atomic_long_t acquisitions = ATOMIC_LONG_INIT(0);
static DECLARE_COMPLETION(sampled);
static u32 words[MAX_WORDS];
static unsigned long counts[MAX_WORDS];
static int distinct;
static unsigned long overflow;

static u32 lock_word(void)
{
#ifdef CONFIG_PPC
	return READ_ONCE(lab_lock.rlock.raw_lock.val);
#else
	return atomic_read(&lab_lock.rlock.raw_lock.val);
#endif
}

static int hammer(void *unused)
{
	while (atomic_read(&running)) {
		spin_lock(&lab_lock);
		for (int i = 0; i < hold; i++)
			cpu_relax();
		spin_unlock(&lab_lock);
		atomic_long_inc(&acquisitions);
		cond_resched();	/* lets the watchdog's stopper run: a long wait is not a soft lockup */
	}
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

static void count(u32 word)
{
	for (int i = 0; i < distinct; i++)
		if (words[i] == word) {
			counts[i]++;
			return;
		}
	if (distinct == MAX_WORDS) {
		overflow++;
		return;
	}
	words[distinct] = word;
	counts[distinct++] = 1;
}

/*
 * The kinds of word the lab's checks ask for: one with pending set, one with a tail, one with a
 * tail and the locked byte; on powerpc, whose word has no pending bit, one with a tail (someone
 * queued).  On an emulated machine whose host is busy the vCPUs may seldom run at once, so the
 * sampler waits for these states (up to max_ms) rather than for a number of samples.
 */
static bool seen_each_kind(void)
{
#ifdef CONFIG_PPC
	for (int i = 0; i < distinct; i++)
		if (words[i] & _Q_TAIL_CPU_MASK)
			return true;
	return false;
#else
	bool pending = false, tail = false, tail_locked = false;

	for (int i = 0; i < distinct; i++) {
		pending |= words[i] & _Q_PENDING_MASK;
		tail |= words[i] & _Q_TAIL_MASK;
		tail_locked |= (words[i] & _Q_TAIL_MASK) && (words[i] & _Q_LOCKED_MASK);
	}
	return pending && tail && tail_locked;
#endif
}

static int sampler(void *unused)
{
	unsigned long deadline = jiffies + msecs_to_jiffies(max_ms);
	unsigned long enough_acquired = jiffies + msecs_to_jiffies(acquisitions_ms);
	unsigned long n = 0;

	while ((n < samples || (atomic_long_read(&acquisitions) < min_acquisitions &&
				time_before(jiffies, enough_acquired)) || !seen_each_kind()) &&
	       time_before(jiffies, deadline)) {
		count(lock_word());
		if (++n % 1024 == 0)
			cond_resched();
	}
	samples = n;
	atomic_set(&running, 0);
	complete(&sampled);
	while (!kthread_should_stop())
		schedule_timeout_interruptible(1);
	return 0;
}

static int __init qspin_lab_init(void)
{
	struct task_struct *threads[MAX_THREADS + 1];
	int n = 0;

	if (nthreads < 1 || nthreads > MAX_THREADS || nthreads + 1 > num_online_cpus()) {
		pr_err("qspin_lab: nthreads=%d needs %d online CPUs, have %u\n", nthreads,
		       nthreads + 1, num_online_cpus());
		return -EINVAL;
	}
	for (; n < nthreads; n++) {
		threads[n] = kthread_create(hammer, NULL, "qspin_lab/%d", n);
		if (IS_ERR(threads[n]))
			goto fail;
		kthread_bind(threads[n], n);
	}
	threads[n] = kthread_create(sampler, NULL, "qspin_lab_sampler");
	if (IS_ERR(threads[n]))
		goto fail;
	kthread_bind(threads[n], n);
	for (int i = 0; i <= n; i++)
		wake_up_process(threads[i]);
	wait_for_completion(&sampled);
	for (int i = 0; i <= n; i++)
		kthread_stop(threads[i]);
	for (int i = 0; i < distinct; i++)
		pr_info("qspin_lab: word=0x%x count=%lu\n", words[i], counts[i]);
	pr_info("qspin_lab: samples=%lu acquisitions=%ld distinct=%d overflow=%lu nthreads=%d\n",
		samples, atomic_long_read(&acquisitions), distinct, overflow, nthreads);
	return 0;
fail:
	atomic_set(&running, 0);
	while (n-- > 0)
		kthread_stop(threads[n]);
	return -ENOMEM;
}

static void __exit qspin_lab_exit(void)
{
}

module_init(qspin_lab_init);
module_exit(qspin_lab_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kstep lab: sample a contended spinlock's word");

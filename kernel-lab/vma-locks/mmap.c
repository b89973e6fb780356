// SPDX-License-Identifier: GPL-2.0
/*
 * The writer side: MAP_FIXED mmap (mm/mmap.c:__mmap_region), munmap (mm/vma.c:do_vmi_munmap with
 * vms_gather_munmap_vmas and __split_vma), mprotect (mm/mprotect.c:do_mprotect_pkey, mprotect_fixup,
 * mm/vma.c:vma_modify and vma_merge_existing_range) and fork (kernel/fork.c:dup_mmap), with the
 * write-side lock calls of include/linux/mm.h and mmap_lock.h.  Every decision is taken with
 * mmap_lock held for write, as in the model; what each writer write-locks and frees follows from
 * 6.12's merge rules on vm_flags (the protection, VM_ACCOUNT) and anon_vma.
 */
#include <stdlib.h>
#include <string.h>

#include "vma_locks.h"

#define MAX_GONE 64

static struct vma_tree *tree_alloc(int n)
{
	struct vma_tree *t = malloc(sizeof(*t) + sizeof(int) * (n ? n : 1));

	if (!t)
		abort();
	t->n = 0;
	return t;
}

/*
 * Publish a new tree (rcu_assign_pointer).  The old one stays allocated: mas_walk runs under the
 * step mutex here, and trees are a few dozen bytes each, so the lab does not recycle them.
 */
static void tree_publish(struct vma_tree *t)
{
	__atomic_store_n(&mm.tree, t, __ATOMIC_RELEASE);
}

static bool inside(int v, unsigned long start, unsigned long end)
{
	return start <= mm.vmas[v]->vm_start && mm.vmas[v]->vm_end <= end;
}

/* vma_iter_store: map [vm_start, vm_end) to v, overwriting what the tree mapped there. */
static void tree_store(int v)
{
	struct vm_area_struct *vma = mm.vmas[v];
	struct vma_tree *old = mm.tree, *t = tree_alloc(old->n + 1);
	bool placed = false;
	int k;

	for (k = 0; k < old->n; k++) {
		int x = old->ids[k];

		if (x == v || inside(x, vma->vm_start, vma->vm_end))
			continue;
		if (!placed && mm.vmas[x]->vm_start > vma->vm_start) {
			t->ids[t->n++] = v;
			placed = true;
		}
		t->ids[t->n++] = x;
	}
	if (!placed)
		t->ids[t->n++] = v;
	tree_publish(t);
}

static int overlapping(unsigned long start, unsigned long end, int *out)
{
	int k, n = 0;

	for (k = 0; k < mm.tree->n; k++) {
		struct vm_area_struct *v = mm.vmas[mm.tree->ids[k]];

		if (v->vm_start < end && start < v->vm_end)
			out[n++] = mm.tree->ids[k];
	}
	return n;
}

static int tree_pos(int v)
{
	int k;

	for (k = 0; k < mm.tree->n; k++)
		if (mm.tree->ids[k] == v)
			return k;
	return -1;
}

int tree_prev(int v)
{
	int k = tree_pos(v);

	return k > 0 ? mm.tree->ids[k - 1] : NO_VMA;
}

int tree_next(int v)
{
	int k = tree_pos(v);

	return k >= 0 && k + 1 < mm.tree->n ? mm.tree->ids[k + 1] : NO_VMA;
}

static struct vm_area_struct *new_vma(void)
{
	struct vm_area_struct *v = calloc(1, sizeof(*v));

	if (!v || mm.nr_vmas == MAX_VMAS)
		abort();
	v->magic = VMA_MAGIC;
	v->id = mm.nr_vmas;
	v->anon_vma = NO_ANON_VMA;
	mm.vmas[mm.nr_vmas++] = v;
	return v;
}

/* vma_lock_alloc: UINT_MAX since 6.12.88 (the seqcount backport); 6.12.0's int vm_lock_seq = -1 */
int64_t vm_lock_seq_init(void)
{
	if (variant == VARIANT_NO_PER_VMA_LOCK)
		return VM_LOCK_SEQ_NONE;
	return variant == VARIANT_V6_12_0 ? VM_LOCK_SEQ_6_12_0 : UINT_MAX_SEQ;
}

void mm_init_vma(unsigned long start, unsigned long end, bool writable, bool anon)
{
	struct vm_area_struct *v = new_vma();

	v->vm_start = start;
	v->vm_end = end;
	v->writable = writable;
	v->account = writable;			/* accountable_mapping */
	v->anon_vma = anon ? v->id : NO_ANON_VMA;
	v->vm_lock_seq = vm_lock_seq_init();
	if (!mm.tree)
		mm.tree = tree_alloc(0);
	tree_store(v->id);
}

/* --- include/linux/mm.h and mmap_lock.h: the write side of the locks ------------------------- */

static void vma_start_write(int v)
{
	if (variant == VARIANT_NO_PER_VMA_LOCK)
		return;
	if (mm.vmas[v]->vm_lock_seq == mm.mm_lock_seq)	/* __is_vma_write_locked */
		return;
	if (variant != VARIANT_WRITE_LOCK_WITHOUT_RWSEM)	/* BUG when skipped: never waits for readers */
		down_write(v);
	step_begin(L_vma_write_seq);
	vma_get(v, L_vma_write_seq)->vm_lock_seq = mm.mm_lock_seq;
	step_end(L_vma_write_seq, v);
	if (variant != VARIANT_WRITE_LOCK_WITHOUT_RWSEM)
		up_write(v);
}

static void vma_mark_detached(int v)
{
	if (variant == VARIANT_NO_PER_VMA_LOCK)
		return;
	step_begin(L_vma_mark_detached);
	vma_get(v, L_vma_mark_detached)->detached = true;
	step_end(L_vma_mark_detached, v);
}

static void vm_area_free(int v)
{
	step_begin(L_vm_area_free);
	if (variant == VARIANT_NO_PER_VMA_LOCK) {	/* nothing can still read it: __vm_area_free */
		vma_poison(v);
		step_end(L___vm_area_free, v);
		return;
	}
	if (variant == VARIANT_FREE_IMMEDIATELY) {	/* BUG: no call_rcu */
		vma_poison(v);
		step_end(L_vm_area_free, v);
		return;
	}
	vma_get(v, L_vm_area_free)->status = VMA_RCU_PENDING;
	lab_call_rcu(v);
	step_end(L_vm_area_free, v);
}

static void mmap_write_lock(void)
{
	down_write(WHO_MM);
	if (variant == VARIANT_V6_12_0 || variant == VARIANT_NO_PER_VMA_LOCK)	/* no seqcount there */
		return;
	step_begin(L_mm_lock_seqcount_begin);	/* 6.12.88+: odd while mmap_lock is write-held */
	__atomic_store_n(&mm.mm_lock_seq, mm.mm_lock_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);	/* smp_wmb() of do_raw_write_seqcount_begin (C11: a release fence) */
	step_end(L_mm_lock_seqcount_begin, NO_VMA);
}

static void vma_end_write_all(void)
{
	if (variant == VARIANT_NO_PER_VMA_LOCK)
		return;
	step_begin(L_vma_end_write_all);
	if (variant == VARIANT_V6_12_0) {	/* 6.12.0: smp_store_release() */
		__atomic_store_n(&mm.mm_lock_seq, mm.mm_lock_seq + 1, __ATOMIC_RELEASE);
	} else if (variant != VARIANT_NO_SEQ_BUMP) {	/* BUG when skipped: the epoch never ends */
		__atomic_thread_fence(__ATOMIC_RELEASE);	/* smp_wmb() of do_raw_write_seqcount_end (C11: a release fence) */
		__atomic_store_n(&mm.mm_lock_seq, mm.mm_lock_seq + 1, __ATOMIC_RELAXED);
	}
	step_end(L_vma_end_write_all, NO_VMA);
}

static void mmap_write_unlock(void)
{
	vma_end_write_all();
	up_write(WHO_MM);
}

/* --- splitting, merging and the tree ------------------------------------------------------------ */

/* __split_vma: the copy (the part on the far side of addr from v) gets the next id. */
static void split_vma(int v, unsigned long addr, bool new_below)
{
	struct vm_area_struct *old, *new;

	step_begin(L___split_vma);
	old = vma_get(v, L___split_vma);
	new = new_vma();
	new->vm_start = new_below ? old->vm_start : addr;
	new->vm_end = new_below ? addr : old->vm_end;
	new->vm_lock_seq = old->vm_lock_seq;
	new->writable = old->writable;
	new->account = old->account;
	new->anon_vma = old->anon_vma;
	if (new_below)
		old->vm_start = addr;
	else
		old->vm_end = addr;
	tree_store(new->id);
	step_end(L___split_vma, v);
}

struct range {
	int v;
	unsigned long start, end;
};

struct merge {
	int nr_ranges;
	struct range ranges[2];
	int stored;
	int anon_dst, anon;		/* dup_anon_vma: anon_dst takes anon, or anon_dst is NO_VMA */
	int nr_removed;
	int removed[2];
};

static void dup_anon_vma(struct merge *m, int dst, int src)
{
	m->anon_dst = NO_VMA;
	if (mm.vmas[src]->anon_vma != NO_ANON_VMA && mm.vmas[dst]->anon_vma == NO_ANON_VMA) {
		m->anon_dst = dst;
		m->anon = mm.vmas[src]->anon_vma;
	}
}

/* commit_merge, then vma_complete's detach and free of what the merge removed. */
static void commit_merge(const struct merge *m)
{
	int k;

	step_begin(L_commit_merge);
	for (k = 0; k < m->nr_ranges; k++) {
		struct vm_area_struct *v = vma_get(m->ranges[k].v, L_commit_merge);

		v->vm_start = m->ranges[k].start;
		v->vm_end = m->ranges[k].end;
	}
	if (m->anon_dst != NO_VMA)
		mm.vmas[m->anon_dst]->anon_vma = m->anon;
	tree_store(m->stored);
	step_end(L_commit_merge, m->stored);
	for (k = 0; k < m->nr_removed; k++) {
		vma_mark_detached(m->removed[k]);
		vm_area_free(m->removed[k]);
	}
}

static bool is_mergeable_anon_vma(int a1, int a2, int v)
{
	if ((a1 == NO_ANON_VMA || a2 == NO_ANON_VMA) && (v < 0 || mm.vmas[v]->anon_vma != NO_ANON_VMA))
		return true;
	return a1 == a2;
}

static bool same_flags(int v, bool writable, bool account)
{
	return mm.vmas[v]->writable == writable && mm.vmas[v]->account == account;
}

static bool can_vma_merge_left(int prev, unsigned long start, bool w, bool acct, int anon)
{
	return prev >= 0 && mm.vmas[prev]->vm_end == start && same_flags(prev, w, acct) &&
	       is_mergeable_anon_vma(anon, mm.vmas[prev]->anon_vma, prev);
}

static bool can_vma_merge_right(int nxt, unsigned long end, bool w, bool acct, int anon, int prev, bool left)
{
	if (!(nxt >= 0 && mm.vmas[nxt]->vm_start == end && same_flags(nxt, w, acct) &&
	      is_mergeable_anon_vma(anon, mm.vmas[nxt]->anon_vma, nxt)))
		return false;
	return !left || is_mergeable_anon_vma(mm.vmas[prev]->anon_vma, mm.vmas[nxt]->anon_vma, -1);
}

/* vma_merge_new_range: expand a neighbour over [start, end), or vm_area_alloc a new VMA there. */
static void vma_merge_new_range(unsigned long start, unsigned long end, bool w)
{
	int prev = NO_VMA, nxt = NO_VMA, k, v;
	bool left, right;

	for (k = 0; k < mm.tree->n; k++) {
		int x = mm.tree->ids[k];

		if (mm.vmas[x]->vm_end <= start && (prev < 0 || mm.vmas[x]->vm_end > mm.vmas[prev]->vm_end))
			prev = x;
		if (mm.vmas[x]->vm_start >= end && (nxt < 0 || mm.vmas[x]->vm_start < mm.vmas[nxt]->vm_start))
			nxt = x;
	}
	left = can_vma_merge_left(prev, start, w, w, NO_ANON_VMA);
	right = can_vma_merge_right(nxt, end, w, w, NO_ANON_VMA, prev, left);
	if (left || right) {			/* vma_expand */
		struct merge m = { .nr_ranges = 1 };

		v = left ? prev : nxt;
		m.ranges[0] = (struct range){ v, left ? mm.vmas[prev]->vm_start : start,
					      right ? mm.vmas[nxt]->vm_end : end };
		m.stored = v;
		vma_start_write(v);
		if (left && right) {
			vma_start_write(nxt);
			m.removed[m.nr_removed++] = nxt;
			dup_anon_vma(&m, v, nxt);
		} else {
			m.anon_dst = NO_VMA;
		}
		commit_merge(&m);
		return;
	}
	step_begin(L_vm_area_alloc);
	v = new_vma()->id;
	mm.vmas[v]->vm_lock_seq = vm_lock_seq_init();
	step_end(L_vm_area_alloc, v);
	step_begin(L_vma_set_range);
	mm.vmas[v]->vm_start = start;
	mm.vmas[v]->vm_end = end;
	mm.vmas[v]->writable = w;
	mm.vmas[v]->account = w;
	step_end(L_vma_set_range, v);
	vma_start_write(v);
	step_begin(L_vma_iter_store);
	tree_store(v);
	step_end(L_vma_iter_store, v);
}

/* vms_gather_munmap_vmas: split at the ends, then write-lock and detach each VMA of the range. */
static void vms_gather_munmap_vmas(const int *gone, int n, unsigned long start, unsigned long end)
{
	int k;

	if (mm.vmas[gone[0]]->vm_start < start) {
		vma_start_write(gone[0]);
		split_vma(gone[0], start, true);
	}
	for (k = 0; k < n; k++) {
		if (mm.vmas[gone[k]]->vm_end > end) {
			vma_start_write(gone[k]);
			split_vma(gone[k], end, false);
		}
		vma_start_write(gone[k]);
		vma_mark_detached(gone[k]);
	}
}

/* vms_complete_munmap_vmas: munmap downgrades mmap_lock first; remove_vma frees each VMA. */
static void vms_complete_munmap_vmas(const int *gone, int n, bool unlock)
{
	int k;

	if (unlock) {
		vma_end_write_all();		/* mmap_write_downgrade */
		downgrade_write(WHO_MM);
	}
	for (k = 0; k < n; k++)
		vm_area_free(gone[k]);
	if (unlock)
		up_read(WHO_MM, L_mmap_read_unlock);
}

void sys_mmap(unsigned long start, unsigned long end, bool writable)
{
	int gone[MAX_GONE], n;

	mmap_write_lock();
	/* __mmap_region */
	if (variant == VARIANT_MAP_FIXED_WITHOUT_UNMAP) {	/* BUG: stores over what is mapped */
		vma_merge_new_range(start, end, writable);
	} else {
		n = overlapping(start, end, gone);
		if (n)
			vms_gather_munmap_vmas(gone, n, start, end);
		vma_merge_new_range(start, end, writable);
		vms_complete_munmap_vmas(gone, n, false);
	}
	mmap_write_unlock();
}

void sys_munmap(unsigned long start, unsigned long end)
{
	int gone[MAX_GONE], n, k;
	struct vma_tree *t;

	mmap_write_lock();
	n = overlapping(start, end, gone);	/* do_vmi_munmap */
	if (!n) {
		mmap_write_unlock();
		return;
	}
	vms_gather_munmap_vmas(gone, n, start, end);	/* do_vmi_align_munmap */
	step_begin(L_vma_iter_clear_gfp);
	t = tree_alloc(mm.tree->n);
	for (k = 0; k < mm.tree->n; k++)
		if (!inside(mm.tree->ids[k], start, end))
			t->ids[t->n++] = mm.tree->ids[k];
	tree_publish(t);
	step_end(L_vma_iter_clear_gfp, NO_VMA);
	vms_complete_munmap_vmas(gone, n, true);
}

/* --- mprotect ------------------------------------------------------------------------------------ */

static void vm_flags_reset(int v, bool w, bool account)
{
	struct vm_area_struct *vma;

	step_begin(L_vm_flags_reset);
	vma = vma_get(v, L_vm_flags_reset);
	vma->writable = w;
	vma->account = account;
	step_end(L_vm_flags_reset, v);
}

/* vma_merge_existing_range: merge [start, end) of v into prev and/or next; the merged VMA, or NO_VMA. */
static int vma_merge_existing_range(int v, int prev, unsigned long start, unsigned long end, bool w, bool acct)
{
	struct vm_area_struct *vma = mm.vmas[v];
	bool left_side = start == vma->vm_start, right_side = end == vma->vm_end, whole, ml, mr;
	struct merge m = { 0 };
	int nxt = NO_VMA, src, res, locks[3], nl = 0, k;

	if (!left_side && !right_side)
		return NO_VMA;
	ml = left_side && can_vma_merge_left(prev, start, w, acct, vma->anon_vma);
	if (right_side)
		nxt = tree_next(v);
	mr = right_side && can_vma_merge_right(nxt, end, w, acct, vma->anon_vma, prev, ml);
	if (!ml && !mr)
		return NO_VMA;
	locks[nl++] = v;
	if (ml)
		locks[nl++] = prev;
	if (mr)
		locks[nl++] = nxt;
	whole = left_side && right_side;
	if (ml && mr) {				/* prev grows over vma and next, both deleted */
		res = prev;
		src = mm.vmas[nxt]->anon_vma != NO_ANON_VMA ? nxt : v;
		m.ranges[m.nr_ranges++] = (struct range){ prev, mm.vmas[prev]->vm_start, mm.vmas[nxt]->vm_end };
		m.removed[m.nr_removed++] = v;
		m.removed[m.nr_removed++] = nxt;
	} else if (ml) {			/* prev grows to end; vma is deleted or starts at end */
		res = prev;
		src = v;
		m.ranges[m.nr_ranges++] = (struct range){ prev, mm.vmas[prev]->vm_start, end };
		if (whole)
			m.removed[m.nr_removed++] = v;
		else
			m.ranges[m.nr_ranges++] = (struct range){ v, end, vma->vm_end };
	} else {				/* next grows down to start; vma is deleted or ends at start */
		res = nxt;
		src = v;
		if (whole)
			m.removed[m.nr_removed++] = v;
		else
			m.ranges[m.nr_ranges++] = (struct range){ v, vma->vm_start, start };
		m.ranges[m.nr_ranges++] = (struct range){ nxt, start, mm.vmas[nxt]->vm_end };
	}
	m.stored = res;
	dup_anon_vma(&m, res, src);
	for (k = 0; k < nl; k++)
		vma_start_write(locks[k]);
	commit_merge(&m);
	return res;
}

static void mprotect_fixup(int v, int prev, unsigned long start, unsigned long end, bool w)
{
	struct vm_area_struct *vma = mm.vmas[v];
	bool acct;
	int res;

	if (w == vma->writable)			/* newflags == oldflags */
		return;
	acct = w ? (vma->account || !vma->writable) : (vma->account && vma->anon_vma != NO_ANON_VMA);
	if (variant == VARIANT_MPROTECT_WITHOUT_VMA_LOCK && vma->vm_start == start && vma->vm_end == end) {
		vm_flags_reset(v, w, acct);	/* BUG: no vma_start_write */
		return;
	}
	res = vma_merge_existing_range(v, prev, start, end, w, acct);	/* vma_modify */
	if (res == NO_VMA) {
		bool split_end = vma->vm_end > end;

		res = v;
		if (vma->vm_start < start) {
			vma_start_write(v);
			split_vma(v, start, true);
		}
		if (split_end) {
			vma_start_write(v);
			split_vma(v, end, false);
		}
	}
	vma_start_write(res);
	vm_flags_reset(res, w, acct);
}

void sys_mprotect(unsigned long start, unsigned long end, bool writable)
{
	int gone[MAX_GONE], v, prev;
	unsigned long nstart = start, last;

	mmap_write_lock();
	/* do_mprotect_pkey: one turn of for_each_vma_range per mprotect_fixup */
	if (!overlapping(start, end, gone) || mm.vmas[gone[0]]->vm_start > start)
		goto out;			/* -ENOMEM */
	v = gone[0];
	prev = mm.vmas[v]->vm_start < start ? v : tree_prev(v);
	for (;;) {
		unsigned long e = mm.vmas[v]->vm_end < end ? mm.vmas[v]->vm_end : end;

		mprotect_fixup(v, prev, nstart, e, writable);
		last = nstart;
		prev = find(last);
		nstart = mm.vmas[prev]->vm_end;
		if (!overlapping(nstart, end, gone) || mm.vmas[gone[0]]->vm_start != nstart)
			break;
		v = gone[0];
	}
out:
	mmap_write_unlock();
}

/* --- fork ---------------------------------------------------------------------------------------- */

void sys_fork(void)
{
	int ids[MAX_GONE], n, k;

	mmap_write_lock();
	/* dup_mmap */
	n = mm.tree->n;
	memcpy(ids, mm.tree->ids, sizeof(int) * n);
	for (k = 0; k < n; k++) {
		if (variant != VARIANT_FORK_WITHOUT_VMA_LOCKS)	/* BUG when skipped */
			vma_start_write(ids[k]);
		step_begin(L_copy_page_range);
		vma_get(ids[k], L_copy_page_range);
		step_end(L_copy_page_range, ids[k]);
	}
	mmap_write_unlock();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The reader side: a user page fault as 6.12's arch/x86/mm/fault.c:do_user_addr_fault takes it,
 * first under a per-VMA lock (mm/memory.c:lock_vma_under_rcu, include/linux/mm.h:vma_start_read
 * and vma_end_read), else under mmap_lock (lock_mm_and_find_vma).  Faults are write faults on
 * private anonymous memory: do_anonymous_page zeroes a page (the fault's own work, outside the
 * step mutex) once the VMA has an anon_vma, which __vmf_anon_prepare attaches first.
 */
#include <string.h>

#include "vma_locks.h"

int find(unsigned long addr)
{
	struct vma_tree *t = __atomic_load_n(&mm.tree, __ATOMIC_ACQUIRE);	/* rcu_dereference */
	int k;

	for (k = 0; k < t->n; k++) {
		struct vm_area_struct *v = mm.vmas[t->ids[k]];

		if (v->vm_start <= addr && addr < v->vm_end)
			return t->ids[k];
	}
	return NO_VMA;
}

static void count(unsigned long *event)
{
	(*event)++;
}

/* vma_end_read: rcu_read_lock keeps the VMA alive until up_read and its wake-up are done with it. */
void vma_end_read(int v)
{
	if (variant == VARIANT_END_READ_OUTSIDE_RCU) {	/* BUG: up_read outside RCU */
		up_read(v, L_up_read);
		return;
	}
	lab_rcu_read_lock();
	up_read(v, L_up_read);
	lab_rcu_read_unlock();
}

static void handle_mm_fault(bool vma_locked);

/* count_vm_vma_lock_event(VMA_LOCK_ABORT) and the fallback: lock_mm_and_find_vma. */
static void lock_mm_and_find_vma(unsigned long address, enum label why)
{
	struct lab_thread *t = current;
	bool queued;
	int v;

	if (why != NR_LABELS) {
		step_begin(why);
		count(why == L_vma_lock_abort ? &counters[t->idx].abort : &counters[t->idx].retry);
		t->vma = NO_VMA;
		step_end(why, NO_VMA);
	}
	step_begin(L_get_mmap_lock_carefully);	/* down_read */
	queued = rwsem_down_read(&mm.mmap_lock, t->idx);
	step_end(L_get_mmap_lock_carefully, NO_VMA);
	if (queued)
		rwsem_down_read_wait(WHO_MM);

	step_begin(L_find_vma);
	v = find(address);
	t->addr = address;
	t->vma = v;
	step_end(L_find_vma, v);
	if (v == NO_VMA) {
		up_read(WHO_MM, L_mmap_read_unlock);
		step_begin(L_bad_area_nosemaphore);
		count(&counters[t->idx].sigsegv);
		t->died = true;
		step_end(L_bad_area_nosemaphore, NO_VMA);
		return;
	}
	handle_mm_fault(false);
}

/*
 * lock_vma_under_rcu: the VMA covering the address, read-locked, or NO_VMA after counting an abort
 * (the caller falls back to mmap_lock).  Each block is one step of the model.
 */
static int lock_vma_under_rcu(unsigned long address)
{
	struct lab_thread *t = current;
	struct vm_area_struct *vma;
	bool ok;
	int v;

	lab_rcu_read_lock();
retry:
	step_begin(L_mas_walk);
	v = find(address);
	t->addr = address;
	t->vma = v;
	step_end(L_mas_walk, v);
	if (v == NO_VMA)
		goto inval;

	/* vma_start_read: the lockless check, then down_read_trylock, then the recheck under the rwsem */
	step_begin(L_vma_start_read);
	ok = vma_get(v, L_vma_start_read)->vm_lock_seq != mm.mm_lock_seq;
	step_end(L_vma_start_read, v);
	if (!ok)
		goto inval;
	step_begin(L_down_read_trylock);
	vma = vma_get(v, L_down_read_trylock);
	ok = rwsem_read_trylock(&vma->lock, t->idx);
	step_end(L_down_read_trylock, v);
	if (!ok)
		goto inval;
	step_begin(L_vma_start_read_recheck);
	ok = vma_get(v, L_vma_start_read_recheck)->vm_lock_seq != __atomic_load_n(&mm.mm_lock_seq, __ATOMIC_ACQUIRE);
	if (variant == VARIANT_NO_RECHECK)	/* BUG: trusts the lockless check */
		ok = true;
	step_end(L_vma_start_read_recheck, v);
	if (!ok) {
		up_read(v, L_up_read);
		goto inval;
	}

	/* Check if the VMA got isolated after we found it */
	step_begin(L_check_detached);
	ok = !vma_get(v, L_check_detached)->detached;
	if (variant == VARIANT_NO_DETACHED_CHECK)	/* BUG: goes on with a detached VMA */
		ok = true;
	step_end(L_check_detached, v);
	if (!ok) {
		vma_end_read(v);
		step_begin(L_vma_lock_miss);
		count(&counters[t->idx].miss);
		step_end(L_vma_lock_miss, v);
		goto retry;
	}
	step_begin(L_check_range);
	vma = vma_get(v, L_check_range);
	ok = vma->vm_start <= address && address < vma->vm_end;
	step_end(L_check_range, v);
	if (!ok) {
		vma_end_read(v);
		goto inval;
	}
	lab_rcu_read_unlock();
	return v;
inval:
	lab_rcu_read_unlock();
	return NO_VMA;
}

static bool anon_vma_present(void)
{
	return vma_get(current->vma, L_handle_mm_fault)->anon_vma != NO_ANON_VMA;
}

/* mm/vma.c:reusable_anon_vma with anon_vma_compatible(a, b) */
static bool reusable_anon_vma(int old, int a, int b)
{
	struct vm_area_struct *va = mm.vmas[a], *vb = mm.vmas[b];

	return va->vm_end == vb->vm_start && va->account == vb->account && mm.vmas[old]->anon_vma != NO_ANON_VMA;
}

/* __anon_vma_prepare with find_mergeable_anon_vma: a neighbour's anon_vma, else a new one. */
static void anon_vma_prepare(void)
{
	int v = current->vma, nxt, prev;
	struct vm_area_struct *vma;

	step_begin(L___anon_vma_prepare);
	vma = vma_get(v, L___anon_vma_prepare);
	if (vma->anon_vma == NO_ANON_VMA) {
		nxt = tree_next(v);
		prev = tree_prev(v);
		if (nxt != NO_VMA && reusable_anon_vma(nxt, v, nxt))
			vma->anon_vma = mm.vmas[nxt]->anon_vma;
		else if (prev != NO_VMA && reusable_anon_vma(prev, prev, v))
			vma->anon_vma = mm.vmas[prev]->anon_vma;
		else
			vma->anon_vma = v;
	}
	step_end(L___anon_vma_prepare, v);
}

/* The page is mapped: release what the fault held. */
static void fault_handled(bool vma_locked)
{
	struct lab_thread *t = current;

	if (vma_locked) {
		vma_end_read(t->vma);
		step_begin(L_vma_lock_success);
		count(&counters[t->idx].success);
		t->vma = NO_VMA;
		step_end(L_vma_lock_success, NO_VMA);
		return;
	}
	t->vma = NO_VMA;
	count(&counters[t->idx].mmap_lock_faults);
	up_read(WHO_MM, L_mmap_read_unlock);
}

static void fault_work(void)
{
	memset(current->page, 0, sizeof(current->page));
	__asm__ volatile("" : : "r"(current->page) : "memory");
}

static void handle_mm_fault(bool vma_locked)
{
	struct lab_thread *t = current;
	bool present, got;

	fault_work();
	step_begin(L_handle_mm_fault);
	present = anon_vma_present();
	step_end(L_handle_mm_fault, t->vma);
	if (present) {
		fault_handled(vma_locked);
		return;
	}

	/* vmf_anon_prepare -> __vmf_anon_prepare */
	step_begin(L___vmf_anon_prepare);
	present = vma_get(t->vma, L___vmf_anon_prepare)->anon_vma != NO_ANON_VMA;
	got = true;
	if (!present && vma_locked) {
		if (variant == VARIANT_ANON_PREPARE_BLOCKS) {	/* BUG: sleeps on mmap_lock under the VMA lock */
			bool queued = rwsem_down_read(&mm.mmap_lock, t->idx);

			step_end(L___vmf_anon_prepare, t->vma);
			if (queued)
				rwsem_down_read_wait(WHO_MM);
			goto prepare;
		}
		got = rwsem_read_trylock(&mm.mmap_lock, t->idx);	/* mmap_read_trylock */
	}
	step_end(L___vmf_anon_prepare, t->vma);
	if (present)
		goto map;
	if (!got) {
		unsigned long address = t->addr;

		vma_end_read(t->vma);		/* VM_FAULT_RETRY: vmf_anon_prepare drops the VMA lock */
		lock_mm_and_find_vma(address, L_vma_lock_retry);
		return;
	}
prepare:
	anon_vma_prepare();
	if (vma_locked)
		up_read(WHO_MM, L_mmap_read_unlock);
map:
	fault_work();
	step_begin(L_do_anonymous_page);
	vma_get(t->vma, L_do_anonymous_page);
	step_end(L_do_anonymous_page, t->vma);
	fault_handled(vma_locked);
}

void do_user_addr_fault(unsigned long address)
{
	if (variant == VARIANT_NO_PER_VMA_LOCK) {	/* lock_vma_under_rcu() returns NULL */
		lock_mm_and_find_vma(address, NR_LABELS);
		return;
	}
	if (lock_vma_under_rcu(address) != NO_VMA) {
		handle_mm_fault(true);
		return;
	}
	lock_mm_and_find_vma(address, L_vma_lock_abort);
}

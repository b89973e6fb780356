// SPDX-License-Identifier: GPL-2.0
/*
 * A page fault in the parent while it forks, on vma-locks' fault path as simulator/kstep/models/
 * vma_locks/ has it: arch/x86/mm/fault.c:do_user_addr_fault tries mm/memory.c:lock_vma_under_rcu
 * (mas_walk, include/linux/mm.h:vma_start_read's lockless check, down_read_trylock and the
 * recheck) and falls back to lock_mm_and_find_vma under mmap_lock; handle_mm_fault maps a zeroed
 * page at the hole (do_anonymous_page).  dup_mmap write-locks each VMA before copying it, so the
 * lockless check fails and the fallback sleeps behind fork's mmap_lock: no fault changes a page
 * table fork copies.  VMAs without an anon_vma (vmf_anon_prepare) are not ported.
 */
#include <string.h>

#include "check.h"
#include "fork.h"

static long find_vma(struct mm *mm, long addr)
{
	for (int v = 0; v < mm->nr_vmas; v++)
		if (mm->vmas[v].start <= addr && addr < mm->vmas[v].end)
			return v;
	return -1;
}

/* do_anonymous_page: a new exclusive order-0 anonymous folio, mapped young, then
 * pte_mkwrite(pte_mkdirty(entry)): soft-dirty too where the architecture tracks it. */
void map_zeroed_page(struct mm *mm, long addr)
{
	long k = new_folio(mm, FOLIO_ANON, 1, 1, true);

	mm->parent[addr] = pte_mkwrite(pte_mkdirty(mm->fmt, pfn_pte(mm->folios[k].pfn, PTE_PRESENT | PTE_YOUNG)));
}

#define IS(name) (!strcmp(f->label, name))
#define MODE_MMAP 0
#define MODE_VMA 1

/* The page is mapped: release what the fault holds (do_user_addr_fault). */
static void fault_handled(struct mm *mm, struct thread *t, long mode)
{
	if (mode == MODE_VMA) {
		push(t, 2, "vma_end_read", t->vma, "vma_lock_success", 0L);
		return;
	}
	t->vma = -1;
	mm->counters.mmap_lock_faults++;
	push(t, 1, "mmap_read_unlock", 0L);
}

bool fault_step(struct mm *mm, int i, const struct frame *f)
{
	struct thread *t = &mm->threads[i];
	struct vma *vma = t->vma >= 0 ? &mm->vmas[t->vma] : NULL;

	if (IS("do_user_addr_fault")) {			/* calls: no step of their own */
		push(t, 1, "lock_vma_under_rcu", f->arg);
		return false;
	}
	if (IS("lock_vma_under_rcu")) {
		push(t, 2, "rcu_read_lock", 0L, "mas_walk", f->arg);
		return false;
	}
	if (IS("vma_end_read")) {
		push(t, 3, "rcu_read_lock", 0L, "up_read", f->arg, "rcu_read_unlock", 0L);
		return false;
	}
	if (IS("lock_mm_and_find_vma")) {
		push(t, 2, "get_mmap_lock_carefully", 0L, "find_vma", f->arg);
		return false;
	}
	if (IS("mas_walk")) {
		t->addr = f->arg;
		t->vma = find_vma(mm, f->arg);
		if (t->vma < 0)
			not_ported(mm, "a fault at %ld, where no VMA is (bad_area_nosemaphore)", f->arg);
		push(t, 1, "vma_start_read", 0L);
	} else if (IS("vma_start_read")) {		/* the lockless check */
		if (vma->vm_lock_seq == mm->mm_lock_seq)
			push(t, 2, "rcu_read_unlock", 0L, "vma_lock_abort", 0L);
		else
			push(t, 1, "down_read_trylock", 0L);
	} else if (IS("down_read_trylock")) {
		if (!rwsem_read_trylock_ok(&vma->lock)) {
			push(t, 2, "rcu_read_unlock", 0L, "vma_lock_abort", 0L);
		} else {
			rwsem_add_reader(&vma->lock, i);
			push(t, 1, "vma_start_read_recheck", 0L);
		}
	} else if (IS("vma_start_read_recheck")) {
		if (vma->vm_lock_seq == mm->mm_lock_seq)
			push(t, 3, "up_read", t->vma, "rcu_read_unlock", 0L, "vma_lock_abort", 0L);
		else
			push(t, 1, "check_detached", 0L);
	} else if (IS("check_detached")) {		/* fork detaches no VMA */
		push(t, 1, "check_range", 0L);
	} else if (IS("check_range")) {
		LAB_CHECK(vma->start <= t->addr && t->addr < vma->end);
		push(t, 2, "rcu_read_unlock", 0L, "handle_mm_fault", (long)MODE_VMA);
	} else if (IS("vma_lock_abort")) {
		mm->counters.vma_lock_abort++;
		t->vma = -1;
		push(t, 1, "lock_mm_and_find_vma", t->addr);
	} else if (IS("get_mmap_lock_carefully")) {
		down_read(mm, MM_LOCK, i);
	} else if (IS("find_vma")) {
		t->addr = f->arg;
		t->vma = find_vma(mm, f->arg);
		if (t->vma < 0)
			not_ported(mm, "a fault at %ld, where no VMA is (bad_area_nosemaphore)", f->arg);
		push(t, 1, "handle_mm_fault", (long)MODE_MMAP);
	} else if (IS("handle_mm_fault")) {
		if (!vma->anon_vma)
			not_ported(mm, "a fault in a VMA without an anon_vma (vmf_anon_prepare)");
		map_zeroed_page(mm, t->addr);
		fault_handled(mm, t, f->arg);
	} else if (IS("vma_lock_success")) {
		mm->counters.vma_lock_success++;
		t->vma = -1;
	} else {
		LAB_CHECK(!"a fault step");
	}
	return true;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * pin_user_pages_fast(addr, 1, FOLL_WRITE) in the parent while it forks, as simulator/kstep/models/
 * fork_batch.py has it, in the shape of mm/gup.c: gup_fast_fallback sets MMF_HAS_PINNED
 * (mm_set_has_pinned_flag); gup_fast reads write_protect_seq and gives up while it is odd;
 * gup_fast_pte_range reads the PTE locklessly, pins the folio (try_grab_folio_fast), reads the
 * PTE again and unpins if it changed; gup_fast drops the pin if write_protect_seq moved meanwhile
 * (read_seqcount_retry); the slow path (__get_user_pages_locked) takes mmap_lock for read and
 * breaks COW with a write fault (do_wp_page) before pinning.
 *
 * Against it, fork: copy_page_range makes write_protect_seq odd for a COW mapping
 * (raw_write_seqcount_begin) and folio_maybe_dma_pinned sends a page pinned before it looked to
 * copy_present_page.  -DLAB_GUP_IGNORES_SEQ builds GUP-fast as before 57efa1fe5957 (Linux 5.11),
 * the model's gup-fast-ignores-seq: no look at write_protect_seq at all.
 */
#include <string.h>

#include "check.h"
#include "fork.h"

#define IS(name) (!strcmp(f->label, name))

/* FOLL_PIN references on folio k: a large folio counts them in _pincount, a small one in its
 * refcount, by GUP_PIN_COUNTING_BIAS. */
static void pin(struct mm *mm, long k, int n)
{
	struct folio *folio = &mm->folios[k];

	if (folio->order) {
		folio->refcount += n;
		folio->pincount += n;
	} else {
		folio->refcount += n * GUP_PIN_COUNTING_BIAS;
	}
}

/* A write fault on a present read-only PTE: an exclusive page is reused (wp_page_reuse: pte_mkyoung,
 * pte_mkdirty, maybe_mkwrite), a shared one copied (wp_page_copy: young, dirty, writable); pte_mkdirty
 * sets soft-dirty too where the architecture tracks it. On arm64 a folded block is unfolded first, as
 * the write bit changes (contpte_ptep_set_access_flags, ptep_clear_flush); the fault's operations on
 * page-table memory are not counted (mm->ops is the fork's). */
static void do_wp_page(struct mm *mm, long addr)
{
	pte_t old = mm->parent[addr];
	long k = folio_index(mm, pte_pfn(old)), off, n;
	struct folio *folio;
	struct ops uncounted = { 0 };

	LAB_CHECK(k >= 0);
	if (mm->fmt == FMT_ARM64)
		contpte_try_unfold(mm->parent, addr, old, &uncounted);
	folio = &mm->folios[k];
	off = pte_pfn(old) - folio->pfn;
	if (folio->exclusive[off]) {
		mm->parent[addr] = pte_mkwrite(pte_mkdirty(mm->fmt, pte_mkyoung(mm->parent[addr])));
		return;
	}
	folio->refcount--;
	if (folio->order && folio->large_mapcount != NO_LARGE_MAPCOUNT)
		folio->large_mapcount--;
	folio->mapcount[off]--;
	n = new_folio(mm, FOLIO_ANON, 1, 1, true);	/* wp_page_copy */
	mm->parent[addr] = pte_mkwrite(pte_mkdirty(mm->fmt, pfn_pte(mm->folios[n].pfn, PTE_PRESENT | PTE_YOUNG)));
}

bool gup_step(struct mm *mm, int i, const struct frame *f)
{
	struct thread *t = &mm->threads[i];

	if (IS("pin_user_pages_fast")) {		/* a call: no step of its own */
		push(t, 2, "mm_set_has_pinned_flag", f->arg, "gup_fast", f->arg);
		return false;
	}
	if (IS("mm_set_has_pinned_flag")) {
		mm->mmf_has_pinned = true;
		t->addr = f->arg;
	} else if (IS("gup_fast")) {			/* raw_read_seqcount(&mm->write_protect_seq) */
		t->seq = mm->write_protect_seq;
#ifndef LAB_GUP_IGNORES_SEQ
		if (t->seq & 1)
			push(t, 1, "__get_user_pages_locked", 0L);
		else
#endif
			push(t, 1, "ptep_get_lockless", 0L);
	} else if (IS("ptep_get_lockless")) {
		t->pte = mm->parent[t->addr];
		if (!pte_present(t->pte) || !pte_write(t->pte) || pte_special(t->pte))
			push(t, 1, "read_seqcount_retry", 0L);
		else
			push(t, 1, "try_grab_folio_fast", 0L);
	} else if (IS("try_grab_folio_fast")) {
		t->folio = folio_index(mm, pte_pfn(t->pte));
		LAB_CHECK(t->folio >= 0);
		pin(mm, t->folio, 1);
		push(t, 1, "gup_fast_pte_range", 0L);
	} else if (IS("gup_fast_pte_range")) {		/* pte_val(pte) != pte_val(ptep_get(ptep)) */
		if (mm->parent[t->addr] != t->pte) {
			pin(mm, t->folio, -1);		/* gup_put_folio */
			t->folio = -1;
		}
		push(t, 1, "read_seqcount_retry", 0L);
	} else if (IS("read_seqcount_retry")) {
#ifdef LAB_GUP_IGNORES_SEQ
		if (t->folio >= 0) {
#else
		if (t->folio >= 0 && mm->write_protect_seq == t->seq) {
#endif
			t->pinned = true;
			return true;
		}
		if (t->folio >= 0) {
			pin(mm, t->folio, -1);
			t->folio = -1;
		}
		push(t, 1, "__get_user_pages_locked", 0L);
	} else if (IS("__get_user_pages_locked")) {	/* mmap_read_lock, then the slow path */
		push(t, 2, "__get_user_pages", 0L, "mmap_read_unlock", 0L);
		down_read(mm, MM_LOCK, i);
	} else if (IS("__get_user_pages")) {		/* FOLL_WRITE: fault the PTE writable first */
		if (!pte_write(mm->parent[t->addr]))
			do_wp_page(mm, t->addr);
		t->pte = mm->parent[t->addr];
		t->folio = folio_index(mm, pte_pfn(t->pte));
		LAB_CHECK(t->folio >= 0);
		pin(mm, t->folio, 1);
		t->pinned = true;
	} else {
		LAB_CHECK(!"a GUP step");
	}
	return true;
}

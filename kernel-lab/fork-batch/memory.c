// SPDX-License-Identifier: GPL-2.0
/*
 * fork()'s page-table copy in the shape of Linux 6.12's kernel/fork.c:dup_mmap,
 * mm/memory.c:copy_page_range, copy_pte_range, copy_nonpresent_pte, copy_present_ptes,
 * __copy_present_ptes, copy_present_page and mm/internal.h:folio_pte_batch, over the synthetic
 * page tables of fork.h, for the copying strategies of simulator/kstep/models/fork_batch/.
 *
 * Every step of the model's program starts with STEP(mm, label) (fork.h), under the model's label.
 *
 * Build-time mutations, for the identity test to catch: -DLAB_DROP_ANY_WRITABLE leaves out
 * copy_present_ptes' "if (any_writable) pte = pte_mkwrite(pte)"; -DCONT_PTES=8 is a wrong block;
 * -DLAB_FORK_WITHOUT_VMA_LOCKS copies the VMAs without write-locking them, the memory corruption
 * fb49c455323f fixed (the model's fork-without-vma-locks).
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fork.h"

#ifdef LAB_FORK_WITHOUT_VMA_LOCKS
#define LOCKS_VMAS	false
#else
#define LOCKS_VMAS	true	/* dup_mmap write-locks each VMA before copying it */
#endif

#define FPB_IGNORE_DIRTY	(1 << 0)
#define FPB_IGNORE_SOFT_DIRTY	(1 << 1)

long folio_nr_pages(const struct folio *f) { return 1L << f->order; }

long folio_index(struct mm *mm, uint64_t pfn)
{
	long lo = 0, hi = mm->nr_folios;

	while (lo < hi) {		/* the last folio starting at or below pfn */
		long mid = (lo + hi) / 2;

		if (mm->folios[mid].pfn <= pfn)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && pfn < mm->folios[lo - 1].pfn + folio_nr_pages(&mm->folios[lo - 1]))
		return lo - 1;
	return -1;
}

bool folio_span(void *opaque, uint64_t pfn, uint64_t *first, long *nr_pages)
{
	struct mm *mm = opaque;
	long k = folio_index(mm, pfn);

	if (k < 0)
		return false;
	*first = mm->folios[k].pfn;
	*nr_pages = folio_nr_pages(&mm->folios[k]);
	return true;
}

/* The page allocator: an order-0 folio above every other one. */
long new_folio(struct mm *mm, enum folio_kind kind, long refcount, long mapped, bool exclusive)
{
	struct folio *f;

	if (mm->nr_folios == mm->folio_cap) {
		mm->folio_cap = mm->folio_cap ? 2 * mm->folio_cap : 16;
		mm->folios = realloc(mm->folios, mm->folio_cap * sizeof(*mm->folios));
		LAB_CHECK(mm->folios != NULL);
	}
	f = &mm->folios[mm->nr_folios];
	memset(f, 0, sizeof(*f));
	f->pfn = mm->next_pfn++;
	f->kind = kind;
	f->refcount = refcount;
	f->mapcount = calloc(1, sizeof(long));
	f->exclusive = calloc(1, sizeof(bool));
	LAB_CHECK(f->mapcount && f->exclusive);
	f->mapcount[0] = mapped;
	f->exclusive[0] = exclusive;
	return mm->nr_folios++;
}

static void record(struct mm *mm, int v, long addr, long nr, enum copy_how how)
{
	if (mm->nr_batches == mm->batch_cap) {
		mm->batch_cap = mm->batch_cap ? 2 * mm->batch_cap : 64;
		mm->batches = realloc(mm->batches, mm->batch_cap * sizeof(*mm->batches));
		LAB_CHECK(mm->batches != NULL);
	}
	mm->batches[mm->nr_batches++] = (struct batch){ v, addr, nr, how };
}

static bool is_cow_mapping(const struct vma *vma) { return vma->kind != SHARED; }

static int mm_counter(const struct folio *f)
{
	return f->kind == FOLIO_ANON ? MM_ANONPAGES : f->kind == FOLIO_SHMEM ? MM_SHMEMPAGES : MM_FILEPAGES;
}

static bool folio_maybe_dma_pinned(const struct folio *f)
{
	if (f->order)
		return f->pincount > 0;
	return f->refcount >= GUP_PIN_COUNTING_BIAS;
}

static struct folio *page_folio(struct mm *mm, uint64_t pfn, long *off)
{
	long k = folio_index(mm, pfn);

	LAB_CHECK(k >= 0);
	*off = pfn - mm->folios[k].pfn;
	return &mm->folios[k];
}

/*
 * The rmap's atomics once its nr pages' _mapcount are raised (one each; a small folio's is
 * folio->_mapcount), and one more for a large folio's _large_mapcount where the kernel keeps one.
 */
static void add_large_mapcount(struct mm *mm, long k, long nr)
{
	struct folio *folio = &mm->folios[k];

	mm->ops.rmap += nr;
	if (folio->order && folio->large_mapcount != NO_LARGE_MAPCOUNT) {
		folio->large_mapcount += nr;
		mm->ops.rmap++;
	}
}

/* __folio_try_dup_anon_rmap at PTE level: false when a maybe-pinned exclusive page must be copied. */
static bool folio_try_dup_anon_rmap_ptes(struct mm *mm, long k, uint64_t pfn, long nr)
{
	struct folio *folio = &mm->folios[k];
	bool maybe_pinned = mm->mmf_has_pinned && folio_maybe_dma_pinned(folio);
	long off;

	if (maybe_pinned)
		for (uint64_t p = pfn; p < pfn + nr; p++)
			if (page_folio(mm, p, &off)->exclusive[off])
				return false;
	for (uint64_t p = pfn; p < pfn + nr; p++) {
		struct folio *f = page_folio(mm, p, &off);

		f->exclusive[off] = false;
		f->mapcount[off]++;
	}
	add_large_mapcount(mm, k, nr);
	return true;
}

static void folio_dup_file_rmap_ptes(struct mm *mm, long k, uint64_t pfn, long nr)
{
	long off;

	for (uint64_t p = pfn; p < pfn + nr; p++)
		page_folio(mm, p, &off)->mapcount[off]++;
	add_large_mapcount(mm, k, nr);
}

static pte_t __pte_batch_clear_ignored(pte_t pte, int flags)
{
	if (flags & FPB_IGNORE_DIRTY)
		pte = pte_mkclean(pte);
	if (flags & FPB_IGNORE_SOFT_DIRTY)
		pte = pte_clear_soft_dirty(pte);
	return pte_wrprotect(pte_mkold(pte));
}

/*
 * folio_pte_batch: 6.12.117 clamps max_nr to the folio's end before the loop; 6.12.0 instead stops
 * at a PTE whose PFN is past the folio's end, after reading it.  Without the arch hint
 * (no-batch-hint) pte_batch_hint is the generic 1.
 */
static long folio_pte_batch(struct mm *mm, long k, long addr, pte_t pte, long max_nr, int flags,
			    bool *any_writable)
{
	const struct folio *folio = &mm->folios[k];
	uint64_t folio_end = folio->pfn + folio_nr_pages(folio);
	bool clamp = mm->strategy != V6_12_0_BATCH, hint = mm->strategy != NO_BATCH_HINT;
	pte_t expected_pte;
	long nr, cur_nr, ptep;

	STEP(mm, "folio_pte_batch");
	*any_writable = false;
	if (clamp && (uint64_t)max_nr > folio_end - pte_pfn(pte))
		max_nr = folio_end - pte_pfn(pte);
	nr = hint ? pte_batch_hint(mm->fmt, addr, pte) : 1;
	expected_pte = __pte_batch_clear_ignored(pte_advance_pfn(pte, nr), flags);
	ptep = addr + nr;
	while (nr < max_nr) {
		bool writable;

		STEP(mm, "folio_pte_batch");
		pte = ptep_get(mm->fmt, mm->parent, ptep, &mm->ops);
		writable = pte_write(pte);
		pte = __pte_batch_clear_ignored(pte, flags);
		if (pte != expected_pte)
			break;
		if (!clamp && pte_pfn(pte) >= folio_end)
			break;
		*any_writable |= writable;
		cur_nr = hint ? pte_batch_hint(mm->fmt, ptep, pte) : 1;
		expected_pte = pte_advance_pfn(expected_pte, cur_nr);
		ptep += cur_nr;
		nr += cur_nr;
	}
	return nr < max_nr ? nr : max_nr;
}

static void __copy_present_ptes(struct mm *mm, int v, pte_t pte, long addr, long nr, enum copy_how how)
{
	const struct vma *vma = &mm->vmas[v];

	if (is_cow_mapping(vma) && pte_write(pte)) {
		STEP(mm, "wrprotect_ptes");
		wrprotect_ptes(mm->fmt, mm->parent, addr, nr, &mm->ops);
		pte = pte_wrprotect(pte);
	}
	if (vma->kind == SHARED)
		pte = pte_mkclean(pte);
	pte = pte_mkold(pte);
	if (!vma->uffd_wp)
		pte = pte_clear_uffd_wp(pte);
	STEP(mm, "set_ptes");
	set_ptes(mm->fmt, mm->child, addr, pte, nr, &mm->ops, folio_span, mm);
	mm->ops.batches++;
	record(mm, v, addr, nr, how);
}

static int copy_present_page(struct mm *mm, int v, long addr, long *rss, long *prealloc)
{
	struct folio *new;
	pte_t src, pte;

	STEP(mm, "copy_present_page");
	if (*prealloc < 0)
		return EAGAIN_COPY;
	new = &mm->folios[*prealloc];
	new->mapcount[0] = 1;		/* folio_add_new_anon_rmap(RMAP_EXCLUSIVE) */
	new->exclusive[0] = true;
	mm->ops.rmap++;
	src = ptep_get(mm->fmt, mm->parent, addr, &mm->ops);
	pte = pte_mkdirty(mm->fmt, pfn_pte(new->pfn, PTE_PRESENT | PTE_YOUNG));	/* mk_pte(vm_page_prot: young) */
	if (mm->vmas[v].writable)	/* maybe_mkwrite */
		pte = pte_mkwrite(pte);
	if (mm->vmas[v].uffd_wp && pte_uffd_wp(src))
		pte |= PTE_UFFD_WP;
	set_ptes(mm->fmt, mm->child, addr, pte, 1, &mm->ops, folio_span, mm);
	mm->ops.batches++;
	rss[MM_ANONPAGES]++;
	*prealloc = -1;
	record(mm, v, addr, 1, HOW_COPIED);
	return 0;
}

static long copy_present_ptes(struct mm *mm, int v, long addr, pte_t pte, long max_nr, long *rss,
			      long *prealloc)
{
	const struct vma *vma = &mm->vmas[v];
	bool batching = mm->strategy != PER_PTE;
	bool any_writable = false;
	int flags = 0;
	long k, nr;

	STEP(mm, "copy_present_ptes");
	if (pte_special(pte)) {		/* vm_normal_page: no page behind the zero page */
		__copy_present_ptes(mm, v, pte, addr, 1, HOW_ZERO);
		return 1;
	}
	k = folio_index(mm, pte_pfn(pte));
	LAB_CHECK(k >= 0);
	if (batching && *prealloc < 0 && mm->folios[k].order && max_nr != 1) {
		enum copy_how how = HOW_BATCH;

		if (vma->kind == SHARED)
			flags |= FPB_IGNORE_DIRTY;
		if (!vma->soft_dirty)
			flags |= FPB_IGNORE_SOFT_DIRTY;
		if (mm->strategy == ARCH_HINT) {	/* v4: pte_batch_remaining(pte, addr, end) */
			STEP(mm, "pte_batch_hint");
			nr = pte_batch_remaining(mm->fmt, addr, pte, addr + max_nr);
			how = HOW_HINT;
		} else {
			nr = folio_pte_batch(mm, k, addr, pte, max_nr, flags, &any_writable);
		}
		STEP(mm, "folio_ref_add");
		mm->folios[k].refcount += nr;
		mm->ops.refs++;
		if (mm->folios[k].kind == FOLIO_ANON) {
			STEP(mm, "folio_try_dup_anon_rmap_ptes");
			if (!folio_try_dup_anon_rmap_ptes(mm, k, pte_pfn(pte), nr)) {
				STEP(mm, "folio_ref_sub");
				mm->folios[k].refcount -= nr;
				mm->ops.refs++;
				return EAGAIN_COPY;
			}
			rss[MM_ANONPAGES] += nr;
		} else {
			STEP(mm, "folio_dup_file_rmap_ptes");
			folio_dup_file_rmap_ptes(mm, k, pte_pfn(pte), nr);
			rss[mm_counter(&mm->folios[k])] += nr;
		}
		if (any_writable) {
			STEP(mm, "pte_mkwrite");
#ifndef LAB_DROP_ANY_WRITABLE
			pte = pte_mkwrite(pte);
#endif
		}
		__copy_present_ptes(mm, v, pte, addr, nr, how);
		return nr;
	}

	STEP(mm, "folio_get");
	mm->folios[k].refcount++;
	mm->ops.refs++;
	if (mm->folios[k].kind == FOLIO_ANON) {
		STEP(mm, "folio_try_dup_anon_rmap_pte");
		if (!folio_try_dup_anon_rmap_ptes(mm, k, pte_pfn(pte), 1)) {
			int err;

			STEP(mm, "folio_put");		/* the page may be pinned: copy it */
			mm->folios[k].refcount--;
			mm->ops.refs++;
			err = copy_present_page(mm, v, addr, rss, prealloc);
			return err ? err : 1;
		}
		rss[MM_ANONPAGES]++;
	} else {
		STEP(mm, "folio_dup_file_rmap_pte");
		folio_dup_file_rmap_ptes(mm, k, pte_pfn(pte), 1);
		rss[mm_counter(&mm->folios[k])]++;
	}
	__copy_present_ptes(mm, v, pte, addr, 1, HOW_SINGLE);
	return 1;
}

/* A swap entry: swap_duplicate, the parent's entry no longer exclusive, the same entry in the child. */
static void copy_nonpresent_pte(struct mm *mm, int v, long addr, long *rss)
{
	pte_t orig, pte;

	STEP(mm, "copy_nonpresent_pte");
	orig = ptep_get(mm->fmt, mm->parent, addr, &mm->ops);
	pte = orig;

	if (orig & PTE_SWP_EXCLUSIVE) {
		pte = orig & ~PTE_SWP_EXCLUSIVE;
		set_ptes(mm->fmt, mm->parent, addr, pte, 1, &mm->ops, folio_span, mm);
	}
	if (!mm->vmas[v].uffd_wp)
		pte = pte_clear_uffd_wp(pte);
	set_ptes(mm->fmt, mm->child, addr, pte, 1, &mm->ops, folio_span, mm);
	rss[MM_SWAPENTS]++;
	record(mm, v, addr, 1, HOW_SWAP);
}

static void copy_pte_range(struct mm *mm, int v, long addr, long end)
{
	long rss[NR_MM_COUNTERS], prealloc = -1, ret;

again:
	STEP(mm, "copy_pte_range");
	memset(rss, 0, sizeof(rss));
	ret = 0;
	do {
		long nr = 1;
		pte_t ptent;

		STEP(mm, "ptep_get");
		ptent = ptep_get(mm->fmt, mm->parent, addr, &mm->ops);

		if (pte_none(ptent))
			continue;
		if (!pte_present(ptent)) {
			copy_nonpresent_pte(mm, v, addr, rss);
			continue;
		}
		ret = copy_present_ptes(mm, v, addr, ptent, end - addr, rss, &prealloc);
		if (ret == EAGAIN_COPY)
			break;
		if (prealloc >= 0) {		/* folio_put(prealloc): not used for this PTE */
			mm->folios[prealloc].refcount--;
			mm->ops.refs++;
			prealloc = -1;
		}
		nr = ret;
		addr += nr - 1;
	} while (++addr != end);

	STEP(mm, "add_mm_rss_vec");
	for (int c = 0; c < NR_MM_COUNTERS; c++)
		mm->rss[c] += rss[c];
	if (ret != EAGAIN_COPY && end == mm->vmas[v].end)
		mm->copying = -1;		/* copy_page_range is done with this VMA */
	if (ret == EAGAIN_COPY) {
		STEP(mm, "folio_prealloc");
		prealloc = new_folio(mm, FOLIO_ANON, 1, 0, false);
		goto again;
	}
}

/*
 * A COW mapping's copy runs inside write_protect_seq's write section (raw_write_seqcount_begin
 * and _end), which GUP-fast reads: it gives up while the count is odd, and drops a pin it took
 * if the count moved meanwhile.
 */
static void copy_page_range(struct mm *mm, int v)
{
	const struct vma *vma = &mm->vmas[v];
	bool cow = is_cow_mapping(vma);

	STEP(mm, "copy_page_range");
	if (!vma->uffd_wp && !vma->anon_vma)	/* vma_needs_copy */
		return;
	mm->copying = v;
	if (cow)
		mm->write_protect_seq++;	/* raw_write_seqcount_begin */
	for (long addr = vma->start, next; addr != vma->end; addr = next) {	/* copy_pmd_range */
		next = (addr / PTRS_PER_PTE + 1) * PTRS_PER_PTE;
		if (next > vma->end)
			next = vma->end;
		copy_pte_range(mm, v, addr, next);
	}
	if (cow) {
		STEP(mm, "raw_write_seqcount_end");
		mm->write_protect_seq++;
	}
}

/*
 * kernel/locking/rwsem.c:down_write for the fork: rwsem_write_trylock, else one
 * rwsem_optimistic_spin, else rwsem_down_write_slowpath queues it and rwsem_try_write_lock
 * retries (each retry a step the scheduler gives it once it can take the lock or set HANDOFF).
 */
static void down_write(struct mm *mm, struct rwsem *sem)
{
	int i = mm->fork_thread;

	STEP(mm, "down_write");
	if (rwsem_write_trylock(sem, i))
		return;
	STEP(mm, "rwsem_optimistic_spin");
	if (rwsem_try_write_lock_unqueued(sem, i))
		return;
	STEP(mm, "rwsem_down_write_slowpath");
	if (rwsem_down_write_slowpath(sem, i))
		return;
	mm->fork_waits = sem;
	do
		STEP(mm, "rwsem_try_write_lock");
	while (!rwsem_try_write_lock(sem, i));
	mm->fork_waits = NULL;
}

static void up_write(struct mm *mm, struct rwsem *sem)
{
	STEP(mm, "up_write");
	rwsem_up_write(sem);
}

/* include/linux/mm.h:vma_start_write: down_write, vm_lock_seq = mm_lock_seq, up_write (unless
 * already write-locked in this mmap_lock epoch). */
static void vma_start_write(struct mm *mm, int v)
{
	struct vma *vma = &mm->vmas[v];

	if (vma->vm_lock_seq == mm->mm_lock_seq)
		return;
	down_write(mm, &vma->lock);
	STEP(mm, "vma_write_seq");
	vma->vm_lock_seq = mm->mm_lock_seq;
	up_write(mm, &vma->lock);
}

/*
 * kernel/fork.c's fork path around the copy: mmap_write_lock(oldmm) (down_write, then
 * mm_lock_seqcount_begin makes mm_lock_seq odd), dup_mmap write-locks each VMA before
 * copy_page_range copies it (so a fault under a VMA lock cannot race the copy), then
 * flush_tlb_mm(oldmm); mmap_write_unlock ends the epoch (vma_end_write_all: mm_lock_seq even again)
 * and up_write wakes the queued readers.  One thread runs at a time here: the seqcount's smp_wmb()
 * orders nothing the port can observe.
 */
void dup_mmap(struct mm *mm)
{
	down_write(mm, &mm->mmap_lock);
	STEP(mm, "mm_lock_seqcount_begin");
	mm->mm_lock_seq++;
	for (int v = 0; v < mm->nr_vmas; v++) {
		if (LOCKS_VMAS)
			vma_start_write(mm, v);
		copy_page_range(mm, v);
	}
	STEP(mm, "flush_tlb_mm");
	mm->ops.tlb_flushes++;
	STEP(mm, "vma_end_write_all");
	mm->mm_lock_seq++;
	up_write(mm, &mm->mmap_lock);
}

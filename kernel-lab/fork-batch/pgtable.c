// SPDX-License-Identifier: GPL-2.0
/*
 * The arch helpers of fork's copy for x86-64 (include/linux/pgtable.h's generic loops, x86's
 * try_cmpxchg ptep_set_wrprotect), arm64 with contiguous PTEs (arch/arm64/mm/contpte.c) and the
 * generic format (Book3S-64 radix's ptep_set_wrprotect), as models/fork_batch/pgtable.py counts them.
 */
#include "pgtable.h"

pte_t ptep_get(enum pte_format fmt, pte_t *pt, long i, struct ops *ops)
{
	pte_t pte = pt[i];

	ops->loads++;
	if (fmt != FMT_ARM64 || !pte_valid_cont(pte))
		return pte;
	/* contpte_ptep_get: gather the access and dirty bits of the whole block */
	for (long k = block_start(i); k < block_start(i) + CONT_PTES; k++) {
		pte_t sub = pt[k];

		ops->loads++;
		if (pte_dirty(sub))
			pte = pte_mkdirty(FMT_ARM64, pte);
		if (pte_young(sub))
			pte = pte_mkyoung(pte);
	}
	return pte;
}

long pte_batch_hint(enum pte_format fmt, long i, pte_t pte)
{
	if (fmt != FMT_ARM64 || !pte_valid_cont(pte))
		return 1;
	return CONT_PTES - (i & (CONT_PTES - 1));
}

/* v4's pte_batch_remaining(pte, addr, end) (Ryan Roberts, December 2023). */
long pte_batch_remaining(enum pte_format fmt, long i, pte_t pte, long end)
{
	long left = CONT_PTES - (i & (CONT_PTES - 1));

	if (fmt != FMT_ARM64 || !pte_valid_cont(pte))
		return 1;
	return left < end - i ? left : end - i;
}

/* contpte_convert: break-before-make over the block of entry i, then write it back from pte. */
static void contpte_convert(pte_t *pt, long i, pte_t pte, struct ops *ops)
{
	long start = block_start(i);

	pte = pfn_pte(pte_pfn(pte) & ~(uint64_t)(CONT_PTES - 1), pte);
	for (long k = start; k < start + CONT_PTES; k++) {
		pte_t sub = pt[k];

		pt[k] = 0;
		ops->atomics++;		/* __ptep_get_and_clear: xchg_relaxed */
		if (pte_dirty(sub))
			pte = pte_mkdirty(FMT_ARM64, pte);
		if (pte_young(sub))
			pte = pte_mkyoung(pte);
	}
	ops->tlb_flushes++;
	for (long k = 0; k < CONT_PTES; k++) {
		pt[start + k] = pte_advance_pfn(pte, k);
		ops->stores++;
	}
	if (pte_cont(pte))
		ops->folds++;
	else
		ops->unfolds++;
}

void contpte_try_unfold(pte_t *pt, long i, pte_t pte, struct ops *ops)
{
	if (pte_valid_cont(pte))
		contpte_convert(pt, i, pte_mknoncont(pte), ops);
}

/* arm64's ___ptep_set_wrprotect: cmpxchg from the value it was given, once more if it changed. */
static void cmpxchg_wrprotect(pte_t *pt, long i, pte_t seen, struct ops *ops)
{
	ops->atomics++;
	if (pt[i] != seen)
		ops->atomics++;
	pt[i] = pte_wrprotect(pt[i]);
}

/* contpte_wrprotect_ptes: unfold the block at either end that [i, i + nr) covers only in part. */
static void contpte_try_unfold_partial(pte_t *pt, long i, long nr, struct ops *ops)
{
	if (i != block_start(i) || nr < CONT_PTES) {
		ops->loads++;
		contpte_try_unfold(pt, i, pt[i], ops);
	}
	if (i + nr != block_start(i + nr)) {
		ops->loads++;
		contpte_try_unfold(pt, i + nr - 1, pt[i + nr - 1], ops);
	}
}

void wrprotect_ptes(enum pte_format fmt, pte_t *pt, long i, long nr, struct ops *ops)
{
	if (fmt == FMT_X86_64) {
		for (long k = i; k < i + nr; k++) {	/* READ_ONCE, then try_cmpxchg */
			ops->loads++;
			ops->atomics++;
			pt[k] = pte_wrprotect(pt[k]);
		}
	} else if (fmt == FMT_GENERIC) {
		for (long k = i; k < i + nr; k++) {	/* if (pte_write(*ptep)) pte_update(...) */
			ops->loads++;
			if (pte_write(pt[k])) {
				ops->atomics++;
				pt[k] = pte_wrprotect(pt[k]);
			}
		}
	} else if (fmt == FMT_ARM64_4K) {
		for (long k = i; k < i + nr; k++) {	/* __wrprotect_ptes: __ptep_get, then the cmpxchg loop */
			ops->loads++;
			cmpxchg_wrprotect(pt, k, pt[k], ops);
		}
	} else if (nr == 1) {
		pte_t orig = pt[i];

		ops->loads++;
		if (pte_cont(orig)) {
			contpte_convert(pt, i, pte_mknoncont(orig), ops);
			orig = pte_mknoncont(orig);
		}
		cmpxchg_wrprotect(pt, i, orig, ops);
	} else {
		contpte_try_unfold_partial(pt, i, nr, ops);
		for (long k = i; k < i + nr; k++) {	/* __wrprotect_ptes */
			ops->loads++;
			cmpxchg_wrprotect(pt, k, pt[k], ops);
		}
	}
}

/*
 * __contpte_try_fold: after writing the last entry of a block whose PFN is aligned likewise, fold
 * the block if one folio covers it and its 16 entries are alike but for PFN, access and dirty.
 */
static void contpte_try_fold(pte_t *pt, long i, pte_t pte, struct ops *ops, folio_span_fn span, void *mm)
{
	const long mask = CONT_PTES - 1;
	uint64_t first;
	long nr_pages, folio_start;
	pte_t expected;

	if ((i & mask) != mask || (long)(pte_pfn(pte) & mask) != mask)
		return;
	if (!pte_present(pte) || pte_cont(pte) || pte_special(pte))
		return;
	if (!span || !span(mm, pte_pfn(pte), &first, &nr_pages))
		return;
	folio_start = i - (long)(pte_pfn(pte) - first);
	if (folio_start > block_start(i) || folio_start + nr_pages < block_start(i) + CONT_PTES)
		return;
	expected = pfn_pte(pte_pfn(pte) & ~(uint64_t)mask, pte_mkold(pte_mkclean(pte)));
	for (long k = block_start(i); k < block_start(i) + CONT_PTES; k++) {
		ops->loads++;
		if (pte_mkold(pte_mkclean(pt[k])) != expected)
			return;
		expected = pte_advance_pfn(expected, 1);
	}
	contpte_convert(pt, i, pte_mkcont(pte), ops);
}

void set_ptes(enum pte_format fmt, pte_t *pt, long i, pte_t pte, long nr, struct ops *ops,
	      folio_span_fn span, void *mm)
{
	long end = i + nr;
	uint64_t pfn;

	if (fmt != FMT_ARM64) {
		for (long k = 0; k < nr; k++) {
			pt[i + k] = pte_advance_pfn(pte, k);
			ops->stores++;
		}
		return;
	}
	pte = pte_mknoncont(pte);
	if (nr == 1) {
		ops->loads++;
		contpte_try_unfold(pt, i, pt[i], ops);
		pt[i] = pte;
		ops->stores++;
		contpte_try_fold(pt, i, pte, ops, span, mm);
		return;
	}
	/* contpte_set_ptes: fold each chunk that is a whole aligned block with aligned PFNs */
	pfn = pte_pfn(pte);
	while (i != end) {
		long next = block_start(i) + CONT_PTES < end ? block_start(i) + CONT_PTES : end;
		pte_t chunk = pfn_pte(pfn, pte);

		if (i == block_start(i) && next == block_start(next) && pfn % CONT_PTES == 0)
			chunk = pte_mkcont(chunk);
		for (long k = 0; k < next - i; k++) {
			pt[i + k] = pte_advance_pfn(chunk, k);
			ops->stores++;
		}
		pfn += next - i;
		i = next;
	}
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The PTE layout and the arch helpers fork's copy calls (ptep_get, pte_batch_hint, wrprotect_ptes,
 * set_ptes and arm64's contpte_convert), in kstep's own layout for four formats, counting what
 * each does to page-table memory exactly as simulator/kstep/models/fork_batch/pgtable.py does.  The PTE bits
 * sit below PFN_PTE_SHIFT, the same for all formats, so the C and Python page tables compare
 * entry for entry; the formats differ in what their helpers do, not in where their bits are.
 */
#ifndef FORK_PGTABLE_H
#define FORK_PGTABLE_H

#include <stdbool.h>
#include <stdint.h>

typedef uint64_t pte_t;

#define PTE_PRESENT	(1ULL << 0)
#define PTE_WRITE	(1ULL << 1)
#define PTE_DIRTY	(1ULL << 2)
#define PTE_YOUNG	(1ULL << 3)
#define PTE_SOFT_DIRTY	(1ULL << 4)
#define PTE_UFFD_WP	(1ULL << 5)
#define PTE_SPECIAL	(1ULL << 6)
#define PTE_CONT	(1ULL << 7)
#define PTE_SWP		(1ULL << 8)
#define PTE_SWP_EXCLUSIVE (1ULL << 9)
#define PFN_PTE_SHIFT	12
#define PTE_PROT_MASK	((1ULL << PFN_PTE_SHIFT) - 1)
#define PTRS_PER_PTE	512

#ifndef CONT_PTES		/* arm64, 4 KiB pages: 1 << CONFIG_ARM64_CONT_PTE_SHIFT */
#define CONT_PTES	16
#endif

/* FMT_ARM64 is arm64-4K-contpte; FMT_ARM64_4K arm64 with 4 KiB pages and no CONFIG_ARM64_CONTPTE */
enum pte_format { FMT_X86_64, FMT_ARM64, FMT_GENERIC, FMT_ARM64_4K, NR_FORMATS };

/* CONFIG_HAVE_ARCH_SOFT_DIRTY: pgtable.py's HAS_SOFT_DIRTY */
static inline bool has_soft_dirty(enum pte_format fmt) { return fmt != FMT_ARM64 && fmt != FMT_ARM64_4K; }

/* pte_mkdirty as the format's architecture builds it: soft-dirty too where it tracks it (pgtable.py's) */
static inline pte_t pte_mkdirty(enum pte_format fmt, pte_t pte)
{
	return pte | PTE_DIRTY | (has_soft_dirty(fmt) ? PTE_SOFT_DIRTY : 0);
}

/* What the copy counts, in the order of models/fork_batch/pgtable.py's Ops. */
struct ops {
	long loads, stores, atomics, tlb_flushes, folds, unfolds, refs, rmap, batches;
};

static inline uint64_t pte_pfn(pte_t pte) { return pte >> PFN_PTE_SHIFT; }
static inline pte_t pfn_pte(uint64_t pfn, pte_t prot) { return pfn << PFN_PTE_SHIFT | (prot & PTE_PROT_MASK); }
static inline pte_t pte_advance_pfn(pte_t pte, long nr) { return pte + ((pte_t)nr << PFN_PTE_SHIFT); }
static inline bool pte_none(pte_t pte) { return pte == 0; }
static inline bool pte_present(pte_t pte) { return pte & PTE_PRESENT; }
static inline bool pte_write(pte_t pte) { return pte & PTE_WRITE; }
static inline bool pte_dirty(pte_t pte) { return pte & PTE_DIRTY; }
static inline bool pte_young(pte_t pte) { return pte & PTE_YOUNG; }
static inline bool pte_special(pte_t pte) { return pte & PTE_SPECIAL; }
static inline bool pte_uffd_wp(pte_t pte) { return pte & PTE_UFFD_WP; }
static inline bool pte_cont(pte_t pte) { return pte & PTE_CONT; }
static inline bool pte_valid_cont(pte_t pte) { return pte_present(pte) && pte_cont(pte); }
static inline pte_t pte_wrprotect(pte_t pte) { return pte & ~PTE_WRITE; }
static inline pte_t pte_mkwrite(pte_t pte) { return pte | PTE_WRITE; }
static inline pte_t pte_mkclean(pte_t pte) { return pte & ~PTE_DIRTY; }
static inline pte_t pte_mkold(pte_t pte) { return pte & ~PTE_YOUNG; }
static inline pte_t pte_mkyoung(pte_t pte) { return pte | PTE_YOUNG; }
static inline pte_t pte_clear_soft_dirty(pte_t pte) { return pte & ~PTE_SOFT_DIRTY; }
static inline pte_t pte_clear_uffd_wp(pte_t pte) { return pte & ~PTE_UFFD_WP; }
static inline pte_t pte_mkcont(pte_t pte) { return pte | PTE_CONT; }
static inline pte_t pte_mknoncont(pte_t pte) { return pte & ~PTE_CONT; }

/* contpte_align_down: the first entry of the block entry i is in. */
static inline long block_start(long i) { return i & ~(long)(CONT_PTES - 1); }

/* For contpte_try_fold: the first PFN and the pages of the folio holding pfn (false: none). */
typedef bool (*folio_span_fn)(void *mm, uint64_t pfn, uint64_t *first, long *nr_pages);

pte_t ptep_get(enum pte_format fmt, pte_t *pt, long i, struct ops *ops);
long pte_batch_hint(enum pte_format fmt, long i, pte_t pte);
long pte_batch_remaining(enum pte_format fmt, long i, pte_t pte, long end);
void contpte_try_unfold(pte_t *pt, long i, pte_t pte, struct ops *ops);
void wrprotect_ptes(enum pte_format fmt, pte_t *pt, long i, long nr, struct ops *ops);
void set_ptes(enum pte_format fmt, pte_t *pt, long i, pte_t pte, long nr, struct ops *ops,
	      folio_span_fn span, void *mm);

#endif /* FORK_PGTABLE_H */

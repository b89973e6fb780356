/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What mm/memory.c's copy_present_ptes() and copy_present_page(), include/linux/rmap.h's dup functions
 * and the page_ref.h, mm.h and page-flags.h helpers they call need beyond their own text, in the manner
 * of tools/testing/vma/vma_internal.h. The functions are the tree's (build/src/fork-copy.c, over
 * build/src/fork-pte-batch.c's x86-64 PTE helpers and fork-pte-batch/pte_internal.h's types; on arm64
 * build/src/arm64/fork-copy.c, over build/src/contpte.c's helpers and contpte/contpte_internal.h, whose
 * own mm, VMA and folios this file replaces). Here are: struct page and struct folio with the fields the
 * functions read; the atomics and bit operations; the configuration (CONFIG_DEBUG_VM=n: the checks
 * compile to nothing); and four stand-ins, named below.
 */
#ifndef LAB_COPY_INTERNAL_H
#define LAB_COPY_INTERNAL_H

#include <errno.h>
#include <stddef.h>

#define LAB_FOLIO_COUNTS
#ifdef __aarch64__
#include "contpte_internal.h"
#else
#include "pte_internal.h"
#endif

typedef struct { int counter; } atomic_t;
#define atomic_read(v)		__atomic_load_n(&(v)->counter, __ATOMIC_RELAXED)
#define atomic_set(v, i)	__atomic_store_n(&(v)->counter, (i), __ATOMIC_RELAXED)
#define atomic_inc(v)		((void)__atomic_fetch_add(&(v)->counter, 1, __ATOMIC_RELAXED))
#define atomic_add(i, v)	((void)__atomic_fetch_add(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_sub(i, v)	((void)__atomic_fetch_sub(&(v)->counter, (i), __ATOMIC_RELAXED))
#define atomic_dec_and_test(v)	(__atomic_sub_fetch(&(v)->counter, 1, __ATOMIC_SEQ_CST) == 0)
#define test_bit(nr, addr)	((*(const volatile unsigned long *)(addr) >> (nr)) & 1)
#define set_bit(nr, addr)	((void)__atomic_fetch_or((addr), 1UL << (nr), __ATOMIC_RELAXED))
#define clear_bit(nr, addr)	((void)__atomic_fetch_and((addr), ~(1UL << (nr)), __ATOMIC_RELAXED))
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define __must_check
#undef __always_inline
#define __always_inline		inline __attribute__((always_inline))
#ifdef __aarch64__
#define __lab_CONFIG_MEM_SOFT_DIRTY	0	/* arm64 has no soft-dirty bit in 6.12 */
#else
#define CONFIG_MEM_SOFT_DIRTY	1
#define IS_ENABLED(option)	(option)	/* include/linux/kconfig.h, for a symbol defined to 1 */
#endif

/* CONFIG_DEBUG_VM=n, CONFIG_DEBUG_VM_PGFLAGS=n: the checks compile to nothing */
#define VM_BUG_ON(cond)			((void)0)
#define VM_BUG_ON_PAGE(cond, page)	((void)0)
#define VM_BUG_ON_FOLIO(cond, folio)	((void)0)
#define VM_BUG_ON_PGFLAGS(cond, page)	((void)0)
#ifndef VM_WARN_ON_ONCE	/* contpte_internal.h has it */
#define VM_WARN_ON_ONCE(cond)		((void)0)
#endif
/* CONFIG_DEBUG_PAGE_REF=n: include/linux/page_ref.h's tracepoint hooks are empty */
#define page_ref_tracepoint_active(t)	false
#define __page_ref_mod(page, v)		((void)0)
#define __page_ref_mod_and_test(page, v, ret)	((void)0)

/* include/linux/page-flags.h: the bits of page->flags these functions test */
enum pageflags { PG_head = 6, PG_swapbacked = 19, PG_anon_exclusive = 20 };

/* include/linux/mm_types.h: a page, and a folio that is its first page in the memory map (a union, as the
 * kernel's folio overlays its pages), so arm64's contpte.c finds a page's index in its folio as
 * page - &folio->page; lab_folio is compound_head, lab_pfn the page's place in the map. The folio's own
 * fields sit in its first page's spare words (the kernel puts them in the first tail pages'). */
struct address_space;
struct page {
	unsigned long flags;
	struct address_space *mapping;
	atomic_t _mapcount;
	atomic_t _refcount;
	struct folio *lab_folio;
	unsigned long lab_pfn;
	unsigned long lab_folio_fields[4];
};
struct folio {
	union {
		struct {
			unsigned long flags;
			struct address_space *mapping;
			atomic_t _mapcount;
			atomic_t _refcount;
			struct folio *lab_head_folio;
			unsigned long lab_head_pfn;
			atomic_t _large_mapcount;
			atomic_t _entire_mapcount;
			atomic_t _pincount;
			unsigned long pfn;	/* folio_pfn() */
			unsigned long nr_pages;	/* folio_nr_pages() */
		};
		struct page page;
	};
};
_Static_assert(sizeof(struct folio) == sizeof(struct page), "a folio is its first page");
#define page_folio(p)			((p)->lab_folio)
#define page_to_pfn(p)			((p)->lab_pfn)
#define folio_test_large(folio)		test_bit(PG_head, &(folio)->flags)
#define folio_test_swapbacked(folio)	test_bit(PG_swapbacked, &(folio)->flags)
#define PageHuge(page)			false	/* no hugetlb folio here, */
#define compound_head(page)		(page)	/* so no page needs its head's flags */
#define folio_is_device_private(folio)	false	/* nor a ZONE_DEVICE one */

struct mm_struct { unsigned long flags; atomic_t mm_users; };
enum { MM_FILEPAGES, MM_ANONPAGES, MM_SWAPENTS, MM_SHMEMPAGES, NR_MM_COUNTERS };	/* mm_types_task.h */
typedef int __bitwise rmap_t;
enum rmap_level { RMAP_LEVEL_PTE = 0, RMAP_LEVEL_PMD };	/* rmap.h (an enum: not copied) */
#ifdef __aarch64__
struct vm_area_struct { struct mm_struct *vm_mm; unsigned long vm_flags; pgprot_t vm_page_prot; };
#define pfn_to_page(pfn)		lab_pfn_to_page(pfn)
#define folio_pfn(folio)		((folio)->pfn)
#define folio_nr_pages(folio)		((folio)->nr_pages)
#define VM_WARN_ON_FOLIO(cond, folio)	((void)0)	/* CONFIG_DEBUG_VM=n */
#else
#define VM_SHADOW_STACK		(1UL << 37)	/* VM_HIGH_ARCH_5 */
#define mk_pte(page, prot)	native_make_pte((pteval_t)page_to_pfn(page) << PAGE_SHIFT | (prot).pgprot)
#endif

/* The stand-ins: the page table's lookup (vm_normal_page: the model has no VM_PFNMAP or VM_MIXEDMAP
 * mapping, so a special PTE is the only one without a page); the page the memory map holds for a PFN;
 * the preallocated page's copy and its LRU (nothing to do here); and mm/rmap.c's
 * folio_add_new_anon_rmap() (fork-copy/harness.c: for an order-0 folio with RMAP_EXCLUSIVE it makes the
 * folio anon, maps it once and marks its page exclusive; the rest of it is the anon_vma and statistics). */
struct page *lab_pfn_to_page(unsigned long pfn);
#define vm_normal_page(vma, addr, pte)	(pte_special(pte) ? NULL : lab_pfn_to_page(pte_pfn(pte)))
#define copy_mc_user_highpage(to, from, vaddr, vma)	0
#define __folio_mark_uptodate(folio)	((void)0)
#define folio_add_lru_vma(folio, vma)	((void)0)
void __folio_put(struct folio *folio);
void folio_add_new_anon_rmap(struct folio *folio, struct vm_area_struct *vma, unsigned long address, rmap_t flags);

#endif

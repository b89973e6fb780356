/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What arch/arm64/mm/contpte.c and the contpte wrappers of arch/arm64/include/asm/pgtable.h need beyond
 * their own text, in the manner of tools/testing/vma/vma_internal.h. The functions, the PTE bits and
 * the PTE helpers are the tree's (build/src/contpte.c, copied under Debian's arm64 Kconfig symbols), and
 * so are mm/internal.h's folio_pte_batch() and mm/memory.c's __copy_present_ptes() over them; here are
 * the types, the VMA flags, the Kconfig values, the accesses to page-table memory (counted), a TLB flush
 * that only counts (tlbi traps at EL0 under qemu-user), folios reduced to a head page and a size, and the
 * configuration: no debug checks, no page-table check, no MTE, no EFI mm.
 */
#ifndef LAB_CONTPTE_INTERNAL_H
#define LAB_CONTPTE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

/* include/generated/autoconf.h of an arm64 build with 4 KiB pages */
#define CONFIG_PAGE_SHIFT		12
#define CONFIG_ARM64_CONT_PTE_SHIFT	4

typedef uint8_t u8;
typedef uint64_t u64;
typedef u64 pteval_t;
typedef u64 phys_addr_t;
typedef struct { pteval_t pte; } pte_t;		/* pgtable-types.h */
typedef struct { pteval_t pgprot; } pgprot_t;

#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#ifndef __always_inline		/* glibc's sys/cdefs.h has the same one */
#define __always_inline		inline __attribute__((__always_inline__))
#endif
#define __always_unused		__attribute__((__unused__))

/* What the copy does to page-table memory: every load, store and atomic of one PTE (the model's Ops). */
struct lab_ops {
	unsigned long loads, stores, atomics, tlb_flushes;
};
static struct lab_ops lab_ops;

/* include/asm-generic/rwonce.h: volatile accesses of the whole entry (only PTEs are read or written so) */
#define READ_ONCE(x)		(lab_ops.loads++, *(const volatile typeof(x) *)&(x))
#define WRITE_ONCE(x, val)	(lab_ops.stores++, *(volatile typeof(x) *)&(x) = (val))
/* arch/arm64/include/asm/cmpxchg.h: LSE/LL-SC without ordering; GCC's builtins, relaxed */
#define xchg_relaxed(ptr, new)	(lab_ops.atomics++, __atomic_exchange_n((ptr), (new), __ATOMIC_RELAXED))
#define cmpxchg_relaxed(ptr, old, new) ({					\
	typeof(*(ptr)) __old = (old);						\
	lab_ops.atomics++;							\
	__atomic_compare_exchange_n((ptr), &__old, (new), false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);	\
	__old;									\
})

/* CONFIG_DEBUG_VM=n: the checks compile to nothing (include/linux/mmdebug.h); an option the lab was not
 * told about does not compile */
#define IS_ENABLED(option)		__lab_##option
#define __lab_CONFIG_DEBUG_VM		0
#define VM_WARN_ON(cond)		((void)sizeof(cond))
#define VM_WARN_ON_ONCE(cond)		((void)sizeof(cond))
#define VM_WARN_ONCE(cond, ...)		((void)sizeof(cond))
bool pgattr_change_is_safe(u64 old, u64 new);

/* The mm and the VMA as contpte.c uses them: a user mm (not init_mm, not EFI's). fork-copy/copy_internal.h,
 * which builds over this file for arm64 (LAB_FOLIO_COUNTS), has its own mm, VMA, atomics and folios. */
#ifndef LAB_FOLIO_COUNTS
struct mm_struct { int mm_users; };
struct vm_area_struct { struct mm_struct *vm_mm; unsigned long vm_flags; };
#define atomic_read(v)		(*(v))
#endif
struct vm_area_struct;
struct task_struct { struct mm_struct *active_mm; };
extern struct mm_struct init_mm;	/* each harness has it */
static struct task_struct lab_task;
#define current			(&lab_task)
#define mm_is_efi(mm)		false

/* CONFIG_PAGE_TABLE_CHECK=n; no MTE; __sync_icache_dcache cleans the caches of an executable page,
 * which no mapping of the harness is (every PTE has PTE_UXN) */
#define page_table_check_ptes_set(mm, ptep, pte, nr)	do { } while (0)
#define page_table_check_pte_clear(mm, pte)		do { } while (0)
#define system_supports_mte()				false
static inline void mte_sync_tags(pte_t pte, unsigned int nr_pages) { }
static inline void __sync_icache_dcache(pte_t pte) { }

/* dsb/isb after a kernel PTE store: no harness PTE is a kernel one (all have PTE_USER) */
#define dsb(opt)		do { } while (0)
#define isb()			do { } while (0)

/* arch/arm64/include/asm/tlbflush.h issues tlbi and dsb, which trap at EL0: one counted flush */
static inline void __flush_tlb_range(struct vm_area_struct *vma, unsigned long start, unsigned long end,
				     unsigned long stride, bool last_level, int tlb_level)
{
	lab_ops.tlb_flushes++;
}

#ifndef LAB_FOLIO_COUNTS
/* A folio is its head page and its size; pages are an array indexed from the harness's first PFN, and a
 * page outside the folios the harness declares (nr_pages 0) is a folio of its own. */
struct page {
	unsigned long head;	/* index of the folio's first page */
	unsigned long nr_pages;	/* the folio's size, or 0 for a page on its own */
};
struct folio { struct page page; };
#define LAB_MAX_PAGES		(1UL << 16)
static struct page lab_pages[LAB_MAX_PAGES];
static unsigned long lab_first_pfn;
#define pfn_to_page(pfn)	(&lab_pages[(pfn) - lab_first_pfn])
#define page_to_pfn(p)		((unsigned long)((p) - lab_pages) + lab_first_pfn)
#define page_folio(p)		((struct folio *)((p)->nr_pages ? &lab_pages[(p)->head] : (p)))
#define folio_pfn(folio)	page_to_pfn(&(folio)->page)
#define folio_nr_pages(folio)	((folio)->page.nr_pages ?: 1)
#define folio_test_large(folio)	(folio_nr_pages(folio) > 1)
#define VM_WARN_ON_FOLIO(cond, folio)	((void)sizeof(cond))	/* CONFIG_DEBUG_VM=n */
#endif

/* mm/internal.h's flags of folio_pte_batch() (a typedef and macros: not copied) */
#define __bitwise
#define __force
#define BIT(n)			(1UL << (n))
typedef int __bitwise fpb_t;
#define FPB_IGNORE_DIRTY	((__force fpb_t)BIT(0))
#define FPB_IGNORE_SOFT_DIRTY	((__force fpb_t)BIT(1))
#define min(a, b)		((a) < (b) ? (a) : (b))
#define min_t(type, a, b)	min((type)(a), (type)(b))

/* __copy_present_ptes(): the VMA flags it tests (include/linux/mm.h) */
typedef unsigned long vm_flags_t;
#define VM_SHARED		0x00000008
#define VM_MAYWRITE		0x00000020
#define VM_UFFD_WP		0x00001000

/* contpte.c's entry points, as pgtable.h declares them */
void __contpte_try_fold(struct mm_struct *mm, unsigned long addr, pte_t *ptep, pte_t pte);
void __contpte_try_unfold(struct mm_struct *mm, unsigned long addr, pte_t *ptep, pte_t pte);
pte_t contpte_ptep_get(pte_t *ptep, pte_t orig_pte);
void contpte_set_ptes(struct mm_struct *mm, unsigned long addr, pte_t *ptep, pte_t pte, unsigned int nr);
void contpte_wrprotect_ptes(struct mm_struct *mm, unsigned long addr, pte_t *ptep, unsigned int nr);

#endif

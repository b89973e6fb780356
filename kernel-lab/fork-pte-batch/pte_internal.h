/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What x86-64's PTE helpers, mm/internal.h's folio_pte_batch() and mm/memory.c's __copy_present_ptes()
 * need beyond their own text, in the
 * manner of tools/testing/vma/vma_internal.h. The functions themselves are the tree's (build/src/
 * fork-pte-batch.c, with arch/x86/include/asm/pgtable_types.h's PTE bit macros); here are the types,
 * the PFN mask, a folio reduced to its first PFN and size, and the configuration: no shadow stacks, no
 * debug checks.
 */
#ifndef LAB_PTE_INTERNAL_H
#define LAB_PTE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>


typedef uint64_t u64;
typedef u64 pteval_t;
typedef u64 pgprotval_t;
typedef u64 phys_addr_t;
typedef struct { pteval_t pte; } pte_t;		/* pgtable_64_types.h */
#define __bitwise
/* include/asm-generic/rwonce.h: a volatile access of the whole entry, as ptep_get() does it */
#define READ_ONCE(x)		(*(const volatile typeof(x) *)&(x))
#define likely(x)		__builtin_expect(!!(x), 1)
#define __force
#define BIT(n)			(1UL << (n))

/* pgtable_types.h, x86-64: the _PAGE_ bits are the tree's (copied with the functions); the PFN mask is
 * written out, since the tree's chain to it (PHYSICAL_PAGE_MASK, __PHYSICAL_MASK) is configuration */
#define PAGE_SHIFT		12
#define PTE_PFN_MASK		(((1ULL << 52) - 1) & ~((1ULL << PAGE_SHIFT) - 1))	/* __PHYSICAL_MASK_SHIFT 52 */
#define PTE_FLAGS_MASK		(~PTE_PFN_MASK)
#define PFN_PTE_SHIFT		PAGE_SHIFT
#define __pte(x)		native_make_pte(x)	/* pgtable.h without CONFIG_PARAVIRT_XXL */
#define pte_val(x)		native_pte_val(x)

/* no X86_FEATURE_SHSTK in a process that did not ask for a shadow stack */
#define cpu_feature_enabled(feature)	false

/* mm/internal.h's flags of folio_pte_batch() (a typedef and macros: not copied) */
typedef int __bitwise fpb_t;
#define FPB_IGNORE_DIRTY	((__force fpb_t)BIT(0))
#define FPB_IGNORE_SOFT_DIRTY	((__force fpb_t)BIT(1))

#define min(a, b)		((a) < (b) ? (a) : (b))
#define min_t(type, a, b)	min((type)(a), (type)(b))

/* include/linux/mm_types.h: a large folio as folio_pte_batch() sees it (fork-copy/ has one with its counts) */
#ifndef LAB_FOLIO_COUNTS
struct folio {
	unsigned long pfn;
	unsigned long nr_pages;
};
#endif
#define folio_pfn(folio)	((folio)->pfn)
#define folio_nr_pages(folio)	((folio)->nr_pages)

/* __copy_present_ptes(): a VMA's flags (include/linux/mm.h) and the PTE stores it makes */
typedef unsigned long vm_flags_t;
#define PAGE_SIZE		(1UL << PAGE_SHIFT)
#define VM_SHARED		0x00000008
#define VM_MAYWRITE		0x00000020
#define VM_UFFD_WP		0x00001000
struct mm_struct;
typedef struct pgprot { pgprotval_t pgprot; } pgprot_t;	/* pgtable_types.h */
struct vm_area_struct {
	struct mm_struct *vm_mm;
	vm_flags_t vm_flags;
	pgprot_t vm_page_prot;	/* copy_present_page()'s new PTE */
};
#define WRITE_ONCE(x, val)	(*(volatile typeof(x) *)&(x) = (val))
#define try_cmpxchg(ptr, oldp, new)	\
	__atomic_compare_exchange_n((ptr), (oldp), (new), false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define set_pte(ptep, pte)	native_set_pte(ptep, pte)	/* pgtable.h without CONFIG_PARAVIRT_XXL */
#define pte_next_pfn(pte)	pte_advance_pfn(pte, 1)
#define page_table_check_ptes_set(mm, ptep, pte, nr)	do { } while (0)	/* CONFIG_PAGE_TABLE_CHECK=n */

/* CONFIG_DEBUG_VM=n: the checks compile to nothing (include/linux/mmdebug.h) */
#define VM_WARN_ON_FOLIO(cond, folio)	((void)0)

#endif

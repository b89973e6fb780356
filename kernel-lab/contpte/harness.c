// SPDX-License-Identifier: GPL-2.0
/*
 * The identity harness of arm64's contpte helpers (arch/arm64/mm/contpte.c and the wrappers of
 * arch/arm64/include/asm/pgtable.h that core mm calls) and of mm/internal.h's folio_pte_batch() over
 * them, all copied from the tree into build/src/contpte.c, over one page table of a user mm. Reads cases
 * on stdin:
 *
 *   case
 *   first PFN VPN               the first PFN a PTE of the case may map (LAB_MAX_PAGES from it), and
 *                               the virtual page number entry 0 maps (a multiple of PTRS_PER_PTE)
 *   folios K P0 N0 ... P(K-1) N(K-1)   the large folios: first PFN and size (other pages are single)
 *   ptes N W0 W1 ... W(N-1)     the table's first N entries, as arm64 PTE words (the rest are none)
 *   OP                          one of: get I | hint I PTE | wrprotect I NR | set I PTE NR |
 *                               batch I MAX_NR FPB | copy I NR PTE SRC_FLAGS DST_FLAGS
 *   child N W0 ... W(N-1)       copy only: the child's table (another mm's), as ptes gives the parent's
 *   end
 *
 * and runs ptep_get(&ptes[I]), pte_batch_hint(&ptes[I], PTE), wrprotect_ptes(mm, ADDR,
 * &ptes[I], NR), set_ptes(mm, ADDR, &ptes[I], PTE, NR), or, as copy_pte_range() and copy_present_ptes()
 * do, pte = ptep_get(&ptes[I]) and then folio_pte_batch(folio of pte, ADDR, &ptes[I], pte, MAX_NR, FPB,
 * &writable, ...), or __copy_present_ptes(dst_vma, src_vma, &child[I], &ptes[I], PTE, ADDR, NR) with the
 * VMAs' vm_flags (VM_SHARED 8, VM_MAYWRITE 32, VM_UFFD_WP 4096), entry I mapping ADDR = (VPN + I) *
 * PAGE_SIZE. Prints "ret R writable W loads L stores S atomics A flushes F ptes W0 ... W(N-1)": what the
 * call returned (the PTE, the hint, the batch's length, or 0), folio_pte_batch()'s any_writable (else 0),
 * the accesses to page-table memory and TLB flushes of the call (of folio_pte_batch() alone, not the
 * ptep_get() before it), and the entries after it (up to the last one that is not none); after a copy,
 * then "child" and the child's entries likewise.
 * Bad input: one line naming it, exit status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_lines.h"
#include "contpte_internal.h"
#include "contpte.c"

#define PTRS_PER_PTE	512	/* one page table of 4 KiB pages */

static pte_t table[PTRS_PER_PTE] __attribute__((aligned(4096)));
static pte_t child[PTRS_PER_PTE] __attribute__((aligned(4096)));
struct mm_struct init_mm;
static struct mm_struct user_mm = { .mm_users = 1 }, child_mm = { .mm_users = 1 };
static unsigned long declared;	/* lab_pages[0, declared) may hold the last case's folios */

static void expect(const char *want, int n_want)
{
	static unsigned long long v[4];
	char key[16];

	if (case_line(key, sizeof(key), v, 4) != n_want || strcmp(key, want))
		bad_case("a line is not the one the case format has next");
}

/* Every PFN a case's PTEs or folios name must have a struct page in lab_pages. */
static void check_pfn(unsigned long long pfn, unsigned long long nr)
{
	if (pfn < lab_first_pfn || pfn + nr > lab_first_pfn + LAB_MAX_PAGES || nr == 0)
		bad_case("a PFN outside the case's pages");
}

/* A line "@key N W0 ... W(N-1)" into the page table @t (the rest none). */
static void read_table(pte_t *t, const char *key_wanted)
{
	static unsigned long long v[PTRS_PER_PTE + 1];
	char key[16];
	int n, i;

	n = case_line(key, sizeof(key), v, PTRS_PER_PTE + 1);
	if (n < 1 || strcmp(key, key_wanted) || n != 1 + (int)v[0])
		bad_case("ptes N, then N PTE words (child N likewise)");
	memset(t, 0, PTRS_PER_PTE * sizeof(*t));
	for (i = 0; i < (int)v[0]; i++) {
		t[i] = __pte(v[1 + i]);
		if (pte_valid(t[i]))
			check_pfn(pte_pfn(t[i]), 1);
	}
}

static void print_table(const pte_t *t)
{
	int i, n;

	for (n = PTRS_PER_PTE; n > 0 && !pte_val(t[n - 1]); n--)
		;
	for (i = 0; i < n; i++)
		printf(" %llu", (unsigned long long)pte_val(t[i]));
}

static void run_case(void)
{
	static unsigned long long v[2 * PTRS_PER_PTE + 1];
	unsigned long long ret = 0;
	bool writable = false, young, dirty;
	unsigned long addr;
	char key[16];
	int n, i;

	if (case_line(key, sizeof(key), v, 2) != 2 || strcmp(key, "first") || v[1] % PTRS_PER_PTE)
		bad_case("a case starts with first PFN VPN, VPN a multiple of PTRS_PER_PTE");
	lab_first_pfn = v[0];
	addr = v[1] * PAGE_SIZE;
	memset(lab_pages, 0, sizeof(lab_pages[0]) * declared);
	declared = 0;
	n = case_line(key, sizeof(key), v, 2 * PTRS_PER_PTE + 1);
	if (n < 1 || strcmp(key, "folios") || n != 1 + 2 * (int)v[0])
		bad_case("folios K, then K pairs of PFN and size");
	for (i = 0; i < (int)v[0]; i++) {
		unsigned long long pfn = v[1 + 2 * i], nr = v[2 + 2 * i], k;

		check_pfn(pfn, nr);
		for (k = 0; k < nr; k++)
			lab_pages[pfn - lab_first_pfn + k] = (struct page){ .head = pfn - lab_first_pfn, .nr_pages = nr };
		if (pfn - lab_first_pfn + nr > declared)
			declared = pfn - lab_first_pfn + nr;
	}
	read_table(table, "ptes");
	n = case_line(key, sizeof(key), v, 5);
	if (n < 1 || v[0] >= PTRS_PER_PTE)
		bad_case("an operation on an entry outside the table");
	addr += v[0] * PAGE_SIZE;
	lab_ops = (struct lab_ops){ 0 };
	if (!strcmp(key, "get") && n == 1) {
		ret = pte_val(ptep_get(&table[v[0]]));
	} else if (!strcmp(key, "hint") && n == 2) {
		ret = pte_batch_hint(&table[v[0]], __pte(v[1]));
	} else if (!strcmp(key, "wrprotect") && n == 2 && v[1] >= 1 && v[0] + v[1] <= PTRS_PER_PTE) {
		wrprotect_ptes(&user_mm, addr, &table[v[0]], v[1]);
	} else if (!strcmp(key, "set") && n == 3 && v[2] >= 1 && v[0] + v[2] <= PTRS_PER_PTE) {
		check_pfn(pte_pfn(__pte(v[1])), v[2]);
		set_ptes(&user_mm, addr, &table[v[0]], __pte(v[1]), v[2]);
	} else if (!strcmp(key, "batch") && n == 3 && v[1] >= 1 && v[0] + v[1] <= PTRS_PER_PTE &&
		   v[2] <= (FPB_IGNORE_DIRTY | FPB_IGNORE_SOFT_DIRTY)) {
		pte_t pte = ptep_get(&table[v[0]]);
		struct folio *folio = page_folio(pfn_to_page(pte_pfn(pte)));

		if (!pte_valid(pte) || !folio_test_large(folio))
			bad_case("batch I: entry I must map a page of a large folio");
		lab_ops = (struct lab_ops){ 0 };
		ret = folio_pte_batch(folio, addr, &table[v[0]], pte, v[1], v[2], &writable, &young, &dirty);
	} else if (!strcmp(key, "copy") && n == 5 && v[1] >= 1 && v[0] + v[1] <= PTRS_PER_PTE) {
		struct vm_area_struct src = { &user_mm, v[3] }, dst = { &child_mm, v[4] };

		check_pfn(pte_pfn(__pte(v[2])), v[1]);
		read_table(child, "child");
		lab_ops = (struct lab_ops){ 0 };
		__copy_present_ptes(&dst, &src, &child[v[0]], &table[v[0]], __pte(v[2]), addr, v[1]);
	} else {
		bad_case("get I, hint I PTE, wrprotect I NR, set I PTE NR, batch I MAX_NR FPB or copy I NR PTE SRC DST, "
		    "within the table");
	}
	printf("ret %llu writable %d loads %lu stores %lu atomics %lu flushes %lu ptes", ret, writable, lab_ops.loads,
	       lab_ops.stores, lab_ops.atomics, lab_ops.tlb_flushes);
	print_table(table);
	if (!strcmp(key, "copy")) {
		printf(" child");
		print_table(child);
	}
	printf("\n");
	expect("end", 0);
}

int main(void)
{
	static unsigned long long none[1];
	char key[16];
	int n;

	case_prog = "contpte";
	while ((n = case_line(key, sizeof(key), none, 0)) >= 0) {
		if (strcmp(key, "case"))
			bad_case("a case starts with case");
		run_case();
	}
	return 0;
}

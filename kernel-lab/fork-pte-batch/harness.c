// SPDX-License-Identifier: GPL-2.0
/*
 * The identity harness of mm/internal.h's folio_pte_batch() over x86-64's own PTE helpers (copied
 * from the tree into build/src/fork-pte-batch.c). Reads cases on stdin:
 *
 *   case
 *   folio PFN NR_PAGES          the large folio the first PTE maps
 *   flags FPB                   FPB_IGNORE_DIRTY (1) | FPB_IGNORE_SOFT_DIRTY (2)
 *   ptes N W0 W1 ... W(N-1)     a page table's entries, as x86-64 PTE words
 *   batch I MAX_NR              folio_pte_batch(folio, addr, &ptes[I], ptep_get(&ptes[I]), MAX_NR, ...)
 *   end
 *
 * and prints, per case, "nr N writable W young Y dirty D"; or
 *
 *   case
 *   vma SRC_FLAGS DST_FLAGS     the VMAs' vm_flags (VM_SHARED 8, VM_MAYWRITE 32, VM_UFFD_WP 4096)
 *   ptes N W0 ... W(N-1)        the parent's N entries of one batch
 *   copy TEMPLATE               __copy_present_ptes(dst, src, child, parent, TEMPLATE, 0, N)
 *   end
 *
 * and prints "parent W0 ... child W0 ...", both tables after. Bad input: one line, exit status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_lines.h"
#include "pte_internal.h"
#include "fork-pte-batch.c"

#define MAX_PTES 512	/* PTRS_PER_PTE: one page table */

/* The next line: @key and exactly @n numbers into @v (room for n + 1). */
static void expect(const char *key, unsigned long long *v, int n)
{
	if (case_words(key, v, n + 1) != n)
		bad_case("the wrong count of numbers");
}

/* "ptes N W0 ... W(N-1)" into @ptes; N. */
static int read_ptes(pte_t *ptes)
{
	static unsigned long long v[MAX_PTES + 1];
	int n = case_words("ptes", v, MAX_PTES + 1), i;

	if (n < 2 || v[0] != (unsigned long long)n - 1)
		bad_case("ptes N takes N words, 1 <= N <= 512");
	for (i = 0; i < n - 1; i++)
		ptes[i] = native_make_pte(v[i + 1]);
	return n - 1;
}

/* The parent's and the child's entries of one batch, after __copy_present_ptes(). */
static void copy_case(vm_flags_t src_flags, vm_flags_t dst_flags)
{
	static pte_t parent[MAX_PTES], child[MAX_PTES];
	struct vm_area_struct src = { .vm_flags = src_flags }, dst = { .vm_flags = dst_flags };
	unsigned long long template;
	int n = read_ptes(parent), i;

	for (i = 0; i < n; i++)
		child[i] = native_make_pte(0);
	expect("copy", &template, 1);
	expect("end", &template, 0);
	__copy_present_ptes(&dst, &src, child, parent, native_make_pte(template), 0, n);
	printf("parent");
	for (i = 0; i < n; i++)
		printf(" %llu", (unsigned long long)parent[i].pte);
	printf(" child");
	for (i = 0; i < n; i++)
		printf(" %llu", (unsigned long long)child[i].pte);
	printf("\n");
}

int main(void)
{
	static pte_t ptes[MAX_PTES];
	unsigned long long v[4];
	char key[8];

	case_prog = "fork-pte-batch";
	while (case_line(key, sizeof(key), v, 0) >= 0) {
		struct folio folio;
		bool writable, young, dirty;
		fpb_t flags;
		int n, nr;

		if (strcmp(key, "case"))
			bad_case("a line is not the one the case format has next");
		if (case_line(key, sizeof(key), v, 3) != 2 || (strcmp(key, "folio") && strcmp(key, "vma")))
			bad_case("folio PFN NR_PAGES or vma SRC_FLAGS DST_FLAGS");
		if (!strcmp(key, "vma")) {
			copy_case(v[0], v[1]);
			continue;
		}
		folio = (struct folio){ v[0], v[1] };
		expect("flags", v, 1);
		flags = v[0];
		n = read_ptes(ptes);
		expect("batch", v, 2);
		if (v[0] >= (unsigned long long)n || v[1] < 1 || v[0] + v[1] > (unsigned long long)n)
			bad_case("the batch must start at an entry and stay inside the table");
		nr = folio_pte_batch(&folio, 0, &ptes[v[0]], ptep_get(&ptes[v[0]]), v[1], flags, &writable, &young,
				     &dirty);
		expect("end", v, 0);
		printf("nr %d writable %d young %d dirty %d\n", nr, writable, young, dirty);
	}
	return 0;
}

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

#include "pte_internal.h"
#include "fork-pte-batch.c"

#define MAX_PTES 512	/* PTRS_PER_PTE: one page table */

static unsigned long line_no;

static void __attribute__((noreturn)) bad(const char *what)
{
	fprintf(stderr, "fork-pte-batch: stdin line %lu: %s\n", line_no, what);
	exit(2);
}

/* The next line: @key, then @n decimal numbers (n < 0: up to MAX_PTES + 1) into @v; their count. */
static int words(const char *key, unsigned long long *v, int n)
{
	static char line[MAX_PTES * 24];
	char *tok, *end, *save;
	int got = 0;

	if (!fgets(line, sizeof(line), stdin))
		bad("the input ends inside a case");
	line_no++;
	line[strcspn(line, "\n")] = 0;
	tok = strtok_r(line, " ", &save);
	if (!tok || (strcmp(tok, key) && !(!strcmp(key, "folio") && !strcmp(tok, "vma"))))
		bad("a line is not the one the case format has next");
	if (!strcmp(tok, "vma"))
		got = -1;	/* the copy case */
	if (got < 0) {
		while ((tok = strtok_r(NULL, " ", &save)) && got < 1) {
			v[++got] = strtoull(tok, &end, 10);
			if (*tok < '0' || *tok > '9' || *end)
				bad("not a decimal number");
		}
		if (got != 1 || tok)
			bad("vma takes two numbers");
		return -1;
	}
	while ((tok = strtok_r(NULL, " ", &save))) {
		if (got > MAX_PTES || *tok < '0' || *tok > '9')
			bad("not a decimal number, or too many");
		v[got++] = strtoull(tok, &end, 10);
		if (*end)
			bad("not a decimal number");
	}
	if (n >= 0 && got != n)
		bad("the wrong count of numbers");
	return got;
}

/* The parent's and the child's entries of one batch, after __copy_present_ptes(). */
static void copy_case(vm_flags_t src_flags, vm_flags_t dst_flags)
{
	static unsigned long long v[MAX_PTES + 2];
	static pte_t parent[MAX_PTES], child[MAX_PTES];
	struct vm_area_struct src = { NULL, src_flags }, dst = { NULL, dst_flags };
	int n, i;

	n = words("ptes", v, -1);
	if (n < 2 || v[0] != (unsigned long long)n - 1)
		bad("ptes N takes N words, 1 <= N <= 512");
	for (i = 0; i < n - 1; i++) {
		parent[i] = native_make_pte(v[i + 1]);
		child[i] = native_make_pte(0);
	}
	words("copy", v + 1, 1);
	words("end", v + 2, 0);
	__copy_present_ptes(&dst, &src, child, parent, native_make_pte(v[1]), 0, n - 1);
	printf("parent");
	for (i = 0; i < n - 1; i++)
		printf(" %llu", (unsigned long long)parent[i].pte);
	printf(" child");
	for (i = 0; i < n - 1; i++)
		printf(" %llu", (unsigned long long)child[i].pte);
	printf("\n");
}

int main(void)
{
	static unsigned long long v[MAX_PTES + 2];
	static pte_t ptes[MAX_PTES];
	int c, n, i;

	while ((c = getc(stdin)) != EOF) {
		struct folio folio;
		bool writable, young, dirty;
		fpb_t flags;
		int nr;

		ungetc(c, stdin);
		words("case", v, 0);
		if (words("folio", v, 2) < 0) {
			copy_case(v[0], v[1]);
			continue;
		}
		folio = (struct folio){ v[0], v[1] };
		words("flags", v, 1);
		flags = v[0];
		n = words("ptes", v, -1);
		if (n < 1 || v[0] != (unsigned long long)n - 1 || v[0] > MAX_PTES)
			bad("ptes N takes N words, 1 <= N <= 512");
		for (i = 0; i < n - 1; i++)
			ptes[i] = native_make_pte(v[i + 1]);
		words("batch", v, 2);
		if (v[0] >= (unsigned long long)n - 1 || v[1] < 1 || v[0] + v[1] > (unsigned long long)n - 1)
			bad("the batch must start at an entry and stay inside the table");
		i = v[0];
		nr = folio_pte_batch(&folio, 0, &ptes[i], ptep_get(&ptes[i]), v[1], flags, &writable, &young, &dirty);
		words("end", v, 0);
		printf("nr %d writable %d young %d dirty %d\n", nr, writable, young, dirty);
	}
	return 0;
}

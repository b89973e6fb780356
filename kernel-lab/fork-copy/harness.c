// SPDX-License-Identifier: GPL-2.0
/*
 * The identity harness of mm/memory.c's copy_present_ptes(), with include/linux/rmap.h's
 * folio_try_dup_anon_rmap_pte(s)/folio_dup_file_rmap_pte(s), the refcount and pin queries and
 * copy_present_page() (copied from the tree into build/src/fork-copy.c) over x86-64's PTE helpers
 * (build/src/fork-pte-batch.c). Reads cases on stdin:
 *
 *   case
 *   mm PINNED                   MMF_HAS_PINNED in the parent's mm->flags (0 or 1)
 *   vma FLAGS DST_FLAGS PROT    the source VMA's vm_flags, the child's, the child's vm_page_prot (x86-64 bits)
 *   folio PFN NR KIND REF PIN LARGE   a folio: KIND 0 anon, 1 page cache, 2 shmem, 3 a preallocated page
 *                               not mapped yet; folio->_refcount, _pincount, _large_mapcount + 1
 *   pages M0 ... M(NR-1)        each page's _mapcount + 1 (an order-0 folio: folio->_mapcount + 1)
 *   excl E0 ... E(NR-1)         PageAnonExclusive of each page
 *   ...                         (as many folios as the entries map, and the preallocated one)
 *   prealloc PFN                the preallocated folio's PFN, 0: none
 *   ptes N W0 ... W(N-1)        the parent's entries from the one being copied on (max_nr = N)
 *   end
 *
 * and prints, per case, one line: "ret R rss F A S H", then per folio in input order "folio REF LARGE
 * M0 ... E0 ...", then "prealloc 0|1" (whether it is still there) and "child W0 ... W(N-1)". Bad input:
 * one line, exit status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "copy_internal.h"
#include "fork-pte-batch.c"
#include "fork-copy.c"

#define MAX_PTES 512	/* PTRS_PER_PTE: one page table */
#define MAX_FOLIOS 64
#define MAX_PFN (1UL << 16)

static struct page memmap[MAX_PFN];
static struct folio folios[MAX_FOLIOS];
static unsigned long line_no;

static void __attribute__((noreturn)) bad(const char *what)
{
	fprintf(stderr, "fork-copy: stdin line %lu: %s\n", line_no, what);
	exit(2);
}

struct page *lab_pfn_to_page(unsigned long pfn)
{
	if (pfn >= MAX_PFN || !memmap[pfn].lab_folio)
		bad("an entry maps a page of no folio the case gives");
	return &memmap[pfn];
}

void __folio_put(struct folio *folio)
{
	bad("copy_present_ptes() freed a folio: its refcount was too low");
}

void folio_add_new_anon_rmap(struct folio *folio, struct vm_area_struct *vma, unsigned long address, rmap_t flags)
{
	folio->mapping = (struct address_space *)PAGE_MAPPING_ANON;
	atomic_set(&folio->_mapcount, 0);
	if (flags & RMAP_EXCLUSIVE)
		SetPageAnonExclusive(lab_pfn_to_page(folio->pfn));
}

/* The next line: @key, then up to MAX_PTES + 1 signed decimal numbers into @v; their count. */
static int words(const char *key, long long *v)
{
	static char line[MAX_PTES * 24];
	char *tok, *end, *save;
	int got = 0;

	if (!fgets(line, sizeof(line), stdin))
		bad("the input ends inside a case");
	line_no++;
	line[strcspn(line, "\n")] = 0;
	tok = strtok_r(line, " ", &save);
	if (!tok || strcmp(tok, key))
		bad("a line is not the one the case format has next");
	while ((tok = strtok_r(NULL, " ", &save))) {
		if (got > MAX_PTES)
			bad("too many numbers");
		v[got++] = strtoll(tok, &end, 10);
		if (end == tok || *end)
			bad("not a decimal number");
	}
	return got;
}

static void expect(int got, int want, const char *what)
{
	if (got != want)
		bad(what);
}

static bool next_is(const char *key)
{
	int c = getc(stdin);

	ungetc(c, stdin);
	return c == key[0];
}

/* Reads one folio's three lines into folios[k] and the memory map. */
static void read_folio(int k)
{
	static long long v[MAX_PTES + 2], m[MAX_PTES + 2], e[MAX_PTES + 2];
	struct folio *f = &folios[k];
	unsigned long p;
	int nr;

	expect(words("folio", v), 6, "folio takes PFN NR KIND REF PIN LARGE");
	nr = v[1];
	if (v[0] <= 0 || v[0] + nr > (long long)MAX_PFN || nr < 1 || nr > MAX_PTES || (nr & (nr - 1)) ||
	    v[0] % nr || v[2] < 0 || v[2] > 3)
		bad("a folio is NR (a power of two up to 512) pages at a PFN aligned to NR, of KIND 0-3");
	for (p = v[0]; p < (unsigned long)(v[0] + nr); p++)
		if (memmap[p].lab_folio)
			bad("two folios overlap");
	expect(words("pages", m), nr, "pages takes one number per page");
	expect(words("excl", e), nr, "excl takes one number per page");
	memset(f, 0, sizeof(*f));
	f->pfn = v[0];
	f->nr_pages = nr;
	f->page.lab_folio = f;
	f->page.lab_pfn = v[0];
	if (nr > 1)
		set_bit(PG_head, &f->flags);
	if (v[2] == 0)
		f->mapping = (struct address_space *)PAGE_MAPPING_ANON;
	if (v[2] == 2)
		set_bit(PG_swapbacked, &f->flags);
	atomic_set(&f->_refcount, v[3]);
	atomic_set(&f->_pincount, v[4]);
	atomic_set(&f->_large_mapcount, v[5] - 1);
	if (nr == 1)
		atomic_set(&f->_mapcount, m[0] - 1);
	for (p = 0; p < (unsigned long)nr; p++) {
		struct page *page = &memmap[f->pfn + p];

		memset(page, 0, sizeof(*page));
		page->lab_folio = f;
		page->lab_pfn = f->pfn + p;
		atomic_set(&page->_mapcount, nr == 1 ? -1 : m[p] - 1);
		if (e[p])
			set_bit(PG_anon_exclusive, &page->flags);
	}
}

static void one_case(void)
{
	static long long v[MAX_PTES + 2];
	static pte_t parent[MAX_PTES], child[MAX_PTES];
	struct mm_struct src_mm = { 0 }, dst_mm = { 0 };
	struct vm_area_struct src = { .vm_mm = &src_mm }, dst = { .vm_mm = &dst_mm };
	struct folio *prealloc = NULL;
	int rss[NR_MM_COUNTERS] = { 0 };
	int nfolios = 0, n, i, k, ret;
	unsigned long p;

	expect(words("case", v), 0, "case takes no numbers");
	expect(words("mm", v), 1, "mm takes PINNED");
	if (v[0])
		set_bit(MMF_HAS_PINNED, &src_mm.flags);
	expect(words("vma", v), 3, "vma takes FLAGS DST_FLAGS PROT");
	src.vm_flags = v[0];
	dst.vm_flags = v[1];
	dst.vm_page_prot.pgprot = v[2];
	src.vm_page_prot.pgprot = v[2];
	while (next_is("folio")) {
		if (nfolios == MAX_FOLIOS)
			bad("too many folios");
		read_folio(nfolios++);
	}
	expect(words("prealloc", v), 1, "prealloc takes a PFN");
	if (v[0]) {
		prealloc = page_folio(lab_pfn_to_page(v[0]));
		if (prealloc->pfn != (unsigned long)v[0])
			bad("the preallocated folio is not one the case gives");
	}
	n = words("ptes", v);
	if (n < 2 || v[0] != n - 1)
		bad("ptes N takes N words, 1 <= N <= 512");
	for (i = 0; i < n - 1; i++) {
		parent[i] = native_make_pte(v[i + 1]);
		child[i] = native_make_pte(0);
	}
	expect(words("end", v), 0, "end takes no numbers");

	ret = copy_present_ptes(&dst, &src, child, parent, ptep_get(&parent[0]), 0, n - 1, rss, &prealloc);

	printf("ret %d rss %d %d %d %d", ret, rss[MM_FILEPAGES], rss[MM_ANONPAGES], rss[MM_SWAPENTS],
	       rss[MM_SHMEMPAGES]);
	for (k = 0; k < nfolios; k++) {
		struct folio *f = &folios[k];

		printf(" folio %d %d", atomic_read(&f->_refcount), atomic_read(&f->_large_mapcount) + 1);
		for (p = 0; p < f->nr_pages; p++)
			printf(" %d", (f->nr_pages == 1 ? atomic_read(&f->_mapcount) :
				       atomic_read(&memmap[f->pfn + p]._mapcount)) + 1);
		for (p = 0; p < f->nr_pages; p++)
			printf(" %d", (int)PageAnonExclusive(&memmap[f->pfn + p]));
	}
	printf(" prealloc %d child", prealloc != NULL);
	for (i = 0; i < n - 1; i++)
		printf(" %llu", (unsigned long long)child[i].pte);
	printf("\n");
	for (k = 0; k < nfolios; k++)
		for (p = 0; p < folios[k].nr_pages; p++)
			memmap[folios[k].pfn + p].lab_folio = NULL;
}

int main(void)
{
	int c;

	while ((c = getc(stdin)) != EOF) {
		ungetc(c, stdin);
		one_case();
	}
	return 0;
}

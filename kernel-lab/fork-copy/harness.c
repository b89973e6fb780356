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

#include "case_lines.h"
#include "copy_internal.h"
#include "fork-pte-batch.c"
#include "fork-copy.c"

#define MAX_PTES 512	/* PTRS_PER_PTE: one page table */
#define MAX_FOLIOS 64
#define MAX_PFN (1UL << 16)

static struct page memmap[MAX_PFN];
static struct folio folios[MAX_FOLIOS];

struct page *lab_pfn_to_page(unsigned long pfn)
{
	if (pfn >= MAX_PFN || !memmap[pfn].lab_folio)
		bad_case("an entry maps a page of no folio the case gives");
	return &memmap[pfn];
}

void __folio_put(struct folio *folio)
{
	bad_case("copy_present_ptes() freed a folio: its refcount was too low");
}

void folio_add_new_anon_rmap(struct folio *folio, struct vm_area_struct *vma, unsigned long address, rmap_t flags)
{
	folio->mapping = (struct address_space *)PAGE_MAPPING_ANON;
	atomic_set(&folio->_mapcount, 0);
	if (flags & RMAP_EXCLUSIVE)
		SetPageAnonExclusive(lab_pfn_to_page(folio->pfn));
}

/* The next line: @key and @want numbers into @v (room for want + 1), else bad_case(@what). */
static void expect(const char *key, unsigned long long *v, int want, const char *what)
{
	if (case_words(key, v, want + 1) != want)
		bad_case(what);
}

/* Reads one folio into folios[k] and the memory map: its folio line's numbers @v, then its pages and excl
 * lines. */
static void read_folio(int k, const unsigned long long *v)
{
	static unsigned long long m[MAX_PTES + 1], e[MAX_PTES + 1];
	struct folio *f = &folios[k];
	unsigned long p;
	unsigned long long nr = v[1];

	if (v[0] == 0 || v[0] + nr > MAX_PFN || nr < 1 || nr > MAX_PTES || (nr & (nr - 1)) || v[0] % nr || v[2] > 3)
		bad_case("a folio is NR (a power of two up to 512) pages at a PFN aligned to NR, of KIND 0-3");
	for (p = v[0]; p < v[0] + nr; p++)
		if (memmap[p].lab_folio)
			bad_case("two folios overlap");
	expect("pages", m, nr, "pages takes one number per page");
	expect("excl", e, nr, "excl takes one number per page");
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
	for (p = 0; p < nr; p++) {
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
	static unsigned long long v[MAX_PTES + 1];
	static pte_t parent[MAX_PTES], child[MAX_PTES];
	struct mm_struct src_mm = { 0 }, dst_mm = { 0 };
	struct vm_area_struct src = { .vm_mm = &src_mm }, dst = { .vm_mm = &dst_mm };
	struct folio *prealloc = NULL;
	int rss[NR_MM_COUNTERS] = { 0 };
	int nfolios = 0, n, i, k, ret;
	char key[16];
	unsigned long p;

	expect("mm", v, 1, "mm takes PINNED");
	if (v[0])
		set_bit(MMF_HAS_PINNED, &src_mm.flags);
	expect("vma", v, 3, "vma takes FLAGS DST_FLAGS PROT");
	src.vm_flags = v[0];
	dst.vm_flags = v[1];
	dst.vm_page_prot.pgprot = v[2];
	src.vm_page_prot.pgprot = v[2];
	while ((n = case_line(key, sizeof(key), v, 7)) >= 0 && !strcmp(key, "folio")) {
		if (n != 6)
			bad_case("folio takes PFN NR KIND REF PIN LARGE");
		if (nfolios == MAX_FOLIOS)
			bad_case("too many folios");
		read_folio(nfolios++, v);
	}
	if (n != 1 || strcmp(key, "prealloc"))
		bad_case("prealloc takes a PFN");
	if (v[0]) {
		prealloc = page_folio(lab_pfn_to_page(v[0]));
		if (prealloc->pfn != (unsigned long)v[0])
			bad_case("the preallocated folio is not one the case gives");
	}
	n = case_words("ptes", v, MAX_PTES + 1);
	if (n < 2 || v[0] != (unsigned long long)n - 1)
		bad_case("ptes N takes N words, 1 <= N <= 512");
	for (i = 0; i < n - 1; i++) {
		parent[i] = native_make_pte(v[i + 1]);
		child[i] = native_make_pte(0);
	}
	expect("end", v, 0, "end takes no numbers");

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
	unsigned long long none[1];
	char key[8];

	case_prog = "fork-copy";
	while (case_line(key, sizeof(key), none, 0) >= 0) {
		if (strcmp(key, "case"))
			bad_case("a line is not the one the case format has next");
		one_case();
	}
	return 0;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The identity harness of mm/memory.c's copy_present_ptes(), with include/linux/rmap.h's
 * folio_try_dup_anon_rmap_pte(s)/folio_dup_file_rmap_pte(s), the refcount and pin queries and
 * copy_present_page() (copied from the tree into build/src/fork-copy.c) over x86-64's PTE helpers
 * (build/src/fork-pte-batch.c), or, built for arm64, (build/src/arm64/fork-copy.c) over arm64's with
 * contpte.c behind them (build/src/contpte.c), whose ptep_get(), wrprotect_ptes() and set_ptes() read and
 * fold whole 16-entry blocks aligned by address and by pointer: the case gives both page tables whole,
 * from their first entry, mapped at an address aligned as the kernel's are. Reads cases on stdin:
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
 *   ptes N W0 ... W(N-1)        the parent's page table from its first entry (the rest none)
 *   child N W0 ... W(N-1)       the child's, likewise (N the same)
 *   copy VPN I NR               entry 0 maps virtual page VPN (a multiple of PTRS_PER_PTE); copy from
 *                               entry I, max_nr = NR
 *   end
 *
 * and prints, per case, one line: "ret R rss F A S H", then per folio in input order "folio REF LARGE
 * M0 ... E0 ...", then "prealloc 0|1" (whether it is still there), "parent W0 ... W(N-1)" and
 * "child W0 ... W(N-1)" after the call. Bad input: one line, exit status 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "case_lines.h"
#include "copy_internal.h"
#ifdef __aarch64__
#include "contpte.c"
struct mm_struct init_mm;
#else
#include "fork-pte-batch.c"
#endif
#include "fork-copy.c"

#define MAX_PTES 512	/* PTRS_PER_PTE: one page table */
#define MAX_FOLIOS 64
#define MAX_PFN (1UL << 16)

static struct page memmap[MAX_PFN];
static struct folio *folios[MAX_FOLIOS];	/* each its first page in memmap */

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

/* Reads one folio into the memory map and folios[k]: its folio line's numbers @v, then its pages and excl
 * lines. */
static void read_folio(int k, const unsigned long long *v)
{
	static unsigned long long m[MAX_PTES + 1], e[MAX_PTES + 1];
	struct folio *f;
	unsigned long p;
	unsigned long long nr = v[1];

	if (v[0] == 0 || v[0] + nr > MAX_PFN || nr < 1 || nr > MAX_PTES || (nr & (nr - 1)) || v[0] % nr || v[2] > 3)
		bad_case("a folio is NR (a power of two up to 512) pages at a PFN aligned to NR, of KIND 0-3");
	for (p = v[0]; p < v[0] + nr; p++)
		if (memmap[p].lab_folio)
			bad_case("two folios overlap");
	expect("pages", m, nr, "pages takes one number per page");
	expect("excl", e, nr, "excl takes one number per page");
	f = folios[k] = (struct folio *)&memmap[v[0]];
	for (p = 0; p < nr; p++) {
		struct page *page = &memmap[v[0] + p];

		memset(page, 0, sizeof(*page));
		page->lab_folio = f;
		page->lab_pfn = v[0] + p;
		atomic_set(&page->_mapcount, m[p] - 1);	/* an order-0 folio's _mapcount is its page's */
		if (e[p])
			set_bit(PG_anon_exclusive, &page->flags);
	}
	f->pfn = v[0];
	f->nr_pages = nr;
	if (nr > 1)
		set_bit(PG_head, &f->flags);
	if (v[2] == 0)
		f->mapping = (struct address_space *)PAGE_MAPPING_ANON;
	if (v[2] == 2)
		set_bit(PG_swapbacked, &f->flags);
	atomic_set(&f->_refcount, v[3]);
	atomic_set(&f->_pincount, v[4]);
	atomic_set(&f->_large_mapcount, v[5] - 1);
}

/* A line "@key N W0 ... W(N-1)" into the page table @t, the rest none; returns N. */
static int read_table(const char *key, pte_t *t)
{
	static unsigned long long w[MAX_PTES + 2];
	int n = case_words(key, w, MAX_PTES + 2), i;

	if (n < 2 || w[0] != (unsigned long long)n - 1)
		bad_case("ptes N and child N take N words, 1 <= N <= 512");
	for (i = 0; i < MAX_PTES; i++)
		t[i] = __pte(i < n - 1 ? w[i + 1] : 0);
	return n - 1;
}

static void one_case(void)
{
	static unsigned long long v[MAX_PTES + 1];
	static pte_t parent[MAX_PTES] __attribute__((aligned(4096))), child[MAX_PTES] __attribute__((aligned(4096)));
	struct mm_struct src_mm = { .mm_users = { 1 } }, dst_mm = { .mm_users = { 1 } };
	struct vm_area_struct src = { .vm_mm = &src_mm }, dst = { .vm_mm = &dst_mm };
	struct folio *prealloc = NULL;
	int rss[NR_MM_COUNTERS] = { 0 };
	int nfolios = 0, n, i, k, ret, start, nr;
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
	n = read_table("ptes", parent);
	if (read_table("child", child) != n)
		bad_case("child N takes as many words as ptes N");
	expect("copy", v, 3, "copy takes VPN I NR");
	if (v[0] % MAX_PTES || v[1] >= n || v[2] < 1 || v[1] + v[2] > n)
		bad_case("copy VPN I NR: VPN a multiple of 512, entries I to I + NR - 1 in the table");
	start = v[1];
	nr = v[2];
	expect("end", v, 0, "end takes no numbers");

	ret = copy_present_ptes(&dst, &src, &child[start], &parent[start], ptep_get(&parent[start]),
				(v[0] + start) * PAGE_SIZE, nr, rss, &prealloc);

	printf("ret %d rss %d %d %d %d", ret, rss[MM_FILEPAGES], rss[MM_ANONPAGES], rss[MM_SWAPENTS],
	       rss[MM_SHMEMPAGES]);
	for (k = 0; k < nfolios; k++) {
		struct folio *f = folios[k];

		printf(" folio %d %d", atomic_read(&f->_refcount), atomic_read(&f->_large_mapcount) + 1);
		for (p = 0; p < f->nr_pages; p++)
			printf(" %d", atomic_read(&memmap[f->pfn + p]._mapcount) + 1);
		for (p = 0; p < f->nr_pages; p++)
			printf(" %d", (int)PageAnonExclusive(&memmap[f->pfn + p]));
	}
	printf(" prealloc %d parent", prealloc != NULL);
	for (i = 0; i < n; i++)
		printf(" %llu", (unsigned long long)pte_val(parent[i]));
	printf(" child");
	for (i = 0; i < n; i++)
		printf(" %llu", (unsigned long long)pte_val(child[i]));
	printf("\n");
	for (k = 0; k < nfolios; k++)
		for (p = 0; p < folios[k]->nr_pages; p++)
			memmap[folios[k]->pfn + p].lab_folio = NULL;
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

// SPDX-License-Identifier: GPL-2.0
/*
 * fork-batch: fork's page-table copy over synthetic page tables, from a scenario's parameters.
 *
 *   fork-batch PARAMS      PARAMS: one key=value a line (kstep.lab.fork_params writes them)
 *
 * The parent's page tables are built from the scenario as simulator/kstep/models/fork_batch.py's
 * initial_state builds them (folios aligned to their size from PFN 1024, each [[maps]] entry one
 * set_ptes, then its toggles); dup_mmap then copies them and the program prints every copy, the
 * counters, the child's rss, both page tables and the folios' counts, for the identity test to
 * compare with the simulator's.  A bad parameter is one line on stderr and exit status 2.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fork.h"

#define FIRST_PFN	1024
#define ZERO_PFN	1
#define MAX_ITEMS	64
#define MAX_PAGES	(4 * PTRS_PER_PTE)

enum { T_WRITE, T_DIRTY, T_YOUNG, T_SOFT_DIRTY, T_UFFD_WP, NR_TOGGLES };
static const char *const toggle_names[NR_TOGGLES] = { "write", "dirty", "young", "soft_dirty", "uffd_wp" };
static const pte_t toggle_bits[NR_TOGGLES] = { PTE_WRITE, PTE_DIRTY, PTE_YOUNG, PTE_SOFT_DIRTY, PTE_UFFD_WP };

struct map {
	long at, first, pages;
	long folio;			/* index, or ZERO_MAP / SWAP_MAP */
	bool bit[NR_TOGGLES], exclusive;
	bool toggle[NR_TOGGLES][PTRS_PER_PTE];
};
#define ZERO_MAP (-1)
#define SWAP_MAP (-2)

struct scenario {
	enum pte_format fmt;
	enum strategy strategy;
	bool mmf_has_pinned;
	int nr_vmas, nr_folios, nr_maps;
	struct vma vmas[MAX_ITEMS];
	struct { int order; enum folio_kind kind; bool pinned; } folios[MAX_ITEMS];
	struct map maps[MAX_ITEMS];
};

static const char *where;

static void __attribute__((noreturn, format(printf, 1, 2))) bad(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "fork-batch: %s: ", where);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(2);
}

static long number(const char *value, long lo, long hi)
{
	char *end;
	long n;

	errno = 0;
	n = strtol(value, &end, 10);
	if (errno || end == value || *end || n < lo || n > hi)
		bad("%s is not a number from %ld to %ld", value, lo, hi);
	return n;
}

static int choice(const char *value, const char *const *names, int n)
{
	for (int k = 0; k < n; k++)
		if (!strcmp(value, names[k]))
			return k;
	bad("%s is not one of the choices", value);
}

static const char *const formats[] = { "x86-64", "arm64-4K-contpte", "generic" };
static const char *const strategies[] = { "folio-batch", "v6.12.0-batch", "no-batch-hint", "per-pte", "arch-hint" };
static const char *const vma_kinds[] = { "private-anon", "private-file", "shared" };
static const char *const folio_kinds[] = { "anon", "file", "shmem" };
static const char *const prots[] = { "r", "rw" };

static int item(const char *rest, int count, const char **field)
{
	char *dot;
	long k = strtol(rest, &dot, 10);

	if (dot == rest || *dot != '.' || k < 0 || k >= count)
		bad("no such item (declare the count first)");
	*field = dot + 1;
	return k;
}

static void map_field(struct map *m, const char *field, const char *value)
{
	for (int t = 0; t < NR_TOGGLES; t++) {
		if (!strcmp(field, toggle_names[t])) {
			m->bit[t] = number(value, 0, 1);
			return;
		}
		if (!strncmp(field, "toggle_", 7) && !strcmp(field + 7, toggle_names[t])) {
			for (char *s = (char *)value, *next; *s; s = next) {
				long page = strtol(s, &next, 10);

				if (next == s || page < 0 || page >= PTRS_PER_PTE || (*next && *next != ','))
					bad("%s is not a list of pages", value);
				m->toggle[t][page] = true;
				if (*next)
					next++;
			}
			return;
		}
	}
	if (!strcmp(field, "at"))
		m->at = number(value, 0, MAX_PAGES - 1);
	else if (!strcmp(field, "first"))
		m->first = number(value, 0, PTRS_PER_PTE - 1);
	else if (!strcmp(field, "pages"))
		m->pages = number(value, 0, PTRS_PER_PTE);
	else if (!strcmp(field, "exclusive"))
		m->exclusive = number(value, 0, 1);
	else if (!strcmp(field, "folio"))
		m->folio = !strcmp(value, "zero") ? ZERO_MAP : !strcmp(value, "swap") ? SWAP_MAP :
			   number(value, 0, MAX_ITEMS - 1);
	else
		bad("unknown key");
}

static void set(struct scenario *sc, const char *key, const char *value)
{
	const char *field;
	int k;

	if (!strcmp(key, "format"))
		sc->fmt = choice(value, formats, 3);
	else if (!strcmp(key, "strategy"))
		sc->strategy = choice(value, strategies, 5);
	else if (!strcmp(key, "mmf_has_pinned"))
		sc->mmf_has_pinned = number(value, 0, 1);
	else if (!strcmp(key, "vmas"))
		sc->nr_vmas = number(value, 1, MAX_ITEMS);
	else if (!strcmp(key, "folios"))
		sc->nr_folios = number(value, 0, MAX_ITEMS);
	else if (!strcmp(key, "maps"))
		sc->nr_maps = number(value, 0, MAX_ITEMS);
	else if (!strncmp(key, "vma.", 4)) {
		struct vma *v = &sc->vmas[item(key + 4, sc->nr_vmas, &field)];

		if (!strcmp(field, "start"))
			v->start = number(value, 0, MAX_PAGES - 1);
		else if (!strcmp(field, "end"))
			v->end = number(value, 1, MAX_PAGES);
		else if (!strcmp(field, "kind"))
			v->kind = choice(value, vma_kinds, 3);
		else if (!strcmp(field, "prot"))
			v->writable = choice(value, prots, 2);
		else if (!strcmp(field, "anon_vma"))
			v->anon_vma = number(value, 0, 1);
		else if (!strcmp(field, "soft_dirty"))
			v->soft_dirty = number(value, 0, 1);
		else if (!strcmp(field, "uffd_wp"))
			v->uffd_wp = number(value, 0, 1);
		else
			bad("unknown key");
	} else if (!strncmp(key, "folio.", 6)) {
		k = item(key + 6, sc->nr_folios, &field);
		if (!strcmp(field, "order"))
			sc->folios[k].order = number(value, 0, 9);
		else if (!strcmp(field, "kind"))
			sc->folios[k].kind = choice(value, folio_kinds, 3);
		else if (!strcmp(field, "pinned"))
			sc->folios[k].pinned = number(value, 0, 1);
		else
			bad("unknown key");
	} else if (!strncmp(key, "map.", 4)) {
		k = item(key + 4, sc->nr_maps, &field);
		map_field(&sc->maps[k], field, value);
	} else {
		bad("unknown key");
	}
}

static void read_params(struct scenario *sc, const char *path)
{
	char line[4096], key[4096];
	int lineno = 0;
	FILE *f = fopen(path, "r");

	where = path;
	if (!f)
		bad("cannot open: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *eq, *nl = strchr(line, '\n');

		lineno++;
		if (nl)
			*nl = 0;
		if (!line[0])
			continue;
		snprintf(key, sizeof(key), "%s:%d", path, lineno);
		where = key;
		eq = strchr(line, '=');
		if (!eq)
			bad("not key=value");
		*eq = 0;
		set(sc, line, eq + 1);
	}
	fclose(f);
	where = path;
	for (int v = 0; v < sc->nr_vmas; v++)
		if (sc->vmas[v].start >= sc->vmas[v].end || (v && sc->vmas[v].start < sc->vmas[v - 1].end))
			bad("vma.%d is empty or not above vma.%d", v, v - 1);
}

static long map_pages(const struct scenario *sc, const struct map *m)
{
	if (m->folio >= 0)
		return m->pages ? m->pages : (1L << sc->folios[m->folio].order) - m->first;
	return m->pages ? m->pages : 1;
}

static pte_t base_bits(const struct map *m)
{
	pte_t bits = 0;

	for (int t = 0; t < NR_TOGGLES; t++)
		if (m->bit[t])
			bits |= toggle_bits[t];
	return bits;
}

/* models/fork_batch.py's initial_state, in the same order. */
static void build(struct mm *mm, const struct scenario *sc)
{
	struct ops setup = { 0 };
	uint64_t pfn = FIRST_PFN;
	long swap = 0;

	mm->fmt = sc->fmt;
	mm->strategy = sc->strategy;
	mm->mmf_has_pinned = sc->mmf_has_pinned;
	mm->nr_vmas = sc->nr_vmas;
	mm->vmas = calloc(sc->nr_vmas, sizeof(*mm->vmas));
	LAB_CHECK(mm->vmas != NULL);
	memcpy(mm->vmas, sc->vmas, sc->nr_vmas * sizeof(*mm->vmas));
	mm->npages = sc->vmas[sc->nr_vmas - 1].end;
	mm->parent = calloc(mm->npages, sizeof(pte_t));
	mm->child = calloc(mm->npages, sizeof(pte_t));
	LAB_CHECK(mm->parent && mm->child);
	for (int k = 0; k < sc->nr_folios; k++) {
		long n = 1L << sc->folios[k].order;
		struct folio *f;

		pfn = (pfn + n - 1) / n * n;
		mm->next_pfn = pfn;
		new_folio(mm, sc->folios[k].kind, 0, 0, false);
		f = &mm->folios[k];
		f->order = sc->folios[k].order;
		f->mapcount = realloc(f->mapcount, n * sizeof(long));
		f->exclusive = realloc(f->exclusive, n * sizeof(bool));
		LAB_CHECK(f->mapcount && f->exclusive);
		memset(f->mapcount, 0, n * sizeof(long));
		memset(f->exclusive, 0, n * sizeof(bool));
		pfn += n;
	}
	mm->next_pfn = pfn;
	for (int k = 0; k < sc->nr_maps; k++) {
		const struct map *m = &sc->maps[k];
		long n = map_pages(sc, m);
		pte_t pte;

		if (m->at + n > mm->npages)
			bad("map.%d runs past the last VMA", k);
		if (m->folio == SWAP_MAP) {
			pte_t prot = (m->bit[T_SOFT_DIRTY] != m->toggle[T_SOFT_DIRTY][0] ? PTE_SOFT_DIRTY : 0) |
				     (m->bit[T_UFFD_WP] != m->toggle[T_UFFD_WP][0] ? PTE_UFFD_WP : 0) |
				     (m->exclusive ? PTE_SWP_EXCLUSIVE : 0);

			mm->parent[m->at] = (pte_t)++swap << PFN_PTE_SHIFT | PTE_SWP | prot;
			continue;
		}
		if (m->folio >= sc->nr_folios)
			bad("map.%d maps folio %ld of %d", k, m->folio, sc->nr_folios);
		pte = pfn_pte(m->folio == ZERO_MAP ? ZERO_PFN : mm->folios[m->folio].pfn + m->first,
			      PTE_PRESENT | (m->folio == ZERO_MAP ? PTE_SPECIAL : 0) | base_bits(m));
		if (sc->fmt == FMT_ARM64 && m->folio != ZERO_MAP)	/* contpte_set_ptes folds whole blocks */
			set_ptes(sc->fmt, mm->parent, m->at, pte, n, &setup, NULL, NULL);
		else
			for (long j = 0; j < n; j++)
				mm->parent[m->at + j] = pte_advance_pfn(pte, j);
		for (int t = 0; t < NR_TOGGLES; t++) {	/* a write, soft-dirty or uffd-wp change unfolds */
			for (long j = 0; j < n; j++) {
				if (!m->toggle[t][j])
					continue;
				if (sc->fmt == FMT_ARM64 && !(toggle_bits[t] & (PTE_DIRTY | PTE_YOUNG)))
					contpte_try_unfold(mm->parent, m->at + j, mm->parent[m->at + j], &setup);
				mm->parent[m->at + j] ^= toggle_bits[t];
			}
		}
		if (m->folio >= 0) {
			struct folio *f = &mm->folios[m->folio];

			for (long j = 0; j < n; j++) {
				f->mapcount[m->first + j]++;
				if (m->exclusive && f->kind == FOLIO_ANON)
					f->exclusive[m->first + j] = true;
			}
		}
	}
	for (int k = 0; k < sc->nr_folios; k++) {
		struct folio *f = &mm->folios[k];
		long n = 1L << f->order, mapped = 0;
		long held = (f->kind != FOLIO_ANON ? n : 0) +
			    (f->order ? 1 : GUP_PIN_COUNTING_BIAS) * sc->folios[k].pinned;

		for (long j = 0; j < n; j++)
			mapped += f->mapcount[j];
		f->refcount = mapped + held;
		f->pincount = sc->folios[k].pinned && f->order;
		f->large_mapcount = f->order ? mapped : 0;
	}
}

static const char *const hows[] = { "batch", "hint", "single", "zero", "copied", "swap" };

static void print(const struct mm *mm)
{
	const struct ops *o = &mm->ops;

	for (long b = 0; b < mm->nr_batches; b++)
		printf("batch %d %ld %ld %s\n", mm->batches[b].vma, mm->batches[b].addr, mm->batches[b].nr,
		       hows[mm->batches[b].how]);
	printf("ops %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", o->loads, o->stores, o->atomics, o->tlb_flushes,
	       o->folds, o->unfolds, o->refs, o->rmap, o->batches);
	printf("rss %ld %ld %ld %ld\n", mm->rss[0], mm->rss[1], mm->rss[2], mm->rss[3]);
	for (long a = 0; a < mm->npages; a++)
		if (mm->parent[a] || mm->child[a])
			printf("pte %ld 0x%llx 0x%llx\n", a, (unsigned long long)mm->parent[a],
			       (unsigned long long)mm->child[a]);
	for (long k = 0; k < mm->nr_folios; k++) {
		const struct folio *f = &mm->folios[k];

		printf("folio %llu %ld %ld %ld", (unsigned long long)f->pfn, f->refcount, f->pincount,
		       f->large_mapcount);
		for (long j = 0; j < 1L << f->order; j++)
			printf(" %ld%s", f->mapcount[j], f->exclusive[j] ? "x" : "");
		putchar('\n');
	}
}

int main(int argc, char **argv)
{
	static struct scenario sc;
	struct mm mm = { 0 };

	where = "usage";
	if (argc != 2)
		bad("fork-batch PARAMS (a file of key=value lines)");
	read_params(&sc, argv[1]);
	build(&mm, &sc);
	dup_mmap(&mm);
	print(&mm);
	return 0;
}

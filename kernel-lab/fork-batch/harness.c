// SPDX-License-Identifier: GPL-2.0
/*
 * fork-batch: fork's page-table copy over synthetic page tables, from a scenario's parameters.
 *
 *   fork-batch PARAMS      PARAMS: one key=value a line (kstep.lab.replay.fork_batch.params writes them)
 *
 * Instead of a layout, PARAMS may give a seed (seed=N, with strategy=): random_layout draws the
 * layout from it with kstep's SplitMix64, making kstep.lab.replay.fork_batch.random_layout's draws in the
 * same order, so the seed alone gives both languages the same page tables.
 *
 * The parent's page tables are built from the scenario as simulator/kstep/models/fork_batch/scenario.py's
 * initial_state builds them (folios aligned to their size from PFN 1024, each [[maps]] entry one
 * set_ptes, then its toggles); dup_mmap then copies them and the program prints every step it
 * took, every copy, the counters, the child's rss, both page tables, the folios' counts and what
 * each GUP thread pinned, for the identity test to compare with the simulator's.
 *
 * With fault or GUP threads beside the fork, schedule= says who takes each step ("G*3 P*10 G*4"),
 * as a scenario's schedule does; the program takes exactly those steps.  After every step it
 * checks two of the model's invariants, pinned-page-not-shared and copy-sees-stable-page-tables,
 * and stops at a violation, naming it.  A bad
 * parameter is one line on stderr and exit status 2, and so is a schedule that names a thread
 * that cannot step, or a fault the port does not have (no VMA there, no anon_vma yet).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fork.h"
#include "params.h"
#include "splitmix64.h"

#define FIRST_PFN	1024
#define ZERO_PFN	1
#define MAX_ITEMS	64
#define MAX_PAGES	(4 * PTRS_PER_PTE)
#define MAX_STEPS	1000000

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
	bool seeded, laid_out;		/* seed= given; a layout key given */
	uint64_t seed;
	enum pte_format fmt;
	enum strategy strategy;
	bool mmf_has_pinned;
	bool no_large_mapcount;		/* large_mapcount=0: the rmap before folio->_large_mapcount */
	int nr_vmas, nr_folios, nr_maps;
	struct vma vmas[MAX_ITEMS];
	struct { int order; enum folio_kind kind; bool pinned; } folios[MAX_ITEMS];
	struct map maps[MAX_ITEMS];
	int nr_threads;
	struct {
		char name[32];
		enum thread_kind kind;
		long addr, faults[8];
		int nr_faults;
	} threads[MAX_THREADS];
	int *schedule;		/* a thread per step */
	long schedule_len;
};

#define NR(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const formats[NR_FORMATS] = { "x86-64", "arm64-4K-contpte", "generic", "arm64-4K" };
static const char *const strategies[] = { "folio-batch", "v6.12.0-batch", "no-batch-hint", "per-pte", "arch-hint" };
static const char *const vma_kinds[] = { "private-anon", "private-file", "shared" };
static const char *const folio_kinds[] = { "anon", "file", "shmem" };
static const char *const prots[] = { "r", "rw" };
static const char *const thread_kinds[] = { "fork", "fault", "gup" };

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

static void thread_field(struct scenario *sc, int k, const char *field, const char *value)
{
	if (!strcmp(field, "name")) {
		if (!*value || strlen(value) >= sizeof(sc->threads[k].name) || strpbrk(value, " *,"))
			bad("%s is not a thread's name", value);
		strcpy(sc->threads[k].name, value);
	} else if (!strcmp(field, "kind")) {
		sc->threads[k].kind = choice(value, thread_kinds, 3);
	} else if (!strcmp(field, "addr")) {
		sc->threads[k].addr = number(value, 0, MAX_PAGES - 1);
	} else if (!strcmp(field, "faults")) {
		char *s = (char *)value, *next;

		for (sc->threads[k].nr_faults = 0; *s; s = next) {
			long page = strtol(s, &next, 10);

			if (next == s || page < 0 || page >= MAX_PAGES || (*next && *next != ',') ||
			    sc->threads[k].nr_faults == NR(sc->threads[k].faults))
				bad("%s is not a list of at most 8 pages", value);
			sc->threads[k].faults[sc->threads[k].nr_faults++] = page;
			if (*next)
				next++;
		}
	} else {
		bad("unknown key");
	}
}

/* "NAME*COUNT NAME ..." (the threads declared first): who takes each step. */
static void schedule(struct scenario *sc, const char *value)
{
	char *text = strdup(value), *save, *word;

	LAB_CHECK(text != NULL);
	for (word = strtok_r(text, " ", &save); word; word = strtok_r(NULL, " ", &save)) {
		char *star = strchr(word, '*');
		long count = star ? (*star = 0, number(star + 1, 1, MAX_STEPS)) : 1;
		int k = 0;

		while (k < sc->nr_threads && strcmp(sc->threads[k].name, word))
			k++;
		if (k == sc->nr_threads)
			bad("%s is not a thread's name (declare the threads first)", word);
		if (sc->schedule_len + count > MAX_STEPS)
			bad("more than %d steps", MAX_STEPS);
		sc->schedule = realloc(sc->schedule, (sc->schedule_len + count) * sizeof(int));
		LAB_CHECK(sc->schedule != NULL);
		while (count--)
			sc->schedule[sc->schedule_len++] = k;
	}
	free(text);
	if (!sc->schedule_len)
		bad("an empty schedule");
}

static void set(void *arg, const char *key, const char *value)
{
	struct scenario *sc = arg;
	const char *field;
	int k;

	if (!strcmp(key, "strategy")) {
		sc->strategy = choice(value, strategies, 5);
		return;
	}
	if (!strcmp(key, "seed")) {
		char *end;

		errno = 0;
		sc->seed = strtoull(value, &end, 10);
		if (errno || end == value || *end || *value == '-')
			bad("%s is not an unsigned 64-bit number", value);
		sc->seeded = true;
		if (sc->laid_out)
			bad("a seed and a layout: give one or the other");
		return;
	}
	if (sc->seeded)
		bad("a seed and a layout: give one or the other");
	sc->laid_out = true;
	if (!strcmp(key, "format"))
		sc->fmt = choice(value, formats, NR_FORMATS);
	else if (!strcmp(key, "mmf_has_pinned"))
		sc->mmf_has_pinned = number(value, 0, 1);
	else if (!strcmp(key, "large_mapcount"))
		sc->no_large_mapcount = !number(value, 0, 1);
	else if (!strcmp(key, "vmas"))
		sc->nr_vmas = number(value, 1, MAX_ITEMS);
	else if (!strcmp(key, "folios"))
		sc->nr_folios = number(value, 0, MAX_ITEMS);
	else if (!strcmp(key, "maps"))
		sc->nr_maps = number(value, 0, MAX_ITEMS);
	else if (!strcmp(key, "threads"))
		sc->nr_threads = number(value, 1, MAX_THREADS);
	else if (!strcmp(key, "schedule"))
		schedule(sc, value);
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
	} else if (!strncmp(key, "thread.", 7)) {
		k = item(key + 7, sc->nr_threads, &field);
		thread_field(sc, k, field, value);
	} else if (!strncmp(key, "map.", 4)) {
		k = item(key + 4, sc->nr_maps, &field);
		map_field(&sc->maps[k], field, value);
	} else {
		bad("unknown key");
	}
}

/* What random_layout draws from: kstep.lab.replay.fork_batch's tables of the same names. */
static const long layout_ends[] = { 96, 200, 600 };
static const int layout_orders[] = { 0, 0, 4, 4, 9 };
static const int toggle_counts[] = { 0, 0, 1, 3 };
static const long gaps[] = { 0, 0, 0, 1, 5 };


static struct vma *layout_vma(struct scenario *sc, long start, long end, struct splitmix64 *r)
{
	struct vma *v = &sc->vmas[sc->nr_vmas++];

	*v = (struct vma){ .start = start, .end = end, .kind = PRIVATE_ANON, .writable = true, .anon_vma = true };
	v->soft_dirty = has_soft_dirty(sc->fmt) && splitmix64_below(r, 2) == 1;
	return v;
}

/*
 * kstep.lab.replay.fork_batch.random_layout, draw for draw: one or two private anonymous VMAs, folios of
 * order 0, 4 and 9 mapped whole or in part with holes between, bits flipped on some pages,
 * zero-page and swap entries, and maybe pinned folios.
 */
static void random_layout(struct scenario *sc, uint64_t seed)
{
	static const int bits[] = { T_WRITE, T_DIRTY, T_YOUNG, T_SOFT_DIRTY };
	struct splitmix64 r;
	long end, split, at;
	bool pinning;

	splitmix64_seed(&r, seed);
	sc->nr_threads = 1;
	strcpy(sc->threads[0].name, "P");
	sc->threads[0].kind = T_FORK;
	sc->fmt = splitmix64_below(&r, NR_FORMATS);
	end = layout_ends[splitmix64_below(&r, NR(layout_ends))];
	split = splitmix64_below(&r, 2) ? (long)splitmix64_below(&r, end - 1) + 1 : end;
	layout_vma(sc, 0, split, &r);
	if (split < end)
		layout_vma(sc, split, end, &r);
	pinning = splitmix64_below(&r, 4) == 0;
	sc->mmf_has_pinned = pinning;
	at = splitmix64_below(&r, 24);
	while (at < end - 1 && sc->nr_maps < MAX_ITEMS) {
		long limit = at < split ? split : end, n, pages;
		int kind = splitmix64_below(&r, NR(layout_orders) + 1);
		struct map *m = &sc->maps[sc->nr_maps++];

		memset(m, 0, sizeof(*m));
		m->at = at;
		m->exclusive = true;
		if (kind == NR(layout_orders)) {	/* a zero-page or swap entry */
			m->folio = splitmix64_below(&r, 2) ? SWAP_MAP : ZERO_MAP;
			m->bit[T_YOUNG] = m->folio == ZERO_MAP;
			at += 1 + gaps[splitmix64_below(&r, NR(gaps))];
			continue;
		}
		n = 1L << layout_orders[kind];
		m->first = n > 1 && splitmix64_below(&r, 5) < 2 ? (long)splitmix64_below(&r, n) : 0;
		pages = splitmix64_below(&r, 3) < 2 ? n - m->first : (long)splitmix64_below(&r, n - m->first) + 1;
		m->pages = pages < limit - at ? pages : limit - at;
		m->folio = sc->nr_folios;
		sc->folios[sc->nr_folios].order = layout_orders[kind];
		sc->folios[sc->nr_folios].kind = FOLIO_ANON;
		sc->folios[sc->nr_folios].pinned = pinning && splitmix64_below(&r, 4) == 0;
		sc->nr_folios++;
		for (int b = 0; b < NR(bits) - !has_soft_dirty(sc->fmt); b++) {
			int t = bits[b], count;

			m->bit[t] = t != T_SOFT_DIRTY ? splitmix64_below(&r, 5) < 4 : splitmix64_below(&r, 2) == 1;
			count = toggle_counts[splitmix64_below(&r, NR(toggle_counts))];
			for (int k = 0; k < count; k++)
				m->toggle[t][splitmix64_below(&r, m->pages)] = true;
		}
		at += m->pages + gaps[splitmix64_below(&r, NR(gaps))];
	}
}

static void read_params(struct scenario *sc, const char *path)
{
	read_key_values(path, set, sc);
	if (sc->seeded)
		random_layout(sc, sc->seed);
	if (!sc->nr_threads)
		bad("no threads (threads=)");
	for (int k = 0, forks = 0; k < sc->nr_threads; k++) {
		if (!sc->threads[k].name[0])
			bad("thread.%d has no name", k);
		forks += sc->threads[k].kind == T_FORK;
		if (k == sc->nr_threads - 1 && forks != 1)
			bad("exactly one thread forks");
	}
	if (sc->nr_threads > 1 && !sc->schedule_len)
		bad("fault or GUP threads need a schedule");
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

/* Each thread with its program, as models/fork_batch/scenario.py's _program gives it. */
static void build_threads(struct mm *mm, const struct scenario *sc)
{
	mm->nr_threads = sc->nr_threads;
	mm->threads = calloc(sc->nr_threads, sizeof(*mm->threads));
	LAB_CHECK(mm->threads != NULL);
	for (int k = 0; k < sc->nr_threads; k++) {
		struct thread *t = &mm->threads[k];

		strcpy(t->name, sc->threads[k].name);
		t->kind = sc->threads[k].kind;
		t->addr = t->vma = t->folio = -1;
		if (t->kind == T_FORK)
			mm->fork_thread = k;
		if (t->kind == T_GUP) {
			if (sc->threads[k].addr >= mm->npages)
				bad("thread.%d.addr is past the last VMA", k);
			push(t, 1, "pin_user_pages_fast", sc->threads[k].addr);
		}
		for (int j = sc->threads[k].nr_faults - 1; j >= 0; j--) {	/* the first on top */
			if (sc->threads[k].faults[j] >= mm->npages)
				bad("thread.%d.faults: %ld is past the last VMA", k, sc->threads[k].faults[j]);
			push(t, 1, "do_user_addr_fault", sc->threads[k].faults[j]);
		}
		if (t->kind == T_FAULT && !t->nr_frames)
			bad("thread.%d faults nowhere", k);
	}
}

/* models/fork_batch/scenario.py's initial_state, in the same order. */
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
	for (int v = 0; v < sc->nr_vmas; v++)
		mm->vmas[v].vm_lock_seq = UINT_MAX;	/* vma_lock_alloc (6.12.88+): vm_lock_seq = UINT_MAX */
	mm->npages = sc->vmas[sc->nr_vmas - 1].end;
	mm->copying = -1;
	build_threads(mm, sc);
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
		f->large_mapcount = !f->order ? 0 : sc->no_large_mapcount ? NO_LARGE_MAPCOUNT : mapped;
	}
}

static const char *const hows[] = { "batch", "hint", "single", "zero", "copied", "swap" };

static void print(const struct mm *mm);

/* Who steps next: the schedule's threads in order (none given: the fork alone). */
static struct run {
	const struct scenario *sc;
	long pos, steps;
	bool fork_stepped;	/* the fork's last step is done once it reaches its next STEP */
	bool stopped;		/* an invariant broke: no step follows */
} run;

static void violated(const char *invariant)
{
	printf("violation %s %ld\n", invariant, run.steps);
	run.stopped = true;
}

/* pinned-page-not-shared: a page pinned for DMA in the parent is never mapped by the child. */
static void check(struct mm *mm)
{
	for (int k = 0; k < mm->nr_threads; k++) {
		const struct thread *t = &mm->threads[k];

		if (t->kind != T_GUP || !t->pinned || t->folio < 0)
			continue;
		for (long a = 0; a < mm->npages; a++) {
			if (pte_present(mm->child[a]) && pte_pfn(mm->child[a]) == pte_pfn(t->pte)) {
				violated("pinned-page-not-shared");
				return;
			}
		}
	}
}

static void stepped(struct mm *mm, int k, const char *label)
{
	printf("step %s %s\n", mm->threads[k].name, label);
	run.steps++;
}

/* The fork's previous step has done its work by now: check the state it left. */
static void fork_step_done(struct mm *mm)
{
	if (run.fork_stepped)
		check(mm);
	run.fork_stepped = false;
}

/* The schedule's next entry, a thread other than the fork: its next step. */
static void other_step(struct mm *mm)
{
	int k = run.sc->schedule[run.pos];
	const struct vma *copying = mm->copying >= 0 ? &mm->vmas[mm->copying] : NULL;
	static pte_t before[MAX_PAGES];
	const char *label;

	where = "schedule";
	if (k == mm->fork_thread)
		bad("step %ld names %s, which has finished", run.pos + 1, mm->threads[k].name);
	if (copying)
		memcpy(before, mm->parent + copying->start, (copying->end - copying->start) * sizeof(pte_t));
	if (!thread_step(mm, k, &label))
		bad("step %ld names %s, which %s at that point", run.pos + 1, mm->threads[k].name,
		    mm->threads[k].nr_frames ? "is blocked" : "has finished");
	run.pos++;
	stepped(mm, k, label);
	/* copy-sees-stable-page-tables: nothing but fork changes a VMA's PTEs while fork copies it */
	if (copying && memcmp(before, mm->parent + copying->start, (copying->end - copying->start) * sizeof(pte_t)))
		violated("copy-sees-stable-page-tables");
	else
		check(mm);
}

/* STEP(mm, label) in the fork: first the steps the schedule gives other threads before it. */
static void fork_step(struct mm *mm, const char *label)
{
	const struct scenario *sc = run.sc;

	fork_step_done(mm);
	while (sc->schedule_len && !run.stopped && run.pos < sc->schedule_len &&
	       sc->schedule[run.pos] != mm->fork_thread)
		other_step(mm);
	if (run.stopped) {		/* the state stays as the broken step left it */
		print(mm);
		exit(0);
	}
	where = "schedule";
	if (sc->schedule_len && run.pos == sc->schedule_len)
		bad("it ends while %s still forks", mm->threads[mm->fork_thread].name);
	/* a queued fork retries (rwsem_try_write_lock) once it can take the lock or set HANDOFF */
	if (mm->fork_waits && !rwsem_write_lock_free(mm->fork_waits, mm->fork_thread) &&
	    !rwsem_may_set_handoff(mm->fork_waits))
		bad("step %ld names %s, which is blocked at that point", run.pos + 1, mm->threads[mm->fork_thread].name);
	run.pos++;
	stepped(mm, mm->fork_thread, label);
	run.fork_stepped = true;
}

static void print(const struct mm *mm)
{
	const struct ops *o = &mm->ops;
	const struct counters *c = &mm->counters;

	for (long b = 0; b < mm->nr_batches; b++)
		printf("batch %d %ld %ld %s\n", mm->batches[b].vma, mm->batches[b].addr, mm->batches[b].nr,
		       hows[mm->batches[b].how]);
	printf("ops %ld %ld %ld %ld %ld %ld %ld %ld %ld\n", o->loads, o->stores, o->atomics, o->tlb_flushes,
	       o->folds, o->unfolds, o->refs, o->rmap, o->batches);
	printf("rss %ld %ld %ld %ld\n", mm->rss[0], mm->rss[1], mm->rss[2], mm->rss[3]);
	printf("counters %ld %ld %ld %ld %ld %ld\n", c->vma_lock_success, c->vma_lock_abort, c->vma_lock_retry,
	       c->vma_lock_miss, c->mmap_lock_faults, c->sigsegv);
	printf("mm %ld %d %ld\n", mm->write_protect_seq, mm->mmf_has_pinned, mm->mm_lock_seq);
	for (int k = 0; k < mm->nr_threads; k++)
		if (mm->threads[k].kind == T_GUP)
			printf("gup %s %d %ld 0x%llx\n", mm->threads[k].name, mm->threads[k].pinned,
			       mm->threads[k].folio, (unsigned long long)mm->threads[k].pte);
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

	prog = "fork-batch";
	where = "usage";
	if (argc != 2)
		bad("fork-batch PARAMS (a file of key=value lines)");
	read_params(&sc, argv[1]);
	build(&mm, &sc);
	run.sc = &sc;
	mm.step = fork_step;
	dup_mmap(&mm);
	fork_step_done(&mm);
	while (run.pos < sc.schedule_len && !run.stopped)
		other_step(&mm);
	print(&mm);
	return 0;
}

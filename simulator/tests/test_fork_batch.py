"""fork's page-table copy: the strategies, the invariants both ways, and the counts the thread argued about."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from support import assert_breaker_catches, load, variants

import kstep
from kstep.engine import Random, Scripted, Variant, explore, simulate
from kstep.scenario_spec import scenario
from kstep.errors import UserError
from kstep.models import MODELS
from kstep.models.fork_batch import invariants as fork_invariants
from kstep.models.fork_batch import model as fb_model
from kstep.models.fork_batch import pgtable as pt
from kstep.models.fork_batch import scenario as fb_scenario
from kstep.models.fork_batch import state as fb
from kstep.models.fork_batch import variants as fb_variants
from kstep.models.fork_batch.pgtable import CONT_PTES
from kstep.models.vma_locks import invariants as vl_invariants
from kstep.models.vma_locks import model as vl

MECH = "fork-batch"
CORRECT, BROKEN = variants(MECH)
SCENARIOS = scenario.bundled(MECH)
LONG = {("pte-mapped-thp", "per-pte"), ("pte-mapped-thp", "arch-hint")}  # 3000+ states each


def run(config, variant=None):
    """The final state of the copy (the checks are the explore tests' business)."""
    m = MODELS[MECH](variant)
    tr = simulate(m, m.initial(config), Random(1), config=config, check=False)
    assert tr.outcome == "finished"
    return tr.states[-1]


def one_folio(fmt, order, pages=None, at=0):
    """A private anonymous VMA mapping one folio whole (or its first ``pages``) from page ``at``."""
    n = pages or 1 << order
    return {"format": fmt, "mmf_has_pinned": False, "large_mapcount": True,
            "vmas": [{"start": at, "end": at + n, "kind": "private-anon", "prot": "rw", "anon_vma": True,
                      "soft_dirty": False, "uffd_wp": False}],
            "folios": [{"name": "F", "order": order, "kind": "anon", "pinned": False}],
            "maps": [map_entry(at, "F", pages=n)],
            "threads": [{"name": "P", "kind": "fork", "faults": [], "addr": 0}]}


def map_entry(at, folio, **bits):
    entry = {"at": at, "folio": folio, "first": 0, "pages": 0, "write": True, "dirty": True, "young": True,
             "soft_dirty": False, "uffd_wp": False, "exclusive": True,
             **{f"toggle_{b}": [] for b in fb_scenario.TOGGLES}}
    entry.update(bits)
    return entry


def small_pages(fmt, n):
    """n order-0 anonymous pages side by side."""
    c = one_folio(fmt, 0)
    c["vmas"][0]["end"] = n
    c["folios"] = [{"name": f"F{k}", "order": 0, "kind": "anon", "pinned": False} for k in range(n)]
    c["maps"] = [map_entry(k, f"F{k}") for k in range(n)]
    return c


# --- every correct strategy is clean, every broken variant is caught --------------------------------------

@pytest.mark.parametrize("variant, name", [
    pytest.param(v, n, marks=[pytest.mark.slow] if (n, v) in LONG else [])
    for v in CORRECT for n in SCENARIOS])
def test_correct_strategies_explore_clean(variant, name):
    m, _, s0 = load(MECH, name, variant)
    r = explore(m, s0)
    assert r.clean, r.violation


@pytest.mark.parametrize("variant, invariant, name", [
    ("batch-crosses-folio", "batch-within-bounds", "mthp-batches"),
    ("batch-crosses-folio", "batches-maximal", "mthp-batches"),
    ("batch-crosses-folio", "refcounts-follow-mappings", "mthp-batches"),
    ("any-writable-dropped", "cow-write-protected", "mthp-batches"),
    ("wrprotect-first-only", "cow-write-protected", "mthp-batches"),
    ("wrprotect-unfolds-blocks", "whole-blocks-stay-folded", "contpte-arm64"),
    ("gup-fast-ignores-seq", "pinned-page-not-shared", "gup-fast-vs-fork"),
    ("gup-fast-ignores-seq", "pinned-anon-exclusive", "gup-fast-vs-fork"),
    ("fork-without-vma-locks", "copy-sees-stable-page-tables", "fault-vs-fork"),
])
def test_each_broken_variant_breaks_its_invariant(variant, invariant, name):
    assert_breaker_catches(MECH, invariant, variant, name)


def test_every_broken_variant_is_covered_above():
    covered = {p[0] for p in test_each_broken_variant_breaks_its_invariant.pytestmark[0].args[1]}
    assert covered == set(BROKEN)


@pytest.mark.parametrize("variant, name, harm", [
    ("batch-crosses-folio", "mthp-batches", True), ("any-writable-dropped", "mthp-batches", True),
    ("wrprotect-first-only", "mthp-batches", True), ("wrprotect-unfolds-blocks", "contpte-arm64", False),
    ("gup-fast-ignores-seq", "gup-fast-vs-fork", True), ("fork-without-vma-locks", "fault-vs-fork", True)])
def test_explore_reports_the_harm_a_broken_variant_does(variant, name, harm):
    """Harm first: a broken batch is a corruption a user would see; losing contiguous mappings is not."""
    m, _, s0 = load(MECH, name, variant)
    r = explore(m, s0)
    assert r.violation is not None and r.harm == harm, r.violation


# --- the invariants not broken by a shipped variant fail on a mutated step ------------------------------

def wrong_pfn(s, i, arg):
    addr, nr, pte = arg
    return fb_model.PROGRAMS[fb.FOLIO_BATCH].steps["set_ptes"].run(s, i, (addr, nr, pt.pte_advance_pfn(pte, 1)))


def swap_skipped(s, i, arg):
    return fb.advance(s, i, 1)


def cont_on_every_chunk(s, i, arg):
    addr, nr, pte = arg
    s = fb_model.PROGRAMS[fb.FOLIO_BATCH].steps["set_ptes"].run(s, i, arg)
    return s._replace(child=tuple(p | pt.PTE_CONT if addr <= k < addr + nr else p for k, p in enumerate(s.child)))


def exclusive_kept(s, i, arg):
    excl = [f.exclusive for f in s.folios]
    s = fb_model.PROGRAMS[fb.FOLIO_BATCH].steps["folio_try_dup_anon_rmap_ptes"].run(s, i, arg)
    return s._replace(folios=tuple(f._replace(exclusive=e) for f, e in zip(s.folios, excl)))


def rss_dropped(s, i, eagain):
    return fb_model.PROGRAMS[fb.FOLIO_BATCH].steps["add_mm_rss_vec"].run(fb.set_copy(s, rss=(0, 0, 0, 0)), i, eagain)


def dirty_compared(s, i, arg):
    """folio_pte_batch without FPB_IGNORE_DIRTY in a shared mapping: batches stop short."""
    run = fb_model.PROGRAMS[fb.FOLIO_BATCH].steps["folio_pte_batch"].run
    return run(fb.set_copy(s, flags=s.copy.flags & ~1), i, arg)


class Mutants(fb_model.ForkBatchModel):
    variants = {**fb_variants.VARIANTS, **{name: Variant.bug(name, name, params={"program": fb.FOLIO_BATCH}, **repl) for name, repl in {
        "wrong-pfn": {"set_ptes": wrong_pfn}, "swap-skipped": {"copy_nonpresent_pte": swap_skipped},
        "cont-on-every-chunk": {"set_ptes": cont_on_every_chunk},
        "exclusive-kept": {"folio_try_dup_anon_rmap_ptes": exclusive_kept},
        "rss-dropped": {"add_mm_rss_vec": rss_dropped}, "dirty-compared": {"folio_pte_batch": dirty_compared},
    }.items()}}


@pytest.mark.parametrize("mutant, invariant, name", [
    ("wrong-pfn", "child-maps-parent-pages", "mthp-batches"),
    ("swap-skipped", "every-pte-copied", "batch-ends"),
    ("cont-on-every-chunk", "contpte-well-formed", "contpte-arm64"),
    ("exclusive-kept", "shared-anon-not-exclusive", "mthp-batches"),
    ("rss-dropped", "rss-counts-child-ptes", "mthp-batches"),
    ("dirty-compared", "batches-maximal", "shared-uffd"),
])
def test_every_invariant_can_fail(mutant, invariant, name):
    sc = scenario.load(MECH, Mutants.scenario_schema, name)
    for variant, broken in ((mutant, True), (None, False)):
        m = Mutants(variant)
        m.invariants = [inv for inv in fb_model.ForkBatchModel.invariants if inv.name == invariant]
        r = explore(m, m.initial(sc.config), harm_first=False)
        assert (r.violation is not None and r.violation.invariant == invariant) if broken else r.clean, r.violation


def test_every_invariant_of_the_model_is_shown_failing():
    shown = {p[1] for p in test_each_broken_variant_breaks_its_invariant.pytestmark[0].args[1]}
    shown |= {p[1] for p in test_every_invariant_can_fail.pytestmark[0].args[1]}
    own = {inv.name for inv in fork_invariants.INVARIANTS} - {inv.name for inv in vl_invariants.INVARIANTS}
    assert own <= shown, own - shown


def test_the_invariants_never_call_the_copying_code():
    """fork_batch/invariants.py takes only constants (and the zero-argument Folio layout) from the model's
    state and the PTE layer: its batch lengths, templates and contiguous blocks are its own computation."""
    tree = ast.parse(Path(fork_invariants.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module in ("state", "pgtable"):
            assert all(alias.name.isupper() for alias in node.names), [a.name for a in node.names]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            assert node.value.id not in ("fb", "pt", "state", "pgtable"), ast.unparse(node)


def test_fork_batch_runs_vma_locks_program_with_the_copy_filled_in():
    ours = fb_model.PROGRAMS[fb.FOLIO_BATCH]
    replaced = {"copy_page_range", "dup_mmap", "handle_mm_fault", "do_anonymous_page"}
    for label, st in vl.program.steps.items():
        if label not in replaced:
            assert ours.steps[label] is st, label
        elif label != "copy_page_range":  # the fault steps wrap vma-locks' own: same source, same text
            assert (ours.steps[label].source, ours.steps[label].what) == (st.source, st.what)
    # fork still takes mmap_lock as 6.12.0 did (model.py says why)
    assert all(ours.calls[label] is c for label, c in vl.program.calls.items()
               if label not in replaced | {"mmap_write_lock"})


# --- what each strategy does, counted -------------------------------------------------------------------

def test_a_folded_arm64_block_costs_17_loads_batched_and_16_times_that_without_the_hint():
    """The thread: walking a folded block with ptep_get is "16 x 16 reads" where pte_batch_hint makes it
    16.  6.12's ptep_get first reads the entry itself (then the 16 entries of the block), so each folded
    read is 1 + 16 loads; wrprotect_ptes then reads each of the 16 entries once more."""
    block = one_folio(pt.ARM64, 4)
    hinted = run(block, fb.FOLIO_BATCH).ops
    assert hinted.loads == (1 + CONT_PTES) + CONT_PTES
    unhinted = run(block, fb.NO_HINT).ops
    assert unhinted.loads == CONT_PTES * (1 + CONT_PTES) + CONT_PTES
    assert (unhinted.loads - CONT_PTES) == CONT_PTES * (hinted.loads - CONT_PTES)
    assert hinted.folds == hinted.unfolds == unhinted.folds == unhinted.unfolds == 0


def test_per_pte_copying_unfolds_the_parents_block_and_refolds_the_childs():
    """One PTE at a time, wrprotect_ptes(nr = 1) must unfold the parent's block first, and the child's
    sixteenth set_ptes folds its block: two contpte_convert, each with its TLB flush, per block."""
    block = one_folio(pt.ARM64, 4)
    s = run(block, fb.PER_PTE)
    assert (s.ops.unfolds, s.ops.folds, s.ops.tlb_flushes) == (1, 1, 2 + 1)
    assert not any(p & pt.PTE_CONT for p in s.parent) and all(p & pt.PTE_CONT for p in s.child)
    batched = run(block, fb.FOLIO_BATCH)
    assert all(p & pt.PTE_CONT for p in batched.parent) and all(p & pt.PTE_CONT for p in batched.child)


@pytest.mark.parametrize("fmt", pt.FORMATS)
def test_order_0_pages_cost_the_same_under_every_strategy(fmt):
    """copy_present_ptes sends a small folio down the single-PTE path whatever the strategy: the
    counts cannot tell the strategies apart on order-0 memory."""
    pages = small_pages(fmt, 8)
    ops = {v: run(pages, v).ops for v in CORRECT}
    assert len(set(ops.values())) == 1, ops
    assert ops[fb.FOLIO_BATCH].batches == 8 and ops[fb.FOLIO_BATCH].refs == 8


@pytest.mark.parametrize("fmt", pt.FORMATS)
def test_an_order_9_folio_is_one_batch_with_folio_batching_and_512_without(fmt):
    thp = one_folio(fmt, 9)
    batched, single = run(thp, fb.FOLIO_BATCH).ops, run(thp, fb.PER_PTE).ops
    assert (batched.batches, batched.refs, batched.rmap) == (1, 1, 512 + 1)
    assert (single.batches, single.refs, single.rmap) == (512, 512, 2 * 512)
    hint = run(thp, fb.ARCH_HINT).ops
    assert hint.batches == (512 // CONT_PTES if fmt == pt.ARM64 else 512)


@pytest.mark.parametrize("strategy", [fb.FOLIO_BATCH, fb.PER_PTE])
def test_without_large_mapcount_the_rmap_is_one_atomic_per_pte(strategy):
    """The thread's kernels kept no folio->_large_mapcount: dup'ing the rmap of a 64 KiB folio's 16
    PTEs is 16 page->_mapcount atomics, per PTE or batched, and the folio keeps no total."""
    thp = {**one_folio(pt.X86_64, 4), "large_mapcount": False}
    m = MODELS[MECH](strategy)
    tr = simulate(m, m.initial(thp), Random(1), config=thp)  # every check on every step
    assert tr.outcome == "finished"
    s = tr.states[-1]
    assert s.ops.rmap == 16
    assert s.folios[0].large_mapcount == fb.NO_LARGE_MAPCOUNT and s.folios[0].mapcount == (2,) * 16
    assert s.ops._replace(rmap=0) == run(one_folio(pt.X86_64, 4), strategy).ops._replace(rmap=0)


def test_v6_12_0_reads_the_pte_past_a_folios_end_only_where_that_pte_could_continue_the_batch():
    """Its loop has no clamp: at a folio's end it reads the next PTE, and only the PFN check stops it.
    The extra reads are the batches that end at their folio's end before the table's or VMA's end."""
    _, sc, _ = load(MECH, "batch-ends")
    new, old = run(sc.config, fb.FOLIO_BATCH), run(sc.config, fb.V6_12_0_BATCH)
    assert new.ghost_batches == old.ghost_batches
    extra = 0
    for b in new.ghost_batches:
        if b.how == fb.BATCH:
            f = new.folios[fb.folio_index(new, pt.pte_pfn(new.ghost_snap[b.addr]))]
            at_folio_end = pt.pte_pfn(new.ghost_snap[b.addr]) + b.nr == f.pfn + f.nr_pages
            extra += at_folio_end and b.addr + b.nr < new.vmas[b.vma].end
    assert extra >= 2 and old.ops.loads - new.ops.loads == extra


def test_the_texts_of_v6_12_0_and_arch_hint_say_what_the_model_leaves_out():
    """The same batches above are why v6.12.0-batch's text must say the XEN PV bug is not shown; arch-hint
    runs 6.12's copy after v4's sizing, and says so."""
    old, hint = fb_variants.VARIANTS[fb.V6_12_0_BATCH].doc, fb_variants.VARIANTS[fb.ARCH_HINT].doc
    assert "XEN PV" in old and "not shown" in old and "none PTE" in old
    assert "Only the sizing is v4's" in hint and "folio_try_dup_anon_rmap_ptes" in hint


# --- the faults beside the copy: what their PTEs are -----------------------------------------------------

def after_write_fault(fmt, name, overrides=()):
    """The final state of a bundled fault or GUP scenario, on its own schedule, in format ``fmt``."""
    tr = kstep.open(MECH, name, overrides=[f'format="{fmt}"', *overrides]).run()
    assert tr.outcome == "finished"
    return tr.states[-1]


def pinned_for_writing(fmt, pages):
    """G pins page 3 of an exclusive order-4 folio mapped read-only and old (``pages`` of it: 16 fold into
    an arm64 block) for writing, so its slow path takes a write fault; P forks."""
    config = one_folio(fmt, 4, pages)
    config["maps"][0].update(write=False, young=False)
    config["threads"] = [{"name": "G", "kind": "gup", "faults": [], "addr": 3}, *config["threads"]]
    return config


def reuse_then_fork(fmt):
    """The final state when G's pin and its write fault (wp_page_reuse) come before the fork."""
    config = pinned_for_writing(fmt, 8)
    m = MODELS[MECH]()
    tr = simulate(m, m.initial(config), Scripted("G*7"), config=config)
    assert tr.outcome == "finished" and "G:__get_user_pages" in [f"{a.actor}:{a.label}" for a in tr.actions]
    return tr.states[-1]


@pytest.mark.parametrize("fmt", pt.FORMATS)
def test_a_write_fault_marks_its_pte_soft_dirty_where_the_architecture_tracks_it(fmt):
    """pte_mkdirty() on x86-64 and ppc64 sets _PAGE_SOFT_DIRTY with _PAGE_DIRTY (arch/x86/include/asm/
    pgtable.h, arch/powerpc/include/asm/book3s/64/pgtable.h); arm64 has no CONFIG_HAVE_ARCH_SOFT_DIRTY.
    do_anonymous_page, wp_page_copy and wp_page_reuse (which makes the entry young too) all call it."""
    made = {"do_anonymous_page": after_write_fault(fmt, "fault-vs-fork").parent[10],
            "wp_page_copy": after_write_fault(fmt, "gup-fast-vs-fork").parent[0],
            "wp_page_reuse": reuse_then_fork(fmt).parent[3]}
    for how, pte in made.items():
        assert pt.pte_present(pte) and pt.pte_write(pte) and pt.pte_dirty(pte) and pt.pte_young(pte), how
        assert bool(pte & pt.PTE_SOFT_DIRTY) == pt.HAS_SOFT_DIRTY[fmt], how



def test_a_write_fault_on_a_folded_arm64_block_unfolds_it_first():
    """The write bit changes, so 6.12 unfolds the block (contpte_ptep_set_access_flags for a reused page,
    ptep_clear_flush for a copied one) before it sets the one entry: every interleaving of the pin's fault
    with the fork is clean, and a pin before the fork leaves 16 unfolded entries, only the pinned one made
    writable and young."""
    config = pinned_for_writing(pt.ARM64, CONT_PTES)
    m = MODELS[MECH]()
    s0 = m.initial(config)
    assert pt.pte_valid_cont(s0.parent[3])
    r = explore(m, s0)
    assert r.clean, r.violation
    parent = simulate(m, s0, Scripted("G*7"), config=config).states[-1].parent[:CONT_PTES]
    assert not any(pt.pte_cont(p) for p in parent)
    assert [k for k, p in enumerate(parent) if pt.pte_write(p)] == [k for k, p in enumerate(parent) if pt.pte_young(p)]
    assert [k for k, p in enumerate(parent) if pt.pte_write(p)] == [3]

# --- scenarios: bad ones are one line -------------------------------------------------------------------

GOOD = """
description = "d"
look_for = "l"
[[vmas]]
start = 0
end = 32
[[folios]]
name = "A"
order = 4
[[maps]]
at = 0
folio = "A"
[[threads]]
name = "P"
kind = "fork"
"""


@pytest.mark.parametrize("change, message", [
    (('order = 4', 'order = 3'), "folios[0].order: 3 is not one of 0, 4, 9"),
    (('at = 0', 'at = 20'), "run past the end of their VMA"),
    (('folio = "A"', 'folio = "Z"'), "'Z' is not a folio's name"),
    (('kind = "fork"', 'kind = "gup"'), "exactly one thread forks"),
    (('folio = "A"', 'folio = "A"\nwrite = false\ntoggle_write = [16]'), "16 is not one of this entry's 16 pages"),
    (('folio = "A"', 'folio = "A"\nexclusive = false'), "writable PTE to an anonymous page that is not exclusive"),
    (('end = 32', 'end = 32\nprot = "r"'), "its VMA is read-only"),
    (('folio = "A"', 'folio = "A"\nuffd_wp = true'), "is writable and uffd-wp"),
    (('end = 32', 'end = 32\nkind = "private-file"'), "writable page-cache PTE in a private file mapping"),
    (('order = 4', 'order = 4\npinned = true'), "no page of it is"),
])
def test_bad_scenarios_are_one_line_naming_the_place(change, message):
    scenario.parse(MECH, MODELS[MECH].scenario_schema, "x", GOOD, "x.toml", [])
    bad = GOOD.replace(*change)
    if "private-file" in change[1]:
        bad = bad.replace('order = 4', 'order = 4\nkind = "file"')
    if "pinned" in change[1]:
        bad = "mmf_has_pinned = true\n" + bad.replace('folio = "A"', 'folio = "A"\nwrite = false\nexclusive = false')
    with pytest.raises(UserError) as e:
        scenario.parse(MECH, MODELS[MECH].scenario_schema, "x", bad, "x.toml", [])
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("extra, message", [
    ('\nformat = "arm64-4K-contpte"\n', "arm64-4K-contpte has no soft-dirty bit"),
    ('\nformat = "generic"\n', "generic has no uffd-wp bit"),
])
def test_a_bit_the_format_does_not_have_is_refused(extra, message):
    bit = "soft_dirty" if "arm64" in extra else "uffd_wp"
    text = extra + GOOD.replace('folio = "A"', f'folio = "A"\n{bit} = true')
    with pytest.raises(UserError, match=message):
        scenario.parse(MECH, MODELS[MECH].scenario_schema, "x", text, "x.toml", [])


def test_a_pinned_large_folio_may_have_shared_pages_and_fork_shares_only_those():
    """sanity_check_pinned_pages asks exclusivity of the pinned (or head) page only; the pages of the
    folio that were already shared are shared with the child too, the exclusive ones are copied."""
    text = "\n".join(['description = "d"', 'look_for = "l"', "mmf_has_pinned = true", "[[vmas]]", "start = 0",
                      "end = 4", "[[folios]]", 'name = "F"', "order = 4", "pinned = true", "[[maps]]", "at = 0",
                      'folio = "F"', "pages = 2", "[[maps]]", "at = 2", 'folio = "F"', "first = 2", "pages = 2",
                      "write = false", "exclusive = false", "[[threads]]", 'name = "P"', 'kind = "fork"'])
    s = run(scenario.parse(MECH, MODELS[MECH].scenario_schema, "x", text, "x.toml", []).config)
    parent, child = s.parent, s.child
    assert [pt.pte_pfn(child[a]) != pt.pte_pfn(parent[a]) for a in range(4)] == [True, True, False, False]


def test_a_folded_block_split_between_two_vmas_is_copied_in_two_batches_and_unfolded_once():
    """A VMA split after set_ptes folded a block (mprotect, madvise or uffd registration of half of it) leaves
    the block folded across the boundary. Fork copies each VMA alone: folio_pte_batch stops at the VMA's end,
    and contpte_wrprotect_ptes, covering half the block, unfolds it (contpte_try_unfold_partial)."""
    text = "\n".join(['description = "d"', 'look_for = "l"', 'format = "arm64-4K-contpte"', "[[vmas]]", "start = 0",
                      "end = 8", "[[vmas]]", "start = 8", "end = 16", "[[folios]]", 'name = "A"', "order = 4",
                      "[[maps]]", "at = 0", 'folio = "A"', "[[threads]]", 'name = "P"', 'kind = "fork"'])
    config = scenario.parse(MECH, MODELS[MECH].scenario_schema, "x", text, "x.toml", []).config
    m = MODELS[MECH](None)
    assert all(pt.pte_cont(p) for p in m.initial(config).parent)
    assert explore(m, m.initial(config)).clean
    s = run(config)
    assert [(b.vma, b.nr) for b in s.ghost_batches] == [(0, 8), (1, 8)] and s.ops.unfolds == 1 and not s.ops.folds
    assert not any(pt.pte_cont(p) for p in s.parent + s.child)
    assert [pt.pte_pfn(p) for p in s.child] == [pt.pte_pfn(p) for p in s.parent]


def test_bad_scenario_file_exits_2_with_one_line(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(GOOD.replace("order = 4", "order = 5"))
    p = subprocess.run([sys.executable, "-m", "kstep", "run", MECH, "--scenario", str(bad)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and p.stdout == "" and p.stderr.count("\n") == 1 and "order" in p.stderr


def test_a_seed_gives_the_same_run_in_another_process(tmp_path):
    traces = []
    for k in range(2):
        out = tmp_path / f"t{k}.json"
        subprocess.run([sys.executable, "-m", "kstep", "run", MECH, "--scenario", "gup-fast-vs-fork", "-s", "11",
                        "--json", str(out)], check=True, capture_output=True)
        traces.append(out.read_text())
    assert traces[0] == traces[1]

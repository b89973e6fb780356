"""The fork cost model: counts measured by running fork-batch, scaled from PTE tables to a GiB."""

import pytest

from kstep.engine import Random, costs, simulate
from kstep.engine.timed import Timed
from kstep.measure import fork_batch as fc
from kstep.models import make_model
from kstep.models.fork_batch.pgtable import ARM64, X86_64, Ops, pte_cont, pte_write
from kstep.models.fork_batch.state import FOLIO_BATCH, NO_HINT, PER_PTE


def test_a_fork_costs_its_fixed_part_plus_the_same_for_every_pte_table():
    """The GiB figures rest on this: three tables cost what one fork's fixed part and three times one
    table's part predict, measured by running the model on three tables."""
    for fmt, order in ((X86_64, 4), (ARM64, 9)):
        parts = fc.per_gib(fmt, FOLIO_BATCH, order)
        three = fc.fork_run(fmt, FOLIO_BATCH, order, 3)[0]
        assert three == Ops(*(parts["fixed"][k] + 3 * parts["table"][k] for k in Ops._fields)), (fmt, order)
        assert parts["fixed"]["tlb_flushes"] == 1  # dup_mmap's flush_tlb_mm, once per fork


def test_the_lab_gets_one_relative_cost_per_mode_and_none_where_the_model_has_no_pmd():
    batched = fc.predicted_relative_cost(ARM64)
    assert list(batched) == list(fc.LAB_MODES) and batched["4K"] == 1.0 and batched["2M THP"] is None
    assert batched["2M PTE-mapped"] < 1.0 and batched["64K mTHP"] < 1.0
    unhinted = fc.predicted_relative_cost(ARM64, NO_HINT)
    assert unhinted["64K mTHP"] > 1.0, "without the hint every folded PTE read gathers its whole block"
    one_by_one = fc.predicted_relative_cost(X86_64, PER_PTE)
    assert one_by_one["2M PTE-mapped"] >= 1.0, "one PTE at a time, a large folio saves nothing"


def test_weights_change_what_an_operation_costs():
    loads_only = {k: int(k == "loads") for k in Ops._fields}
    assert fc.predicted_relative_cost(ARM64, NO_HINT, loads_only)["64K mTHP"] > \
        fc.predicted_relative_cost(ARM64, NO_HINT)["64K mTHP"]


def test_an_unknown_format_is_refused():
    with pytest.raises(ValueError, match="unknown PTE format 'sparc'"):
        fc.predicted_relative_cost("sparc")


def test_a_timed_fork_pays_for_the_operations_it_counts():
    """Page tables and folios are no shared cache lines, so the timed scheduler charges the copy for the
    operations it counted: raise the price of an atomic (or of a load) and one more PTE table's time
    grows by that much for each one that table did (dup_mmap's locks are in the fixed part), and three
    tables take the fixed part and three times one table's."""
    table = costs.load()
    model = make_model("fork-batch", FOLIO_BATCH)

    def one_more_table(**dearer):
        t = table._replace(ns={**table.ns, **{k: table.ns[k] + v for k, v in dearer.items()}})
        runs = [simulate(model, model.initial(fc.populated(X86_64, 4, n)), Timed(t), check=False) for n in (1, 2)]
        return runs[1].stats["makespan_ns"] - runs[0].stats["makespan_ns"]

    ops = fc.per_gib(X86_64, FOLIO_BATCH, 4)["table"]
    base = one_more_table()
    assert one_more_table(atomic=10) - base == pytest.approx(10 * (ops["atomics"] + ops["refs"] + ops["rmap"]))
    assert one_more_table(load=10) - base == pytest.approx(10 * ops["loads"])
    parts = fc.per_gib(X86_64, FOLIO_BATCH, 4, timed=True)["makespan_ns"]
    three = fc.fork_run(X86_64, FOLIO_BATCH, 4, 3, timed=True)[2]
    assert three == pytest.approx(parts["fixed"] + 3 * parts["table"], abs=0.5)  # makespans rounded to 0.1 ns


@pytest.mark.parametrize("fmt, strategy, order", [(X86_64, FOLIO_BATCH, 4), (ARM64, FOLIO_BATCH, 9),
                                                  (ARM64, PER_PTE, 9)])
def test_a_later_fork_copies_what_the_first_left_once_its_child_exited(fmt, strategy, order):
    """forkbench's child exits at once and its parent never writes between forks (kernel-lab/guest/forkbench.c):
    the next fork finds the parent's PTEs as the first fork left them, write-protected (and on arm64 each block
    folded or not as the copy left it), PageAnonExclusive clear, and every count back to one mapping."""
    model = make_model("fork-batch", strategy)
    fresh = model.initial(fc.populated(fmt, order, 1))
    first = simulate(model, fresh, Random(0), check=False).states[-1]
    later = fc.after_child_exit(first, fresh)
    assert later.parent == first.parent != fresh.parent and not any(pte_write(p) for p in later.parent)
    assert later.child == fresh.child and later.ops == Ops()
    assert [f._replace(exclusive=0) for f in later.folios] == [f._replace(exclusive=0) for f in fresh.folios]
    assert all(f.exclusive == 0 for f in later.folios) and all(f.exclusive for f in fresh.folios)
    if fmt == ARM64:  # folio-batch write-protects whole blocks, which stay folded; one PTE at a time unfolds them
        folded = [pte_cont(p) for p in later.parent]
        assert all(folded) if strategy == FOLIO_BATCH else not any(folded)


def test_a_later_fork_write_protects_nothing():
    """Its PTEs are read-only already, so __copy_present_ptes calls no wrprotect_ptes: no PTE read-modify-write,
    one load less per PTE; the rmap and reference atomics stay per batch; on arm64 a per-PTE copy unfolds no
    block (the first fork unfolded them all) but still folds the child's."""
    for fmt in (X86_64, ARM64):
        first, later = (fc.per_gib(fmt, FOLIO_BATCH, 9, fork=f)["table"] for f in fc.FORKS)
        assert first["atomics"] == 512 and later["atomics"] == 0, fmt
        assert first["loads"] - later["loads"] == 512 and later["rmap"] == first["rmap"] == 513, fmt
        assert later["refs"] == first["refs"] == 1, fmt
    first, later = (fc.per_gib(ARM64, PER_PTE, 9, fork=f)["table"] for f in fc.FORKS)
    assert (first["unfolds"], later["unfolds"], first["folds"], later["folds"]) == (32, 0, 32, 32)
    with pytest.raises(ValueError, match="unknown fork 'third': one of first, later"):
        fc.fork_run(X86_64, FOLIO_BATCH, 0, 1, fork="third")


def test_the_2m_pte_mode_starts_as_forkbenchs_mprotect_leaves_it():
    """forkbench's 2m-pte mode splits each PMD by an mprotect of its first page and back: on arm64 that
    page's block is unfolded (ptep_get_and_clear) and never folded again (set_pte_at folds on a block's
    last entry only), so the first of the 32 blocks of every 2 MiB is unfolded; x86-64 has nothing to
    unfold.  The unfolded block never batches with the folded ones: two batches per table, not one.  The
    lab's 2M PTE-mapped prediction is of that state, the thread's order-9 rows are not."""
    model = make_model("fork-batch", FOLIO_BATCH)
    for fmt in (X86_64, ARM64):
        fresh = model.initial(fc.populated(fmt, 9, 2))
        split = fc.split_by_mprotect(fresh)
        cont = [pte_cont(p) for p in split.parent]
        if fmt == X86_64:
            assert split == fresh
            continue
        assert all(pte_cont(p) for p in fresh.parent)
        assert cont == ([False] * 16 + [True] * 496) * 2
        assert [pte_write(p) for p in split.parent] == [pte_write(p) for p in fresh.parent]
    for fork in fc.FORKS:
        folded, left = (fc.per_gib(ARM64, FOLIO_BATCH, 9, fork=fork, split=s)["table"] for s in (False, True))
        assert (folded["batches"], left["batches"], left["refs"], left["rmap"]) == (1, 2, 2, 514), fork
        base = fc.weighted(fc.per_gib(ARM64, FOLIO_BATCH, 0, fork=fork)["gib"])
        assert fc.predicted_relative_cost(ARM64, fork=fork)["2M PTE-mapped"] == \
            round(fc.weighted(fc.per_gib(ARM64, FOLIO_BATCH, 9, fork=fork, split=True)["gib"]) / base, 4)

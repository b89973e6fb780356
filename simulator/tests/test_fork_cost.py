"""The fork cost model: counts measured by running fork-batch, scaled from PTE tables to a GiB."""

import pytest

from kstep.engine import costs, simulate
from kstep.engine.timed import Timed
from kstep.measure import fork_batch as fc
from kstep.models import make_model
from kstep.models.fork_batch.pgtable import ARM64, X86_64, Ops
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

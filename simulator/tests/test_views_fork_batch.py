"""The fork-batch view: what its page-table grids and outlines show, frame by frame."""

from kstep import views
from support import load
from kstep.engine import Random, simulate
from kstep.models.fork_batch.pgtable import CONT_PTES
from kstep.views import style
from kstep.views.player import Frames

MECH = "fork-batch"


def frames_of(name, variant=None):
    model, sc, start = load(MECH, name, variant)
    trace = simulate(model, start, Random(1), scenario=sc.name, config=sc.config)
    return trace, Frames(views.layout(trace, model))


def test_the_childs_outlines_are_the_copies_made_so_far_and_grow_one_copy_at_a_time():
    trace, frames = frames_of("mthp-batches")
    for k, s in enumerate(trace.states):
        outlined = frames.rows("pt-child-copies", k)["w"]
        assert sorted(outlined) == sorted(b.nr for b in s.ghost_batches), f"frame {k}"
    assert sorted(frames.rows("pt-child-copies", len(trace))["w"]) == [1, 8, 16]


def test_the_parents_outline_follows_the_batch_as_folio_pte_batch_grows_it():
    trace, frames = frames_of("mthp-batches")
    widths = [frames.rows("pt-parent-copying", k)["w"] for k in range(len(trace) + 1)]
    grown = [w[0] for w, s in zip(widths, trace.states) if w and s.copy.addr == 0]
    assert grown == sorted(grown) and max(grown) == 16 and 1 in grown
    assert widths[-1] == []  # the copy is over: nothing in progress


def test_cells_fade_when_write_protected_and_take_their_folios_colour():
    trace, frames = frames_of("mthp-batches")
    first, last = frames.rows("pt-parent-cells", 0), frames.rows("pt-parent-cells", len(trace))
    assert first["alpha"][0] == 1.0 and last["alpha"][0] < 1.0
    assert first["fill"][0] == first["fill"][15] != first["fill"][16] and first["fill"][17] == style.WHITE
    child = frames.rows("pt-child-cells", len(trace))
    assert child["fill"][:16] == first["fill"][:16] and frames.rows("pt-child-cells", 0)["fill"][0] == style.WHITE


def test_folded_arm64_blocks_are_outlined_in_both_tables():
    trace, frames = frames_of("contpte-arm64")
    assert frames.rows("pt-parent-folded", 0)["w"] == [CONT_PTES, CONT_PTES]
    assert frames.rows("pt-child-folded", 0)["w"] == []
    assert frames.rows("pt-child-folded", len(trace))["w"] == [CONT_PTES, CONT_PTES]
    trace, per_pte = frames_of("contpte-arm64", "per-pte")  # one PTE at a time unfolds the parent's blocks
    assert per_pte.rows("pt-parent-folded", len(trace))["w"] == []
    assert per_pte.rows("pt-child-folded", len(trace))["w"] == [CONT_PTES, CONT_PTES]


def test_the_counters_run_with_the_ops_of_each_frame():
    trace, frames = frames_of("contpte-arm64")
    for k in (0, len(trace) // 2, len(trace)):
        assert frames.rows("counters", k)["value"] == list(trace.states[k].ops)


def test_the_parent_and_the_child_grids_stand_side_by_side_on_the_same_grid():
    """One row holds both tables, parent first, each half the page wide, with the same columns: a
    page and its copy sit at the same place in the two grids."""
    from bokeh.layouts import Row

    model, sc, start = load(MECH, "table-boundary")
    trace = simulate(model, start, Random(1), scenario=sc.name, config=sc.config)
    layout = views.layout(trace, model)
    tables = layout.select_one({"name": "kstep-page-tables"})
    assert isinstance(tables, Row)
    assert [p.name for p in tables.children] == ["kstep-plot-pt-parent", "kstep-plot-pt-child"]
    assert sum(p.width for p in tables.children) <= style.WIDTH
    frames = Frames(layout)
    end = len(trace)
    parent, child = frames.rows("pt-parent-cells", end), frames.rows("pt-child-cells", end)
    assert (parent["x"], parent["y"]) == (child["x"], child["y"])
    copied = [k for k, f in enumerate(child["fill"]) if f != style.WHITE]
    assert copied and all(child["fill"][k] == parent["fill"][k] for k in copied)

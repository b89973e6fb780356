"""Views without a browser: pages, errors, the registry, and what each view draws for a state."""

import re

import pytest
from bokeh.core.validation import check_integrity
from bokeh.models import BoxAnnotation, ColumnDataSource, CustomJS, GlyphRenderer, Plot, Range1d, Widget

import kstep
from kstep import views
from kstep.scenario_spec import scenario
from kstep.scenario_spec.runs import own_run
from kstep.errors import UserError
from kstep.models import MODELS
from kstep.models.rcu import gp_seq_long
from kstep.views import style
from kstep.views.player import Frames
from kstep.views.presentation import present

NAMED = ["kstep-slider", "kstep-play", "kstep-step", "kstep-back", "kstep-reset", "kstep-speed", "kstep-status",
         "kstep-banner", "kstep-player", "kstep-frames"]


def run(mech, name, variant=None, seed=1):
    """A bundled scenario run as kstep runs it: under its own variant unless told another."""
    ex = kstep.open(mech, name, variant)
    return own_run(ex.model, ex.scenario, seed), ex.model


def counterexample(mech, variant, name):
    ex = kstep.open(mech, name, variant)
    result = ex.explore()
    assert result.counterexample is not None
    return result.counterexample, ex.model


ALL_SCENARIOS = [(m, n) for m in sorted(MODELS) for n in scenario.bundled(m)]


@pytest.mark.parametrize("mech,name", ALL_SCENARIOS)
def test_every_bundled_scenario_lays_out_cleanly(mech, name):
    trace, model = run(mech, name)
    lay = views.layout(trace, model)
    refs = list(lay.references())  # Bokeh walks the whole document for each call: once is enough
    issues = check_integrity(refs)
    assert not issues.error, issues.error
    names = [m.name for m in refs if m.name]
    assert len(names) == len(set(names)), "model names must be unique for get_model_by_name"
    for n in NAMED:
        assert n in names, n
    kinds = (GlyphRenderer, ColumnDataSource, Plot, Widget, CustomJS, Range1d, BoxAnnotation)
    unnamed = [m for m in refs if isinstance(m, kinds) and not m.name]
    assert unnamed == [], "tests find models by name: give every view model one"
    panels = next(m for m in refs if m.name == "kstep-player").args["kstep"]["panels"]
    assert {p for panel in panels for p in panel["plots"]} == {m for m in refs if isinstance(m, Plot)}, \
        "player.js rescales the plots its panels list: every plot, and only those"


def test_a_panels_plots_are_listed_in_the_order_it_draws_them():
    """Not select()'s set order, which changed from one build of the site to the next."""
    from bokeh.layouts import column, row
    from bokeh.plotting import figure

    from kstep.views.player import plots_in

    plots = [figure(name=f"p{k}") for k in range(4)]
    assert plots_in(column(row(plots[0], plots[1]), column(plots[2], row(plots[3])))) == plots
    assert plots_in(row(plots[3], column(plots[1], plots[0]))) == [plots[3], plots[1], plots[0]]


def test_mechanisms_have_their_own_views_and_others_get_the_generic_one():
    assert {"rcu", "vma-locks"} <= set(views.VIEWS)
    from kstep.views.generic import generic_view

    assert views.view_for("no-such-mechanism") is generic_view
    trace, model = run("rcu", "grace-period-basics")
    lay = generic_view(trace, model)
    assert lay.select_one({"name": "kstep-slider"}).end == len(trace)
    with pytest.raises(ValueError, match="already registered"):
        views.register("rcu")(generic_view)


def test_save_html_is_one_offline_file_and_replaces_what_was_there(tmp_path):
    trace, model = run("rcu", "grace-period-basics")
    path = tmp_path / "rcu.html"
    path.write_text("old content")
    views.save_html(trace, model, path)
    html = path.read_text()
    assert "old content" not in html
    assert not re.search(r"<script[^>]+src=", html), "BokehJS must be inline, not loaded from anywhere"
    assert "Bokeh.set_log_level" in html or "bokeh" in html.lower()
    assert len(html) > 1_000_000  # bokeh.min.js and the widgets bundle are inside


def test_save_html_into_a_missing_folder_is_one_line_user_error(tmp_path):
    trace, model = run("rcu", "grace-period-basics")
    with pytest.raises(UserError) as e:
        views.save_html(trace, model, tmp_path / "missing" / "x.html")
    assert "does not exist" in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "missing").exists()
    (tmp_path / "dir.html").mkdir()
    with pytest.raises(UserError, match="cannot write"):
        views.save_html(trace, model, tmp_path / "dir.html")


def test_the_banner_names_the_violated_invariant_and_shows_only_at_the_end():
    trace, model = counterexample("rcu", "gp-ends-early", "grace-period-basics")
    lay = views.layout(trace, model)
    banner = lay.select_one({"name": "kstep-banner"})
    assert not banner.visible
    assert trace.violation.invariant in banner.text
    assert trace.violation.message.split()[0] in banner.text
    assert "broken variant gp-ends-early" in lay.select_one({"name": "kstep-header"}).text


def test_rcu_view_outlines_the_cpu_whose_quiescent_state_is_pending():
    trace, model = run("rcu", "grace-period-basics")
    frames = Frames(views.layout(trace, model))
    seen = False
    for k, s in enumerate(trace.states):
        boxes = frames.rows("threads", k)
        for i in range(len(s.threads)):
            pending = bool(s.rcu.qsmask >> i & 1)
            assert (boxes["line"][i] == style.ORANGE) == pending, f"frame {k} CPU {i}"
            seen |= pending
        gp = frames.rows("gp", k)
        assert gp["head"] == [f"gp_seq {gp_seq_long(s.rcu.gp_seq)}"]  # as the tracepoints print it
        assert gp["head"][0].startswith("gp_seq -1")
    assert seen, "the scenario should hold up a grace period at least once"


def test_vma_view_colours_a_vma_write_locked_exactly_during_the_write_epoch():
    from kstep.models.vma_locks.state import is_write_locked

    trace, model = run("vma-locks", "recheck-race")
    frames = Frames(views.layout(trace, model))
    locked_frames = 0
    for k, s in enumerate(trace.states):
        tree = frames.rows("tree", k)
        assert len(tree["head"]) == len(s.mm.tree)
        for v, head, fill in zip(s.mm.tree, tree["head"], tree["fill"]):
            assert head.startswith(f"VMA {v} ")
            assert f"vm_lock_seq {s.vmas[v].vm_lock_seq}" in tree["body"][list(s.mm.tree).index(v)]
            assert (fill == style.PURPLE) == (is_write_locked(s, v) and not s.vmas[v].detached), f"frame {k} VMA {v}"
            locked_frames += fill == style.PURPLE
        mm = frames.rows("mm", k)
        assert mm["head"][0] == f"mm_lock_seq {s.mm.mm_lock_seq}"
    assert locked_frames, "recheck-race write-locks a VMA"


def test_vma_view_outlines_a_vma_left_locked_when_the_epoch_forgot_to_bump_mm_lock_seq():
    trace, model = counterexample("vma-locks", "no-seq-bump", "android-app-launch")
    frames = Frames(views.layout(trace, model))
    final = trace.states[-1]
    assert final.mm.mmap_lock.owner == -1
    tree = frames.rows("tree", len(trace))
    stale = [v for v in final.mm.tree if final.vmas[v].vm_lock_seq == final.mm.mm_lock_seq]
    assert stale, "the counterexample ends with a VMA whose vm_lock_seq still equals mm_lock_seq"
    for j, v in enumerate(final.mm.tree):
        assert (tree["line"][j] == style.PURPLE) == (v in stale)
        assert tree["fill"][j] != style.PURPLE, "no writer holds mmap_lock, so nothing is write-locked"


def test_vma_view_moves_an_unmapped_vma_off_the_tree_until_rcu_frees_it():
    trace, model = run("vma-locks", "munmap-vs-fault")
    frames = Frames(views.layout(trace, model))
    statuses = []
    for k, s in enumerate(trace.states):
        off = frames.rows("off-tree", k)
        gone = [v for v in range(len(s.vmas)) if v not in s.mm.tree]
        assert [h.split()[1] for h in off["head"]] == [str(v) for v in gone]
        statuses.append(tuple(off["body"]))
    assert any("rcu-pending" in b for bodies in statuses for b in bodies)
    assert "freed" in statuses[-1][0]


@pytest.mark.parametrize("mech,name", [("vma-locks", "munmap-vs-fault"), ("rcu", "call-rcu-callback"),
                                       ("qspinlock", "three-waiters")])
def test_every_board_marks_the_boxes_the_current_step_changed(mech, name):
    """A box is haloed exactly when the step into this frame changed it (nothing at step 0), on every
    board of every mechanism."""
    trace, model = run(mech, name)
    lay = views.layout(trace, model)
    frames = Frames(lay)
    boards = [n for n, ex in frames.exports.items() if "changed" in ex["kinds"]]
    assert boards
    halos = [r for r in lay.select({"type": GlyphRenderer}) if r.name and r.name.endswith("-changed")]
    assert len(halos) == len(boards) and all(r.glyph.line_alpha == "changed" for r in halos)
    marked = 0
    for b in boards:
        keys = [c for c in frames.exports[b]["kinds"] if c != "changed"]
        before = None
        for k in range(len(trace) + 1):
            rows = frames.rows(b, k)
            boxes = list(zip(*(rows[c] for c in keys)))
            old = set() if before is None else set(before)
            assert rows["changed"] == [0 if before is None or box in old else 1 for box in boxes], f"{b} at {k}"
            marked += sum(rows["changed"])
            before = boxes
    assert marked > 0


def test_vma_view_says_a_thread_was_killed_by_sigsegv():
    from kstep.views.boards.vma_locks import DONE, KILLED, PHASES, phase

    trace, model = run("vma-locks", "munmap-vs-fault")
    frames = Frames(views.layout(trace, model))
    final = trace.states[-1]
    t1, t2 = final.threads[0], final.threads[1]
    assert t1.died == "SIGSEGV" and not t2.died
    body = frames.rows("threads", len(trace))["body"]
    assert body[0].startswith("killed by SIGSEGV") and body[1].startswith("done")
    assert (phase(final, 0), phase(final, 1)) == (KILLED, DONE) and "killed" in PHASES[KILLED][0]


def test_vma_thread_phases_follow_the_locks_they_hold():
    from kstep.views.boards.vma_locks import EPOCH, LOOKUP, MM_READ, VMA_READ, WAIT_MM, WAIT_VMA

    seen = set()
    for name in ("recheck-race", "fork-vs-fault", "tcp-zerocopy-vs-madvise", "android-app-launch"):
        seen |= check_phases(*run("vma-locks", name))
    # recheck-race: T1 looks up, W write-locks, T1 falls back and sleeps on mmap_lock, then reads under it;
    # fork-vs-fault: dup_mmap waits in vma_start_write for T2's read lock
    assert {LOOKUP, VMA_READ, EPOCH, WAIT_MM, MM_READ, WAIT_VMA} <= seen


def check_phases(trace, model):
    from kstep.models.vma_locks.invariants import vma_read_locked
    from kstep.views.boards.vma_locks import EPOCH, LOOKUP, VMA_READ, WAIT_MM, WAIT_VMA, phase

    seen = set()
    for s in trace.states:
        for i, t in enumerate(s.threads):
            p = phase(s, i)
            seen.add(p)
            if p == EPOCH:
                assert s.mm.mmap_lock.owner == i
            if p == VMA_READ:
                assert i in s.vmas[t.vma].lock.readers
            if p == WAIT_MM:
                assert any(w == i for w, _ in s.mm.mmap_lock.waiters)
            if p != WAIT_MM:  # the view reads a VMA wait off the thread's next step: it must agree with the rwsems
                unqueued = t.frames and t.frames[0].label in ("rwsem_optimistic_spin", "rwsem_down_write_slowpath")
                assert (p == WAIT_VMA) == (unqueued or any(w == i for v in s.vmas for w, _ in v.lock.waiters))
            if p == LOOKUP:
                assert s.rcu.nesting[i] and not vma_read_locked(s, i)
    return seen


def test_damon_view_outlines_regions_made_by_a_split_or_a_merge_and_only_there():
    from kstep.views.boards.damon import MERGE_LINE, SPLIT_LINE

    trace, model = run("damon", "explore-sz-limit")
    frames = Frames(views.layout(trace, model))
    seen = set()
    for k in range(1, len(trace.states)):
        s, label = trace.states[k], trace.actions[k - 1].label
        rows = frames.rows("regions", k)
        lines = rows["line"][:2 * len(s.regions)]  # two halves a region, then the truth and the sampled pages
        outlined = {c for c in lines if c in (SPLIT_LINE[1], MERGE_LINE[1])}
        seen |= outlined
        if label == "kdamond_split_regions" and len(s.regions) > len(trace.states[k - 1].regions):
            assert outlined == {SPLIT_LINE[1]}, k
        elif label == "kdamond_merge_regions" and len(s.regions) < len(trace.states[k - 1].regions):
            assert MERGE_LINE[1] in outlined, k
        elif label != "damon_va_init":
            assert not outlined, (k, label)
    assert seen == {SPLIT_LINE[1], MERGE_LINE[1]}


def test_damon_heatmap_has_a_cell_per_region_of_every_aggregation_coloured_by_what_it_reported():
    from kstep.views.boards.damon import heat

    trace, model = run("damon", "hot-block")
    lay = views.layout(trace, model)
    cells = Frames(lay).rows("heatmap-cells", len(trace))
    reports = [s.regions for s in trace.states if s.k.phase == "kdamond_reset_aggregated"]
    assert len(reports) == trace.states[-1].k.aggregations
    assert cells["fill"] == [heat(r.nr_accesses, 20) for regions in reports for r in regions]
    assert any(f != heat(0, 20) for f in cells["fill"]), "hot-block's hot block is seen"


def test_a_run_that_repeats_forever_shows_no_counts_it_did_not_keep():
    """vma-locks keeps no count in the states of threads that repeat forever (else they would never
    repeat): its answers say so and its page draws no counters panel, where both showed zeros for the
    faults and lock takings the run did.  A run that ends keeps both."""
    def counted(trace, model):
        titles = [p.title.text for p in views.layout(trace, model).select({"type": Plot}) if p.title]
        return any(t.startswith("counters so far") for t in titles), present(model).answers(trace)

    forever = run("vma-locks", "rwsem-reader-steals")
    assert forever[0].states[0].forever
    panel, answers = counted(*forever)
    assert not panel and "mmap_lock_faults" not in answers and answers["counters"].startswith("not kept")
    panel, answers = counted(*run("vma-locks", "munmap-vs-fault"))
    assert panel and answers["vma_lock_success"] >= 1

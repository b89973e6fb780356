"""The qspinlock view without a browser: what it draws at each frame, against the model's state."""

import re

import pytest
from bokeh.core.validation import check_integrity
from bokeh.models import BoxAnnotation, ColumnDataSource, CustomJS, GlyphRenderer, Plot, Range1d, Widget

from kstep import views
from kstep.engine import Random, explore, simulate
from kstep.scenario_spec import scenario
from kstep.scenario_spec.runs import own_run
from kstep.models import make_model
from kstep.models.qspinlock import powerpc as qppc
from kstep.models.qspinlock import qspinlock as qgen
from kstep.models.qspinlock import qspinlock_types as qtypes
from kstep.models.qspinlock import spinlock_types as ttypes
from kstep.models.qspinlock import state as q
from kstep.models.qspinlock import variants as qvar
from kstep.views import qspinlock as qv
from kstep.views.boards import qspinlock as qb
from kstep.views import style
from kstep.views.player import Frames
from kstep.views.presentation import present
from support import load

MECH = "qspinlock"


def run(name, variant=None, seed=1, overrides=()):
    """A bundled scenario under its script, or seeded random where the script is for another variant."""
    model, sc, s0 = load(MECH, name, variant, overrides)
    if variant in (None, sc.variant or "v6.12"):
        return own_run(model, sc, seed), model
    return simulate(model, s0, Random(seed), max_steps=sc.max_steps, scenario=sc.name, config=sc.config), model


def counterexample(variant, name):
    model, sc, s0 = load(MECH, name, variant)
    # the first broken invariant, harm or not: these tests look at the state where it breaks
    return explore(model, s0, harm_first=False, scenario=sc.name, config=sc.config).counterexample, model


# One run of every layout the view draws: both pending layouts, nesting (two locks, an interrupt),
# the ticket lock, powerpc, the 2014 claim, and a counterexample.
RUNS = {
    "three-waiters": lambda: run("three-waiters"),
    "one-bit-pending": lambda: run("one-bit-pending"),
    "nesting": lambda: run("nesting"),
    "set-locked-contended": lambda: run("set-locked-contended"),
    "before-set-locked": lambda: run("set-locked-contended", "before-set-locked"),
    "ticket": lambda: run("three-waiters", "ticket"),
    "powerpc": lambda: run("powerpc-stealing", "powerpc"),
    "powerpc-nesting": lambda: run("nesting", "powerpc", seed=2),
    "link-before-init": lambda: counterexample("link-before-init", "three-waiters"),
}


@pytest.fixture(scope="module", params=sorted(RUNS))
def drawn(request):
    trace, model = RUNS[request.param]()
    lay = views.layout(trace, model)
    return trace, model, lay, Frames(lay)


def word_of(bits, lock):
    """The 32 drawn bits of ``lock`` (bit 31 first, as drawn) as a number."""
    cells = bits["bit"][32 * lock:32 * (lock + 1)]
    assert len(cells) == 32
    return int("".join(cells), 2)


def test_it_is_the_registered_view_and_lays_out_cleanly(drawn):
    trace, model, lay, frames = drawn
    assert views.view_for(MECH) is qv.qspinlock_view
    refs = list(lay.references())  # Bokeh walks the whole document for each call: once is enough
    assert not check_integrity(refs).error
    names = [m.name for m in refs if m.name]
    assert len(names) == len(set(names))
    kinds = (GlyphRenderer, ColumnDataSource, Plot, Widget, CustomJS, Range1d, BoxAnnotation)
    assert [m for m in refs if isinstance(m, kinds) and not m.name] == []
    for name in ("kstep-plot-word", "kstep-plot-state", "kstep-plot-timeline", "kstep-plot-counters"):
        assert name in names, name


def test_the_drawn_bits_are_the_model_word_and_a_changed_bit_is_outlined(drawn):
    trace, model, lay, frames = drawn
    for k, s in enumerate(trace.states):
        bits = frames(k)["bits"]
        before = trace.states[max(k - 1, 0)].words
        for lock, w in enumerate(s.words):
            got = word_of(bits, lock)
            assert got == w, f"frame {k} lock {lock}: the view draws {got:#010x}, the model's word is {w:#010x}"
            outlined = [int(line == style.BLUE) for line in bits["line"][32 * lock:32 * (lock + 1)]]
            assert int("".join(map(str, outlined)), 2) == w ^ before[lock], f"frame {k} lock {lock}: changed bits"


def test_the_word_is_written_in_the_step_tables_notation(drawn):
    """The header says the word as the model's own step table does: hex, then the source's triple."""
    trace, model, lay, frames = drawn
    for k, s in enumerate(trace.states):
        heads = frames(k)["word-head"]["text"]
        for lock, text in enumerate(heads):
            hex_word, triple = re.fullmatch(r"(0x[0-9a-f]{8}) \((.*)\)", model.word_text(s, lock)).groups() \
                if s.layout == q.QSPINLOCK else (f"{s.words[lock]:#010x}", None)
            assert hex_word in text
            if triple is not None:
                assert text.endswith(f"({triple})"), (k, text)


def test_every_transition_is_listed_with_the_word_before_and_after(drawn):
    trace, model, lay, frames = drawn
    s0 = trace.states[0]
    for k, (a, before, after) in enumerate(zip(trace.actions, trace.states, trace.states[1:]), start=1):
        rows = frames(k)["transitions"]
        current = [t for t, c in zip(rows["text"], rows["color"]) if c == style.BLUE]
        expected = [f"{a.actor} {a.label}  {qb.triple(s0, was)} → {qb.triple(s0, w)}   ← this step"
                    for was, w in zip(before.words, after.words) if was != w]
        assert current == expected, f"frame {k}"


def test_the_field_strips_cover_the_layouts_masks():
    """The fields drawn under the bits are the constants of each layout's header, bit for bit."""
    def mask(f):
        return ((1 << (f.hi - f.lo + 1)) - 1) << f.lo

    for bits in (8, 1):
        lay = qtypes.LAYOUTS[bits]
        fields = {f.name: mask(f) for f in qb.word_fields(q.QSPINLOCK, bits)}
        assert fields["tail cpu (+1)"] == lay.TAIL_CPU_MASK and fields["tail idx"] == lay.TAIL_IDX_MASK
        assert fields["pending"] == qtypes._Q_PENDING_VAL and fields["locked byte"] == qtypes._Q_LOCKED_MASK
        assert fields.get("not used", 0) | fields["pending"] == lay.PENDING_MASK
        assert sum(fields.values()) == qtypes.U32
    ppc = {f.name: mask(f) for f in qb.word_fields(q.POWERPC, 8)}
    assert ppc["tail cpu (+1)"] == qppc.PPC_TAIL_CPU_MASK and ppc["owner cpu"] == qppc.PPC_OWNER_CPU_MASK
    assert ppc["must-queue"] == qppc.PPC_MUST_Q_VAL and ppc["locked"] == qppc.PPC_LOCKED_VAL
    assert sum(ppc.values()) == qtypes.U32
    ticket = {f.name: mask(f) for f in qb.word_fields(q.TICKET, 8)}
    assert ticket == {"next ticket": qtypes.U16 << ttypes.TICKET_SHIFT, "owner (now serving)": qtypes.U16}


def test_nodes_are_drawn_four_per_cpu_with_their_fields_and_users(drawn):
    trace, model, lay, frames = drawn
    if trace.states[0].layout == q.TICKET:
        assert "nodes" not in frames(0), "the ticket lock has no MCS nodes"
        return
    for k, s in enumerate(trace.states):
        rows = frames(k)
        nodes = rows["nodes"]
        assert nodes["head"] == [qb.node_name(n) for n in range(len(s.nodes))]
        assert rows["cpu-count"]["text"] == [f"CPU {c} · count {n}" for c, n in enumerate(s.count)]
        users = qb.holders_of_nodes(s)
        for n, node in enumerate(s.nodes):
            nxt = "NULL" if node.next == q.NULL else qb.node_name(node.next)
            assert f"locked {node.locked} · next {nxt}" in nodes["body"][n], f"frame {k} {qb.node_name(n)}"
            counted = n % q.MAX_NODES < s.count[n // q.MAX_NODES]
            assert (nodes["fill"][n] == style.WHITE) == (not users.get(n) and not counted)
            for who in users.get(n, []):
                assert who in nodes["body"][n]


def test_the_arrows_are_the_next_pointers(drawn):
    """A solid arrow for every node in use whose next is set, a dashed one for a free node's stale next,
    each from its node's box to the box of the node it points to."""
    trace, model, lay, frames = drawn
    if trace.states[0].layout == q.TICKET:
        return
    seen = 0
    for k, s in enumerate(trace.states):
        rows = frames(k)
        users = qb.holders_of_nodes(s)
        live, stale = set(), set()
        for n, node in enumerate(s.nodes):
            if node.next != q.NULL:
                in_use = n in users or n % q.MAX_NODES < s.count[n // q.MAX_NODES]
                (live if in_use else stale).add((qb.node_name(n), qb.node_name(node.next)))
        assert set(zip(rows["links"]["src"], rows["links"]["dst"])) == live, f"frame {k}"
        assert set(zip(rows["stale-links"]["src"], rows["stale-links"]["dst"])) == stale, f"frame {k}"
        box = {h: (x, w) for h, x, w in zip(rows["nodes"]["head"], rows["nodes"]["x"], rows["nodes"]["w"])}
        for src, dst, x0, x1 in zip(rows["links"]["src"], rows["links"]["dst"], rows["links"]["x0"],
                                    rows["links"]["x1"]):
            assert abs(x0 - box[src][0]) < box[src][1] / 2 and abs(x1 - box[dst][0]) < box[dst][1] / 2
        seen += len(live)
    if trace.scenario == "three-waiters" and trace.variant == "v6.12":
        assert seen, "C3 links in behind C2"


def test_the_lost_link_disappears_when_the_late_init_overwrites_it():
    trace, model = counterexample("link-before-init", "three-waiters")
    frames = Frames(views.layout(trace, model))
    k = next(k for k, a in enumerate(trace.actions, start=1) if a.label == "link_prev")
    assert list(zip(frames(k)["links"]["src"], frames(k)["links"]["dst"])) == [("cpu2/idx0", "cpu3/idx0")]
    assert trace.actions[-1].label == "mcs_node_init"
    assert frames(len(trace))["links"]["src"] == []


def test_the_tail_mark_follows_the_word_not_the_queue():
    """The waiter marked "← tail" is the one the word's tail names.  In the clear-tail-always
    counterexample the head C2 wipes the tail that C3, setting pending, has just seen: C3 is about to
    queue behind a tail that is gone, and no box says tail."""
    trace, model = run("three-waiters")
    frames = Frames(views.layout(trace, model))
    lay = qtypes.LAYOUTS[8]
    seen = 0
    for k, s in enumerate(trace.states):
        heads = frames(k)["queue"]["head"]
        marked = [h.split(". ")[1].removesuffix(" ← tail") for h in heads if h.endswith("← tail")]
        tail = s.words[0] & lay.TAIL_MASK
        named = [t.name for t in s.threads if 0 <= t.idx < q.MAX_NODES and qgen.encode_tail(lay, t.cpu, t.idx) == tail]
        assert marked == named, f"frame {k}"
        seen += bool(named)
    assert seen, "three-waiters queues C2 and then C3 as the tail"
    cex, bug = counterexample("clear-tail-always", "three-waiters")
    final = Frames(views.layout(cex, bug))(len(cex))["queue"]["head"]
    assert final == ["holds A: C2", "pending: C3"]
    assert cex.states[-1].words[0] == qtypes._Q_LOCKED_VAL


def test_a_node_two_contexts_use_is_outlined_in_red():
    trace, model = counterexample("count-after-init", "nesting")
    nodes = Frames(views.layout(trace, model))(len(trace))["nodes"]
    shared = nodes["head"].index("cpu0/idx0")
    assert nodes["line"][shared] == style.VERMILLION and "C0, C0.irq" in nodes["body"][shared]
    assert [h for h, line in zip(nodes["head"], nodes["line"]) if line == style.VERMILLION] == ["cpu0/idx0"]


@pytest.mark.parametrize("variant", [v for v, var in qvar.VARIANTS.items()])
def test_every_step_label_has_a_phase(variant):
    model = make_model(MECH, variant)
    assert set(model.sources()) <= set(qb.PHASE_OF[model.layout])


def test_phases_agree_with_the_word_and_one_head_spins_per_lock():
    for name in scenario.bundled(MECH):
        for variant in ("v6.12", "before-set-locked", "powerpc", "ticket"):
            trace, model = run(name, variant)
            for k, s in enumerate(trace.states):
                ph = [qb.phase(s, i) for i in range(len(s.threads))]
                for lock, w in enumerate(s.words):
                    on = [i for i, t in enumerate(s.threads) if t.lock == lock]
                    holding = [i for i in on if ph[i] in (qb.HOLDS, qb.RELEASES)]
                    assert len(holding) <= 1, f"{name} {variant} frame {k}"
                    if holding and s.layout == q.QSPINLOCK:
                        assert w & qtypes._Q_LOCKED_MASK, (
                            f"{name} {variant} frame {k}: a holder, and the word is not locked")
                    if s.layout != q.TICKET:
                        heads = [i for i in on if ph[i] == qb.QUEUE_HEAD]
                        assert len(heads) <= 1, f"{name} {variant} frame {k}: two queue heads"
                        if heads:
                            waiting = [j for j in s.ghost_order[lock] if j not in holding]
                            assert waiting[0] == heads[0], f"{name} {variant} frame {k}: the head is first in line"


def test_an_interrupt_is_drawn_in_progress_exactly_while_the_model_holds_its_task_back():
    seen = set()
    for variant in ("v6.12", "powerpc"):
        trace, model = run("nesting", variant, seed=4)
        for k, s in enumerate(trace.states):
            movers = {a.actor for a in model.actions(s)}
            unheld = {a.actor for a in super(type(model), model).actions(s)}  # before interrupts hold tasks back
            for task, irq in s.nest:
                name = s.threads[task].name
                busy = qb.phase(s, irq) not in (qb.IRQ_IDLE, qb.DONE)
                seen.add(busy)
                if busy:
                    assert name not in movers, f"{variant} frame {k}: {name} moved during its interrupt"
                if name in unheld and name not in movers:
                    assert busy, f"{variant} frame {k}: {name} is held back, and no interrupt is drawn"
    assert seen == {True, False}


def test_counters_are_the_models_answers_step_by_step(drawn):
    trace, model, lay, frames = drawn
    names, counts = qb.counter_table(trace, model)
    final = present(model).answers(trace)
    assert names and {n: int(c) for n, c in zip(names, counts[-1])} == {n: final[n] for n in names}
    assert set(final) - set(names) <= set(trace.stats), "every counter of answers is drawn"
    for k in sorted({1, len(trace) // 2, len(trace)}):
        prefix = simulate_prefix(trace, k)
        assert [int(c) for c in counts[k]] == [present(model).answers(prefix)[n] for n in names]
        shown = frames(k)["counters"]
        assert shown["value"] == [int(c) for c in counts[k]]


def simulate_prefix(trace, k):
    """The first k steps of a trace, as a trace."""
    from dataclasses import replace

    return replace(trace, actions=trace.actions[:k], states=trace.states[:k + 1], ticks=trace.ticks[:k], stats={})


def test_the_key_names_the_layouts_own_phases():
    for variant, expected in (("ticket", "waits for its ticket"), ("powerpc", "tries to steal"),
                              ("v6.12", "queue head: spins on the lock word")):
        trace, model = run("three-waiters", variant)
        key = views.layout(trace, model).select_one({"name": "kstep-key"}).text
        assert expected in key

"""The context each step of the player gives (issue 12, item 4): the call stack it runs in, the object it
acts on, and how a thread that did not run to its end ended.  No browser: these read the page's data."""

import dataclasses

import pytest

import kstep
from kstep import views
from kstep.scenario_spec import scenario
from kstep.views import code, context, predict
from kstep.views.call_stacks import call_stacks


def run(mech, name):
    ex = kstep.open(mech, name)
    return ex.run(), ex.model


@pytest.fixture(scope="module")
def munmap():
    """munmap-vs-fault's run and what its page shows at each step: (actor, label, on, stack)."""
    trace, model = run("vma-locks", "munmap-vs-fault")
    lay = views.layout(trace, model)
    spec = lay.select_one({"name": "kstep-player"}).args["kstep"]
    frames, strings = spec["frames"].data, spec["strings"]
    shown = [(spec["actors"][frames["actor"][k]], spec["labels"][frames["label"][k]],
              strings[frames["on"][k]], strings[frames["stack"][k]]) for k in range(1, len(trace) + 1)]
    return trace, model, lay, shown


def test_a_step_shows_the_functions_it_runs_in(munmap):
    _, _, _, shown = munmap
    stacks = {(label, stack) for _, label, _, stack in shown}
    # vma_end_read's rcu_read_lock inside lock_vma_under_rcu's RCU section: the stack says why it is there.
    assert ("rcu_read_lock", "do_user_addr_fault › lock_vma_under_rcu › vma_end_read › rcu_read_lock") in stacks
    assert ("rcu_read_lock", "do_user_addr_fault › lock_vma_under_rcu › rcu_read_lock") in stacks
    # vma_start_read calls down_read_trylock; its recheck is vma_start_read again, then back in the caller.
    assert ("down_read_trylock",
            "do_user_addr_fault › lock_vma_under_rcu › vma_start_read › down_read_trylock") in stacks
    assert ("vma_start_read_recheck", "do_user_addr_fault › lock_vma_under_rcu › vma_start_read") in stacks
    assert ("check_detached", "do_user_addr_fault › lock_vma_under_rcu") in stacks
    # After lock_mm_and_find_vma has returned, the fault goes on in do_user_addr_fault.
    assert {s for label, s in stacks if label == "find_vma"} == {
        "do_user_addr_fault › lock_mm_and_find_vma › find_vma"}
    assert ("rcu_gp_init", "rcu_gp_init") in stacks  # the grace-period kthread runs in no call


def test_every_link_of_a_stack_line_is_a_call_in_the_6_12_code_or_says_it_skips_some():
    for mech in ("vma-locks", "fork-batch", "qspinlock", "rcu"):
        for name in scenario.bundled(mech):
            trace, model = run(mech, name)
            stacks = call_stacks(model, trace, code.calls)
            assert stacks is not None and len(stacks) == len(trace), (mech, name)
            sources = model.sources()
            for action, stack in zip(trace.actions, stacks):
                where = sources[action.label]
                assert not where.in_kernel or stack[-1] == where.function, (mech, name, action, stack)
                line = code.stack_line(stack)
                for part in line.split(context.SKIPPED):
                    names = part.split(context.INTO)
                    for caller, callee in zip(names, names[1:]):
                        assert code.calls(caller, callee), (mech, name, line)


def test_a_recording_not_replayed_by_the_model_gets_no_stack(munmap):
    trace, model, _, _ = munmap
    other, _ = run("vma-locks", "recheck-race")
    assert call_stacks(model, dataclasses.replace(other, config=trace.config), code.calls) is None


def test_an_observed_recording_gets_no_stack_and_its_page_builds():
    from kstep.lab.replay import damon_observed as observed
    from test_damon_observed import DATA

    trace, model = observed.observed_trace(observed.read(DATA / "hot-block.trace"), "hot-block.trace")
    assert call_stacks(model, trace, code.calls) is None
    spec = views.layout(trace, model).select_one({"name": "kstep-player"}).args["kstep"]
    assert set(spec["frames"].data["stack"]) == {spec["strings"].index("")}


def test_two_down_write_steps_say_which_lock_they_take(munmap):
    trace, _, _, shown = munmap
    ons = {on for _, label, on, _ in shown if label == "down_write"}
    assert "mmap_lock" in ons and any(on.startswith("VMA ") and on.endswith("'s lock") for on in ons)
    for k, (actor, label, on, _) in enumerate(shown):
        if label != "down_write":
            continue
        after = trace.states[k + 1]
        sem = after.mm.mmap_lock if on == "mmap_lock" else after.vmas[int(on.split()[1].removesuffix("'s"))].lock
        i = [t.name for t in after.threads].index(actor)
        assert sem.owner == i or i in [w for w, _ in sem.waiters], f"step {k + 1}: {actor} down_write on {on}"


def test_a_killed_thread_says_how_it_died(munmap):
    trace, _, lay, _ = munmap
    died = [t.name for t in trace.states[-1].threads if t.died]
    assert died, "munmap-vs-fault's late fault is killed by SIGSEGV"
    banner = lay.select_one({"name": "kstep-banner"}).text
    assert f"{died[0]} was killed by SIGSEGV" in banner
    assert "every thread completed its work" not in banner


def test_a_broken_variant_shows_its_change_beside_the_6_12_lines():
    ex = kstep.open("vma-locks", "munmap-vs-fault")
    trace = ex.run()
    header = ex.variant("free-immediately").layout(trace).select_one({"name": "kstep-header"}).text
    row = header[header.index('<table class="kstep-change">'):]
    # 6.12's vm_area_free defers the free with call_rcu; the variant's own text says it frees at once.
    assert "call_rcu(&amp;vma-&gt;vm_rcu, vm_area_free_rcu_cb);" in row
    assert "broken (free-immediately): vm_area_free frees the VMA at once" in row
    assert row.index("call_rcu") < row.index("broken (free-immediately)")  # 6.12 on the left
    correct = ex.layout(trace).select_one({"name": "kstep-header"}).text
    assert "kstep-change" not in correct


def test_predict_mode_asks_the_scenarios_questions_only_of_the_run_they_describe(munmap):
    trace, model, _, _ = munmap
    asked = {q["id"]: q for q in predict.predictions(trace, model)}
    assert list(asked) == ["seq-after-epoch", "detached-verdict", "killed"]
    # What the detached question tells the student about the state it is asked in holds there.
    before = trace.states[asked["detached-verdict"]["step"] - 1]
    t1 = [t.name for t in before.threads].index("T1")
    assert t1 in before.vmas[1].lock.readers and trace.actions[asked["detached-verdict"]["step"] - 1].label == \
        "check_detached"
    assert asked["killed"]["want"] == {"type": "threads", "value": ["T1"]}
    # A counterexample of the same scenario, or its run under another variant, is not the run described.
    broken = kstep.open("vma-locks", "munmap-vs-fault", variant="free-immediately")
    assert predict.predictions(broken.explore().counterexample, broken.model) == []
    assert predict.predictions(trace, broken.variant("no-recheck").model) == []

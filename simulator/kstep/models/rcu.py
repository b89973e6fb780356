"""RCU as Linux 6.12 runs it without preemptible read-side sections (kernel/rcu/tree.c).

Threads run on CPUs one to one: thread i is CPU i.  A CPU outside any read-side section passes a
quiescent state (a context switch, idle or user mode would report one).  The grace-period kthread
starts a grace period when a callback needs one, waits until every CPU has reported a quiescent
state, ends it, and then the callbacks whose grace period is over are invoked.

``gp_seq`` follows kernel/rcu/rcu.h exactly: the low two bits are the state (0 idle, 1 running),
``rcu_seq_start`` adds one, ``rcu_seq_end`` rounds up to the next multiple of four, and a callback
queued at ``gp_seq = s`` waits for ``rcu_seq_snap(s) = (s + 7) & ~3`` — the end of the next *full*
grace period, which is why a callback queued during a grace period waits for the one after it.

The pieces here are shared: ``add_rcu`` puts the reader and grace-period steps into any model
whose state has an ``rcu`` field (the per-VMA lock model uses them), and ``RcuModel`` is the
stand-alone mechanism.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from ..engine import HARM, Frame, Invariant, Program, ProgramModel, Variant, set_thread, thread_index
from ..engine.scenario import Int, Key, List, Name, Str, Table, unique_names

RCU_SEQ_STATE_MASK = 3
RCU_ACTOR = "rcu"


def rcu_seq_snap(s: int) -> int:
    return (s + 2 * RCU_SEQ_STATE_MASK + 1) & ~RCU_SEQ_STATE_MASK


def rcu_seq_done(gp_seq: int, snap: int) -> bool:
    return gp_seq >= snap  # ULONG_CMP_GE without wrap: the model never runs 2^62 grace periods


class Callback(NamedTuple):
    func: str  # which callback: "vm_area_free_rcu_cb", "kfree", "wakeme_after_rcu"
    obj: int  # the object it frees, or the thread it wakes
    wait: int  # the gp_seq it waits for (rcu_seq_snap at call_rcu time)
    ghost_readers: tuple  # (cpu, section) of every read-side section running at call_rcu time


class Rcu(NamedTuple):
    gp_seq: int = 0
    qs_pending: tuple = ()  # per CPU: the running grace period still needs its quiescent state
    nesting: tuple = ()  # per CPU: rcu_read_lock() nesting depth
    callbacks: tuple = ()  # Callback, in call_rcu order
    ghost_section: tuple = ()  # per CPU: how many outermost sections it has entered
    ghost_holdouts: tuple = ()  # (cpu, section) running when the current grace period started


def rcu_init(ncpus: int) -> Rcu:
    zeros = (0,) * ncpus
    return Rcu(0, (False,) * ncpus, zeros, (), zeros, ())


def running_sections(r: Rcu) -> tuple:
    return tuple((c, r.ghost_section[c]) for c, n in enumerate(r.nesting) if n)


def still_inside(r: Rcu, sections: tuple) -> list:
    return [c for c, sec in sections if r.nesting[c] and r.ghost_section[c] == sec]


def call_rcu(s, func: str, obj: int):
    """``call_rcu()``: queue a callback for after the next full grace period."""
    r = s.rcu
    cb = Callback(func, obj, rcu_seq_snap(r.gp_seq), running_sections(r))
    return s._replace(rcu=r._replace(callbacks=r.callbacks + (cb,)))


def add_rcu(program: Program, invoke: Callable) -> None:
    """Register RCU's reader steps and the grace-period kthread's steps in ``program``.

    ``invoke(state, callback) -> state`` runs a callback's function (frees the object, wakes the
    waiter) in the embedding model.
    """

    # Without preemptible RCU these are preempt_disable()/preempt_enable(): CPU-local, cost 0.
    @program.step("rcu_read_lock", "include/linux/rcupdate.h:rcu_read_lock",
                  "enter a read-side section: this CPU now holds up every grace period that starts", cost=0)
    def rcu_read_lock(s, i, arg):
        r = s.rcu
        section = r.ghost_section
        if r.nesting[i] == 0:
            section = section[:i] + (section[i] + 1,) + section[i + 1:]
        nesting = r.nesting[:i] + (r.nesting[i] + 1,) + r.nesting[i + 1:]
        return s._replace(rcu=r._replace(nesting=nesting, ghost_section=section))

    @program.step("rcu_read_unlock", "include/linux/rcupdate.h:rcu_read_unlock",
                  "leave a read-side section; outside every section this CPU can pass a quiescent state",
                  cost=0)
    def rcu_read_unlock(s, i, arg):
        r = s.rcu
        nesting = r.nesting[:i] + (r.nesting[i] - 1,) + r.nesting[i + 1:]
        return s._replace(rcu=r._replace(nesting=nesting))

    @program.step("rcu_gp_init", "kernel/rcu/tree.c:rcu_gp_init",
                  "start a grace period (rcu_seq_start) and ask every CPU for a quiescent state",
                  daemon=True)
    def rcu_gp_init(s):
        r = s.rcu
        return s._replace(rcu=r._replace(gp_seq=r.gp_seq + 1, qs_pending=(True,) * len(r.nesting),
                                         ghost_holdouts=running_sections(r)))

    @program.guard("rcu_gp_init")
    def gp_needed(s):
        r = s.rcu
        return bool(r.callbacks) and not r.gp_seq & RCU_SEQ_STATE_MASK and any(
            cb.wait > r.gp_seq for cb in r.callbacks)

    @program.step("rcu_qs", "kernel/rcu/tree.c:rcu_report_qs_rdp",
                  "every CPU outside a read-side section passes a quiescent state and reports it",
                  daemon=True)
    def rcu_qs(s):
        r = s.rcu
        pending = tuple(p and n > 0 for p, n in zip(r.qs_pending, r.nesting))
        return s._replace(rcu=r._replace(qs_pending=pending))

    @program.guard("rcu_qs")
    def qs_reportable(s):
        r = s.rcu
        return bool(r.gp_seq & RCU_SEQ_STATE_MASK) and any(p and not n for p, n in zip(r.qs_pending, r.nesting))

    @program.step("rcu_gp_cleanup", "kernel/rcu/tree.c:rcu_gp_cleanup",
                  "every CPU has reported: end the grace period (rcu_seq_end)", daemon=True)
    def rcu_gp_cleanup(s):
        r = s.rcu
        return s._replace(rcu=r._replace(gp_seq=(r.gp_seq | RCU_SEQ_STATE_MASK) + 1, ghost_holdouts=()))

    @program.guard("rcu_gp_cleanup")
    def all_reported(s):
        r = s.rcu
        return bool(r.gp_seq & RCU_SEQ_STATE_MASK) and not any(r.qs_pending)

    run, guard = rcu_do_batch(rcu_seq_done, invoke)
    program.step("rcu_do_batch", "kernel/rcu/tree.c:rcu_do_batch",
                 "invoke the oldest callback whose grace period has ended", daemon=True)(run)
    program.guard("rcu_do_batch")(guard)


def rcu_do_batch(ready: Callable[[int, int], bool], invoke: Callable):
    """The callback-invocation step, given when a callback counts as ready ``ready(gp_seq, wait)``."""

    def run(s):
        r = s.rcu
        k = next(k for k, cb in enumerate(r.callbacks) if ready(r.gp_seq, cb.wait))
        cb = r.callbacks[k]
        s = s._replace(rcu=r._replace(callbacks=r.callbacks[:k] + r.callbacks[k + 1:]))
        return invoke(s, cb)

    def guard(s):
        r = s.rcu
        return bool(r.callbacks) and any(ready(r.gp_seq, cb.wait) for cb in r.callbacks)

    return run, guard


def rcu_summary(s) -> dict[str, str]:
    """Step-table columns for RCU: gp_seq, who the grace period waits for, queued callbacks."""
    r = s.rcu
    names = [t.name for t in s.threads]
    waiting = [names[c] for c, p in enumerate(r.qs_pending) if p]
    gp = ("running, waits for " + ",".join(waiting) if waiting else "running") if r.gp_seq & RCU_SEQ_STATE_MASK else "idle"
    return {
        "gp_seq": str(r.gp_seq),
        "grace period": gp,
        "in section": ",".join(n for n, k in zip(names, r.nesting) if k) or "-",
        "callbacks": " ".join(f"{cb.func}({cb.obj})@{cb.wait}" for cb in r.callbacks) or "-",
    }


def rcu_invariants() -> list[Invariant]:
    def gp_waits(s, a, t):
        if s.rcu is t.rcu:
            return None
        if s.rcu.gp_seq & RCU_SEQ_STATE_MASK and not t.rcu.gp_seq & RCU_SEQ_STATE_MASK:
            inside = still_inside(t.rcu, s.rcu.ghost_holdouts)
            if inside:
                return (f"grace period {(s.rcu.gp_seq >> 2) + 1} ended while CPU {inside[0]} is still inside the "
                        f"read-side section it entered before the grace period started")
        return None

    def callbacks_wait(s, a, t):
        if s.rcu is t.rcu:
            return None
        if len(t.rcu.callbacks) < len(s.rcu.callbacks):
            for cb in set(s.rcu.callbacks) - set(t.rcu.callbacks):
                inside = still_inside(t.rcu, cb.ghost_readers)
                if inside:
                    return (f"callback {cb.func}({cb.obj}) ran while CPU {inside[0]} is still inside a "
                            f"read-side section that was running when call_rcu() queued it")
        return None

    return [
        Invariant("grace-period-waits-for-readers",
                  "a grace period cannot end while a reader that began before it is still in its section",
                  gp_waits, transition=True),
        Invariant("callbacks-after-grace-period",
                  "a callback runs only after every read-side section running at call_rcu() has ended",
                  callbacks_wait, transition=True),
    ]


def _gp_ends_on_first_report(s):
    r = s.rcu
    return bool(r.gp_seq & RCU_SEQ_STATE_MASK) and not all(r.qs_pending)  # one report is enough


def _started(gp_seq: int, wait: int) -> bool:
    return gp_seq >= wait - RCU_SEQ_STATE_MASK  # the awaited grace period has begun, not ended


def rcu_broken(invoke: Callable) -> dict:
    """The broken RCU variants, for any model built with ``add_rcu(program, invoke)``."""
    return {
        "gp-ends-early": Variant(
            "gp-ends-early",
            "rcu_gp_cleanup ends the grace period as soon as one CPU has reported a quiescent state, "
            "without waiting for every CPU",
            broken=True,
            replaces={"rcu_gp_cleanup": (None, _gp_ends_on_first_report)},
        ),
        "early-callback": Variant(
            "early-callback",
            "rcu_do_batch invokes a callback as soon as the grace period it waits for has started, "
            "not when it has ended",
            broken=True,
            replaces={"rcu_do_batch": rcu_do_batch(_started, invoke)},
        ),
    }


# --- the stand-alone RCU mechanism ------------------------------------------------------------------

LIVE, FREED = "live", "freed"


class Thread(NamedTuple):
    name: str
    frames: tuple
    obj: int = -1  # the object pointer this thread holds (reader: rcu_dereference; updater: the old one)
    woken: bool = False  # synchronize_rcu: its wakeme callback has run


class RcuState(NamedTuple):
    threads: tuple
    rcu: Rcu
    gp: int  # the RCU-protected pointer: index of the object it points to
    objects: tuple  # LIVE | FREED per object


program = Program()


def _invoke(s, cb: Callback):
    if cb.func == "wakeme_after_rcu":
        return set_thread(s, cb.obj, s.threads[cb.obj]._replace(woken=True))
    return _free(s, cb.obj)


def _free(s, obj: int):
    return s._replace(objects=s.objects[:obj] + (FREED,) + s.objects[obj + 1:])


add_rcu(program, _invoke)


@program.call("reader_section")
def reader_section(s, i, arg):
    return (Frame("rcu_read_lock"), Frame("rcu_dereference"), Frame("reader_uses_object"),
            Frame("rcu_read_unlock"))


@program.step("rcu_dereference", "include/linux/rcupdate.h:rcu_dereference",
              "load the RCU-protected pointer")
def rcu_dereference(s, i, arg):
    return set_thread(s, i, s.threads[i]._replace(obj=s.gp))


@program.step("reader_uses_object", "include/linux/rcupdate.h:rcu_dereference",
              "read through the pointer: safe only while the object cannot have been freed")
def reader_uses_object(s, i, arg):
    return s


@program.call("update")
def update(s, i, how):
    tail = (Frame("call_rcu"),) if how == "call_rcu" else (
        Frame("synchronize_rcu"), Frame("wait_rcu_gp"), Frame("kfree"))
    return (Frame("rcu_assign_pointer"),) + tail


@program.step("rcu_assign_pointer", "include/linux/rcupdate.h:rcu_assign_pointer",
              "publish a new object; readers that already loaded the old pointer may still use it")
def rcu_assign_pointer(s, i, arg):
    old = s.gp
    s = s._replace(objects=s.objects + (LIVE,), gp=len(s.objects))
    return set_thread(s, i, s.threads[i]._replace(obj=old))


@program.step("call_rcu", "kernel/rcu/tree.c:call_rcu",
              "queue kfree(old) to run after the next full grace period")
def call_rcu_step(s, i, arg):
    return call_rcu(s, "kfree", s.threads[i].obj)


@program.step("synchronize_rcu", "kernel/rcu/tree.c:synchronize_rcu",
              "queue a wake-me callback (wait_rcu_gp) and sleep until it runs")
def synchronize_rcu(s, i, arg):
    s = set_thread(s, i, s.threads[i]._replace(woken=False))
    return call_rcu(s, "wakeme_after_rcu", i)


@program.step("wait_rcu_gp", "kernel/rcu/update.c:__wait_rcu_gp",
              "woken by the callback: a full grace period has passed")
def wait_rcu_gp(s, i, arg):
    return s


@program.guard("wait_rcu_gp")
def wait_done(s, i, arg):
    return s.threads[i].woken


@program.step("kfree", "mm/slub.c:kfree", "free the old object")
def kfree(s, i, arg):
    return _free(s, s.threads[i].obj)


SCHEMA = Table({
    "threads": Key(List(Table({
        "name": Key(Name(doc="actor name (also its CPU)")),
        "kind": Key(Str(("reader", "updater"), doc="reader: read-side sections; updater: replaces the object")),
        "sections": Key(Int(1, 20, "reader: how many read-side sections it runs"), 1),
        "updates": Key(Int(1, 10, "updater: how many times it replaces the object"), 1),
        "wait": Key(Str(("call_rcu", "synchronize_rcu"), doc="updater: how the old object is freed"),
                    "call_rcu"),
    }), 1, 8, "the threads, one per CPU")),
}, rules=lambda sc, path: unique_names([t["name"] for t in sc["threads"]], (RCU_ACTOR,), "threads"))


class RcuModel(ProgramModel):
    name = "rcu"
    title = "RCU grace periods and callbacks"
    program = program
    daemons = {RCU_ACTOR: ("rcu_gp_init", "rcu_qs", "rcu_gp_cleanup", "rcu_do_batch")}
    default_variant = "v6.12"
    variants = {"v6.12": Variant("v6.12", "non-preemptible RCU as in Linux 6.12 (tree RCU)"),
                **rcu_broken(_invoke)}
    scenario_schema = SCHEMA

    def initial(self, config):
        threads = []
        for t in config["threads"]:
            if t["kind"] == "reader":
                frames = (Frame("reader_section"),) * t["sections"]
            else:
                frames = (Frame("update", t["wait"]),) * t["updates"]
            threads.append(Thread(t["name"], frames))
        s = RcuState(tuple(threads), rcu_init(len(threads)), 0, (LIVE,))
        return self.start(s)

    def summary(self, s):
        return rcu_summary(s) | {"objects": " ".join(f"{k}:{st}" for k, st in enumerate(s.objects))}

    def answers(self, trace):
        final = trace.states[-1]
        return {"grace_periods": final.rcu.gp_seq >> 2,
                "objects_freed": sum(st == FREED for st in final.objects), **trace.stats}

    invariants = [
        *rcu_invariants(),
        Invariant("no-use-after-free", "a reader never uses an object after it has been freed",
                  lambda s, a, t: _uaf(s, a), transition=True, kind=HARM),
    ]


def _uaf(s, a):
    if a.label != "reader_uses_object":
        return None
    i = thread_index(s, a.actor)
    obj = s.threads[i].obj
    if s.objects[obj] == FREED:
        return f"{a.actor} reads object {obj} after it was freed"
    return None

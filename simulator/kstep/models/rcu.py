"""RCU as Linux 6.12 runs it in TREE_RCU with ``CONFIG_PREEMPT_RCU=n`` (kernel/rcu/tree.c).

**The modelled configuration.**  TREE_RCU without preemptible readers, as a kernel built with
PREEMPT_NONE or PREEMPT_VOLUNTARY and without PREEMPT_DYNAMIC has it: ``rcu_read_lock()`` is
``preempt_disable()``, a reader never sleeps inside its section, and a CPU passes a quiescent
state (``rcu_qs``) whenever it context-switches, runs in user mode or idles outside one.  Threads
run on CPUs one to one: thread i is CPU i, and nothing else runs there.

**Which architecture's RCU that is.**  Debian's arm64 and ppc64el 6.12 kernels are built so
(PREEMPT_VOLUNTARY, no PREEMPT_DYNAMIC: PREEMPT_RCU=n); its amd64 kernel is not (below).  The
difference that reaches these scenarios is *when* a CPU running kernel code outside every section
reports: PREEMPT_RCU=n's scheduler tick reports only from user mode or idle
(tree_plugin.h ``rcu_flavor_sched_clock_irq``), so such a CPU waits for its next context switch,
return to user mode or idle; preemptible RCU's tick reports at once when ``rcu_preempt_depth()`` is
0.  The model lets a CPU report at any step outside every section, as preemptible RCU's tick may:
it has every run the arm64 and ppc64el kernels have and some where a grace period ends sooner, so
its safety verdicts hold for both builds.  Up to 16 CPUs share one
leaf ``rcu_node`` (CONFIG_RCU_FANOUT_LEAF), which is then also the root: the model has that one
node and its ``qsmask``, bit i for CPU i.

Debian's own 6.12 kernels are built differently (linux-config-6.12, amd64: PREEMPT_VOLUNTARY by
default, but PREEMPT_DYNAMIC=y, which builds in PREEMPT_RCU=y, and RCU_LAZY=y).  There
``rcu_read_lock()`` only counts ``current->rcu_read_lock_nesting``; a reader preempted inside its
section (possible when booted with ``preempt=full``) is queued on the rcu_node's ``blkd_tasks`` and
the grace period waits for that list as well as for ``qsmask``; and on CPUs whose callbacks are
offloaded (``rcu_nocbs=``) ``call_rcu()`` queues lazy callbacks that wait up to ten seconds
(LAZY_FLUSH_JIFFIES) before a grace period is even asked for.  None of that is modelled.

**Who reports a quiescent state.**  A grace period (``rcu_gp_init``) sets every CPU's bit in
``qsmask``; a bit is cleared in one of two ways, as in 6.12:

- the CPU itself: after passing a quiescent state outside any read-side section, its ``rcu_core``
  (``rcu_check_quiescent_state``, after ``note_gp_changes`` saw the new grace period) calls
  ``rcu_report_qs_rdp``.  A running thread may take that step whenever it is outside every
  section: an *optional* step of its own, besides its next one;
- the grace-period kthread's force-quiescent-state scan (``rcu_gp_fqs`` -> ``force_qs_rnp``), for
  CPUs in an extended quiescent state: ``rcu_watching_snap_save`` finds the CPU's context-tracking
  counter saying RCU is not watching it.  In this model that is a CPU whose thread has finished
  or sleeps (every wait in the models built on these steps is a sleep: an rwsem slowpath,
  ``wait_rcu_gp``), so the CPU has nothing to run and sits in the idle loop.  It is the *CPU's*
  idleness the scan sees: with PREEMPT_RCU=n there is no per-task tracking, and a thread asleep in
  the kernel counts only because its CPU went idle after the context switch (which was itself a
  quiescent state, ``rcu_note_context_switch``).  A thread inside a section never sleeps, so the
  scan never reports it.

**gp_seq** follows kernel/rcu/rcu.h exactly and is an ``unsigned long``: the low two bits are the
state (0 idle, 1 running), ``rcu_seq_start`` adds one, ``rcu_seq_end`` rounds up to the next
multiple of four, and a callback queued at ``gp_seq = s`` waits for ``rcu_seq_snap(s) = (s + 7) &
~3``, the end of the next *full* grace period, which is why a callback queued during a grace
period waits for the one after it.  It starts where 6.12 starts it, ``(0UL - 300UL) <<
RCU_SEQ_CTR_SHIFT``, so that the counter wraps about 300 grace periods after boot and the wrap
code is exercised early; comparisons therefore use ``ULONG_CMP_GE`` as the kernel does, and the
numbers are shown as RCU's tracepoints print them, ``(long)gp_seq``: -1200, -1199, -1196.

The pieces here are shared: ``add_rcu`` puts the reader and grace-period steps into any model
whose state has an ``rcu`` field (the per-VMA lock model uses them), and ``RcuModel`` is the
stand-alone mechanism.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from ..engine import FULL, HARM, MADE_UP, Frame, Invariant, Program, ProgramModel, Variant, set_thread, thread_index
from ..engine.records import fast_replace
from ..scenario_spec.expect import Expectations, ExpectError
from ..scenario_spec.scenario import Int, Key, List, Name, Str, Table, unique_names

ULONG_MAX = (1 << 64) - 1
RCU_SEQ_CTR_SHIFT = 2
RCU_SEQ_STATE_MASK = (1 << RCU_SEQ_CTR_SHIFT) - 1
RCU_GP_SEQ_INIT = ((0 - 300) << RCU_SEQ_CTR_SHIFT) & ULONG_MAX  # kernel/rcu/tree.c: rcu_state.gp_seq
RCU_ACTOR = "rcu"
RCU_GP_KTHREAD = ("rcu_gp_init", "rcu_gp_fqs", "rcu_gp_cleanup", "rcu_do_batch")  # the rcu actor's steps
READS = ("rcu",)  # what every guard here reads of the state (rcu_gp_fqs's also reads the idle mask)


def ulong_cmp_ge(a: int, b: int) -> bool:
    """include/linux/rcupdate.h ULONG_CMP_GE: a is at or after b, modulo wrap."""
    return ULONG_MAX // 2 >= (a - b) & ULONG_MAX


def ulong_cmp_lt(a: int, b: int) -> bool:
    return ULONG_MAX // 2 < (a - b) & ULONG_MAX


def rcu_seq_ctr(s: int) -> int:
    return s >> RCU_SEQ_CTR_SHIFT


def rcu_seq_state(s: int) -> int:
    return s & RCU_SEQ_STATE_MASK


def rcu_seq_start(s: int) -> int:
    return (s + 1) & ULONG_MAX


def rcu_seq_end(s: int) -> int:
    return ((s | RCU_SEQ_STATE_MASK) + 1) & ULONG_MAX


def rcu_seq_snap(s: int) -> int:
    return (s + 2 * RCU_SEQ_STATE_MASK + 1) & ~RCU_SEQ_STATE_MASK & ULONG_MAX


def rcu_seq_done(gp_seq: int, snap: int) -> bool:
    return ulong_cmp_ge(gp_seq, snap)


def rcu_seq_started(gp_seq: int, snap: int) -> bool:
    """The grace period that ends at ``snap`` has begun (not necessarily ended)."""
    return ulong_cmp_lt((snap - 1) & ~RCU_SEQ_STATE_MASK & ULONG_MAX, gp_seq)


def gp_seq_long(s: int) -> int:
    """``(long)gp_seq``, as RCU's tracepoints and pr_info() print it."""
    return s - (1 << 64) if s > ULONG_MAX // 2 else s


def grace_periods_ended(before: int, after: int) -> int:
    """How many grace periods ended while gp_seq went from ``before`` to ``after`` (modulo wrap)."""
    return (rcu_seq_ctr(after) - rcu_seq_ctr(before)) & (ULONG_MAX >> RCU_SEQ_CTR_SHIFT)


@fast_replace
class Callback(NamedTuple):
    func: str  # which callback: "vm_area_free_rcu_cb", "kfree", "wakeme_after_rcu"
    obj: int  # the object it frees, or the thread it wakes
    wait: int  # the gp_seq it waits for (rcu_seq_snap at call_rcu time)
    ghost_readers: tuple  # (cpu, section) of every read-side section running at call_rcu time


@fast_replace
class Rcu(NamedTuple):
    gp_seq: int  # rcu_state.gp_seq (an unsigned long)
    qsmask: int  # the rcu_node's qsmask: bit i while the running grace period awaits CPU i
    nesting: tuple  # per CPU: rcu_read_lock() nesting depth
    callbacks: tuple  # Callback, in call_rcu order
    ghost_section: tuple  # per CPU: how many outermost sections it has entered
    ghost_holdouts: tuple  # (cpu, section) running when the current grace period started


def rcu_init(ncpus: int) -> Rcu:
    zeros = (0,) * ncpus
    return Rcu(RCU_GP_SEQ_INIT, 0, zeros, (), zeros, ())


def gp_running(r: Rcu) -> bool:
    return bool(rcu_seq_state(r.gp_seq))


def awaited(r: Rcu) -> list[int]:
    """The CPUs whose bit is still set in qsmask."""
    return [c for c in range(len(r.nesting)) if r.qsmask >> c & 1]


def running_sections(r: Rcu) -> tuple:
    return tuple((c, r.ghost_section[c]) for c, n in enumerate(r.nesting) if n)


def still_inside(r: Rcu, sections: tuple) -> list:
    return [c for c, sec in sections if r.nesting[c] and r.ghost_section[c] == sec]


def call_rcu(s, func: str, obj: int):
    """``call_rcu()``: queue a callback for after the next full grace period."""
    r = s.rcu
    cb = Callback(func, obj, rcu_seq_snap(r.gp_seq), running_sections(r))
    return s._replace(rcu=r._replace(callbacks=r.callbacks + (cb,)))


def outside_sections(r: Rcu) -> int:
    """Bit c set for every CPU c outside every read-side section."""
    return sum(1 << c for c, n in enumerate(r.nesting) if not n)


def idle_quiescent(r: Rcu, idle: int) -> int:
    """The qsmask bits of CPUs the FQS scan finds idle: thread finished or asleep, outside every section."""
    waited = r.qsmask & idle
    if not waited:  # the common case (no grace period running) needs no look at the CPUs
        return 0
    return waited & outside_sections(r)


def added(counts: tuple, i: int, n: int) -> tuple:
    """The per-CPU counts with CPU i's changed by n (a list copy with one item set: cheaper than two slices
    and two concatenations, and every read-side section pays it twice)."""
    out = [*counts]
    out[i] += n
    return tuple(out)


def add_rcu(program: Program, invoke: Callable) -> None:
    """Register RCU's reader steps, each CPU's quiescent-state report and the grace-period
    kthread's steps in ``program``.

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
            section = added(section, i, 1)
        return s._replace(rcu=r._replace(nesting=added(r.nesting, i, 1), ghost_section=section))

    @program.step("rcu_read_unlock", "include/linux/rcupdate.h:rcu_read_unlock",
                  "leave a read-side section; outside every section this CPU can pass a quiescent state",
                  cost=0)
    def rcu_read_unlock(s, i, arg):
        r = s.rcu
        return s._replace(rcu=r._replace(nesting=added(r.nesting, i, -1)))

    # rcu_core runs in softirq off the CPU's own tick and holds the rcu_node lock for a few
    # instructions: charged no round, so that rounds keep measuring who waits for the modelled locks.
    @program.step("rcu_report_qs_rdp", "kernel/rcu/tree.c:rcu_report_qs_rdp",
                  "this CPU passed a quiescent state outside any read-side section (rcu_qs) and its "
                  "rcu_core reports it: clear its bit in the rcu_node's qsmask (at any tick outside a section "
                  "with preemptible RCU, Debian's x86_64; at a context switch, user mode or idle with "
                  "PREEMPT_RCU=n, Debian's arm64 and ppc64el)", optional=True, cost=0,
                  order=FULL)  # under the rcu_node's raw spinlock, with smp_mb__after_unlock_lock()
    def rcu_report_qs_rdp(s, i):
        r = s.rcu
        return s._replace(rcu=r._replace(qsmask=r.qsmask & ~(1 << i)))

    @program.guard("rcu_report_qs_rdp", reads=READS)
    def qs_to_report(s):
        """The CPUs still in qsmask that are outside every read-side section."""
        r = s.rcu
        if not r.qsmask:  # the common case: no grace period waits for anyone
            return 0
        return r.qsmask & outside_sections(r)

    @program.step("rcu_gp_init", "kernel/rcu/tree.c:rcu_gp_init",
                  "start a grace period (rcu_seq_start) and set every online CPU's bit in the rcu_node's qsmask",
                  daemon=True)
    def rcu_gp_init(s):
        r = s.rcu
        return s._replace(rcu=r._replace(gp_seq=rcu_seq_start(r.gp_seq), qsmask=(1 << len(r.nesting)) - 1,
                                         ghost_holdouts=running_sections(r)))

    @program.guard("rcu_gp_init", reads=READS)
    def gp_needed(s):
        r = s.rcu
        return bool(r.callbacks) and not gp_running(r) and any(
            not rcu_seq_done(r.gp_seq, cb.wait) for cb in r.callbacks)

    @program.step("rcu_gp_fqs", "kernel/rcu/tree.c:rcu_gp_fqs",
                  "force quiescent states: report together every CPU still in qsmask that RCU finds idle "
                  "(its thread finished or asleep), and clear their bits", daemon=True, idle=True)
    def rcu_gp_fqs(s, idle):
        r = s.rcu
        return s._replace(rcu=r._replace(qsmask=r.qsmask & ~idle_quiescent(r, idle)))

    @program.guard("rcu_gp_fqs", reads=READS)
    def idle_cpus_to_report(s, idle):
        return bool(idle_quiescent(s.rcu, idle))

    @program.step("rcu_gp_cleanup", "kernel/rcu/tree.c:rcu_gp_cleanup",
                  "qsmask is empty, every CPU has reported: end the grace period (rcu_seq_end)", daemon=True)
    def rcu_gp_cleanup(s):
        r = s.rcu
        return s._replace(rcu=r._replace(gp_seq=rcu_seq_end(r.gp_seq), ghost_holdouts=()))

    @program.guard("rcu_gp_cleanup", reads=READS)
    def all_reported(s):
        r = s.rcu
        return gp_running(r) and not r.qsmask

    run, guard = rcu_do_batch(rcu_seq_done, invoke)
    program.step("rcu_do_batch", "kernel/rcu/tree.c:rcu_do_batch",
                 "invoke the oldest callback whose grace period has ended", daemon=True)(run)
    program.guard("rcu_do_batch", reads=READS)(guard)


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


def rcu_expect_functions() -> dict:
    """What a scenario's ``[[expect]]`` may ask about RCU, by thread (= CPU) name."""

    def cpu(s, name):
        for i, t in enumerate(s.threads):
            if t.name == name:
                return i
        raise ExpectError(f"no thread {name!r}")

    return {
        "gp_seq": lambda s: gp_seq_long(s.rcu.gp_seq),  # as the tracepoints print it
        "long": lambda s, value: gp_seq_long(value),  # (long) of any gp_seq value: long(rcu.callbacks[0].wait)
        "gp_running": lambda s: gp_running(s.rcu),
        "in_section": lambda s, name: s.rcu.nesting[cpu(s, name)] > 0,
        "awaits": lambda s, name: bool(s.rcu.qsmask >> cpu(s, name) & 1),  # its bit is still in qsmask
    }


def rcu_invariants() -> list[Invariant]:
    def gp_waits(s, a, t):
        if s.rcu is t.rcu:
            return None
        if gp_running(s.rcu) and not gp_running(t.rcu):
            inside = still_inside(t.rcu, s.rcu.ghost_holdouts)
            if inside:
                return (f"the grace period at gp_seq {gp_seq_long(s.rcu.gp_seq)} ended while CPU {inside[0]} is "
                        f"still inside the read-side section it entered before the grace period started")
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
    return gp_running(r) and r.qsmask != (1 << len(r.nesting)) - 1  # one report is enough


def rcu_broken(invoke: Callable) -> dict:
    """The broken RCU variants, for any model built with ``add_rcu(program, invoke)``."""
    return {
        "gp-ends-early": Variant.bug(
            "gp-ends-early",
            "rcu_gp_cleanup ends the grace period as soon as one CPU has reported a quiescent state, "
            "without waiting for every CPU",
            unfixed=MADE_UP,
            rcu_gp_cleanup=(None, _gp_ends_on_first_report),
        ),
        "early-callback": Variant.bug(
            "early-callback",
            "rcu_do_batch invokes a callback as soon as the grace period it waits for has started, "
            "not when it has ended",
            unfixed=MADE_UP,
            rcu_do_batch=rcu_do_batch(rcu_seq_started, invoke),
        ),
    }


# --- the stand-alone RCU mechanism ------------------------------------------------------------------

LIVE, FREED = "live", "freed"


@fast_replace
class Thread(NamedTuple):
    name: str
    frames: tuple
    obj: int = -1  # the object pointer this thread holds (reader: rcu_dereference; updater: the old one)
    woken: bool = False  # synchronize_rcu: its wakeme callback has run


@fast_replace
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

# The threads are rcutorture's (kernel/rcu/rcutorture.c): a reader loads rcu_torture_current and
# uses the object (rcu_torture_one_read), a writer publishes a new object and frees the old one
# after a grace period (rcu_torture_writer, by call_rcu or synchronously).


@program.call("reader_section")
def reader_section(s, i, arg):
    return (Frame("rcu_read_lock"), Frame("rcu_dereference"), Frame("reader_uses_object"),
            Frame("rcu_read_unlock"))


@program.step("rcu_dereference", "include/linux/rcupdate.h:rcu_dereference",
              "load the RCU-protected pointer")
def rcu_dereference(s, i, arg):
    return set_thread(s, i, s.threads[i]._replace(obj=s.gp))


@program.step("reader_uses_object", "kernel/rcu/rcutorture.c:rcu_torture_one_read",
              "use the object through the loaded pointer (rcutorture's reader checks p->rtort_mbtest "
              "here): safe only while it cannot have been freed")
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
              "queue kfree(old) to run after the next full grace period",
              order=FULL)  # the callback's grace period is chosen under the rcu_node lock (rcu_accelerate_cbs)
def call_rcu_step(s, i, arg):
    return call_rcu(s, "kfree", s.threads[i].obj)


@program.step("synchronize_rcu", "kernel/rcu/tree.c:synchronize_rcu",
              "queue a wake-me callback (wait_rcu_gp) and sleep until it runs", order=FULL)
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


class RcuModel(ProgramModel, Expectations):
    name = "rcu"
    title = "RCU grace periods and callbacks"
    program = program
    daemons = {RCU_ACTOR: RCU_GP_KTHREAD}
    default_variant = "v6.12"
    variants = {"v6.12": Variant.release("v6.12", "Linux 6.12.117 TREE_RCU with CONFIG_PREEMPT_RCU=n", "6.12.117"),
                **rcu_broken(_invoke)}
    scenario_schema = SCHEMA

    def unstarted(self, config):
        threads = []
        for t in config["threads"]:
            if t["kind"] == "reader":
                frames = (Frame("reader_section"),) * t["sections"]
            else:
                frames = (Frame("update", t["wait"]),) * t["updates"]
            threads.append(Thread(t["name"], frames))
        return RcuState(tuple(threads), rcu_init(len(threads)), 0, (LIVE,))

    def expect_functions(self):
        return rcu_expect_functions()

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

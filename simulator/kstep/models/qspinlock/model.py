"""The qspinlock model: the queued spinlock of Linux 6.12, with the programs, invariants, variants
and reductions of this package tied into one ``ProgramModel``, and what the step table, ``-c`` and
a scenario's ``[[expect]]`` show of its state.
Each module of the package mirrors one kernel file: qspinlock_types.py
(include/asm-generic/qspinlock_types.h), qspinlock.py (kernel/locking/qspinlock.c and the fast path
of include/asm-generic/qspinlock.h), mcs_spinlock.py (kernel/locking/mcs_spinlock.h), ticket.py and
spinlock_types.py (include/asm-generic/spinlock{,_types}.h), powerpc.py (arch/powerpc/lib/qspinlock.c),
x86.py (arch/x86/include/asm/qspinlock.h); before_set_locked.py is qspinlock.c of 2014.  Every
step is one atomic memory action of that code, in its order, and its label is the one the
kernel-lab C port logs (the shared contract).  Spin iterations that change nothing are not steps:
a wait is one step, taken when its condition holds.

The lock is one 32-bit word, (tail, pending, locked) in the source's comments.  An uncontended
locker sets ``locked`` with one cmpxchg; the first contender sets ``pending`` and spins on the word;
everyone after that queues on a per-CPU MCS node and spins on its own ``node->locked`` until the
node before it hands the queue head over.  Only the queue head spins on the lock word, and when it
sees locked and pending both clear it takes the lock: with a cmpxchg that also clears the tail when
it is the only waiter, otherwise with the plain byte store ``set_locked()`` of patch 07/11 in the
2014 series (Waiman Long, Peter Zijlstra), because nobody else can take the lock at that point.

Per-CPU there are ``MAX_NODES`` = 4 MCS nodes (task, softirq, hardirq, NMI), indexed by the
nesting count ``qnodes[0].mcs.count``; the tail names a node as ``(cpu + 1, idx)``.  A scenario may
give a CPU contexts that interrupt its task, by nesting level: a softirq (actor ``C<k>.softirq``), a
hardirq (``C<k>.irq``), an NMI (``C<k>.nmi``) and an NMI nested in that NMI (``C<k>.nested_nmi``, the
fifth context that the comment above 6.12's ``idx >= MAX_NODES`` fallback says some architectures
allow).  They share CPU k's nodes and count.  Each runs its locks once; it may start between any two
steps of the contexts below it (a nested NMI only while the NMI is in progress), and none of those
takes a step until it has finished.  Without them -- the default -- a CPU has its task only, and the
state space stays small.

Besides Linux 6.12 (``v6.12``), the model runs the head's claim as it was before patch 07/11
(``before-set-locked``), the generic ticket lock (include/asm-generic/spinlock.h, ``ticket``) and
powerpc's own queued spinlock (arch/powerpc/lib/qspinlock.c, ``powerpc``, without paravirt).

Simplifications, each deliberate: the memory model is sequentially consistent (the orderings the
kernel needs are noted where it needs them, and the broken variants that model reorderings do so by
program order); the paravirt hooks are left out, and ``virt_spin_lock``'s test-and-set fallback (which
x86 guests without paravirt spinlocks run) is the ``tas`` variant; the generic
``_Q_PENDING_LOOPS`` wait is one step that re-reads the word (the count is bounded, so the step can
always be taken); powerpc's ``steal_spins`` and ``head_spins`` come from the scenario, scaled down
from 6.12's 32 and 256 so exploration stays small.
"""

from __future__ import annotations

from ...engine import Program, ProgramModel, thread_index
from ...engine.memory_model import MemoryAccess
from ...engine.progress import Progress
from ...scenario_spec.expect import Expectations, ExpectError
from . import before_set_locked, broken, x86
from .footprints import Footprints
from .invariants import INVARIANTS, holders, pending_locked, tail_text
from .powerpc import (PPC_LOCKED_VAL, PPC_MUST_Q_VAL, PPC_OWNER_CPU_MASK, PPC_OWNER_CPU_OFFSET, PPC_TAIL_CPU_MASK,
                      powerpc)
from .qspinlock import qspinlock
from .qspinlock_types import LAYOUTS, U16, word_parts
from .scenario import SCHEMA, initial_state
from .spinlock_types import TICKET_SHIFT
from .state import (LOCK_NAMES, MAX_NODES, NEST_FIELD, NESTED_NMI, NMI, NULL, POWERPC, QSPINLOCK, TASK, TICKET,
                    lock_name, node_id, set_ctx)
from .symmetry import CpuSymmetry
from .ticket import ticket
from .variants import VARIANTS

# The generic lock's program: qspinlock.c's steps, and those that only its variants take.
generic = Program()
for part in (qspinlock, before_set_locked.program, x86.program, broken.program):
    generic.include(part)
PROGRAMS = {QSPINLOCK: generic, TICKET: ticket, POWERPC: powerpc}
ENTRY = {QSPINLOCK: "queued_spin_lock", TICKET: "arch_spin_lock", POWERPC: "queued_spin_lock"}
# The kernel build a run of the generic lock with one pending bit compiles (source/excerpts.py's
# BUILDS): _Q_PENDING_BITS is 1 from 16K CPUs on.
PENDING_BIT_BUILD = "x86-64 CONFIG_NR_CPUS=16384"


def _context(s, name):
    """The context named in an expectation ("C0.irq")."""
    for t in s.threads:
        if t.name == name:
            return t
    raise ExpectError(f"no context {name!r}")


def _node_arg(s, text):
    """A node named in an expectation ("cpu2/idx0"), as its index into ``nodes``."""
    cpu, _, idx = str(text).removeprefix("cpu").partition("/idx")
    if not (cpu.isdigit() and idx.isdigit() and int(cpu) < len(s.count) and int(idx) < MAX_NODES):
        raise ExpectError(f"{text!r} names no MCS node of this run (cpu0/idx0 to cpu{len(s.count) - 1}/idx3)")
    return node_id(int(cpu), int(idx))


def _node_text(n):
    """An MCS node as the tail names it: "cpu2/idx0"."""
    return "cpu{}/idx{}".format(*divmod(n, MAX_NODES))


def _lock_arg(s, name):
    """A lock named in an expectation ("A"), as its index."""
    if name not in LOCK_NAMES[:len(s.words)]:
        raise ExpectError(f"no lock {name!r} in this run (locks: {', '.join(LOCK_NAMES[:len(s.words)])})")
    return LOCK_NAMES.index(name)


class QspinlockModel(Footprints, CpuSymmetry, ProgramModel, MemoryAccess, Progress, Expectations):
    name = "qspinlock"
    title = "Queued spinlocks: pending bit, MCS queue and the queue head's claim"
    program = generic
    default_variant = "v6.12"
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA
    progress_labels = frozenset({"critical_section"})
    # The slow path's `val` is read again only by the cmpxchg that compares the word with it (the
    # steps that declare it live); everywhere else the next read of the word overwrites it first.
    locals = {"val": 0}
    # Shared memory for a memory model (engine/memory_model.py): the lock words and the MCS nodes.  A
    # CPU's qnodes[0].mcs.count is touched by that CPU alone, which always sees its own stores.
    memory_fields = ("words", "nodes")
    cpu_field = "cpu"
    kernel_builds = (PENDING_BIT_BUILD,)

    def __init__(self, variant=None):
        chosen = self.variants[variant or self.default_variant]
        self.layout = chosen.params["program"]
        self.program = PROGRAMS[self.layout]
        self.entry = ENTRY[self.layout]
        self._futures = {}  # (context index, its record, the run's nesting) -> its future footprint
        self._footprints = {}  # (label, footprint function, context index, its record, nesting, nodes) -> footprint
        self._renamings = {}  # (perm, the run's layout of contexts) -> its _Renaming
        super().__init__(variant)

    def kernel_build(self, state):
        """The kernel build whose code the code pane shows: with one pending bit, the qspinlock.c functions
        _Q_PENDING_BITS == 1 compiles (clear_pending, clear_pending_set_locked and xchg_tail as atomics on
        the whole word); else the mirrored one."""
        return PENDING_BIT_BUILD if self.layout == QSPINLOCK and state.pending_bits == 1 else None

    def refuses_memory_model(self, name):
        if name == "tso" and self.layout == POWERPC:
            return ("arch/powerpc/lib/qspinlock.c runs on POWER, whose memory model is no tso "
                    "(kstep litmus --model power)")
        return ""

    def unstarted(self, config):
        return initial_state(config, self.layout)

    def actions(self, state):
        out = super().actions(state)
        if state.nest:
            held = set()
            threads = state.threads
            for chain in state.nest:
                top = TASK  # the innermost context in progress: interrupts in progress nest
                for j in chain[1:]:
                    if threads[j].entered and threads[j].frames:
                        top = threads[j].level
                for j in chain:
                    t = threads[j]
                    if t.level < top or (t.level == NESTED_NMI and not t.entered and top != NMI):
                        held.add(t.name)
            if held:
                out = [a for a in out if a.actor not in held]
        return out

    def step(self, state, action):
        after = super().step(state, action)
        if state[NEST_FIELD]:
            i = thread_index(after, action.actor)
            if after.threads[i].level and not after.threads[i].entered:
                after = set_ctx(after, i, entered=True)
        return after


    def step_lock(self, state, i):
        """The lock whose word context ``i``'s next step reads or writes (the observation log's word)."""
        t = state.threads[i]
        if t.frames and t.frames[0][0] == self.entry:
            return t.frames[0][1]
        return t.lock

    def mcs_fields(self, state, i):
        """The MCS fields an observation log records after context ``i``'s step: its CPU's nesting
        count, and the node the context holds as (idx, next, locked) -- next as a node id or NULL --
        or None when it holds none (also in the idx >= MAX_NODES fallback)."""
        t = state.threads[i]
        if not 0 <= t.idx < MAX_NODES:
            return state.count[t.cpu], None
        node = state.nodes[node_id(t.cpu, t.idx)]
        return state.count[t.cpu], (t.idx, node.next, node.locked)

    # -- what the step table and -c show ----------------------------------------------------------------
    def word_text(self, s, lock):
        w = s.words[lock]
        if s.layout == QSPINLOCK:
            pending, locked = pending_locked(s, lock)
            return f"{w:#010x} ({tail_text(s, lock) or '0'},{pending},{locked})"
        if s.layout == POWERPC:
            parts = []
            if w & PPC_TAIL_CPU_MASK:
                parts.append(f"tail {tail_text(s, lock)}")
            if w & PPC_MUST_Q_VAL:
                parts.append("must-queue")
            if w & PPC_LOCKED_VAL:
                parts.append(f"locked by cpu{(w & PPC_OWNER_CPU_MASK) >> PPC_OWNER_CPU_OFFSET}")
            return f"{w:#010x} ({', '.join(parts) or 'free'})"
        return f"{w:#010x} (next {w >> TICKET_SHIFT}, owner {w & U16})"

    def store_parts(self, s, entry):
        """A store waiting in a store buffer as the 6.12 code writes it: (where, value).  A store to the
        word names the member of struct qspinlock it writes (``A->locked``, ``0``: lock A's
        ``smp_store_release(&lock->locked, 0)``; ``A->val``, a variant's whole-word store): the store its
        step declares (``store=``) is one member's bytes; a ticket lock's names the owner half
        (``*(u16 *)A``, arch_spin_unlock's ``ptr``).  A store to an MCS node names the pointer the code
        writes through and the node it points to: the owner's ``node->locked = 0`` and ``node->next =
        NULL`` before it queues, the successor's ``prev->next = node`` linking in behind it, and the
        predecessor's ``next->locked = 1`` handing the queue on."""
        field, n, part, mask, value = entry
        if s._fields[field] == "nodes":
            member = s.nodes[n]._fields[part]
            if member == "next":
                pointer, said = ("node", "NULL") if value == NULL else ("prev", f"node ({_node_text(value)})")
            else:
                pointer, said = ("node" if value == 0 else "next"), str(value)
            return f"{pointer}->{member} ({_node_text(n)})", said
        lock = lock_name(n)
        if s.layout == TICKET:
            return f"*(u16 *){lock}", str(value)
        member, offset = word_parts(LAYOUTS[s.pending_bits])[mask]
        return f"{lock}->{member}", str(value >> offset)

    def expect_functions(self):
        """What a scenario's ``[[expect]]`` may ask about a lock, named "A" to "E": ``tail(L)`` (the
        node the tail names, "cpu2/idx0"; powerpc: "cpu2"; "" for none), ``pending(L)`` and
        ``locked(L)`` (the fields' values), ``must_queue(L)`` and ``owner(L)`` (powerpc: the must-queue
        bit, and the owner field's CPU or -1 while unlocked), ``holders(L)`` (the contexts in its
        critical section), ``next_step(C)`` (the label of context C's next step, "" once it has
        finished), ``cpu(C)`` (the CPU context C runs on) and ``node("cpu2/idx0")``, the index into
        ``nodes`` of that MCS node (the value a node's ``next`` holds when it points there)."""
        def on(fn):
            return lambda s, name: fn(s, _lock_arg(s, name))

        def powerpc_only(fn):
            def check(s, lock):
                if s.layout != POWERPC:
                    raise ExpectError("must_queue() and owner() read powerpc's lock word only")
                return fn(s.words[lock])
            return on(check)

        return {"tail": on(tail_text), "pending": on(lambda s, lock: pending_locked(s, lock)[0]),
                "locked": on(lambda s, lock: pending_locked(s, lock)[1]),
                "must_queue": powerpc_only(lambda w: int(bool(w & PPC_MUST_Q_VAL))),
                "owner": powerpc_only(lambda w: (w & PPC_OWNER_CPU_MASK) >> PPC_OWNER_CPU_OFFSET
                                      if w & PPC_LOCKED_VAL else -1),
                "holders": on(lambda s, lock: tuple(holders(s, lock))),
                "next_step": lambda s, name: _context(s, name).frames[0][0] if _context(s, name).frames else "",
                "cpu": lambda s, name: _context(s, name).cpu, "node": _node_arg}

    def acts_on(self, s, action):
        """The lock of the acquisition in progress (``queued_spin_lock`` names it in its frame)."""
        if action.actor not in {t.name for t in s.threads}:
            return ""
        t = s.threads[thread_index(s, action.actor)]
        head = t.frames[0] if t.frames else None
        lock = head.arg if head is not None and head.label == "queued_spin_lock" == action.label else t.lock
        return f"lock {lock_name(lock)}" if 0 <= lock < len(s.words) else ""

"""The per-VMA lock model: ``VmaLocksModel`` joins the programs of this package's kernel files and
the RCU steps of models/rcu.py, with the invariants, variants and scenarios, and says what the step
table and ``-c`` show of its state.

Per-VMA locks as in Linux 6.12 (Suren Baghdasaryan's series, mainline since 6.4).

Each module of the package mirrors one kernel file, and reads beside it: memory.py
(mm/memory.c: ``lock_vma_under_rcu``, the fault path), mm.py (include/linux/mm.h:
``vma_start_read`` and the other per-VMA helpers), mmap_lock.py (include/linux/mmap_lock.h, and the
kernel/locking/rwsem.c steps whose rules are rwsem.py's), fault.py (arch/x86/mm/fault.c), rmap.py
(mm/rmap.c), and the writers' mmap.py, vma.py, mprotect.py and fork.py (mm/mmap.c, mm/vma.c,
mm/mprotect.c, kernel/fork.c).

Two sequence numbers do the locking.  A writer holding ``mmap_lock`` for write marks a VMA
write-locked by copying ``mm->mm_lock_seq`` into ``vma->vm_lock_seq`` (``vma_start_write``); there is
no per-VMA unlock: ``vma_end_write_all`` bumps ``mm_lock_seq`` once and every VMA locked in that
write epoch is unlocked at the same instant.  A page fault looks the VMA up in the maple tree
under RCU and read-locks only that VMA: it gives up (and falls back to ``mmap_lock``) if the two
numbers are equal, takes the VMA's rwsem with a trylock, and checks the numbers again under the
rwsem with acquire ordering.  A VMA that munmap removed is freed with ``call_rcu``, so a fault that
found it in the tree can still read its lock and ``detached`` flag safely.

Writers run mmap (always ``MAP_FIXED``), munmap, mprotect and fork as 6.12's mm/mmap.c, mm/vma.c,
mm/mprotect.c and kernel/fork.c do: a partial unmap splits first (``__split_vma``), mmap gathers and
detaches what it maps over in the same write epoch, mprotect walks every VMA of its range and tries
``vma_merge_existing_range`` before it splits.  Which VMAs a writer write-locks and frees follows
from 6.12's merge rules, so vm_flags (the protection and ``VM_ACCOUNT``) and the anon_vma each VMA
points to are part of the state.

Simplifications, each deliberate: addresses are page numbers; every VMA is private anonymous
memory mapped at its own address, so ``vm_pgoff == vm_start`` and neighbours are always
pgoff-contiguous; faults are write faults in ``do_anonymous_page`` (no page tables are modelled);
no VMA has fork children, so an anon_vma chain is singular exactly when the VMA has an anon_vma;
after a ``vma_lock_miss`` the retried walk looks up the faulting address (6.12 walks for the old
VMA's start, a benign quirk); kernel-mode faults and the arch access checks are left out; RCU is
the non-preemptible flavour of ``models/rcu.py`` with thread i running on CPU i.  A SIGSEGV ends
the faulting thread; in Linux its default action ends the whole thread group (``do_group_exit``
sends SIGKILL to the others), which the model leaves out so that the other threads still show
what happens to the address space.
"""

from __future__ import annotations

from ...engine import Program, ProgramModel, thread_index
from ...engine.memory_model import MemoryAccess
from ...engine.progress import Progress
from ...scenario_spec.expect import Expectations
from ..rcu import RCU_ACTOR, RCU_GP_KTHREAD, add_rcu, rcu_expect_functions, rcu_init
from . import fault, fork, memory, mm, mmap, mmap_lock, mprotect, rmap, rwsem, scenario, vma
from .fork import free_vma_rcu_cb
from .invariants import INVARIANTS, tree_non_overlapping
from .rwsem import NOBODY
from .scenario import FOREVER, SCHEMA, thread_names, thread_program
from .state import (LIVE, MM, NO_ANON_VMA, VM_LOCK_SEQ_INIT, Counters, Mm, Thread, Vma, VmaState, accountable,
                    in_vma_start_read, set_local)
from .variants import NO_PER_VMA_LOCK_BUILD, VARIANTS

# One table of every step and call: the lock's, the fault path's, the writers', a thread's loop
# (scenario.py) and RCU's.
program = Program()
for part in (mmap_lock, memory, mm, fault, rmap, mmap, vma, mprotect, fork, scenario):
    program.include(part.program)
add_rcu(program, free_vma_rcu_cb)


def rwsem_name(lock) -> str:
    """An rw_semaphore as the player names it: mmap_lock, or a VMA's lock by the VMA's id."""
    return "mmap_lock" if lock == MM else f"VMA {lock}'s lock"


# What a step acts on (the player names it, so two down_write steps on different locks differ): the
# rwsem its frame names (MM or a VMA's id), mmap_lock itself, the VMA or the address in its frame, or the
# VMA the fault found (its local ``vma``).
ON_LOCK = frozenset({"down_write", "rwsem_optimistic_spin", "rwsem_down_write_slowpath", "rwsem_try_write_lock",
                     "up_write", "rwsem_down_read_slowpath", "rwsem_wake", "downgrade_write", "up_read"})
ON_MMAP_LOCK = frozenset({"mm_lock_seqcount_begin", "vma_end_write_all", "mmap_read_unlock",
                          "get_mmap_lock_carefully"})
ON_VMA = frozenset({"vma_write_seq", "vma_mark_detached", "vm_area_free", "__vm_area_free"})
ON_ADDRESS = frozenset({"mas_walk", "vma_lock_miss", "find_vma", "vma_lock_retry"})
ON_FOUND_VMA = frozenset({"vma_start_read", "down_read_trylock", "vma_start_read_recheck", "check_detached",
                          "check_range"})


# The members of struct vm_area_struct that a VMA's fields are (store_parts names a buffered store by them).
VMA_MEMBERS = {"start": "vm_start", "end": "vm_end", "lock": "vm_lock->lock", "prot": "vm_flags",
               "account": "vm_flags"}
VM_FLAGS = {"r": "VM_READ", "w": "VM_WRITE"}


class VmaLocksModel(ProgramModel, MemoryAccess, Progress, Expectations):
    name = "vma-locks"
    title = "Per-VMA locks: page faults under RCU and one VMA's read lock"
    program = program
    daemons = {RCU_ACTOR: RCU_GP_KTHREAD}
    default_variant = "v6.12"
    variants = VARIANTS
    invariants = INVARIANTS
    scenario_schema = SCHEMA
    # Progress (liveness): a fault handles its page; a writer releases a rwsem it held for write.
    progress_labels = frozenset({"handle_mm_fault", "up_write"})
    # Shared memory for a memory model (engine/memory_model.py): the mm (mmap_lock, mm_lock_seq, the
    # tree) and the VMAs.  RCU's state and the counters change at once; a CPU reports a quiescent state
    # only with its store buffer drained (rcu_report_qs_rdp is a full barrier).
    memory_fields = ("mm", "vmas")
    private_parts = ("vmas.status",)  # whether the slab object is live, queued for RCU or freed: no field of it
    # The timed cost model's work besides memory accesses (engine/costs.py): a fault's exception entry and
    # return, charged at the one step every handled fault takes; the new anonymous page zeroed; and
    # mprotect's and munmap's TLB flush, with an IPI to the other CPUs running the mm's threads.
    step_work = {"handle_mm_fault": ("page_fault",), "do_anonymous_page": ("page_zero",),
                 "vm_flags_reset": ("tlb_flush", "ipi"), "vma_iter_clear_gfp": ("tlb_flush", "ipi")}
    # The kernel builds a variant may name (source/excerpts.py's BUILDS): its params' kernel_build.
    kernel_builds: tuple[str, ...] = (NO_PER_VMA_LOCK_BUILD,)

    def kernel_build(self, state):
        """The kernel build whose code the code pane shows: the variant's configuration, if it is not the
        mirrored one (no-per-vma-lock: the stubs CONFIG_PER_VMA_LOCK=n compiles)."""
        return self.variant.params.get("kernel_build")

    def unstarted(self, config):
        init = self.variant.params.get("vm_lock_seq_init", VM_LOCK_SEQ_INIT)
        # Each VMA was mmapped on its own, so each one with an anon_vma has its own (named after it).
        vmas = tuple(Vma(v["start"], v["end"], init, False, rwsem.FREE, v["prot"],
                         k if v["anon_vma"] else NO_ANON_VMA, LIVE, accountable(v["prot"]))
                     for k, v in enumerate(sorted(config["vmas"], key=lambda v: v["start"])))
        threads = tuple(Thread(name, thread_program(t), t["kind"], work=t["work"])
                        for t in config["threads"] for name in thread_names(t))
        mm = Mm(rwsem.FREE, 0, tuple(range(len(vmas))))
        return VmaState(threads, mm, vmas, rcu_init(len(threads)), Counters(), config["handoff_after"],
                        any(t["repeat"] == FOREVER for t in config["threads"]))

    def lasso_note(self, state):
        own = super().lasso_note(state)
        if state.handoff_after != rwsem.NEVER:
            return own
        return "; ".join(filter(None, (own, 'handoff disabled: handoff_after = "never", no RWSEM_WAIT_TIMEOUT')))

    def normalize(self, state, i):
        """Clear the ghost outside vma_start_read, so that it never tells two equal states apart."""
        state = ProgramModel.normalize(self, state, i)  # not super(): every step pays the lookup
        t = state[0][i]
        if t.ghost_writer_since_walk and not in_vma_start_read(t):
            state = set_local(state, i, ghost_writer_since_walk=False)
        return forget_sections(state) if state.forever else state

    def store_parts(self, s, entry):
        """A store waiting in a store buffer as the 6.12 code writes it: (where, value), the member of
        struct mm_struct or struct vm_area_struct and which VMA (``vma->vm_lock_seq (VMA 0)``, ``1``: the
        WRITE_ONCE of vma_start_write); the protection and VM_ACCOUNT are bits of ``vma->vm_flags``, the
        tree is the mm's maple tree (the VMAs it maps, in address order)."""
        _, n, part, _, value = entry
        if n < 0:  # the mm: one location per member
            member = s.mm._fields[part]
            if member == "tree":
                return "mm->mm_mt", "VMAs " + ", ".join(map(str, value)) if value else "no VMA"
            return f"mm->{member}", str(value)
        member = s.vmas[n]._fields[part]
        said = {"prot": lambda v: "|".join(VM_FLAGS[c] for c in v),
                "account": lambda v: "|VM_ACCOUNT" if v else "&~VM_ACCOUNT",
                "detached": lambda v: "true" if v else "false",
                "anon_vma": lambda v: "NULL" if v == NO_ANON_VMA else f"anon_vma {v}"}.get(member, str)(value)
        return f"vma->{VMA_MEMBERS.get(member, member)} (VMA {n})", said

    def acts_on(self, s, action):
        if action.actor not in {t.name for t in s.threads}:
            return ""
        t = s.threads[thread_index(s, action.actor)]
        arg = t.frames[0].arg if t.frames and t.frames[0].label == action.label else None
        if action.label in ON_LOCK:
            return rwsem_name(arg)
        if action.label in ON_MMAP_LOCK:
            return "mmap_lock"
        if action.label in ON_VMA:
            return f"VMA {arg}"
        if action.label in ON_ADDRESS:
            return f"address {arg}"
        if action.label in ON_FOUND_VMA and t.vma >= 0:
            return f"VMA {t.vma}"
        return ""

    def how_ended(self, s, actor):
        dead = [t.died for t in s.threads if t.name == actor and t.died]
        return f"killed by {dead[0]}" if dead else ""

    def expect_functions(self):
        """RCU's helpers, plus mmap_writer() (the name of the thread holding mmap_lock for write, or
        "") and tree_overlaps() (two VMAs in the maple tree share an address)."""
        def mmap_writer(s):
            owner = s.mm.mmap_lock.owner
            return s.threads[owner].name if owner != NOBODY else ""

        return {**rcu_expect_functions(), "mmap_writer": mmap_writer,
                "tree_overlaps": lambda s: tree_non_overlapping(s) is not None}


def forget_sections(s):
    """A run that goes on forever counts no read-side sections nobody remembers: RCU's ghost numbers a
    CPU's sections only so that a grace period's holdouts and a callback's readers can be found again,
    so a count that none of them names starts again from zero (else the states would never repeat)."""
    r = s.rcu
    named = {c for c, _ in r.ghost_holdouts} | {c for cb in r.callbacks for c, _ in cb.ghost_readers}
    section = tuple(n if c in named or r.nesting[c] else 0 for c, n in enumerate(r.ghost_section))
    return s if section == r.ghost_section else s._replace(rcu=r._replace(ghost_section=section))

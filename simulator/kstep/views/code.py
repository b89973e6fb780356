"""The code pane: the Linux 6.12 source of the function behind the current step, its lines marked.

Every label names the function it mirrors (``path:function``); the pane shows that function as
Debian's linux-source-6.12 has it (the committed excerpts of :mod:`kstep.source.excerpts`) and marks
the lines the step stands for.  A label named after a call or a constant in the function marks
the lines that name it (``down_read_trylock`` in ``vma_start_read``, ``vma_lock_miss`` at
``count_vm_vma_lock_event(VMA_LOCK_MISS)``); a label named after the function itself is the
whole function, one atomic step, and marks nothing; the labels that are neither are listed in
``ANCHORS`` under their function, with the code they stand for, each line found in order.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Mapping, Optional, Sequence

from ..engine import Source
from ..source.excerpts import load
from . import context

ELIXIR = "https://elixir.bootlin.com/linux/v{release}/source/{path}#L{line}"  # a link, never fetched

RETURNS = "}"  # an anchor for the function's closing brace: the step after it has returned (the lock is held)
ANCHORS: Mapping[str, Mapping[str, Sequence[str]]] = {
    "include/linux/mm.h:vma_start_read": {
        "vma_start_read_recheck": ("vma->vm_lock_seq == raw_read_seqcount", "up_read(&vma->vm_lock->lock);",
                                   "return false;"),
    },
    "mm/memory.c:lock_vma_under_rcu": {
        "check_detached": ("if (vma->detached) {", "vma_end_read(vma);", "count_vm_vma_lock_event(VMA_LOCK_MISS);",
                           "goto retry;"),
        "check_range": ("address < vma->vm_start || address >= vma->vm_end", "goto inval_end_read;"),
    },
    "include/linux/mm.h:vma_start_write": {
        "vma_write_seq": ("WRITE_ONCE(vma->vm_lock_seq, mm_lock_seq);",),
    },
    "kernel/rcu/rcutorture.c:rcu_torture_one_read": {
        "reader_uses_object": ("if (p->rtort_mbtest == 0)", "atomic_inc(&n_rcu_torture_mberror);"),
    },
    "kernel/rcu/update.c:__wait_rcu_gp": {
        "wait_rcu_gp": ("wait_for_completion_state(&rs_array[i].completion, state);",),
    },
    "kernel/locking/qspinlock.c:queued_spin_lock_slowpath": {
        "wait_pending_handover": ("if (val == _Q_PENDING_VAL) {", "int cnt = _Q_PENDING_LOOPS;",
                                  "val = atomic_cond_read_relaxed(&lock->val,", "(VAL != _Q_PENDING_VAL) || !cnt--);"),
        "wait_locked_clear": ("smp_cond_load_acquire(&lock->locked, !VAL);",),
        "node_count_inc": ("idx = node->count++;",),
        "store_node_count": ("idx = node->count++;",),
        # Before patch 07/11 a cmpxchg loop stood where 6.12 sets pending with one fetch_or.
        "trylock_pending_cmpxchg": ("val = queued_fetch_set_pending_acquire(lock);",),
        "mcs_node_init": ("node->locked = 0;", "node->next = NULL;"),
        "link_prev": ("WRITE_ONCE(prev->next, node);",),
        "wait_head": ("val = atomic_cond_read_acquire(&lock->val, !(VAL & _Q_LOCKED_PENDING_MASK));",),
        "claim_cmpxchg": ("if ((val & _Q_TAIL_MASK) == tail) {",
                          "atomic_try_cmpxchg_relaxed(&lock->val, &val, _Q_LOCKED_VAL)",
                          "goto release; /* No contention */"),
        "wait_next": ("next = smp_cond_load_relaxed(&node->next, (VAL));",),
        "release_node": ("__this_cpu_dec(qnodes[0].mcs.count);",),
        "critical_section": (RETURNS,),
    },
    "arch/x86/include/asm/qspinlock.h:virt_spin_lock": {
        "virt_spin_lock": ("val = atomic_read(&lock->val);",),
        "virt_spin_lock_cmpxchg": ("if (val || !atomic_try_cmpxchg(&lock->val, &val, _Q_LOCKED_VAL)) {",),
    },
    "include/asm-generic/spinlock.h:arch_spin_lock": {
        "wait_ticket": ("atomic_cond_read_acquire(lock, ticket == (u16)VAL);", "smp_mb();"),
        "critical_section": (RETURNS,),
    },
    "arch/powerpc/include/asm/qspinlock.h:queued_spin_lock": {
        "critical_section": (RETURNS,),
    },
    "arch/powerpc/lib/qspinlock.c:queued_spin_lock_mcs_queue": {
        "mcs_node_init": ("node->next = NULL;", "node->lock = lock;", "node->cpu = smp_processor_id();",
                          "node->sleepy = 0;", "node->locked = 0;"),
        "link_prev": ("WRITE_ONCE(prev->next, node);",),
        "mcs_spin": ("while (!READ_ONCE(node->locked)) {", "smp_rmb(); /* acquire barrier for the mcs lock */"),
        "wait_head": ("val = READ_ONCE(lock->val);", "if (!(val & _Q_LOCKED_VAL))",
                      "iters >= get_head_spins(paravirt, sleepy)", "set_mustq(lock);"),
        "wait_next": ("while (!(next = READ_ONCE(node->next)))",),
        # The paravirt branch's store and the plain one: the model is the plain one.
        "mcs_handoff": ("WRITE_ONCE(next->locked, 1);", "WRITE_ONCE(next->locked, 1);"),
        "release_node": ("node->lock = NULL;", "barrier();", "qnodesp->count--;"),
    },
    # arm64 without contpte builds the generic names as "#define ptep_get __ptep_get" and the like
    "arch/arm64/include/asm/pgtable.h:__ptep_get": {
        "ptep_get": ("return READ_ONCE(*ptep);",),
    },
    "arch/arm64/include/asm/pgtable.h:__wrprotect_ptes": {
        "wrprotect_ptes": ("__ptep_set_wrprotect(mm, address, ptep);",),
    },
    "arch/arm64/include/asm/pgtable.h:__set_ptes": {
        "set_ptes": ("__set_pte(ptep, pte);", "pte = pte_advance_pfn(pte, 1);"),
    },
    "kernel/locking/mcs_spinlock.h:arch_mcs_spin_lock_contended": {
        "mcs_spin": ("smp_cond_load_acquire(l, VAL);",),
    },
    "kernel/locking/mcs_spinlock.h:arch_mcs_spin_unlock_contended": {
        "mcs_handoff": ("smp_store_release((l), 1)",),
    },
}


def marked_lines(label: str, where: Source, lines: Sequence[str]) -> list[int]:
    """Which lines (0-based, in the excerpt of ``where``) the step ``label`` stands for."""
    anchors = ANCHORS.get(str(where), {}).get(label)
    if anchors is not None:
        out = []
        for text in anchors:
            start = out[-1] + 1 if out else 0
            found = len(lines) - 1 if text == RETURNS else next(
                (i for i in range(start, len(lines)) if text in lines[i]), None)
            if found is None:  # a build's stub of the function (CONFIG_PER_VMA_LOCK=n): not the step's code
                return []
            out.append(found)
        return out
    if label == where.function:
        return []
    word = re.compile(rf"\b{re.escape(label)}\b", re.I)
    return [i for i, line in enumerate(lines) if word.search(line)]


def built(where: Source, build: Optional[str] = None) -> tuple[Source, Optional[dict]]:
    """The function ``where`` names as the kernel build ``build`` compiles it (arm64's contpte ``ptep_get``
    for the generic one, CONFIG_PER_VMA_LOCK=n's stub of ``lock_vma_under_rcu``), and its excerpt; without
    ``build``, the cited one. No excerpt (or none that build compiles): None."""
    data = load()
    table = data.get("builds", {}).get(build, {}) if build else {}
    if str(where) not in table:
        return where, data["excerpts"].get(str(where))
    ex = table[str(where)]
    return (where, None) if ex is None else (Source.parse(ex["where"]), ex)


def tables(labels: Sequence[str], sources: Mapping[str, Source], used: set[str], build: Optional[str] = None) -> dict:
    """What player.js needs for the pane: the excerpts of the labels ``used`` in the trace (the others
    get none, to keep the page small), each label's excerpt index, marked lines and link; with ``build``,
    the code that kernel build compiles (:func:`built`)."""
    data = load()
    excerpts, index, code = [], {}, []
    for label in labels:
        source, ex = built(sources[label], build)
        where = str(source)
        if label not in used or ex is None:
            code.append(None)
            continue
        lines = ex["text"].split("\n")
        if where not in index:
            index[where] = len(excerpts)
            excerpts.append({"where": where, "first": ex["line"], "lines": lines})
        marked = marked_lines(label, source, lines)
        line = ex["line"] + (marked[0] if marked else 0)
        code.append({"excerpt": index[where], "marked": marked,
                     "url": ELIXIR.format(release=data["release"], path=source.path, line=line)})
    return {"excerpts": excerpts, "code": code, "release": data["release"]}


@lru_cache(maxsize=1)
def _bodies() -> dict[str, str]:
    """Each function's 6.12 code (every excerpt of that name, joined)."""
    out: dict[str, str] = {}
    for where, ex in load()["excerpts"].items():
        function = where.rpartition(":")[2]
        out[function] = out.get(function, "") + ex["text"] + "\n"
    return out


@lru_cache(maxsize=None)
def calls(caller: str, callee: str) -> bool:
    """True when the 6.12 code of ``caller`` calls ``callee`` (or names it, as a macro argument)."""
    return re.search(rf"\b{re.escape(callee)}\b", _bodies().get(caller, "")) is not None


def stack_line(stack: Optional[Sequence[str]]) -> str:
    """A step's call stack as one line (context.stack_line), with the calls the 6.12 code makes."""
    return context.stack_line(stack, calls)


SIDE_BY_SIDE = 12  # lines of 6.12 code shown beside a broken variant's change; longer ones are only named


def changes(model) -> tuple[str, list[dict]]:
    """The release of the excerpts, and what a broken variant changes, step by step, for showing beside
    the 6.12 code: each replaced
    step's label, its ``path:function``, the 6.12 lines the step stands for (its marked lines, or the
    whole function when that is short; none when there is no excerpt or it is long), and the variant's
    own text for the step."""
    data = load()
    sources = model.sources()
    out = []
    for label in model.variant.replaces:
        where = sources.get(label)
        if where is None:  # a call the variant expands differently: it has no step text of its own
            continue
        ex = data["excerpts"].get(str(where))
        shown: list[tuple[int, str]] = []
        if ex is not None:
            lines = ex["text"].split("\n")
            marked = marked_lines(label, where, lines) or (range(len(lines)) if len(lines) <= SIDE_BY_SIDE else [])
            shown = [(ex["line"] + i, lines[i]) for i in marked]
        out.append({"label": label, "where": str(where), "lines": shown, "instead": model.what(label)})
    return data["release"], out

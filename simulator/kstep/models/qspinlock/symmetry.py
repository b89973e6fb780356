"""Symmetry reduction for the qspinlock model: a CPU with all its contexts, MCS nodes and count is a unit.

CPUs whose contexts run the same programs at the same levels are interchangeable; renaming CPU k to
perm[k] renames its contexts, its nodes, the tails that name them and the ghost records
(``_Renaming``), which the engine uses to keep one state per orbit.
"""

from __future__ import annotations

from ...engine import Frame, Renamed
from .qspinlock_types import LAYOUTS
from .state import LEVELS, MAX_NODES, NULL, POWERPC, QSPINLOCK, Ctx, Node, QState


class _Renaming:
    """One renaming of CPUs (new CPU perm[k] for CPU k) in the states of one run: how it changes each
    field (``fields``, what ``Reductions.renaming`` returns), every context's record renamed once."""

    def __init__(self, s, perm, ctxs):
        ncpus = len(s.count)
        last = ncpus * MAX_NODES
        self.perm = perm
        self.where = tuple(ctxs[perm[t.cpu]][t.level] for t in s.threads)  # new index of each context
        self.node_of = tuple(perm[n // MAX_NODES] * MAX_NODES + n % MAX_NODES for n in range(last))
        self.ncpus, self.last = ncpus, last
        self.lay = LAYOUTS[s.pending_bits] if s.layout == QSPINLOCK else None
        self._ctx = {}  # record -> renamed record
        node = self.node
        where = self.where
        renamed = {
            "threads": Renamed(self.where, self.ctx), "words": Renamed(element=self.word),
            "nodes": Renamed(self.node_of, lambda x: x if x.next == NULL else Node(x.locked, node(x.next), x.lock)),
            "count": Renamed(perm),
            "ghost_queue": Renamed(element=lambda q: tuple(map(node, q))),
            "ghost_order": Renamed(element=lambda o: tuple(where[i] for i in o)),
            "ghost_handoffs": Renamed(whole=lambda h: frozenset(map(node, h))),
            "ghost_links": Renamed(whole=lambda links: frozenset((node(a), node(b)) for a, b in links))}
        self.fields = tuple(renamed.get(f) for f in QState._fields)

    def node(self, n):
        return self.node_of[n] if 0 <= n < self.last else n

    def word(self, w):
        lay = self.lay
        if lay is None:
            return w
        cpu = ((w & lay.TAIL_CPU_MASK) >> lay.TAIL_CPU_OFFSET) - 1
        if not 0 <= cpu < self.ncpus:
            return w
        return (w & ~lay.TAIL_CPU_MASK) | ((self.perm[cpu] + 1) << lay.TAIL_CPU_OFFSET)

    def ctx(self, t):
        out = self._ctx.get(t)
        if out is None:
            node = self.node
            cpu = self.perm[t.cpu]
            name = f"C{cpu}" + t.name[t.name.index("."):] if t.level else f"C{cpu}"
            frames = t.frames
            if any(f[0] == "link_prev" for f in frames):
                frames = tuple(Frame(f[0], node(f[1])) if f[0] == "link_prev" else f for f in frames)
            out = self._ctx[t] = Ctx(name, frames, cpu, t.lock, self.word(t.val), t.idx, node(t.next), t.ticket,
                                     t.level, t.entered)
        return out


class CpuSymmetry:
    """The symmetry methods of ``QspinlockModel`` (a mixin before ``ProgramModel``)."""

    def _contexts(self, s):
        """Per CPU, its contexts' indices by level (None where it has no such context)."""
        out = [[None] * len(LEVELS) for _ in s.count]
        for i, t in enumerate(s.threads):
            out[t.cpu][t.level] = i
        return out

    def symmetric_units(self, s):
        """CPUs whose contexts run the same programs at the same levels are interchangeable.  Not on
        powerpc, whose words name owners by CPU, nor for a broken variant with _Q_PENDING_BITS 1:
        there the word's arithmetic (atomic_add, a misplaced 16-bit exchange) can carry into or
        shift the tail, making a tail CPU computed from others that renaming does not follow."""
        if self.layout == POWERPC or (self.variant.broken and s.pending_bits == 1):
            return ()
        classes = {}
        for cpu, ctxs in enumerate(self._contexts(s)):
            key = tuple(None if i is None else s.threads[i].frames for i in ctxs)
            classes.setdefault(key, []).append(cpu)
        return tuple(tuple(c) for c in classes.values())

    def unit_count(self, s):
        return len(s.count)

    def unit_keys(self, s):
        if not s.nest:  # no interrupts: context k is CPU k's task
            count = s.count
            return tuple([(count[k], t.frames[0][0] if t.frames else "", len(t.frames), t.lock, t.idx, t.entered)
                          for k, t in enumerate(s.threads)])
        keys = []
        for cpu, ctxs in enumerate(self._contexts(s)):
            key = (s.count[cpu],)
            for i in ctxs:
                if i is not None:
                    t = s.threads[i]
                    key += (t.frames[0][0] if t.frames else "", len(t.frames), t.lock, t.idx, t.entered)
            keys.append(key)
        return tuple(keys)

    def renaming(self, s, perm):
        """How renaming CPU k perm[k] changes each field (``_Renaming``, one per renaming of this run's
        layout of contexts)."""
        shape = s.nest and tuple((t.cpu, t.level) for t in s.threads)  # no interrupts: context k is CPU k's task
        key = (perm, s.layout, s.pending_bits, len(s.count), shape)
        r = self._renamings.get(key)
        if r is None:
            r = self._renamings[key] = _Renaming(s, perm, self._contexts(s))
        return r.fields

"""Memory models as Model transformers: the scheduler interface between a mechanism and the hardware.

``memory_model(name, model, depth)`` returns a Model with the same contract as ``model`` (so the
schedulers, ``explore``, traces and the player take it unchanged): ``sc`` is the model itself,
``tso`` is ``StoreBuffered``, x86-TSO's per-CPU FIFO store buffers laid over the model's steps (the
names follow ``kstep.memory.stepping.TsoMachine``, the litmus-level machine).  The timed scheduler
(engine/timed.py) runs over either: its cache-line directory asks ``MemoryAccess`` which lines a step
touches and on which CPU, and the wrapper answers for its buffers and drains.

What a model declares for this (the whole interface, ``MemoryAccess``, which a model inherits to
run under tso):

- ``memory_fields``: the state fields that are shared memory.  A tuple field holds one
  location per element, a NamedTuple field (the mm) one per field; an element that is a
  NamedTuple (an MCS node, a VMA) holds one per field; an int element (a lock word) is
  byte-addressed, so a byte store to ``lock->locked`` buffers that byte alone and never
  overwrites the tail when it drains.  Every other field (the contexts' records and locals,
  per-CPU data only its own CPU touches, ghost fields) changes at once.
- ``word_stores(state, action)``: the stores a plain step makes to those words, as
  ``((field, element, mask), ...)``: the bytes each store of the kernel's code writes, its width,
  whatever values they hold (``WRITE_ONCE(lock->locked_pending, _Q_LOCKED_VAL)`` writes both bytes
  of the halfword, also a pending byte that is 0 already); a ProgramModel answers from each step's
  ``store=``.  A step that changes a word where it declares no store, or bytes outside it, is a
  model bug and raises ValueError.
- ``private_parts``: "field.part" names of parts of those elements that are no shared
  memory, only the model's bookkeeping (a VMA's allocation status): they change at once.
- ``cpu_field``: the field of a thread's record naming the CPU whose store buffer it
  uses (a CPU's task and the interrupts nesting on it share one); None: one buffer per thread.
- ``store_parts(state, entry)``, optional: a buffered store as the kernel's code names what it
  writes (qspinlock: ``A->locked``, ``0``), for the views; None where the state's names do.
- ``ordering(state, action)``: ``PLAIN`` (loads, plain and ONCE stores, and on x86 every acquire
  load, release store, ``smp_rmb``/``smp_wmb``: compiler barriers only) or ``FULL`` (an atomic RMW,
  a locked instruction, ``smp_mb``); a ProgramModel answers from each step's ``order=`` beside its
  kernel line.
- ``refuses_memory_model(name)``: why a variant cannot run under memory model ``name`` (its code is
  another architecture's); empty when it can.
- ``cache_of(state, actor)`` and ``accessed(state, action, after)``: whose cache an actor's accesses go
  through and what a step touches there, for the timed cost model (engine/costs.py); the defaults
  (the ``cpu_field``, the step's footprint) serve every mechanism, and ``StoreBuffered`` answers for
  its buffers and drains.

A plain step of a thread runs on its CPU's *view* (memory with the CPU's own buffer applied,
oldest entry first: store forwarding); the memory locations it changes become buffer entries
``(field, element, part, mask, value)`` (part -1: the whole element; mask -1: the whole value),
oldest first.  Elements a step appends to a tuple field (a VMA just allocated, that nobody else
can reach until it is published) go to memory at once; the stores that fill them in are buffered.
A word's entry is the store the step declares: its mask is the store's bytes and its value what
the step leaves there, so a drain writes every byte of the store and only those (a 16-bit store
whose pending byte was already 0 still clears a pending bit another CPU set meanwhile).  A part
of a struct (a node's ``next``, a VMA's ``vm_lock_seq``) is stored only when the step changes it:
there a store of the value the view already holds is no store at all (it can only hide an
overwrite, never invent one).  A full step is enabled only
on an empty buffer and writes memory directly, as ``lock``-prefixed instructions and ``mfence``
do.  The action ``drain_store_buffer`` of actor ``SB<cpu>`` writes the oldest entry of that CPU's
buffer to memory.  A buffer holds at most ``depth`` entries: a step that would overfill it first
drains its oldest entries (a behaviour TSO allows: the drains could have come first), so the bound
only leaves out runs in which more stores wait at once; every verdict reports it.  Daemon steps
(the RCU kthread) act on memory directly, as if every one of them ended with ``smp_mb()``.

Invariants: a state invariant is checked on ``drained(state)``, the state after every buffer has
drained (CPU 0's first): it is reached from ``state`` by drains alone, so every violation
reported is one a run reaches.  It can miss a violation that only a state with stores still
buffered shows: a check on memory that holds while the stores wait and breaks once they land is
seen there anyway (drains are steps), but one that breaks while they wait and heals when they land
is not.  Checks on the contexts' program counters (two owners of a lock) see the same in both.  A
transition invariant is checked on the stepping CPU's view before and after its step; drains
are not kernel steps and fire none.  Ghost fields record what the code did, in program order, at
the step that did it (not when its stores become visible); the invariants that read them are
written for that.

Reductions: both of ``explore``'s stay on.  Partial-order reduction: a plain step reads its own
buffer and the memory it reads, and writes its buffer (and the locations an overfilled buffer
drains); a full step also reads its buffer (it waits for it to empty); a drain reads and writes its
buffer and the location it writes.  An actor's future footprint is the inner one on its view plus
its CPU's buffer and every location that buffer may still write: those of its entries and the
memory writes in the inner future of every thread on that CPU (a drain actor's future is exactly
that).  A state invariant, checked on the drained state, reads the buffers when it reads a memory
field.  Symmetry: the inner model's units must be its CPUs (``cpu_field``), since renaming CPU k
perm[k] moves buffer k to perm[k]; each entry is renamed as the inner renaming renames the
location it stores to: its element moves as the field's elements do and its value is renamed as
the element's (a part: inside the run's first element, the part alone; a byte store: the masked
value, which must stay inside its mask).  test_memory_model holds both to the footprint and orbit
checks over the wrapped model; ``bench/explore_tso.py`` measures what they save.
"""

from __future__ import annotations

from collections import Counter, namedtuple
from typing import Any, Mapping, Optional

from . import display, progress, reductions, timing
from .display import Display
from .model import FULL, PLAIN, Action, Invariant, Model, Source, State
from .progress import Progress
from .reductions import Footprint, Reductions, Renamed, changed
from .timing import Timing
from .trace import Recorded, recorded

MEMORY_MODELS = ("sc", "tso")
DRAIN = "drain_store_buffer"  # a label is one schedulable word
BUFFERS = "store_buffers"


def memory_model(name: str, model: Model, depth: int) -> Model:
    """``model`` run under memory model ``name`` (sc: itself), store buffers at most ``depth`` deep."""
    if name == "sc":
        return model
    if name == "tso":
        return StoreBuffered(model, depth)
    raise ValueError(f"memory model {name!r}: one of {', '.join(MEMORY_MODELS)}")


class MemoryAccess:
    """What a model declares of its shared memory (see the module docstring); these defaults declare
    none, and a model that does not inherit this has no tso model."""

    memory_fields: tuple = ()  # the state fields that are shared memory
    private_parts: tuple = ()  # "field.part": parts of a memory field's elements that are no memory (change at once)
    cpu_field: Optional[str] = None  # the field of a thread's record naming the CPU whose store buffer it uses

    def ordering(self, state: State, action: Action) -> str:
        """PLAIN or FULL: whether ``action`` is an atomic RMW or full fence to a memory model (a
        ProgramModel answers from its steps' ``order=``, and is listed before this class)."""
        return PLAIN

    def refuses_memory_model(self, name: str) -> str:
        """Why this variant cannot run under memory model ``name`` (its code is another
        architecture's), in a few words; empty when it can."""
        return ""

    def word_stores(self, state: State, action: Action) -> tuple:
        """The stores plain step ``action`` makes to byte-addressed words: ((field, element, mask), ...),
        the field by name (a ProgramModel answers from its steps' ``store=``, and is listed before this
        class)."""
        return ()

    def store_parts(self, state: State, entry: tuple) -> Optional[tuple[str, str]]:
        """A buffered store as the kernel's code names where it writes and what (qspinlock:
        ``A->locked``, ``0``), for the views; None where the state's own names do."""
        return None

    def cache_of(self, state: State, actor: str) -> Any:
        """The CPU whose cache ``actor``'s accesses go through (the timed cost model's directory,
        engine/costs.py): its record's ``cpu_field`` when the model names one, else the actor itself."""
        field = self.cpu_field
        if field:
            for t in state[0]:
                if t[0] == actor:
                    return getattr(t, field)
        return actor

    def accessed(self, state: State, action: Action, after: Optional[State] = None) -> Optional[Footprint]:
        """What ``action`` reads and writes in the caches (engine/costs.py keeps the locations of
        ``memory_fields``) on its way to ``after`` (None: not taken, as a blocked step's spinning):
        its footprint, unless the memory model holds some of its writes back."""
        return reductions.of(self).footprint(state, action)


NONE = MemoryAccess()


def of(model: Any) -> MemoryAccess:
    """What ``model`` declares of its shared memory: the model itself when it opts in, else none."""
    return model if isinstance(model, MemoryAccess) else NONE


_types: dict = {}


def _buffered_type(inner: type) -> type:
    """The inner state's NamedTuple with one more field, the store buffers (views read it unchanged)."""
    out = _types.get(inner)
    if out is None:
        fields = inner._fields + (BUFFERS,)  # type: ignore[attr-defined]
        out = _types[inner] = namedtuple(inner.__name__, fields)  # type: ignore[misc]
    return out


class StoreBuffered(Model, Reductions, Timing, Progress, Recorded, Display, MemoryAccess):
    """x86-TSO over a mechanism model (see the module docstring); the interfaces it declares pass the
    inner model's through (a drain costs no round), with what the buffers add.  Its shared memory is
    the inner model's, so a timed run's cache lines are too (``accessed``: a buffered store takes its
    line when it drains); it runs under no second memory model."""

    def __init__(self, inner: Model, depth: int):
        if not isinstance(inner, MemoryAccess) or not inner.memory_fields:
            raise ValueError(f"{inner.name} declares no shared memory fields: it has no tso model")
        if depth < 1:
            raise ValueError("store buffers hold at least one entry")
        self.inner, self.depth = inner, depth
        self.memory_model = {"name": "tso", "store_buffer": depth}
        self.name, self.title, self.variants, self.variant = inner.name, inner.title, inner.variants, inner.variant
        self.default_variant = inner.default_variant
        self.locals, self.progress_labels = reductions.of(inner).locals, progress.of(inner).progress_labels
        self.memory_fields, self.private_parts = inner.memory_fields, inner.private_parts
        self.cpu_field = inner.cpu_field
        self.scenario_schema = inner.scenario_schema
        self.invariants = tuple(self._wrapped(inv) for inv in inner.invariants)
        self._memory: tuple = ()  # field indices of the inner state that are memory
        self._sources = dict(inner.sources())
        self._sources[DRAIN] = Source.outside("the CPU's store buffer writing to the cache")
        # The last state drained and the last step's views: every invariant of a state (a step) asks
        # for the same one, so each is computed once (the explorer checks several per state).
        self._last_drained: tuple = (None, None)
        self._last_views: tuple = (None, None, None, None)
        self._index: dict = {}  # actor -> its thread's index when last looked up (checked at each use)

    # -- the state -----------------------------------------------------------------------------
    def initial(self, config: Mapping[str, Any]) -> State:
        s = self.inner.initial(config)
        self._memory = tuple(s._fields.index(f) for f in self.inner.memory_fields)
        self._inner_cls = type(s)
        self._private = set()  # (field index, part index) of the private parts
        for name in self.inner.private_parts:
            field, _, part = name.partition(".")
            k = s._fields.index(field)
            element = s[k][0] if type(s[k]) is tuple else s[k]
            self._private.add((k, element._fields.index(part)))
        self._first = {k: (s[k][0] if type(s[k]) is tuple else s[k]) for k in self._memory if s[k] != ()}
        self._renamings: dict = {}
        return self._with(s, ((),) * self._cpus(s))

    def _cpus(self, s: State) -> int:
        field = self.inner.cpu_field
        threads = s[0]
        return 1 + max((getattr(t, field) for t in threads), default=0) if field else len(threads)

    def cpu(self, s: State, i: int) -> int:
        field = self.inner.cpu_field
        return getattr(s[0][i], field) if field else i

    @staticmethod
    def _with(s: State, buffers: tuple) -> State:
        return tuple.__new__(_buffered_type(type(s)), tuple(s) + (buffers,))

    def memory(self, s: State) -> State:
        """The inner state as memory holds it (no buffered store applied)."""
        return tuple.__new__(self._inner_cls, s[:-1])

    def view(self, s: State, cpu: int) -> State:
        """What ``cpu`` reads: memory with its own buffer applied, oldest entry first."""
        return apply(self.memory(s), s[-1][cpu])

    def drained(self, s: State) -> State:
        """The inner state once every buffer has drained, CPU 0's first."""
        last, m = self._last_drained
        if last is s:
            return m
        m = self.memory(s)
        for buf in s[-1]:
            m = apply(m, buf)
        self._last_drained = (s, m)
        return m

    # -- the contract --------------------------------------------------------------------------
    def actors(self, state: State) -> tuple[str, ...]:
        return self.inner.actors(self.memory(state)) + tuple(f"SB{b}" for b in range(len(state[-1])))

    def actions(self, state: State) -> list[Action]:
        buffers = state[-1]
        mem = self.memory(state)
        if not any(buffers):  # every CPU sees memory itself
            return self.inner.actions(mem)
        thread, cpu = self._thread, self.cpu
        out: list[Action] = []
        for a in self.inner.actions(mem):
            i = thread(mem, a.actor)
            if i is None or not buffers[cpu(mem, i)]:  # a daemon acts on memory
                out.append(a)
        for b, buf in enumerate(buffers):  # a CPU with stores waiting sees its own view
            if not buf:
                continue
            v = apply(mem, buf)
            for a in self.inner.actions(v):
                i = thread(mem, a.actor)
                if i is not None and cpu(mem, i) == b and self.inner.ordering(v, a) != FULL:
                    out.append(a)
        out.extend(Action(f"SB{b}", DRAIN) for b, buf in enumerate(buffers) if buf)
        return out

    def step(self, state: State, action: Action) -> State:
        buffers = state[-1]
        mem = self.memory(state)
        if action.label == DRAIN:
            b = int(action.actor[2:])
            if not buffers[b]:
                raise ValueError(f"{action}: CPU {b}'s store buffer is empty")
            return self._with(apply(mem, buffers[b][:1]), _set(buffers, b, buffers[b][1:]))
        i = self._thread(mem, action.actor)
        if i is None:
            return self._with(self.inner.step(mem, action), buffers)
        b = self.cpu(mem, i)
        buf = buffers[b]
        v = apply(mem, buf)
        if self.inner.ordering(v, action) == FULL:
            if buf:
                raise ValueError(f"{action} is a full fence: CPU {b}'s store buffer must drain first")
            return self._with(self.inner.step(mem, action), buffers)
        t = self.inner.step(v, action)
        stores = self.stores(v, t, self._declared(v, action))
        out = list(t)
        for k in self._memory:  # memory keeps its values; the stores wait in the buffer
            out[k] = mem[k] if len(t[k]) == len(v[k]) or type(t[k]) is not tuple else mem[k] + t[k][len(v[k]):]
        m = apply(tuple.__new__(type(t), out), tuple(e for e in stores if (e[0], e[2]) in self._private))
        stores = tuple(e for e in stores if (e[0], e[2]) not in self._private)
        buf = buf + stores
        if len(buf) > self.depth:
            m, buf = apply(m, buf[:len(buf) - self.depth]), buf[len(buf) - self.depth:]
        return self._with(m, _set(buffers, b, buf))

    def _declared(self, view: State, action: Action) -> dict:
        """(field index, element) -> mask of each word store plain step ``action`` declares."""
        fields = view._fields
        return {(fields.index(field), n): mask for field, n, mask in self.inner.word_stores(view, action)}

    def stores(self, before: State, after: State, declared: Mapping) -> tuple:
        """The buffer entries of a step from ``before`` to ``after`` (field order, then element): its
        ``declared`` word stores, (field index, element) -> mask, and every part it changed."""
        out: list[tuple] = []
        for k in self._memory:
            x, y = before[k], after[k]
            words = {n: mask for (field, n), mask in declared.items() if field == k}
            if x == y and not words:
                continue
            if hasattr(y, "_fields") and type(x) is type(y):  # a struct (mm): one location per field
                out.extend((k, -1, j, -1, c) for j, (o, c) in enumerate(zip(x, y)) if o != c)
                continue
            if type(x) is not tuple or type(y) is not tuple or len(x) > len(y):
                out.append((k, -1, -1, -1, y))
                continue
            for n, (p, q) in enumerate(zip(x, y)):  # what a step appends (a VMA allocated) is no store
                if n in words:
                    out.append(_word_store(before._fields[k], k, n, p, q, words[n]))
                elif p == q:
                    continue
                elif hasattr(q, "_fields"):
                    out.extend((k, n, j, -1, c) for j, (o, c) in enumerate(zip(p, q)) if o != c)
                elif type(q) is int:
                    raise ValueError(f"a plain step changes {before._fields[k]}[{n}] from {p:#x} to {q:#x} "
                                     "and declares no store there (store= on its step)")
                else:
                    out.append((k, n, -1, -1, q))
        return tuple(out)

    def done(self, state: State, actor: str) -> bool:
        if actor.startswith("SB") and self._thread(self.memory(state), actor) is None and actor[2:].isdigit():
            return not state[-1][int(actor[2:])]
        return self.inner.done(self.memory(state), actor)

    def is_daemon(self, actor: str) -> bool:
        return (actor.startswith("SB") and actor[2:].isdigit()) or self.inner.is_daemon(actor)

    def sources(self) -> Mapping[str, Source]:
        return self._sources

    def _thread(self, mem: State, actor: str) -> Optional[int]:
        threads = mem[0]
        i = self._index.get(actor)
        if i is not None and i < len(threads) and threads[i][0] == actor:
            return i
        for i, t in enumerate(threads):
            if t[0] == actor:
                self._index[actor] = i
                return i
        return None

    def _wrapped(self, inv: Invariant) -> Invariant:
        inner = inv.check
        reads = inv.reads
        if reads is not None and set(reads) & set(self.inner.memory_fields):  # buffered stores count too
            reads = tuple(reads) + (BUFFERS,)
        if not inv.transition:
            return inv._replace(check=lambda s: inner(self.drained(s)), reads=reads)

        def on_view(s, a, t):
            if a.label == DRAIN:
                return None
            before, after = self._views(s, a, t)
            return inner(before, a, after)

        return inv._replace(check=on_view, reads=reads)

    def _views(self, s: State, a: Action, t: State) -> tuple:
        """The inner states before and after the step (s, a, t) as its actor sees them: its CPU's
        view, or memory for a daemon."""
        last = self._last_views
        if last[0] is s and last[1] is a and last[2] is t:
            return last[3]
        mem = self.memory(s)
        i = self._thread(mem, a.actor)
        if i is None:
            out = (mem, self.memory(t))
        else:
            b = self.cpu(mem, i)
            out = (apply(mem, s[-1][b]), apply(self.memory(t), t[-1][b]))
        self._last_views = (s, a, t, out)
        return out

    # -- what the views and the explorer ask -------------------------------------------------------
    def footprint(self, state: State, action: Action) -> Optional[Footprint]:
        mem = self.memory(state)
        if action.label == DRAIN:
            b = int(action.actor[2:])
            loc = self._location(mem, state[-1][b][0])
            own = (BUFFERS, b)
            return Footprint(frozenset({own, loc}), frozenset({own, loc}))
        return self._step_footprint(state, action, cached=False)

    def _step_footprint(self, state: State, action: Action, cached: bool,
                        after: Optional[State] = None) -> Optional[Footprint]:
        """A kernel step's footprint: the inner one on its CPU's view, a plain step's stores to memory
        written to its buffer instead.  For partial-order reduction it also writes every location its
        buffer holds a store to (a step that overfills the buffer drains its oldest entries); for the
        caches (``cached``, see ``accessed``) it does not, nor does it read what it stores to on the
        way to ``after``."""
        mem = self.memory(state)
        i = self._thread(mem, action.actor)
        if i is None:
            return reductions.of(self.inner).footprint(mem, action)
        b = self.cpu(mem, i)
        v = apply(mem, state[-1][b])
        fp = reductions.of(self.inner).footprint(v, action)
        if fp is None:
            return None
        own = (BUFFERS, b)
        if self.inner.ordering(v, action) == FULL:
            return fp._replace(reads=fp.reads | {own})
        names = {mem._fields[k] for k in self._memory}
        kept = frozenset(w for w in fp.writes if w[0] not in names)
        if cached:
            stored = frozenset() if after is None else self._stored(state, action, after)
            return Footprint(fp.reads - stored | {own}, kept | {own}, fp.own)
        # an overfilled buffer drains its oldest entries into memory: those locations are written too
        drained = frozenset(self._location(mem, e) for e in state[-1][b])
        return Footprint(fp.reads | {own}, kept | {own} | drained, fp.own)

    # -- the caches a timed run charges (engine/costs.py) ----------------------------------------------
    def accessed(self, state: State, action: Action, after: Optional[State] = None) -> Optional[Footprint]:
        """A plain step's stores to memory take no line when they enter its CPU's buffer: the CPU
        goes on, and each store takes its line for ownership when it drains, so the drain writes the
        line (as an x86 store commits to its cache only then, its line held Modified).  A step that
        overfills its buffer drains its oldest entries at once: that changes memory, and costs sees
        the change, so the footprint here leaves out the stores its buffer merely might drain.  A
        location the step stores to on the way to ``after`` is charged as its store alone, at the
        drain, as costs charges it under sc (footprints list a stored word among the reads).  Any
        other load is charged even where the buffer could forward it: a location names no bytes, so a
        load the buffer serves whole cannot be told from one that also reads the line."""
        if action.label == DRAIN:
            mem = self.memory(state)
            return Footprint(frozenset(), frozenset({self._line(mem, state[-1][int(action.actor[2:])][0])}))
        return self._step_footprint(state, action, cached=True, after=after)

    def _stored(self, state: State, action: Action, after: State) -> frozenset:
        """The memory a plain thread step stores to: what its CPU's view shows changed, and the words
        it declares stores to (a store may leave a value as it was)."""
        before, seen = self._views(state, action, after)
        names = set(self.inner.memory_fields)
        out = {loc for loc in changed(before, seen) if loc[0] in names}
        out.update((field, n) for field, n, _ in self.inner.word_stores(before, action))
        return frozenset(out)

    @staticmethod
    def _line(mem: State, entry: tuple) -> tuple:
        """The location a buffered store writes, as finely as a cache line (costs.lines): a part of a
        struct field (``mm.mm_lock_seq``) is a line of its own, a part of an element is in its line."""
        field, n, part = entry[:3]
        if n < 0 and part >= 0:
            return (mem._fields[field], mem[field]._fields[part])
        return StoreBuffered._location(mem, entry)

    def cache_of(self, state: State, actor: str) -> Any:
        """A buffer drains into its own CPU's cache: SB<b> is CPU b's (thread b's, where each thread
        has a buffer of its own)."""
        mem = self.memory(state)
        if actor.startswith("SB") and actor[2:].isdigit() and self._thread(mem, actor) is None:
            b = int(actor[2:])
            return b if self.inner.cpu_field else mem[0][b][0]
        return self.inner.cache_of(mem, actor)

    def ordering(self, state: State, action: Action) -> str:
        return PLAIN if action.label == DRAIN else self.inner.ordering(self._acting_view(state, action), action)

    def work(self, state: State, action: Action, after: State) -> Mapping[str, int]:
        """The inner step's work on its actor's views before and after (a drain does none)."""
        if action.label == DRAIN:
            return Counter()
        before, seen = self._views(state, action, after)
        return timing.of(self.inner).work(before, action, seen)

    def refuses_memory_model(self, name: str) -> str:
        return "it runs under tso already"

    def future_footprint(self, state: State, actor: str) -> Optional[Footprint]:
        mem = self.memory(state)
        if actor.startswith("SB") and actor[2:].isdigit() and self._thread(mem, actor) is None:
            b = int(actor[2:])
            buffered = self._may_drain(state, b)
            return None if buffered is None else Footprint(buffered, buffered)
        i = self._thread(mem, actor)
        if i is None:
            return reductions.of(self.inner).future_footprint(mem, actor)
        b = self.cpu(mem, i)
        future = reductions.of(self.inner).future_footprint(apply(mem, state[-1][b]), actor)
        buffered = self._may_drain(state, b)
        if future is None or buffered is None:
            return None
        return Footprint(future.reads | buffered, future.writes | buffered, future.own)

    def _may_drain(self, state: State, b: int) -> Optional[frozenset]:
        """CPU ``b``'s buffer and every memory location it holds or its threads may still store to."""
        mem = self.memory(state)
        names = {mem._fields[k] for k in self._memory}
        out = {(BUFFERS, b)} | {self._location(mem, e) for e in state[-1][b]}
        view = apply(mem, state[-1][b])
        for i, t in enumerate(mem[0]):
            if self.cpu(mem, i) == b:
                future = reductions.of(self.inner).future_footprint(view, t[0])
                if future is None:
                    return None
                out.update(w for w in future.writes if w[0] in names)
        return frozenset(out)

    @staticmethod
    def _location(mem: State, entry: tuple) -> tuple:
        return (mem._fields[entry[0]],) if entry[1] < 0 else (mem._fields[entry[0]], entry[1])

    # -- symmetry: buffer k moves with CPU k, its entries renamed as their locations are ---------------
    def symmetric_units(self, state: State) -> tuple:
        return reductions.of(self.inner).symmetric_units(self.memory(state)) if self.inner.cpu_field else ()

    def unit_count(self, state: State) -> int:
        return reductions.of(self.inner).unit_count(self.memory(state))

    def unit_keys(self, state: State) -> tuple:
        return reductions.of(self.inner).unit_keys(self.memory(state))

    def renaming(self, state: State, perm: tuple) -> tuple:
        mem = self.memory(state)
        how = reductions.of(self.inner).renaming(mem, perm)
        key = (perm, how)
        out = self._renamings.get(key)
        if out is None:
            entry = _EntryRenaming(how, self._first)
            out = self._renamings[key] = tuple(how) + (
                Renamed(perm, lambda buf: tuple(entry(e) for e in buf)),)
        return out

    def cost(self, state: State, action: Action) -> int:
        return 0 if action.label == DRAIN else timing.of(self.inner).cost(self._acting_view(state, action), action)

    def forget(self, state: State) -> State:
        mem = self.memory(state)
        out = reductions.of(self.inner).forget(mem)
        return state if out is mem else self._with(out, state[-1])  # most states have no dead local to reset

    def describe(self, state: State) -> Any:
        out = recorded(self.inner).describe(self.memory(state))
        out[BUFFERS] = [[self.entry_text(state, e) for e in buf] for buf in state[-1]]
        return out

    def entry_text(self, state: State, entry: tuple) -> str:
        """One buffered store in a few words: ``A->locked = 0``, ``nodes[5].locked = 1``, ``words[0] &0xff = 0x1``."""
        return " = ".join(self.entry_parts(state, entry))

    def entry_parts(self, state: State, entry: tuple) -> tuple[str, str]:
        """Where a buffered store writes and the value it writes there: as the inner model's ``store_parts``
        names it when it does (qspinlock: the member of struct qspinlock, ``A->locked``), else the
        location in the state (``words[0] &0xff``, ``0x1``; ``nodes[5].locked``, ``1``)."""
        field, n, part, mask, value = entry
        mem = self.memory(state)
        said = self.inner.store_parts(mem, entry)
        if said is not None:
            return said
        where = mem._fields[field] + (f"[{n}]" if n >= 0 else "")
        if part >= 0:
            where += "." + (mem[field][n] if n >= 0 else mem[field])._fields[part]
        return (f"{where} &{mask:#x}", f"{value:#x}") if mask >= 0 else (where, str(value))

    def _acting_view(self, state: State, action: Action) -> State:
        mem = self.memory(state)
        i = self._thread(mem, action.actor)
        return mem if i is None else apply(mem, state[-1][self.cpu(mem, i)])

    def view_of(self, state: State, actor: str) -> Optional[State]:
        """What thread ``actor`` reads (memory with its CPU's buffer applied); None for any other actor."""
        i = self._thread(self.memory(state), actor)
        return None if i is None else self._acting_view(state, Action(actor, ""))

    def what(self, label: str) -> str:
        return ("the oldest store waiting in this CPU's store buffer reaches memory (the cache)" if label == DRAIN
                else display.of(self.inner).what(label))

    def acts_on(self, state: State, action: Action) -> str:
        if action.label == DRAIN:
            return self.entry_text(state, state[-1][int(action.actor[2:])][0])
        inner = display.of(self.inner)
        return "" if inner is display.NONE else inner.acts_on(self._acting_view(state, action), action)

    def how_ended(self, state: State, actor: str) -> str:
        mem = self.memory(state)
        return "" if self._thread(mem, actor) is None else display.of(self.inner).how_ended(mem, actor)

    def is_optional(self, action: Action) -> bool:
        return action.label != DRAIN and self.inner.is_optional(action)


class _EntryRenaming:
    """A buffer entry renamed as the inner renaming ``how`` renames the location it stores to;
    ``first`` holds each memory field's first element (the field itself when it is no tuple), the
    frame a part's value is renamed in."""

    def __init__(self, how: tuple, first: dict):
        self.how, self.first = how, first

    def __call__(self, entry: tuple) -> tuple:
        field, n, part, mask, value = entry
        r = self.how[field]
        if r is None:
            return entry
        if n >= 0:
            n = n if r.positions is None else r.positions[n]
            rename = r.element
        else:
            rename = r.whole
        if rename is None:
            return (field, n, part, mask, value)
        if part >= 0:  # the part alone: renamed inside a frame, as an element holding it
            frame = self.first[field]
            value = rename(tuple.__new__(type(frame), frame[:part] + (value,) + frame[part + 1:]))[part]
        else:
            renamed = rename(value)
            if mask >= 0 and renamed & ~mask:
                raise ValueError(f"renaming moves the byte store {entry} outside its bytes")
            value = renamed
        return (field, n, part, mask, value)


def apply(state: State, entries: tuple) -> State:
    """``state`` with the buffered stores ``entries`` written, oldest first."""
    if not entries:
        return state
    out = list(state)
    for field, n, part, mask, value in entries:
        if n < 0:
            old = out[field]
            out[field] = value if part < 0 else tuple.__new__(type(old), old[:part] + (value,) + old[part + 1:])
            continue
        items = out[field]
        old = items[n]
        if part >= 0:
            new = tuple.__new__(type(old), old[:part] + (value,) + old[part + 1:])
        elif mask >= 0:
            new = (old & ~mask) | value
        else:
            new = value
        out[field] = items[:n] + (new,) + items[n + 1:]
    return tuple.__new__(type(state), out)


def _word_store(name: str, k: int, n: int, before: int, after: int, mask: int) -> tuple:
    """The buffer entry of a declared store of bytes ``mask`` to word ``n`` of field ``name`` (index
    ``k``) that leaves ``after`` where ``before`` was."""
    if before < 0 or after < 0 or mask <= 0 or _byte_mask(mask) != mask:
        raise ValueError(f"{name}[{n}]: a store writes whole bytes ({mask:#x}) of a non-negative word")
    if _byte_mask(before ^ after) & ~mask:
        raise ValueError(f"a plain step changes {name}[{n}] from {before:#x} to {after:#x}, outside the "
                         f"store of bytes {mask:#x} it declares")
    return (k, n, -1, mask, after & mask)


def _byte_mask(bits: int) -> int:
    """Every byte in which ``bits`` has a bit set, as a mask."""
    mask = 0
    byte = 0
    while bits >> byte:
        if (bits >> byte) & 0xff:
            mask |= 0xff << byte
        byte += 8
    return mask


def _set(t: tuple, k: int, value: Any) -> tuple:
    return t[:k] + (value,) + t[k + 1:]

"""Threads as stacks of frames: the shape every kstep model is written in.

A thread's program counter is a tuple of frames ``(label, arg)``.  The head frame is always an
atomic *step*: one labelled, indivisible action that names the Linux 6.12 function it mirrors.
A *call* stands for a kernel function that is not itself atomic (``vma_start_write``,
``mmap_write_unlock``): when it reaches the head of the stack it is replaced by the frames it
expands to, so a model reads like the kernel code it mirrors, one function at a time.

A call expands at the moment the previous step finishes, so it may only decide on state no other
actor can change at that instant (the thread's own locals, or data its locks protect).

*Daemon* actors (the RCU grace-period kthread, a kdamond) have no stack: each of their steps has a
guard and is enabled whenever the guard holds.  A daemon with nothing enabled is idle, never blocked.
A daemon step registered with ``idle=True`` also receives which threads are *idle* (finished, or
unable to take their next step): a bitmask, bit i for thread i, as a CPU-scanning kthread sees CPUs
with nothing to run.

An *optional* step is one a thread may take besides its next frame, in the middle of whatever it
is doing (a CPU reporting an RCU quiescent state from its own tick).  It is offered only while the
thread's next frame step is enabled, so it never makes a finished thread look unfinished nor a
blocked one runnable, and it leaves the thread's stack as it was.  Its guard says for every thread
at once which may take it, as a bitmask (bit i for thread i), the way the kernel keeps such state
per CPU in one word (an rcu_node's ``qsmask``).  Schedulers take it only when
named (``Scripted``: ``ACTOR:label``) or first in the thread's turn (``RoundRobin``); ``Random`` and
``explore`` treat it as any other enabled action.
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter, is_, is_not
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Optional

from .display import Display
from .model import PLAIN, Action, Model, Source, State, Variant
from .reductions import Footprint, Reductions
from .timing import Timing


class Frame(NamedTuple):
    label: str
    arg: Any = None


class Step(NamedTuple):
    """An atomic step: ``run(state, thread_index, arg) -> state`` (daemons: ``run(state)``, or
    ``run(state, idle)`` with ``idle``; optional steps: ``run(state, thread_index)``); its guard
    takes the same arguments, except an optional step's: ``guard(state)`` returns the bitmask of the
    threads that may take it.

    ``cost`` is how many round-robin rounds it keeps its thread busy: 0 for CPU-local work that
    touches no shared memory, or a function ``cost(state, thread_index, arg)``.

    ``footprint``, taking the same arguments as ``run``, returns ``(reads, writes)``: the locations
    (see ``Footprint``) the step and its guard read and write besides its own thread's record.
    None: undeclared, the step may touch anything.

    ``guard_reads`` names the state fields an optional or daemon step's guard reads (with the idle
    mask, for an ``idle`` step); None: any.  While they are the very objects they were, a run need
    not ask the guard again (``ProgramModel.actions_along``).

    ``live`` names the locals of its own thread (``ProgramModel.locals``) that this step, or a later
    one of the thread, may read before writing them; every other local is dead while this step is
    next, and the explorer forgets its value (``ProgramModel.forget``).

    ``order`` is PLAIN or FULL, or a function taking run's arguments that answers which: FULL for an
    atomic RMW or a full fence (see engine/memory_model.py).  ``store``, taking run's arguments,
    returns the stores the step makes to byte-addressed words as the kernel's code makes them:
    ``((field, element, mask), ...)``, each word and the bytes its store writes (a 16-bit
    ``WRITE_ONCE`` writes both bytes, also one whose value stays); None: the step stores to none.
    """

    label: str
    source: Source
    what: str
    run: Callable[..., State]
    guard: Optional[Callable[..., bool]] = None
    daemon: bool = False
    cost: Any = 1
    optional: bool = False
    idle: bool = False
    footprint: Optional[Callable[..., tuple]] = None
    live: tuple = ()
    order: Any = PLAIN
    guard_reads: Optional[tuple] = None
    store: Optional[Callable[..., tuple]] = None


class Replacement(NamedTuple):
    """What a variant puts in place of one step: its body, its enabling condition and its one-line
    text, and the word stores it makes (``Step.store``).  None keeps the default's; a replaced step of
    a correct variant says what it does in its own words (the test of the model sources holds every
    variant to that)."""

    run: Optional[Callable[..., State]] = None
    guard: Optional[Callable[..., bool]] = None
    what: Optional[str] = None
    store: Optional[Callable[..., tuple]] = None


class Call(NamedTuple):
    """A non-atomic function: ``expand(state, thread_index, arg) -> tuple of frames``.

    Kernel functions carry their source; a scenario's own program (a reader's loop) has none.
    """

    label: str
    source: Optional[Source]
    expand: Callable[..., tuple]


class Inline(NamedTuple):
    """A variant's replacement that turns a step into a call: the kernel configuration the variant
    models compiles that function to an inline that does nothing (or only calls other steps), so
    it takes no step of its own.  ``expand(state, thread_index, arg) -> tuple of frames``."""

    expand: Callable[..., tuple]


class Program:
    """The table of steps and calls of one model, filled in with decorators."""

    def __init__(self) -> None:
        self.steps: dict[str, Step] = {}
        self.calls: dict[str, Call] = {}

    def step(self, label: str, location: str | Source, what: str, *, daemon: bool = False, cost: Any = 1,
             optional: bool = False, idle: bool = False, footprint: Optional[Callable[..., tuple]] = None,
             live: tuple = (), order: Any = PLAIN, store: Optional[Callable[..., tuple]] = None):
        """Register an atomic step; ``what`` says in one line what the code does there.

        ``location`` is the kernel's ``"path:function"``, or a ``Source.outside(...)`` for a step
        that is no kernel code.  ``optional``: every thread may take it besides its next frame (see
        the module docstring); ``idle`` (daemons): its run and guard also receive the bitmask of
        idle threads; ``footprint``: what it reads and writes; ``live``: the thread's locals still to be
        read (see ``Step``); ``order``: PLAIN or FULL, and ``store``: the word stores it makes (see ``Step``).
        """
        if optional and daemon or idle and not daemon:
            raise ValueError(f"step {label!r}: optional steps belong to threads, idle masks to daemons")

        def register(run):
            self._fresh(label)
            source = location if isinstance(location, Source) else Source.parse(location)
            self.steps[label] = Step(label, source, what, run, None, daemon, cost, optional, idle, footprint,
                                      tuple(live), order, store=store)
            return run

        return register

    def guard(self, label: str, reads: Optional[tuple] = None):
        """Register when the step ``label`` is enabled (default: always); ``reads``: the state fields the
        guard of an optional or daemon step reads (see ``Step``)."""

        def register(fn):
            self.steps[label] = self.steps[label]._replace(guard=fn, guard_reads=reads)
            return fn

        return register

    def call(self, label: str, location: Optional[str] = None):
        def register(expand):
            self._fresh(label)
            self.calls[label] = Call(label, Source.parse(location) if location else None, expand)
            return expand

        return register

    def include(self, other: "Program", without: Iterable[str] = ()) -> None:
        """Take every step and call of ``other`` except those named in ``without``: a model built on
        another's program (fork's copy inside vma-locks' dup_mmap) registers its own versions of those."""
        leave = set(without)
        missing = leave - set(other.steps) - set(other.calls)
        if missing:
            raise ValueError(f"cannot leave out unknown labels: {', '.join(sorted(missing))}")
        for label, st in other.steps.items():
            if label not in leave:
                self._fresh(label)
                self.steps[label] = st
        for label, c in other.calls.items():
            if label not in leave:
                self._fresh(label)
                self.calls[label] = c

    def _fresh(self, label: str) -> None:
        if label in self.steps or label in self.calls:
            raise ValueError(f"label {label!r} registered twice")

    def replaced(self, replacements: Mapping[str, Any], broken: Optional[Variant] = None) -> "Program":
        """A copy in which the named steps run (or calls expand) with other functions.

        A step's replacement is a ``Replacement``, a plain function (it replaces ``run``), a
        ``(run, guard)`` pair for a step whose enabling condition changes, or an ``Inline`` that
        makes the step a call of the same name and source; a call's is a function (it replaces
        ``expand``).  In a ``broken`` variant every replaced step reads "broken (<variant>): " and
        then its own text, or the variant's doc, so a broken step never claims to do what the
        kernel does.
        """
        copy = Program()
        copy.steps = dict(self.steps)
        copy.calls = dict(self.calls)
        for label, r in replacements.items():
            if isinstance(r, Inline) and label in copy.steps:
                copy.calls[label] = Call(label, copy.steps.pop(label).source, r.expand)
            elif label in copy.steps:
                old = copy.steps[label]
                if not isinstance(r, Replacement):
                    r = Replacement(*r) if isinstance(r, tuple) else Replacement(r)
                what = r.what or (broken.doc if broken else old.what)
                if broken:
                    what = f"broken ({broken.name}): {what}"
                copy.steps[label] = old._replace(run=r.run or old.run, guard=r.guard or old.guard, what=what,
                                                 store=r.store or old.store)
            elif label in copy.calls:
                copy.calls[label] = copy.calls[label]._replace(expand=r)
            else:
                raise ValueError(f"variant replaces unknown label {label!r}")
        return copy


class ProgramModel(Model, Reductions, Timing, Display):
    """A Model whose state is a NamedTuple whose first field is ``threads``: a tuple of thread
    NamedTuples whose first two fields are ``name`` and ``frames`` (the engine relies on these
    positions to update them without ``_replace``, which dominated exploration time).

    Subclasses set ``program`` (a Program) and ``daemons`` (actor name -> its step labels), and may
    name in ``locals`` the fields of a thread's record that are locals of the code it runs, each
    with the value a dead one is forgotten to (``forget``; the steps that read them say so in
    ``Step.live``).
    """

    program: Program
    daemons: Mapping[str, tuple[str, ...]] = {}

    def __init__(self, variant: Optional[str] = None):
        super().__init__(variant)
        self.table = self.program.replaced(self.variant.replaces, self.variant if self.variant.broken else None)
        self._steps = self.table.steps
        self._guards = {label: st.guard for label, st in self._steps.items()}
        # label -> run of a thread's own next step (not a daemon's, nor an optional one): step's fast path
        self._frame_runs = {label: st.run for label, st in self._steps.items() if not st.daemon and not st.optional}
        self._calls = self.table.calls
        self._daemon_steps = {
            name: tuple(self._steps[label] for label in labels) for name, labels in self.daemons.items()
        }
        self._optional = tuple(st for st in self._steps.values() if st.optional)
        daemon_steps = [st for dsteps in self._daemon_steps.values() for st in dsteps]
        unguarded = [st.label for st in (*self._optional, *daemon_steps) if st.guard is None]
        if unguarded:
            raise ValueError(f"optional and daemon steps need a guard: {', '.join(unguarded)}")
        self._optional_guards = tuple((st.guard, st.label) for st in self._optional if st.guard is not None)
        self._daemon_guards = tuple((name, st.label, st.guard, st.idle) for name, dsteps in self._daemon_steps.items()
                                    for st in dsteps if st.guard is not None)
        self._wants_idle = any(st.idle for steps in self._daemon_steps.values() for st in steps)
        unknown = sorted({v for st in self._steps.values() for v in st.live} - set(self.locals))
        if unknown:
            raise ValueError(f"steps declare live locals the model does not have: {', '.join(unknown)}")
        always = {v for st in self._optional for v in st.live}  # an optional step may run before any frame
        self._dead = {label: tuple(v for v in self.locals if v not in always and v not in st.live)
                      for label, st in self._steps.items()}
        self._forget_plans: dict = {}  # (record type, head label) -> ((field index, dead value), ...)

    # -- contract -------------------------------------------------------------------------------
    def initial(self, config: Mapping[str, Any]) -> State:
        return self.start(self.unstarted(config))

    def unstarted(self, config: Mapping[str, Any]) -> State:
        """The initial state with each thread's program as the scenario writes it, no call expanded yet."""
        raise NotImplementedError(f"{type(self).__name__} builds its initial state without unstarted()")

    def actors(self, state: State) -> tuple[str, ...]:
        return tuple(t.name for t in state.threads) + tuple(self.daemons)

    def actions(self, state: State) -> list[Action]:
        # The hot path of every run and search: _runnable's loop inlined, the tables read once.
        new = tuple.__new__  # Action(...) through its generated __new__ costs twice as much
        guards = self._guards
        optional = [(guard(state), label) for guard, label in self._optional_guards]
        offered = 0  # the threads some optional step is offered to: most steps offer none
        for mask, _ in optional:
            offered |= mask
        out = []
        idle = 0
        for i, t in enumerate(state[0]):
            frames = t[1]
            if frames:
                label, arg = frames[0]
                guard = guards[label]
                if guard is None or guard(state, i, arg):
                    name = t[0]
                    out.append(new(Action, (name, label)))
                    if offered >> i & 1:
                        for mask, opt_label in optional:
                            if mask >> i & 1:
                                out.append(new(Action, (name, opt_label)))
                    continue
            idle |= 1 << i
        for name, label, guard, wants_idle in self._daemon_guards:
            if guard(state, idle) if wants_idle else guard(state):
                out.append(new(Action, (name, label)))
        return out

    def actions_along(self) -> Callable[[State], list[Action]]:
        """``actions`` for the states of one run in order, looking again only at what changed.

        A thread whose next step has no guard offers that step whatever the rest of the state holds:
        while its record is the very object it was in the state before, it offers what it offered
        then.  So each state looks only at the records the step replaced (usually its own thread's,
        found by identity in C) and at the threads whose next step has a guard, which may read
        anything and are asked again every time, as are the optional and daemon steps' guards.  The
        result equals ``actions(state)`` (test_actions_along holds them equal on seeded runs of every
        mechanism).  A model that overrides ``actions`` gets its own ``actions``.
        """
        if type(self).actions is not ProgramModel.actions:
            return self.actions
        new = tuple.__new__
        guards, optional_guards, daemon_guards = self._guards, self._optional_guards, self._daemon_guards
        last: tuple = ()
        mains: list = []  # per thread: the Action of its next step if that has no guard and is enabled, else None
        guarded: dict = {}  # thread index -> (name, label, arg, guard) of a next step with a guard
        any_idle = self._wants_idle
        idle_heads = 0  # bit i: thread i has finished or its next step has a guard (see `guarded`)
        # The optional and daemon steps' guards, asked again only when a field they declare they read
        # is another object or the idle mask changed (every time, if one of them declares nothing).
        state_guarded = bool(optional_guards or daemon_guards)
        reads = [self._steps[label].guard_reads for _, label in optional_guards]
        reads += [self._steps[label].guard_reads for _, label, _, _ in daemon_guards]
        names = sorted({f for r in reads if r is not None for f in r})
        read = attrgetter(*names) if names and None not in reads else None
        one = len(names) == 1  # attrgetter of one name gives the object itself
        seen: Any = object()  # what the guards were last asked about: the fields read, the idle mask,
        seen_idle = -1  # and their answers
        answers: tuple = ((), (), 0)

        def ask(state: State, idle: int) -> tuple:
            """(mask, label) of each optional step, the enabled daemon steps' actions, and the threads some
            optional step is offered to."""
            optional = [(guard(state), label) for guard, label in optional_guards]
            offered = 0
            for mask, _ in optional:
                offered |= mask
            return (optional, [new(Action, (name, label)) for name, label, guard, wants_idle in daemon_guards
                               if (guard(state, idle) if wants_idle else guard(state))], offered)

        def actions(state: State) -> list[Action]:
            nonlocal last, idle_heads, seen, seen_idle, answers
            threads = state[0]
            if len(threads) != len(last):
                guarded.clear()
                mains[:] = [None] * len(threads)
                idle_heads = 0
                changed: Iterable[int] = range(len(threads))
            else:
                changed = compress(range(len(threads)), map(is_not, threads, last))
            for i in changed:  # its next step's Action if it needs no guard, else it is idle or guarded
                t = threads[i]
                frames = t[1]
                if guarded:
                    guarded.pop(i, None)
                if frames:
                    label, arg = frames[0]
                    guard = guards[label]
                    if guard is None:
                        mains[i] = new(Action, (t[0], label))
                        idle_heads &= ~(1 << i)
                        continue
                    guarded[i] = (t[0], label, arg, guard)
                mains[i] = None
                idle_heads |= 1 << i
            last = threads
            now, idle = mains, idle_heads
            if guarded:
                now = mains.copy()
                for i, (name, label, arg, guard) in guarded.items():
                    if guard(state, i, arg):
                        now[i] = new(Action, (name, label))
                        idle &= ~(1 << i)
            out = list(filter(None, now))
            if not state_guarded:
                return out
            if not any_idle:
                idle = 0
            if read is None:
                optional, daemons, offered = ask(state, idle)
            else:
                fields = read(state)
                if idle != seen_idle or not (fields is seen if one else all(map(is_, fields, seen))):
                    seen, seen_idle, answers = fields, idle, ask(state, idle)
                optional, daemons, offered = answers
            if offered:  # rare: the optional steps go right after their thread's next step
                out = []
                for i, a in enumerate(now):
                    if a is not None:
                        out.append(a)
                        if offered >> i & 1:
                            out += [new(Action, (a[0], opt)) for mask, opt in optional if mask >> i & 1]
            out += daemons
            return out

        return actions

    def idle(self, state: State) -> int:
        """Bit i set when thread i has finished or cannot take its next step (nothing to run)."""
        return self._runnable(state)[1]

    def _runnable(self, state: State) -> tuple[list, int]:
        """(index, name, next label) of every thread whose next step is enabled, and the idle mask."""
        guards = self._guards
        runnable = []
        idle = 0
        for i, t in enumerate(state[0]):
            frames = t[1]
            if frames:
                label, arg = frames[0]
                guard = guards[label]
                if guard is None or guard(state, i, arg):
                    runnable.append((i, t[0], label))
                    continue
            idle |= 1 << i
        return runnable, idle

    def is_optional(self, action: Action) -> bool:
        return self._steps[action.label].optional

    def step(self, state: State, action: Action) -> State:
        name, label = action
        run = self._frame_runs.get(label)
        if run is None:
            st = self._steps[label]
            if st.daemon:
                return st.run(state, self.idle(state)) if st.idle else st.run(state)
            return st.run(state, thread_index(state, name))
        threads = state[0]
        i = _last_index.get(name)  # thread_index, inlined: every step pays it
        if i is None or i >= len(threads) or threads[i][0] != name:
            i = thread_index(state, name)
        t = threads[i]
        frames = t[1]
        head, arg = frames[0]
        if head != label:
            raise ValueError(f"{action} is not {t.name}'s next step ({head})")
        new = tuple.__new__  # set_thread(state, i, with_frames(t, frames[1:])), inlined: every step pays it
        threads = [*threads]
        threads[i] = new(type(t), (t[0], frames[1:]) + t[2:])
        return self.normalize(run(new(type(state), (tuple(threads),) + state[1:]), i, arg), i)

    def done(self, state: State, actor: str) -> bool:
        if actor in self._daemon_steps:
            idle = self.idle(state) if self._wants_idle else 0
            return not any(guard(state, idle) if wants_idle else guard(state)
                           for name, _, guard, wants_idle in self._daemon_guards if name == actor)
        return not state.threads[thread_index(state, actor)].frames

    def sources(self) -> Mapping[str, Source]:
        return {label: st.source for label, st in self._steps.items()}

    def is_daemon(self, actor: str) -> bool:
        return actor in self._daemon_steps

    def footprint(self, state: State, action: Action) -> Optional[Footprint]:
        """The step's declared footprint, with its own thread's record (a daemon has none)."""
        st = self._steps[action.label]
        if st.footprint is None or st.idle:  # an idle mask reads every thread
            return None
        if st.daemon:
            reads, writes = st.footprint(state)
            return Footprint(frozenset(reads), frozenset(writes))
        i = thread_index(state, action.actor)
        reads, writes = st.footprint(state, i) if st.optional else st.footprint(state, i, state.threads[i].frames[0][1])
        own = ("threads", i)
        return Footprint(frozenset(reads) | {own}, frozenset(writes) | {own}, own)

    def ordering(self, state: State, action: Action) -> str:
        st = self._steps[action.label]
        return _asked(st, st.order, state, action) if callable(st.order) else st.order

    def word_stores(self, state: State, action: Action) -> tuple:
        st = self._steps[action.label]
        return () if st.store is None else _asked(st, st.store, state, action)

    def cost(self, state: State, action: Action) -> int:
        c = self._steps[action.label].cost
        if callable(c):
            i = thread_index(state, action.actor)
            return c(state, i, state.threads[i].frames[0][1])
        return c

    def forget(self, state: State) -> State:
        """The state with every dead local reset to its dead value: a thread's local is dead when no
        step of the thread reads it before writing it again from here on, as the steps' ``live``
        declarations say (a finished thread's locals are all dead).  Two states that differ only in
        dead locals have the same future, step for step and verdict for verdict, so the explorer
        stores one of them (SPIN's dead-variable reduction); the test of the declarations checks that
        on every reachable state of every bundled scenario."""
        if not self.locals:
            return state
        threads = state[0]
        out = None
        plans = self._forget_plans
        for k, t in enumerate(threads):
            frames = t[1]
            head = frames[0][0] if frames else None
            key = (type(t), head)
            plan = plans.get(key)
            if plan is None:
                dead = tuple(self.locals) if head is None else self._dead[head]
                plan = plans[key] = tuple((t._fields.index(v), self.locals[v]) for v in dead)
            for f, value in plan:
                if t[f] != value:
                    if out is None:
                        out = list(threads)
                    out[k] = t = tuple.__new__(type(t), t[:f] + (value,) + t[f + 1:])
        if out is None:
            return state
        return tuple.__new__(type(state), (tuple(out),) + state[1:])

    # -- helpers for subclasses -------------------------------------------------------------------
    def normalize(self, state: State, i: int) -> State:
        """Expand calls at the head of thread ``i`` until an atomic step (or nothing) is next."""
        calls = self._calls
        t = state[0][i]
        frames = t[1]
        if not frames or frames[0][0] not in calls:
            return state
        while frames and frames[0][0] in calls:
            label, arg = frames[0]
            frames = tuple(calls[label].expand(state, i, arg)) + frames[1:]
        return set_thread(state, i, with_frames(t, frames))

    def start(self, state: State) -> State:
        """Normalize every thread: used once by ``initial``."""
        for i in range(len(state.threads)):
            state = self.normalize(state, i)
        return state

    def locations(self) -> dict[str, Source]:
        """Every step and call label with its source (what the source-index test checks)."""
        out = {label: st.source for label, st in self._steps.items()}
        out.update({label: c.source for label, c in self.table.calls.items() if c.source})
        return out

    def what(self, label: str) -> str:
        return self._steps[label].what



_last_index: dict[str, int] = {}  # a memo only: every hit is checked against the state


def _asked(st: Step, fn: Callable[..., Any], state: State, action: Action) -> Any:
    """What ``fn`` answers of thread step ``st`` about to run as ``action``, given run's arguments."""
    i = thread_index(state, action.actor)
    return fn(state, i) if st.optional else fn(state, i, state.threads[i].frames[0][1])


def thread_index(state: State, name: str) -> int:
    """The index of the thread called ``name`` (the engine and invariants look this up per step)."""
    threads = state[0]
    i = _last_index.get(name)
    if i is not None and i < len(threads) and threads[i][0] == name:
        return i
    for i, t in enumerate(threads):
        if t[0] == name:
            _last_index[name] = i
            return i
    raise ValueError(f"no actor {name!r}")


def set_thread(state: State, i: int, thread: Any) -> State:
    threads = [*state[0]]  # a list copy with one item set: half the cost of two slices and two concatenations
    threads[i] = thread
    return tuple.__new__(type(state), (tuple(threads),) + state[1:])


def with_frames(thread: Any, frames: tuple) -> Any:
    return tuple.__new__(type(thread), (thread[0], frames) + thread[2:])


def push(state: State, i: int, frames: Iterable[Frame]) -> State:
    """Put frames in front of thread ``i``'s stack (they run next, calls expand lazily)."""
    t = state[0][i]
    return set_thread(state, i, with_frames(t, tuple(frames) + t[1]))

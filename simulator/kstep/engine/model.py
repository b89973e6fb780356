"""The engine contract: actions, source locations, invariants, variants and the Model base.

A model is explicit-state and pure: ``step(state, action)`` returns a new immutable state and
never mutates its argument, so the engine can rewind, hash, explore and cross-check freely.
"""

from __future__ import annotations

import abc
import functools
import gc
from typing import Any, Callable, Mapping, NamedTuple, Optional, Sequence

State = Any  # any immutable, hashable value; models use NamedTuples of tuples and ints


class Action(NamedTuple):
    """One labelled atomic step taken by one actor."""

    actor: str
    label: str

    def __str__(self) -> str:
        return f"{self.actor}:{self.label}"


HARM = "harm"  # a consequence a user would see: a use-after-free, two lock owners, a hang
ASSERTION = "assertion"  # a protocol rule the kernel asserts or relies on; breaking it may still harm nobody


class Violation(NamedTuple):
    invariant: str  # an invariant's name, or "deadlock"
    message: str
    kind: str = ASSERTION  # HARM or ASSERTION (a deadlock is harm)
    step: int = 0  # how many steps had been taken when it was found (0: the initial state)

    @property
    def title(self) -> str:
        """``deadlock``, ``harm: no-use-after-free`` or ``broken assertion: epoch-unlocks-all``."""
        if self.invariant == "deadlock":
            return "deadlock"
        return f"{'harm' if self.kind == HARM else 'broken assertion'}: {self.invariant}"


PLAIN, FULL = "plain", "full"  # what a step is to a memory model: see memory_model.py

OUTSIDE = "outside the kernel: "  # how a step that is no kernel code shows its source (trace.schema.json)


class Source(NamedTuple):
    """The Linux 6.12 location a label mirrors, written ``path:function``.

    A step that is no kernel code at all (the critical section a lock protects belongs to the
    lock's user) has an empty path, and ``function`` says whose code it is.
    """

    path: str
    function: str

    @classmethod
    def parse(cls, location: str) -> "Source":
        path, _, function = location.rpartition(":")
        if not path or not function:
            raise ValueError(f"source location {location!r} is not 'path:function'")
        return cls(path, function)

    @classmethod
    def outside(cls, whose: str) -> "Source":
        """A step outside the kernel: ``whose`` code it is, e.g. "spin_lock()'s caller"."""
        if not 0 < len(whose) <= 80 or ":" in whose or "\n" in whose:  # as trace.schema.json has it
            raise ValueError(f"{whose!r} does not say in one short line whose code the step is")
        return cls("", whose)

    @property
    def in_kernel(self) -> bool:
        return bool(self.path)

    def __str__(self) -> str:
        return f"{self.path}:{self.function}" if self.path else f"{OUTSIDE}{self.function}"


class Invariant(NamedTuple):
    """A named safety check.

    A state invariant is ``check(state) -> message | None``; a transition invariant (``transition=True``)
    is ``check(state, action, next_state) -> message | None``.  History a check needs lives in
    ghost fields of the state that the modelled code never reads.

    ``kind`` says what a violation means.  HARM: something a user of the kernel would suffer
    (freed memory read, a lock held twice).  ASSERTION: a rule of the protocol broken, the way the
    kernel's own ``VM_BUG_ON``/lockdep checks would notice it, whether or not harm follows.  The
    explorer looks for harm first, so a counterexample shows the consequence when there is one.

    ``reads`` names the state fields the check looks at (None: any), so a reduction can tell which
    steps it may see.  ``steps`` names the labels whose step can change what it reads of the
    stepping context's own record (for a transition invariant: the labels it can fire on); None:
    any.  Both are held to what the check does by the footprint test.
    """

    name: str
    doc: str
    check: Callable[..., Optional[str]]
    transition: bool = False
    kind: str = ASSERTION
    reads: Optional[tuple] = None
    steps: Optional[frozenset] = None


RELEASE = "release"  # the mechanism as one kernel version (or a dated stage of its code) has it
IMPLEMENTATION = "implementation"  # another way to do the same job: another lock, copying strategy or configuration
BUG = "bug"  # a broken twin: the steps a bug changes, replaced
KINDS = {RELEASE: "a dated kernel version", IMPLEMENTATION: "a different implementation of the same job",
         BUG: "a broken twin that replaces the steps its bug changes"}
MADE_UP = "made up to teach, not taken from a kernel commit"  # why a bug names no fix (Variant.unfixed)


def by_kind(variants: Mapping[str, "Variant"]) -> dict[str, list[str]]:
    """The variant names under each kind that has any, in ``KINDS``' order (releases first)."""
    return {kind: names for kind in KINDS if (names := [n for n, v in variants.items() if v.kind == kind])}


class Variant(NamedTuple):
    """A named version of a model, of one of three kinds (``KINDS``).

    ``replaces`` maps step labels to the step implementations this variant uses instead of the
    default ones; a bug replaces exactly the steps the kernel bug changes, and no check ever looks
    at a variant's name or kind.  ``params`` holds the variant's constants (an initial value that
    differs between kernel versions).  ``when`` dates it: a release's kernel version (or year), a
    bug's fix (commit id or the releases that have it) when the kernel once had it.  A bug that
    names no fix says why in ``unfixed`` (``MADE_UP``, or why its fix is not named).
    Build one with ``Variant.release``, ``Variant.implementation`` or ``Variant.bug``.
    """

    name: str
    doc: str
    kind: str
    replaces: Mapping[str, Any] = {}
    params: Mapping[str, Any] = {}
    when: str = ""
    unfixed: str = ""

    @property
    def broken(self) -> bool:
        """A bug: exploring a scenario that reaches its changed steps finds a violation."""
        return self.kind == BUG

    @property
    def dated(self) -> str:
        """Its kind and date in a few words: ``release 6.12.88``, ``implementation``, ``bug fixed in 11dc13224c97``."""
        if not self.when:
            return self.kind
        return f"{self.kind} fixed in {self.when}" if self.kind == BUG else f"{self.kind} {self.when}"

    @classmethod
    def release(cls, name: str, doc: str, when: str, replaces: Mapping[str, Any] = {},
                params: Mapping[str, Any] = {}) -> "Variant":
        """The mechanism as kernel version (or dated code) ``when`` has it."""
        return cls(name, doc, RELEASE, replaces, params, when)

    @classmethod
    def implementation(cls, name: str, doc: str, replaces: Mapping[str, Any] = {},
                       params: Mapping[str, Any] = {}) -> "Variant":
        """Another implementation of the same job (another lock, strategy or configuration)."""
        return cls(name, doc, IMPLEMENTATION, replaces, params)

    @classmethod
    def bug(cls, name: str, doc: str, params: Mapping[str, Any] = {}, fixed: str = "", unfixed: str = "",
            **replaces: Any) -> "Variant":
        """A broken variant: ``doc`` says what it gets wrong, the keywords are the steps it replaces,
        ``fixed`` the commit or releases that fixed it when the kernel once had it, else ``unfixed``
        why no fix is named."""
        return cls(name, doc, BUG, replaces, params, fixed, unfixed)


class Model(abc.ABC):
    """Base class of every mechanism model: the semantics, and nothing else.

    What a new mechanism must write: the class attributes ``name``, ``title``, ``variants`` (with
    ``default_variant``), ``invariants`` and ``scenario_schema``, and ``initial``, ``actors``,
    ``actions``, ``step``, ``done`` and ``sources``; a mechanism written as threads of kernel
    functions inherits most of these from ``program.ProgramModel``.  An instance is bound to one
    variant.

    What it may add, each an optional interface beside the engine code that asks for it (the engine
    asks ``isinstance`` and falls back to a default that declares nothing), inherited to opt in:

    - ``reductions.Reductions``: footprints, dead locals and symmetric units, for ``explore`` to
      store fewer states (every ProgramModel has it);
    - ``timing.Timing``: round-robin rounds (``cost``) and work per step for the timed cost model
      (every ProgramModel has it);
    - ``memory_model.MemoryAccess``: which state fields are shared memory and which steps are full
      fences, so that the model runs under tso;
    - ``progress.Progress``: which steps are an actor's progress, for liveness;
    - ``trace.Recorded``: what a trace records of a state, when not the state itself;
    - ``explore.FixedChoices``: what a run fixes that ``explore`` does not branch on;
    - ``scenario_spec.expect.Expectations``: helpers a scenario's ``[[expect]]`` may call;
    - ``display.Display``: a step's one-line text, what it acts on, how an actor ended and which kernel
      build's code to show (every ProgramModel has it).

    How a model reads to a person (the step table's columns, what a blocked actor waits for) is its
    presentation, on the views' side (``views/presentation/``), never the model's.
    """

    name: str = ""
    title: str = ""
    variants: Mapping[str, Variant] = {}
    default_variant: str = ""
    invariants: Sequence[Invariant] = ()
    scenario_schema: Any = None  # a scenario_spec.scenario.Table describing the mechanism's scenario files

    def __init__(self, variant: Optional[str] = None):
        self.variant = self.variants[variant or self.default_variant]

    # -- the contract ------------------------------------------------------------------------
    @abc.abstractmethod
    def initial(self, config: Mapping[str, Any]) -> State:
        ...

    @abc.abstractmethod
    def actors(self, state: State) -> tuple[str, ...]:
        """Every actor of this state's run, in a fixed order."""

    @abc.abstractmethod
    def actions(self, state: State) -> list[Action]:
        """The enabled actions, in a deterministic order; a blocked actor contributes none."""

    @abc.abstractmethod
    def step(self, state: State, action: Action) -> State:
        ...

    def actions_along(self) -> Callable[[State], list[Action]]:
        """``actions`` for the states of one run, asked in the order the run reaches them: it may
        remember the state before and look again only at what the step changed (``simulate`` asks
        this once per run).  By default ``actions`` itself."""
        return self.actions

    @abc.abstractmethod
    def done(self, state: State, actor: str) -> bool:
        """True when the actor has finished its work (so having no action is not a deadlock)."""

    @abc.abstractmethod
    def sources(self) -> Mapping[str, Source]:
        """Every label this model can take, mapped to the Linux 6.12 function it mirrors."""

    # -- shared behaviour ---------------------------------------------------------------------
    def is_optional(self, action: Action) -> bool:
        """True for a step its actor may take besides its next one (a ProgramModel's optional
        steps): ``Scripted`` takes it only where the schedule names it, ``RoundRobin`` first in
        the actor's turn."""
        return False

    def is_daemon(self, actor: str) -> bool:
        """A daemon (a kernel thread that waits for work) is idle when it has no step, never finished."""
        return False

    def finished(self, state: State) -> bool:
        return all(self.done(state, a) for a in self.actors(state))

    def state_invariants(self) -> list[Invariant]:
        return [i for i in self.invariants if not i.transition]

    def transition_invariants(self) -> list[Invariant]:
        return [i for i in self.invariants if i.transition]


def to_jsonable(value: Any) -> Any:
    """Turn a state built of NamedTuples, tuples, frozensets and scalars into JSON data."""
    if hasattr(value, "_asdict"):
        return {k: to_jsonable(v) for k, v in value._asdict().items()}
    if isinstance(value, (tuple, list)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, frozenset):
        return sorted(to_jsonable(v) for v in value)
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def first_violation(checks: Sequence[Invariant], args: tuple, step: int = 0) -> Optional[Violation]:
    """Run checks in order; the first message found becomes a Violation found at ``step``."""
    for inv in checks:
        msg = inv.check(*args)
        if msg:
            return Violation(inv.name, msg, inv.kind, step)
    return None


class Checks:
    """A model's invariants split the way every verdict needs them: by kind, state or transition.

    ``after(state, action, next_state, step)`` checks one step (``action`` None: the initial
    state) and returns its violation, harm before assertion, so every caller agrees on which
    violation a step shows.

    The hot loops (``simulate``, ``explore``) ask first whether a step from a state that passed
    every check shows anything at all, through ``Quick`` checks that skip what cannot have
    changed, and ask ``harm`` or ``assertion`` for the violation only when one does; the first
    invariant those find is then the one the quick check found (test_engine holds the two to the
    same verdicts on seeded runs of every mechanism).
    """

    def __init__(self, invariants: Sequence[Invariant]):
        self.harm_steps = [i for i in invariants if i.transition and i.kind == HARM]
        self.harm_states = [i for i in invariants if not i.transition and i.kind == HARM]
        self.assert_steps = [i for i in invariants if i.transition and i.kind != HARM]
        self.assert_states = [i for i in invariants if not i.transition and i.kind != HARM]
        self.quick_harm = Quick(self.harm_steps, self.harm_states)
        self.quick_assertion = Quick(self.assert_steps, self.assert_states)

    def harm(self, s: State, a: Optional[Action], t: State, step: int) -> Optional[Violation]:
        return ((a is not None and first_violation(self.harm_steps, (s, a, t), step))
                or first_violation(self.harm_states, (t,), step))

    def assertion(self, s: State, a: Optional[Action], t: State, step: int) -> Optional[Violation]:
        return ((a is not None and first_violation(self.assert_steps, (s, a, t), step))
                or first_violation(self.assert_states, (t,), step))

    def after(self, s: State, a: Optional[Action], t: State, step: int) -> Optional[Violation]:
        return self.harm(s, a, t, step) or self.assertion(s, a, t, step)


class Quick:
    """Whether a step shows a violation of some of ``steps`` (transition invariants) and ``states``
    (state invariants), assuming the state it starts from showed none: the first message, or None.

    ``step(s, a, t)`` runs only the transition invariants that can fire on ``a``'s label (their
    ``steps``); ``state(s, t)`` skips a state invariant whose declared ``reads`` (threads excepted)
    are the very same objects in ``t`` as in ``s``, where it held: a pure check of the same values
    gives the same verdict.  Both are straight-line code built once per label and per model.
    """

    def __init__(self, steps: Sequence[Invariant], states: Sequence[Invariant]):
        self.on_label = _ByLabel(steps)  # label -> check(s, a, t): what the hot loops call
        self.state = _compile(states, "s, t", lambda inv, call: (
            call if inv.reads is None or "threads" in inv.reads or not inv.reads
            else f"(None if {' and '.join(f's.{f} is t.{f}' for f in inv.reads)} else {call})"))

    def step(self, s: State, a: Action, t: State) -> Optional[str]:
        return self.on_label[a.label](s, a, t)


class _ByLabel(dict):
    """Label -> the straight-line check of the transition invariants that can fire on it."""

    def __init__(self, invariants: Sequence[Invariant]):
        super().__init__()
        self.invariants = list(invariants)

    def __missing__(self, label: str) -> Callable[..., Optional[str]]:
        check = self[label] = _compile([i for i in self.invariants if i.steps is None or label in i.steps],
                                       "s, a, t", lambda inv, call: call)
        return check


def _compile(invariants: Sequence[Invariant], args: str,
             guarded: Callable[[Invariant, str], str]) -> Callable[..., Optional[str]]:
    """One function of ``args`` returning the first violation message of ``invariants`` (None when every
    one holds), as straight-line code: ``guarded(inv, call)`` is the expression that runs one check."""
    if not invariants:
        return never
    env: dict[str, Any] = {}
    calls = []
    for k, inv in enumerate(invariants):
        env[f"c{k}"] = inv.check
        calls.append(guarded(inv, f"c{k}({'t' if args == 's, t' else args})"))
    exec(f"def either({args}):\n    return {' or '.join(calls)}\n", env)  # noqa: S102 -- built from the names above
    return env["either"]


def never(*args: Any) -> None:
    return None


def deadlock(message: str, step: int) -> Violation:
    return Violation("deadlock", message, HARM, step)


def without_cyclic_gc(fn):
    """Run fn with Python's cyclic garbage collector paused.

    States are acyclic immutable tuples; with hundreds of thousands of them alive (a visited set,
    a long trace) every collection would walk them all again.  Pausing it made exploration 1.6x
    faster; reference counting still frees everything as usual.
    """

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            if was_enabled:
                gc.enable()

    return wrapper

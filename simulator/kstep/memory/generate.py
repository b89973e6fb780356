"""Seeded random litmus tests in the hardware models' domain, for cross-checking the models.

:func:`generate` draws 2-4 threads over 2-4 locations from every primitive the x86, arm64
and POWER models accept (ONCE accesses, acquire/release, the fences, ``xchg``/``cmpxchg``
in all four orderings, value-returning and non-returning atomics, address, data and control
dependencies), at most ``max_events`` memory accesses in all (shared evenly among the
threads), a ``locations`` clause naming every location and an ``exists`` clause asking for
one combination of the registers' values. :func:`render` writes it as a C
litmus test, with threads and locations renamed by the given permutations, so a test and
its renamings are the same program.

Address dependencies are written as the kernel's litmus tests write them
(tools/memory-model/litmus-tests/MP+onceassign+derefonce.litmus): two thirds of the tests of
three or four locations make one or two of them *pointers*, initialised to the address of an
ordinary location (``int *z = &x``) and written only with such addresses; a read of a pointer
puts an address in a register (``int *r0; r0 = READ_ONCE(*z);``), and a later access through
that register (``r1 = READ_ONCE(*r0)``, ``WRITE_ONCE(*r0, 1)``, ``xchg(r0, 2)`` ...) has an
address dependency on the read. A pointer in a register may also be written to a pointer
location (a data dependency that carries an address). Pointers point only at ordinary
locations, so every access through one reads or writes an int, and no run of a thread
dereferences an int.

``smp_mb__before_atomic()`` and ``smp_mb__after_atomic()`` come only with the value-less atomic RMW
they belong to, immediately before or after it: Documentation/atomic_t.txt says they "only apply to
the RMW atomic ops", and the kernel writes them beside the non-returning ones (``atomic_inc``) whose
ordering they upgrade. Alone they would order on arm64 (``dmb ish``) what they leave unordered on
x86 (empty: its atomics are locked instructions), code no kernel writes.
"""

from __future__ import annotations

from dataclasses import dataclass

from kstep.engine.prng import SplitMix64

LOCATIONS = ("x", "y", "z", "w")
FENCES = ("smp_mb", "smp_rmb", "smp_wmb", "smp_mb__before_atomic", "smp_mb__after_atomic")
BEFORE_ATOMIC, AFTER_ATOMIC = ("fence", "smp_mb__before_atomic"), ("fence", "smp_mb__after_atomic")
VALUELESS_RMW = "atomic_inc"  # the generator's atomic RMW that returns nothing
ORDERS = ("", "_relaxed", "_acquire", "_release")
# memory accesses of each kind of operation (an RMW reads and writes); every other kind makes one
ACCESSES = {"fence": 0, "xchg": 2, "cmpxchg": 2, "atomic": 2}


@dataclass(frozen=True)
class Address:
    """The address of location ``index``: a pointer location's value (rendered ``&x`` / ``x``)."""

    index: int


@dataclass(frozen=True)
class Test:
    """Threads of operations ``(kind, primitive or register, target, ...)``.

    A target is a location index, or the name of a register holding an address (an access
    through it has an address dependency). ``pointers[i]`` is the location pointer location
    ``i`` starts out pointing at, or None for an ordinary location (initially 0).
    """

    seed: int
    locations: int
    threads: tuple[tuple[tuple, ...], ...]
    outcome: tuple[tuple[int, str, object], ...]  # (thread, register, value) to ask about
    pointers: tuple[int | None, ...]


def accesses(op: tuple) -> int:
    """How many memory accesses the operation makes at most."""
    return ACCESSES.get(op[0], 1)


def _returns(op: tuple) -> bool:
    """Whether the operation puts a value in a register."""
    return op[0] in ("load", "xchg", "cmpxchg") or op[:2] == ("atomic", "atomic_inc_return")


def _points(pointers: tuple[int | None, ...], target) -> bool:
    """Whether ``target`` is a pointer location: what is read from it or written to it is an address."""
    return isinstance(target, int) and pointers[target] is not None


def _reads_address(pointers: tuple[int | None, ...], op: tuple) -> bool:
    """Whether the operation puts an address in its register (it reads a pointer location)."""
    return _returns(op) and _points(pointers, op[2])


class _Drawer:
    """The draws of one thread's operations: which locations hold addresses, which registers do."""

    def __init__(self, rng: SplitMix64, pointers: tuple[int | None, ...]) -> None:
        self.rng, self.pointers = rng, pointers
        self.ordinary = [i for i, p in enumerate(pointers) if p is None]
        self.pointer_locs = [i for i, p in enumerate(pointers) if p is not None]
        self.regs: list[str] = []  # registers holding a value read, in order
        self.addrs: set[str] = set()  # those of them holding an address

    def pick(self, seq):
        return seq[self.rng.below(len(seq))]

    def target(self, ordinary_only: bool = False):
        """A location, or half the time a register holding an address (an address dependency)."""
        addrs = sorted(self.addrs)
        if addrs and self.rng.below(2):
            return self.pick(addrs)
        return self.pick(self.ordinary) if ordinary_only else self.rng.below(len(self.pointers))

    def value(self, target):
        """A value a write to ``target`` may store: an ordinary location's address into a pointer."""
        if _points(self.pointers, target):
            return Address(self.pick(self.ordinary))
        return 1 + self.rng.below(2)

    def ops(self, reg: str) -> tuple[tuple, ...]:
        """The next operation, or an ``smp_mb__{before,after}_atomic()`` with the value-less atomic RMW
        right after or before it."""
        op = self.op(reg)
        if op == BEFORE_ATOMIC:
            return op, self.atomic(reg, VALUELESS_RMW)
        if op == AFTER_ATOMIC:
            return self.atomic(reg, VALUELESS_RMW), op
        return (op,)

    def atomic(self, reg: str, name: str | None = None) -> tuple:
        """An atomic on an ordinary location (its arithmetic needs an int): ``name``, or either kind."""
        target = self.target(ordinary_only=True)
        return ("atomic", name or self.pick((VALUELESS_RMW, "atomic_inc_return")), target, reg)

    def op(self, reg: str) -> tuple:
        kind = self.rng.below(10)
        if kind == 0:
            return ("fence", self.pick(FENCES))
        if kind == 7:
            return self.atomic(reg)
        if kind in (8, 9) and self.regs:
            src = self.pick(self.regs)
            if kind == 8:  # the register's value written: an address only into a pointer location
                target = self.pick(self.pointer_locs) if src in self.addrs else self.target(ordinary_only=True)
                return ("data", src, target)
            target = self.target()
            return ("ctrl", src, target, self.value(target))
        target = self.target()
        if kind in (1, 2):
            return ("store", self.pick(("WRITE_ONCE", "smp_store_release")), target, self.value(target))
        if kind in (3, 4):
            if self.pointer_locs and self.rng.below(2):  # half the reads of a test with pointers read one
                target = self.pick(self.pointer_locs)
            return ("load", self.pick(("READ_ONCE", "smp_load_acquire")), target, reg)
        if kind == 5:
            return ("xchg", "xchg" + self.pick(ORDERS), target, self.value(target), reg)
        if kind == 6:
            old = self.value(target) if self.rng.below(2) else self.initial(target)
            return ("cmpxchg", "cmpxchg" + self.pick(ORDERS), target, old, self.value(target), reg)
        return ("store", "WRITE_ONCE", target, self.value(target))

    def initial(self, target):
        """The value ``target`` starts with (what a cmpxchg may expect to find)."""
        if _points(self.pointers, target):
            return Address(self.pointers[target])
        return 0

    def returned(self, op: tuple) -> None:
        """Note the register ``op`` fills, and whether it holds an address."""
        self.regs.append(op[-1])
        if _reads_address(self.pointers, op):
            self.addrs.add(op[-1])


def generate(seed: int, max_events: int = 8) -> Test:
    rng = SplitMix64(seed)
    nthreads, nloc = 2 + rng.below(3), 2 + rng.below(3)
    # two thirds of the tests of 3 or 4 locations make 1 or 2 of them pointers, leaving two ordinary
    # ones or more, so that a pointer has two addresses to choose from (as in MP's publication of a
    # new object: the old address, then the new one)
    npointers = (1 + rng.below(nloc - 2)) if nloc > 2 and rng.below(3) else 0
    nordinary = nloc - npointers
    pointers = tuple(None if i < nordinary else rng.below(nordinary) for i in range(nloc))
    budget = max_events
    threads = []
    asked = []
    for t in range(nthreads):
        # an even share of what is left: weak outcomes need threads of two accesses or more, and
        # the first threads took all but one access each of the last ones
        share = budget // (nthreads - t)
        draw = _Drawer(rng, pointers)
        ops: list[tuple] = []
        for _ in range(2 + rng.below(3)):
            drawn = draw.ops(f"r{len(draw.regs)}")
            cost = sum(accesses(op) for op in drawn)
            if cost > share:
                break
            share -= cost
            budget -= cost
            ops += drawn
            for op in drawn:
                if _returns(op):
                    draw.returned(op)
        if not any(accesses(op) for op in ops):  # a thread of fences alone orders nothing
            target = rng.below(nloc)
            ops.append(("store", "WRITE_ONCE", target, draw.value(target)))
            budget -= 1
        threads.append(tuple(ops))
        asked += [(t, reg, Address(draw.pick(draw.ordinary)) if reg in draw.addrs else rng.below(3))
                  for reg in draw.regs]
    return Test(seed, nloc, tuple(threads), tuple(asked), pointers)


def render(test: Test, thread_order: tuple[int, ...] | None = None,
           location_names: tuple[str, ...] = LOCATIONS) -> str:
    """The test in the kernel's C litmus format; ``thread_order[i]`` is the old thread of Pi."""
    order = thread_order or tuple(range(len(test.threads)))
    names = location_names[: test.locations]
    pointers = test.pointers

    def value(v) -> str:
        return names[v.index] if isinstance(v, Address) else str(v)

    def place(target) -> str:  # what an access takes as its pointer: a location or a register
        return names[target] if isinstance(target, int) else target

    params = ", ".join(f"int {'**' if p is not None else '*'}{n}" for n, p in zip(names, pointers))
    init = " ".join(f"int *{n} = &{names[p]};" for n, p in zip(names, pointers) if p is not None)
    lines = [f"C random-{test.seed}", f"{{ {init} }}" if init else "{}"]
    for new, old in enumerate(order):
        ops = test.threads[old]
        addrs = {op[-1] for op in ops if _reads_address(pointers, op)}
        regs = sorted(op[-1] for op in ops if _returns(op))
        body = [f"int {'*' if r in addrs else ''}{r};" for r in regs]
        for op in ops:
            kind = op[0]
            if kind == "fence":
                body.append(f"{op[1]}();")
            elif kind == "store":
                target = f"*{place(op[2])}" if op[1] == "WRITE_ONCE" else place(op[2])
                body.append(f"{op[1]}({target}, {value(op[3])});")
            elif kind == "load":
                target = f"*{place(op[2])}" if op[1] == "READ_ONCE" else place(op[2])
                body.append(f"{op[3]} = {op[1]}({target});")
            elif kind == "xchg":
                body.append(f"{op[4]} = {op[1]}({place(op[2])}, {value(op[3])});")
            elif kind == "cmpxchg":
                body.append(f"{op[5]} = {op[1]}({place(op[2])}, {value(op[3])}, {value(op[4])});")
            elif op[1] == VALUELESS_RMW:
                body.append(f"atomic_inc({place(op[2])});")
            elif kind == "atomic":
                body.append(f"{op[3]} = atomic_inc_return({place(op[2])});")
            elif kind == "data":
                body.append(f"WRITE_ONCE(*{place(op[2])}, {op[1]});")
            else:
                body.append(f"if ({op[1]}) WRITE_ONCE(*{place(op[2])}, {value(op[3])});")
        lines.append(f"P{new}({params})")
        lines.append("{ " + " ".join(body) + " }")
    new_of = {old: new for new, old in enumerate(order)}
    asked = [f"{new_of[t]}:{reg}={value(v)}" for t, reg, v in test.outcome]
    condition = " /\\ ".join(asked) if asked else "true"
    # every location's final value is part of a final state: coherence-only outcomes (2+2W, S)
    # show in memory, not in registers
    lines.append(f"locations [{'; '.join(names)}]")
    lines.append(f"exists ({condition})")
    return "\n".join(lines) + "\n"

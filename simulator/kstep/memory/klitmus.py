"""A litmus test as C for kernel-lab's klitmus-style runs (issue 24, section 4).

:func:`to_c` writes parsed tests as one C file for ``kernel-lab/litmus/harness.c``: each thread a
function over one instance of its test's locations, the kernel primitives spelled with kernel-lab's
own per-architecture ``asm/barrier.h`` and atomics (``kernel-lab/litmus/litmus.h`` says how), and the
places a final state shows (:func:`kstep.memory.verdict.observed`) in the order the harness prints
them.  :func:`outcomes` reads the harness's output back as final states in the form
:func:`kstep.memory.verdict.check` keys them, so what a machine did and what a model allows compare
directly.  Locks and RCU read-side primitives have no instruction sequence of their own here (they are
whole implementations, as in the hardware models) and are refused with their line; so are the few
atomics the generator does not spell.
"""

from __future__ import annotations

from kstep.errors import UserError
from kstep.memory.litmus import Litmus
from kstep.memory.verdict import observed

# Plain one-instruction accesses and fences: the kernel's own names, which kernel-lab defines.
LOADS = {"READ_ONCE": "READ_ONCE(*{p})", "atomic_read": "READ_ONCE(*{p})",
         # rcu_dereference() is READ_ONCE() on every architecture kstep builds for (6.12
         # include/linux/rcupdate.h); its ordering is the address dependency the code carries.
         "rcu_dereference": "READ_ONCE(*{p})",
         "smp_load_acquire": "smp_load_acquire({p})", "atomic_read_acquire": "smp_load_acquire({p})"}
STORES = {"WRITE_ONCE": "WRITE_ONCE(*{p}, {v})", "atomic_set": "WRITE_ONCE(*{p}, {v})",
          # rcu_assign_pointer() is smp_store_release() (include/linux/rcupdate.h:602).
          "rcu_assign_pointer": "smp_store_release({p}, {v})",
          "smp_store_release": "smp_store_release({p}, {v})", "atomic_set_release": "smp_store_release({p}, {v})"}
FENCES = ("smp_mb", "smp_rmb", "smp_wmb", "smp_mb__before_atomic", "smp_mb__after_atomic", "barrier")
ORDERS = {"": "FULL", "_relaxed": "RELAXED", "_acquire": "ACQUIRE", "_release": "RELEASE"}

# The harness prints a value equal to a location's address as that location's name.
MAX_LOCATIONS = 16
MAX_THREADS = 4
MAX_PLACES = 8
MAX_REGISTERS = 8  # per thread (kernel-lab/litmus/harness.c MAX_REGS)


def _rmw(name: str) -> tuple[str, str, str] | None:
    """``(operation, order, returns)`` of a read-modify-write primitive: operation xchg, cmpxchg or
    add; returns "old", "new" or "none"."""
    for base, op, sign in (("xchg", "xchg", ""), ("atomic_xchg", "xchg", ""), ("cmpxchg", "cmpxchg", ""),
                           ("atomic_cmpxchg", "cmpxchg", ""),
                           ("atomic_fetch_add", "add", "+"), ("atomic_fetch_sub", "add", "-"),
                           ("atomic_fetch_inc", "add", "+1"), ("atomic_fetch_dec", "add", "-1"),
                           ("atomic_add_return", "add", "+"), ("atomic_sub_return", "add", "-"),
                           ("atomic_inc_return", "add", "+1"), ("atomic_dec_return", "add", "-1")):
        for suffix, order in ORDERS.items():
            if name == base + suffix:
                returns = "new" if base.endswith("_return") else "old"
                return op + sign, order, returns
    plain = {"atomic_add": "add+", "atomic_sub": "add-", "atomic_inc": "add+1", "atomic_dec": "add-1"}
    if name in plain:  # the void atomics are unordered (Documentation/atomic_t.txt)
        return plain[name], "RELAXED", "none"
    return None


class _Writer:
    def __init__(self, litmus: Litmus):
        self.litmus = litmus
        self.locs = list(litmus.shared())
        if len(self.locs) > MAX_LOCATIONS:
            raise UserError(f"{litmus.name}: {len(self.locs)} locations; klitmus runs take at most {MAX_LOCATIONS}")

    def value(self, v) -> str:
        return f"LOC({self.locs.index(v)})" if isinstance(v, str) else f"(intptr_t){v}"

    def expr(self, e) -> str:
        tag = e[0]
        if tag == "const":
            return f"(intptr_t){e[1]}"
        if tag == "reg":
            return e[1]
        if tag == "loc":
            return self.value(e[1])
        if tag == "load":
            return f"(*(volatile intptr_t *)({self.expr(e[1])}))"
        if tag == "op":
            return f"({self.expr(e[2])} {e[1]} {self.expr(e[3])})"
        if tag == "not":
            return f"(!{self.expr(e[1])})"
        return self.call(e[1], e[2], e[3])

    def call(self, name: str, args: tuple, line: int) -> str:
        a = [self.expr(x) for x in args]
        p = f"((intptr_t *)({a[0]}))" if a else ""
        if name in LOADS:
            return LOADS[name].format(p=p)
        # Stores and fences are statements in kernel-lab's macros (do { } while (0), asm): only
        # :meth:`stmts` asks for them, as the parser only lets them stand as statements.
        if name in STORES:
            return STORES[name].format(p=p, v=a[1])
        if name in FENCES:
            return f"{name}()"
        if name.startswith(("spin_", "rcu_read_", "synchronize_rcu", "smp_mb__after_spinlock",
                            "smp_mb__after_unlock_lock")):
            raise UserError(f"{self.litmus.name}: line {line}: {name}() is LKMM-only: a lock or RCU is a whole "
                            f"implementation, not an instruction sequence klitmus can run")
        rmw = _rmw(name)
        if rmw is None:
            raise UserError(f"{self.litmus.name}: line {line}: {name}() has no klitmus spelling; the runs take "
                            f"ONCE accesses, acquire/release, fences, xchg, cmpxchg and add/sub atomics")
        op, order, returns = rmw
        if op == "xchg":
            return f"LITMUS_XCHG({order}, {p}, {a[1]})"
        if op == "cmpxchg":
            return f"LITMUS_CMPXCHG({order}, {p}, {a[1]}, {a[2]})"
        # atomic_add(i, v) and friends take the counter last; inc/dec take none.
        p = f"((intptr_t *)({a[-1]}))"
        delta = op[3:] if op[-1] == "1" else f"{op[3]}({a[0]})"
        return f"LITMUS_ADD({order}, {p}, {delta}, {returns.upper()})"

    def stmts(self, body: tuple, indent: str) -> list[str]:
        out = []
        for s in body:
            tag = s[0]
            if tag == "decl":
                if s[2] is not None:
                    out.append(f"{indent}{s[1]} = {self.expr(s[2])};")
            elif tag == "assign":
                out.append(f"{indent}{s[1]} = {self.expr(s[2])};")
            elif tag == "store":
                out.append(f"{indent}*(volatile intptr_t *)({self.expr(s[1])}) = {self.expr(s[2])};")
            elif tag == "do":
                void = s[1][0] == "call" and (s[1][1] in STORES or s[1][1] in FENCES)
                out.append(f"{indent}{'' if void else '(void)'}{self.expr(s[1])};")
            else:  # if
                out.append(f"{indent}if ({self.expr(s[1])}) {{")
                out += self.stmts(s[2], indent + "\t")
                out.append(f"{indent}}} else {{")
                out += self.stmts(s[3], indent + "\t")
                out.append(f"{indent}}}")
        return out


def _registers(body: tuple, out: list) -> list:
    for s in body:
        if s[0] in ("decl", "assign") and s[1] not in out:
            out.append(s[1])
        elif s[0] == "if":
            _registers(s[2], out)
            _registers(s[3], out)
    return out


def to_c(tests: list[Litmus]) -> str:
    """The tests as one C file for kernel-lab/litmus/harness.c, which runs them by name: one binary
    per architecture, so a run of many tests costs one build and one start of qemu-user."""
    lines = ["/* Generated by kstep.memory.klitmus from litmus tests; do not edit. */", '#include "litmus.h"', ""]
    for k, litmus in enumerate(tests):
        lines += _test(litmus, f"t{k}")
    lines.append("const struct litmus_test *const litmus_tests[] = {")
    lines += [f"\t&t{k}," for k in range(len(tests))]
    lines += ["\tNULL,", "};", ""]
    return "\n".join(lines)


def _test(litmus: Litmus, tag: str) -> list[str]:
    w = _Writer(litmus)
    places = observed(litmus)
    if len(places) > MAX_PLACES:
        raise UserError(f"{litmus.name}: a final state of {len(places)} places; klitmus runs show at most {MAX_PLACES}")
    if len(litmus.threads) > MAX_THREADS:
        raise UserError(f"{litmus.name}: {len(litmus.threads)} threads; klitmus runs take at most {MAX_THREADS}")
    lines = [f"/* {litmus.name} */"]
    regs_of = []
    for t in litmus.threads:
        regs = _registers(t.body, [])
        if len(regs) > MAX_REGISTERS:
            raise UserError(f"{litmus.name}: P{t.index} has {len(regs)} registers; klitmus runs take at most "
                            f"{MAX_REGISTERS} a thread")
        regs_of.append(regs)
        lines.append(f"static void {tag}_P{t.index}(struct litmus_slot *loc, intptr_t *out)")
        lines.append("{")
        for r in regs:
            lines.append(f"\tintptr_t {r} = {w.value(litmus.reg_init.get((t.index, r), 0))};")
        lines += w.stmts(t.body, "\t")
        lines += [f"\tout[{k}] = {r};" for k, r in enumerate(regs)]
        lines += ["}", ""]
    lines.append(f"static void {tag}_init(struct litmus_slot *loc)")
    lines.append("{")
    lines += [f"\tloc[{k}].v = {w.value(litmus.init.get(name, 0))};" for k, name in enumerate(w.locs)]
    lines += ["}", ""]
    # A place is (thread, register slot) or (-1, location index).
    cells = []
    for p in places:
        if p[0] == "reg":
            regs = regs_of[p[1]]
            cells.append(f"{{{p[1]}, {regs.index(p[2]) if p[2] in regs else -2}}}")  # -2: never written, 0
        else:
            cells.append(f"{{-1, {w.locs.index(p[1])}}}")
    names = ", ".join(f'"{n}"' for n in w.locs)
    threads = ", ".join(f"{tag}_P{t.index}" for t in litmus.threads)
    lines += [f'static const struct litmus_test {tag} = {{',
              f'\t.name = "{litmus.name}",',
              f"\t.nthreads = {len(litmus.threads)},",
              f"\t.threads = {{{threads}}},",
              f"\t.nlocs = {len(w.locs)},",
              f"\t.loc_names = {{{names}}},",
              f"\t.init = {tag}_init,",
              f"\t.nplaces = {len(places)},",
              f"\t.places = {{{', '.join(cells)}}},",
              "};", ""]
    return lines


def outcomes(litmus: Litmus, text: str) -> dict[tuple, int]:
    """The harness's output (``COUNT v1 v2 ...`` per final state seen) as final states and counts."""
    places = observed(litmus)
    keys = [f"{p[1]}:{p[2]}" if p[0] == "reg" else p[1] for p in places]
    seen: dict[tuple, int] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        count, *values = line.split()
        if len(values) != len(keys):
            raise ValueError(f"harness line {line!r}: {len(values)} values for {len(keys)} places")
        state = tuple((k, int(v) if v.lstrip("-").isdigit() else v) for k, v in zip(keys, values))
        seen[state] = seen.get(state, 0) + int(count)
    return seen


def sections(text: str) -> dict[str, str]:
    """The harness's output of several tests, by test name (each starts with ``# NAME: ...``)."""
    out: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("# "):
            current = out.setdefault(line[2:].split(":", 1)[0], [])
        else:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in out.items()}


def unexplained(seen: dict[tuple, int], allowed: dict) -> list[tuple]:
    """The final states a run saw that the model does not allow (``allowed``: a
    :class:`~kstep.memory.verdict.Verdict`'s states): each one is the model's error, or the port's."""
    return [state for state in seen if state not in allowed]

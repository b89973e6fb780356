"""The Linux-kernel memory model, run from the kernel's own files.

kstep interprets ``tools/memory-model/linux-kernel.bell`` then ``linux-kernel.cat`` (which
includes ``lock.cat``) of the pinned 6.12.117 tree with :mod:`kstep.memory.cat`; nothing of
them is copied here. This module only binds what herd7's C front end gives a model
(:mod:`kstep.memory.executions`): the event classes and tag sets, ``po``, ``addr``, ``data``,
``ctrl``, ``rmw``, ``rf`` of the ordinary reads, ``loc``, ``ext``, ``int``.
"""

from __future__ import annotations

import functools
from pathlib import Path

from kstep.memory import cat
from kstep.memory import relations as rel
from kstep.memory.kernel_tree import MEMORY_MODEL, kernel_root
from kstep.memory.axioms import Axiom
from kstep.memory.executions import (
    LOCK_KINDS,
    Candidate,
    cobase,
    coherence_orders,
    initial_co0,
)

NAME = "lkmm"
ORDER = "happens-before"
# Relations of linux-kernel.cat an edge of a broken axiom is named after, the first that holds it.
EDGE_NAMES = ("rfe", "coe", "fre", "po-loc", "rf", "co", "fr", "ppo", "prop", "rb", "hb", "pb")
# Tags of linux-kernel.bell's enums; herd names each tag's event set by capitalising it.
TAGS = ("once", "release", "acquire", "noreturn", "wmb", "rmb", "mb", "barrier", "rcu-lock",
        "rcu-unlock", "sync-rcu", "before-atomic", "after-atomic", "after-spinlock",
        "after-unlock-lock", "after-srcu-read-unlock", "srcu-lock", "srcu-unlock", "sync-srcu")


@functools.cache
def statements(root: Path | None = None) -> tuple:
    """bell then cat statements of the tree at ``root`` (default: kernel_tree.kernel_root, the unpacked 6.12
    tree, or in the browser the copy of its LKMM files the page ships)."""
    model = (kernel_root() if root is None else root) / MEMORY_MODEL
    return tuple(cat.load(model / "linux-kernel.bell") + cat.load(model / "linux-kernel.cat"))


def base_env(c: Candidate, rf) -> dict:
    n = c.n
    ev = c.events
    env: dict = dict(cat.BUILTINS)

    def of(pred) -> int:
        return sum(1 << e.id for e in ev if pred(e))

    env["R"] = of(lambda e: e.kind == "R")
    env["W"] = of(lambda e: e.kind == "W")
    env["M"] = env["R"] | env["W"]
    env["F"] = of(lambda e: e.kind == "F")
    env["IW"] = of(lambda e: e.thread < 0)
    env["FW"] = 0
    env["RMW"] = of(lambda e: e.rmw)
    env["emptyset"] = 0
    for kind in LOCK_KINDS:
        env[kind] = of(lambda e, k=kind: e.kind == k)
    for tag in TAGS:
        env[tag[0].upper() + tag[1:]] = of(lambda e, t=tag: t in e.tags)
    same_thread = tuple(
        sum(1 << f.id for f in ev if f.thread == e.thread and e.thread >= 0) | (1 << e.id) for e in ev
    )
    env.update(
        po=c.po, addr=c.addr, data=c.data, ctrl=c.ctrl, rmw=c.rmw, rf=rf, loc=c.loc,
        ext=c.ext, int=same_thread, id=rel.identity(n, (1 << n) - 1),
    )
    env["po-loc"] = rel.inter(c.po, c.loc)
    env["rfe"] = rel.inter(rf, c.ext)
    env["rfi"] = rel.inter(rf, same_thread)
    env["co0"] = initial_co0(c, env["W"])
    env["<values>"] = tuple(e.value for e in ev)
    return env


def executions(c: Candidate, rf, root: Path | None = None):
    """Every execution the LKMM allows from this candidate and rf: (co, rf, fr, flags)."""
    env = base_env(c, rf)

    def cos(current: dict):
        writes = current["W"]
        base = cobase(c, current["rf"], writes, current["co0"])
        return coherence_orders(c, writes, base)

    interp = cat.Interpreter(c.n, env, cos)
    for final, flags in interp.run(list(statements(root))):
        yield final["co"], final["rf"], final["fr"], flags


def order(c: Candidate, rf0, rf, co, root: Path | None = None):
    """linux-kernel.cat's hb of the allowed execution with this co and rf (``rf0``: the ordinary reads'
    part; lock.cat adds the lock events'), the order the player reveals events in."""
    for final, _ in cat.Interpreter(c.n, base_env(c, rf0), lambda current: [co]).run(list(statements(root))):
        if final["rf"] == rf:
            return final["hb"]
    return None


def broken(c: Candidate, rf, co, root: Path | None = None) -> Axiom | None:
    """The check of linux-kernel.cat (or lock.cat) that forbids the execution with this rf and co, as
    an Axiom whose parts name each edge after the first of EDGE_NAMES holding it; None if allowed."""
    return next((axiom for axiom, _ in rejections(c, rf, root, [co])), None)


def rejections(c: Candidate, rf, root: Path | None = None, cos=None):
    """(Axiom, bindings) of every branch of the model's run over (c, rf) that a check stops (its co among
    ``cos``, else among cos-opt's), unless another branch with the same co (lock.cat forks over the lock
    events' rf) passes every check; a branch stopped before cos-opt binds co counts only if none passes."""
    env = base_env(c, rf)

    def orders(current: dict):
        if cos is not None:
            return cos
        return coherence_orders(c, current["W"], cobase(c, current["rf"], current["W"], current["co0"]))

    interp = cat.Interpreter(c.n, env, orders)
    interp.rejected = []
    passed = [final["co"] for final, _ in interp.run(list(statements(root)))]
    for name, check, value, bindings in interp.rejected:
        if bindings.get("co") in passed or (passed and "co" not in bindings):
            continue
        r = interp.as_rel(value) if not isinstance(value, int) else rel.identity(c.n, value)
        if check != "acyclic":
            yield Axiom(name, check, ((name, r),)), bindings
            continue
        parts = [(edge, rel.inter(r, bindings[edge])) for edge in EDGE_NAMES if isinstance(bindings.get(edge), tuple)]
        yield Axiom(name, check, (*[p for p in parts if any(p[1])], (name, r))), bindings

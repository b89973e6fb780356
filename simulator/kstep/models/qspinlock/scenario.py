"""What a qspinlock scenario file may say (``SCHEMA``: the CPUs, the locks each context takes, the
layout and the scaled-down spin counts), the rules a valid one follows, and the initial state it
gives.
"""

from __future__ import annotations

from ...engine import Frame
from ...scenario_spec.scenario import Int, Key, List, Str, Table, bad
from .caller import FOREVER
from .powerpc import HEAD_SPINS_6_12, STEAL_SPINS_6_12
from .spinlock_types import TICKET_BITS_6_12
from .state import LEVELS, LOCK_NAMES, MAX_NODES, SOFTIRQ, TICKET, Ctx, Node, QState


MAX_CPUS = 8


def _scenario_rules(sc, path):
    if sc["pending_bits"] not in (1, 8):
        raise bad("pending_bits", f"{sc['pending_bits']} is neither 8 (NR_CPUS < 16384) nor 1")
    contexts = sum(1 for c in sc["cpus"] for key, _ in LEVELS if c[key])
    if contexts >= 1 << sc["ticket_bits"]:  # next - owner must tell every count of tickets out from none
        raise bad("ticket_bits", f"{sc['ticket_bits']} bits count at most {(1 << sc['ticket_bits']) - 1} tickets "
                                 f"out, and the scenario has {contexts} contexts")
    taken_at = [{lock for c in sc["cpus"] for lock in c[key]} for key, _ in LEVELS]
    for k, c in enumerate(sc["cpus"]):
        if c["nested_nmi"] and not c["nmi"]:
            raise bad(f"cpus[{k}].nested_nmi", f"a nested NMI needs an NMI on CPU {k} to nest in (cpus[{k}].nmi)")
        levels = [a for a, (key, _) in enumerate(LEVELS) if c[key]]
        for a in levels:
            for b in (b for b in levels if b > a):
                shared = sorted(taken_at[b] & set(c[LEVELS[a][0]]))
                if shared:  # lockdep's rule: it would have to keep that context off while it holds the lock
                    raise bad(f"cpus[{k}].{LEVELS[a][0]}",
                              f"lock {shared[0]} is also taken in {LEVELS[b][1]} context, which can interrupt "
                              f"CPU {k}'s {LEVELS[a][1]} (it would need spin_lock_irqsave or the like)")


def _context_locks(doc):
    return Key(List(Str(LOCK_NAMES), 0, 8, doc), [])


SCHEMA = Table({
    "pending_bits": Key(Int(1, 8, "_Q_PENDING_BITS: 8 (NR_CPUS < 16384) or 1"), 8),
    "steal_spins": Key(Int(0, STEAL_SPINS_6_12, f"powerpc: steal iterations before queueing "
                           f"(6.12: {STEAL_SPINS_6_12})"), 2),
    "head_spins": Key(Int(1, HEAD_SPINS_6_12, f"powerpc: queue-head spins before setting must-queue "
                          f"(6.12: {HEAD_SPINS_6_12})"), 2),
    "ticket_bits": Key(Int(2, TICKET_BITS_6_12, f"ticket lock: the bits of each half of the word (6.12: "
                           f"{TICKET_BITS_6_12}); fewer wrap sooner, so a run that goes on forever has fewer states"),
                       TICKET_BITS_6_12),
    "cpus": Key(List(Table({
        "locks": Key(List(Str(LOCK_NAMES), 1, 8, "the locks its task takes and releases, in order")),
        "repeat": Key(Int(1, 100, "how many times the task runs its list of locks (\"forever\": with no end, "
                              "for kstep explore --liveness)", words=(FOREVER,)), 1),
        "softirq": _context_locks("the locks a softirq on this CPU takes once, in order (actor C<k>.softirq); "
                                  "empty: no softirq"),
        "irq": _context_locks("the locks a hardirq on this CPU takes once, in order (actor C<k>.irq); "
                              "empty: no hardirq"),
        "nmi": _context_locks("the locks an NMI on this CPU takes once, in order (actor C<k>.nmi); empty: no NMI"),
        "nested_nmi": _context_locks("the locks an NMI nested in this CPU's NMI takes once, in order (actor "
                                     "C<k>.nested_nmi, the fifth context: no MCS node is left for it)"),
    }), 1, MAX_CPUS, "the CPUs C0, C1, ...: one task each, and the contexts that may interrupt it")),
}, rules=_scenario_rules)


def initial_state(config, layout: str) -> QState:
    cpus = config["cpus"]
    used = {LOCK_NAMES.index(lock) for c in cpus for key, _ in LEVELS for lock in c.get(key, ())}
    nlocks = max(used) + 1
    threads = [Ctx(f"C{k}", (Frame("lock_list", (tuple(LOCK_NAMES.index(x) for x in c["locks"]), c["repeat"])),), k)
               for k, c in enumerate(cpus)]
    nest = []
    for k, c in enumerate(cpus):
        chain = [k]
        for level, (key, _) in enumerate(LEVELS[1:], start=SOFTIRQ):
            if c.get(key):  # an observation log's header repeats its interrupt (irq_repeat)
                chain.append(len(threads))
                locks = tuple(LOCK_NAMES.index(x) for x in c[key])
                program = Frame("lock_list", (locks, c.get(f"{key}_repeat", 1)))
                threads.append(Ctx(f"C{k}.{key}", (program,), k, level=level))
        if len(chain) > 1:
            nest.append(tuple(chain))
    ncpus = len(cpus)
    nodes = (Node(),) * (ncpus * MAX_NODES) if layout != TICKET else ()
    return QState(tuple(threads), (0,) * nlocks, nodes, (0,) * ncpus, layout, config["pending_bits"],
                  (config["steal_spins"], config["head_spins"]), tuple(nest), ((),) * nlocks, ((),) * nlocks,
                  frozenset(), frozenset(), config.get("ticket_bits", TICKET_BITS_6_12))

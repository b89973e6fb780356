"""The state graph of a small scenario, for ``kstep explore --dot``: every reachable state (no
reduction) and every step between two of them, drawn as Graphviz text."""

from __future__ import annotations

from typing import Callable, Optional

from .model import Model, State


def state_graph(model: Model, initial: State, limit: int) -> Optional[tuple[list, list]]:
    """(states, edges as (from, action, to) indices), breadth-first from ``initial``; None when
    more than ``limit`` states are reachable."""
    index = {initial: 0}
    states, edges = [initial], []
    for k, s in enumerate(states):  # grows as it goes: breadth-first
        for a in model.actions(s):
            t = model.step(s, a)
            if t not in index:
                if len(states) == limit:
                    return None
                index[t] = len(states)
                states.append(t)
            edges.append((k, a, index[t]))
    return states, edges


def dot(model: Model, states: list, edges: list, summary: Callable[[State], dict]) -> str:
    """Graphviz text: each state labelled with its ``summary`` columns (the step table's), each edge with its action;
    states in which an invariant fails are drawn red, the initial one doubled."""
    def escape(text: str) -> str:
        return text.replace("\\", "\\\\").replace('"', '\\"')

    failing = {inv.name: inv.check for inv in model.state_invariants()}
    lines = ["digraph states {", "  node [shape=box, fontname=monospace, fontsize=9];"]
    for k, s in enumerate(states):
        bad = [name for name, check in failing.items() if check(s)]
        rows = [f"state {k}"] + [f"{key}: {value}" for key, value in summary(s).items()]
        label = "\\l".join(escape(r) for r in rows + [f"violates {name}" for name in bad]) + "\\l"
        style = ", color=red, fontcolor=red" if bad else ", peripheries=2" if k == 0 else ""
        lines.append(f'  s{k} [label="{label}"{style}];')
    for a, action, b in edges:
        lines.append(f'  s{a} -> s{b} [label="{escape(str(action))}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"

"""The kernel functions each step of a run runs in, for the player's call-stack line.

A thread's frames are what runs next, not a call stack: a call is replaced by its frames, and a
step pushes the frames that follow it.  This replays a run of a ``ProgramModel`` keeping beside
every frame the calls it came from.  Under x86-TSO (``StoreBuffered``) a thread's step is replayed on
what its CPU reads (memory with its own store buffer applied), as the wrapper takes it; a drain runs in
no kernel function, and its line says which CPU's buffer wrote which store to memory.  Standard library
only: interactive mode runs it in Pyodide.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from ..engine.memory_model import DRAIN, StoreBuffered
from ..engine.model import Action, Source, State
from ..engine.program import ProgramModel, set_thread, thread_index, with_frames

Calls = Callable[[str, str], bool]  # calls(caller, callee): the caller's code calls the callee

HEAD = 4  # frames compared at the head of a stack: a step pushes or pops there, never deeper


def call_stacks(model: Any, trace: Any, calls: Calls = lambda caller, callee: False
                ) -> Optional[list[tuple[str, ...]]]:
    """For each step of ``trace``, the kernel functions it runs in, outermost first, ending with the
    step's own (``do_user_addr_fault``, ``lock_vma_under_rcu``, ``vma_end_read``, ``rcu_read_lock``).

    A call's frames run inside it; frames a step pushes run where the step ran, or inside the step's
    own function when ``calls(its function, the pushed frame's function)`` says that function's code
    calls it (``vma_start_read`` pushes ``down_read_trylock``, its callee).  Daemon and optional steps
    run in no call.  None when the model is not written as a program, or the trace is not a run of it
    from ``unstarted(trace.config)`` (an observed recording): no stack is better than a wrong one.
    """
    if trace.scheduler == "observed":  # its config describes a recording, not a start the model can take
        return None
    replay = stack_replay(model, trace.config, trace.states[0], calls)
    if replay is None:
        return None
    out = []
    for k, action in enumerate(trace.actions):
        stack = replay.step(trace.states[k], action, trace.states[k + 1])
        if stack is None:
            return None
        out.append(stack)
    return out


def stack_replay(model: Any, config: dict, first: State, calls: Calls) -> Optional["StackReplay"]:
    """A replay of runs from ``unstarted(config)`` that gives each step's call stack as the step is
    taken (``call_stacks`` of a whole trace, one step at a time: interactive mode extends a run
    step by step); None when the model is no ProgramModel (under tso: its inner model) or ``first`` is not
    where that start leads."""
    buffered = model if isinstance(model, StoreBuffered) else None
    if buffered is not None:
        model, first = buffered.inner, buffered.memory(first)
    if not isinstance(model, ProgramModel):
        return None
    try:
        state = model.unstarted(config)
    except NotImplementedError:
        return None
    trails = [((),) * len(t.frames) for t in state.threads]
    for i in range(len(state.threads)):
        state, trails[i] = _expand(model, state, i, trails[i])
    if [t.frames for t in state.threads] != [t.frames for t in first.threads]:
        return None
    return StackReplay(model, calls, tuple(trails), buffered)


class StackReplay:
    """Call stacks of a run, step by step (``stack_replay``); ``back(k)`` returns to after step k, so
    a run that branches replays only its new steps.  ``buffered``: the run's x86-TSO wrapper of
    ``model``, or None under sc."""

    def __init__(self, model: ProgramModel, calls: Calls, trails: tuple,
                 buffered: Optional[StoreBuffered] = None) -> None:
        self.model, self.calls, self.buffered = model, calls, buffered
        # After each step so far: the calls beside every thread's frames (None from a step the replay
        # could not follow on: no stack is better than a wrong one).
        self._trails: list[Optional[tuple]] = [trails]

    def step(self, before: State, action: Action, after: State) -> Optional[tuple[str, ...]]:
        """The call stack of the next step, ``action`` from ``before`` to ``after``, or None; a drain's is
        one line, ``store buffer of CPU1 drains A->locked = 1``: no thread's frames move."""
        last = self._trails[-1]
        m = self.buffered
        if m is not None and action.label == DRAIN:
            self._trails.append(last)
            oldest = before[-1][int(action.actor[2:])][0]
            return None if last is None else (f"store buffer of CPU{action.actor[2:]} drains "
                                              f"{m.entry_text(before, oldest)}",)
        if m is not None:  # the step as the wrapper takes it
            before, after = _read_by(m, before, action.actor), _read_by(m, after, action.actor)
        done = None if last is None else _stack_step(self.model, last, before, action, after, self.calls)
        self._trails.append(None if done is None else done[1])
        return None if done is None else done[0]

    def back(self, k: int) -> None:
        """Forget every step after the first k."""
        del self._trails[k + 1:]


def _read_by(m: StoreBuffered, state: State, actor: str) -> State:
    """What ``actor`` reads in the tso ``state``: its CPU's view of memory; a daemon's, memory itself."""
    view = m.view_of(state, actor)
    return m.memory(state) if view is None else view


def _stack_step(model: ProgramModel, trails: tuple, before: State, action: Action, after: State,
                calls: Calls) -> Optional[tuple[tuple, tuple]]:
    """The call stack of ``action`` and the calls beside every frame after it, or None when the step
    is not the model's (the frames it leaves differ from what the replay expects)."""
    st = model.table.steps[action.label]
    if st.daemon or st.optional:
        if not all(_same(a.frames, b.frames) for a, b in zip(before.threads, after.threads)):
            return None
        return _nest((), st.source), trails
    i = thread_index(before, action.actor)
    t = before.threads[i]
    label, arg = t.frames[0]
    stack = _nest(trails[i][0], st.source)
    run = st.run(set_thread(before, i, with_frames(t, t.frames[1:])), i, arg)
    frames, rest = run.threads[i].frames, trails[i][1:]
    pushed = len(frames) - len(rest)
    if not frames:  # the step ended the thread (a fatal signal)
        rest, pushed = (), 0
    elif pushed < 0 or not _same(frames[pushed:pushed + HEAD], t.frames[1:1 + HEAD]):
        return None
    trail = tuple(_pushed_in(trails[i][0], stack, _function(model, f.label), calls)
                  for f in frames[:pushed]) + rest
    run, trail = _expand(model, run, i, trail)
    if not all(_same(a.frames, b.frames) for a, b in
               zip(before.threads[:i] + (run.threads[i],) + before.threads[i + 1:], after.threads)):
        return None
    return stack, trails[:i] + (trail,) + trails[i + 1:]


def _pushed_in(trail: tuple, stack: tuple, function: str, calls: Calls) -> tuple:
    """The calls a frame of ``function`` runs in when the step whose ``stack`` (in the calls ``trail``)
    pushes it: beside the step when it is the step's own function; inside the step's function when
    that one calls it; in the enclosing function it returns to when it is one of the step's callers,
    or in the innermost enclosing function whose code calls it; else beside the step, somewhere
    below the functions it runs in (through functions the model takes no step in)."""
    if not function or not stack or function == stack[-1]:
        return trail
    if calls(stack[-1], function):
        return stack
    if function in stack:
        return stack[:len(stack) - 1 - stack[::-1].index(function)]
    for depth in range(len(trail), 0, -1):
        if calls(trail[depth - 1], function):
            return trail[:depth]
    return trail


def _function(model: ProgramModel, label: str) -> str:
    table = model.table
    where = table.steps[label].source if label in table.steps else table.calls[label].source
    return where.function if where is not None and where.in_kernel else ""


def _expand(model: ProgramModel, state: State, i: int, trail: tuple) -> tuple[State, tuple]:
    """``normalize`` of thread ``i`` keeping ``trail`` (each frame's enclosing calls) beside its frames."""
    calls = model.table.calls
    frames = state.threads[i].frames
    while frames and frames[0][0] in calls:
        label, arg = frames[0]
        new = tuple(calls[label].expand(state, i, arg))
        frames = new + frames[1:]
        trail = (_nest(trail[0], calls[label].source),) * len(new) + trail[1:]
    return set_thread(state, i, with_frames(state.threads[i], frames)), trail


def _same(a: tuple, b: tuple) -> bool:
    """The same frames, told from the length and the head: a long run's threads hold thousands of frames
    and comparing them whole at every step made replaying a run quadratic."""
    return a is b or len(a) == len(b) and a[:HEAD] == b[:HEAD]


def _nest(stack: tuple[str, ...], where: Optional[Source]) -> tuple[str, ...]:
    """``stack`` with the kernel function ``where`` inside it (a step or call of the function already
    innermost, or no kernel code at all, adds nothing)."""
    if where is None or not where.in_kernel or stack and stack[-1] == where.function:
        return stack
    return stack + (where.function,)

"""The kstep engine: pure step models, schedulers, exhaustive exploration and traces."""

from .explore import ExploreResult, explore
from .model import (ASSERTION, FULL, HARM, MADE_UP, PLAIN, Action, Invariant, Model, Source, Variant, Violation,
                    to_jsonable)
from .prng import SplitMix64
from .program import (Call, Frame, Inline, Program, ProgramModel, Replacement, Step, push, set_thread,
                      thread_index)
from .reductions import Footprint, Reductions, Renamed
from .schedule import Random, Replay, RoundRobin, Scripted, parse_schedule, scheduler_for, simulate
from .trace import Trace

__all__ = [
    "ASSERTION", "FULL", "HARM", "PLAIN",
    "Action", "Call", "ExploreResult", "Footprint", "Frame", "Inline", "Invariant", "Model", "Program",
    "ProgramModel", "Random", "Reductions", "Renamed", "Replacement", "Replay", "RoundRobin", "Scripted", "Source",
    "SplitMix64", "Step",
    "MADE_UP", "Trace", "Variant", "Violation", "explore", "parse_schedule", "push", "scheduler_for", "set_thread",
    "simulate",
    "thread_index",
    "to_jsonable",
]

"""kstep: step-by-step models of how Linux 6.12 does concurrent memory management.

Start with ``kstep.open(mechanism, scenario, variant=None, overrides=())`` (kstep/experiment.py):
its docstring walks through a run, an exploration and an animation, and names the folder of each.
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    # Loaded on first use, so ``import kstep.engine`` (as Pyodide and the CLI's start do) loads no model.
    if name in ("open", "Experiment"):
        from . import experiment

        return getattr(experiment, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

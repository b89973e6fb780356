"""kstep: step-by-step models of how Linux 6.12 does concurrent memory management."""

__version__ = "0.1.0"

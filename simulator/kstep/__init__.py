"""kstep: step through how Linux 6.12 does concurrent memory management."""

__version__ = "0.1.0"

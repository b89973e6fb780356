"""Measurements on simulated runs, counted, never timed: rounds of the round-robin scheduler for the
per-VMA lock's contention (``rounds``), DAMON's monitoring cost and accuracy (``damon``), and the
page-table copy's cost under fork's batching (``fork_batch``)."""

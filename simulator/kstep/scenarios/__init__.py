"""The bundled scenarios: one TOML file each, in a folder per mechanism.

``LECTURE`` lists each mechanism's scenarios in the order a lecture meets them, the simplest
first (the course lists and links them in this order; a test keeps it equal to the files).
"""

LECTURE = {
    "rcu": ["grace-period-basics", "synchronize-rcu-vs-reader", "call-rcu-callback"],
    # The notebook's order: the worked interleavings, then the patch thread's workloads at scale.
    "vma-locks": ["munmap-vs-fault", "recheck-race", "fork-vs-fault", "map-fixed-vs-munmap", "android-app-launch",
                  "tcp-zerocopy-vs-madvise", "rwsem-reader-steals", "rwsem-handoff", "rwsem-handoff-livelock"],
    "qspinlock": ["uncontended", "pending-path", "two-waiters", "three-waiters", "set-locked-contended",
                  "one-bit-pending", "nesting", "trylock-fallback", "powerpc-stealing", "fair-ticket", "fair-qspinlock",
                  "tas-starves"],
    # One hot block found and missed, then workloads that move, then schemes, then the small explorable ones.
    "damon": ["hot-block", "hot-block-found", "hot-block-missed", "moving-hotspot", "phase-change", "mmap-munmap",
              "ethp", "prcl", "quota", "quota-goal", "watermarks", "explore-merge-passes", "explore-sz-limit",
              "explore-quota", "explore-zero-esz", "explore-folio-cache"],
    "fork-batch": ["mthp-batches", "batch-ends", "contpte-arm64", "pte-mapped-thp", "table-boundary", "pinned-folio",
                   "shared-uffd", "fault-vs-fork", "gup-fast-vs-fork"],
}

OK_FORMAT = True

test = {
    "name": "measurements-complete",
    "points": 2,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "import tomllib\n"
                 "m = tomllib.load(open('measurements.toml', 'rb'))\n",
        "cases": [
            {"code": ">>> # both kernels' counts (not: whether they are right)\n"
                     ">>> for kernel in ('vma-locks', 'mmap-lock'):\n"
                     "...     run = m['runs'][kernel]\n"
                     "...     print(kernel, sorted(k for k in ('rounds', 'vma_lock_success', 'mmap_lock_faults')\n"
                     "...                          if isinstance(run.get(k), int)), isinstance(run.get('blocked_rounds'), dict))\n"
                     "vma-locks ['mmap_lock_faults', 'rounds', 'vma_lock_success'] True\n"
                     "mmap-lock ['mmap_lock_faults', 'rounds', 'vma_lock_success'] True",
             "hidden": False, "locked": False},
            {"code": ">>> m['conclusion']['less_blocked'] in ('vma-locks', 'mmap-lock', 'neither')\nTrue\n"
                     ">>> isinstance(m['conclusion']['slowdown'], float)\nTrue",
             "hidden": False, "locked": False},
        ],
    }],
}

"""Calls the functions of your damon_merge.py: python driver.py < request.json

The request is {"calls": [["damon_merge_regions_of", [REGIONS, THRES, SZ_LIMIT]], ...]}, a region
being [start, end, nr_accesses, last_nr_accesses, age]; the answer is one JSON line
{"results": [...]}, each result the list of regions your function returned.
"""

import json
import sys

NAMES = ("damon_merge_regions_of", "damon_merge_two_regions")


def main():
    import damon_merge

    request = json.loads(sys.stdin.read())
    results = []
    for name, args in request["calls"]:
        if name not in NAMES:
            raise SystemExit(f"driver: no function {name!r}")
        value = getattr(damon_merge, name)(*args)
        results.append([list(r) for r in value] if name == "damon_merge_regions_of" else list(value))
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()

"""Calls the functions of your rcu_seq.py: python driver.py < request.json

The request is {"calls": [["rcu_seq_snap", [5]], ["rcu_seq_done", [8, 8]], ...]}; the answer is
one JSON line {"results": [...]}, each result a number or true/false.
"""

import json
import sys

NAMES = ("rcu_seq_start", "rcu_seq_end", "rcu_seq_snap", "rcu_seq_done")


def main():
    import rcu_seq

    request = json.loads(sys.stdin.read())
    results = []
    for name, args in request["calls"]:
        if name not in NAMES:
            raise SystemExit(f"driver: no function {name!r}")
        value = getattr(rcu_seq, name)(*args)
        results.append(value if isinstance(value, (bool, int)) else repr(value))
    print(json.dumps({"results": results}))


if __name__ == "__main__":
    main()

OK_FORMAT = True

test = {
    "name": "small-values",
    "points": 2,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "from rcu_seq import rcu_seq_start, rcu_seq_end, rcu_seq_snap, rcu_seq_done\n",
        "cases": [
            {"code": ">>> rcu_seq_start(0), rcu_seq_end(1), rcu_seq_start(4), rcu_seq_end(5)\n(1, 4, 5, 8)",
             "hidden": False, "locked": False},
            {"code": ">>> # idle at 0: the next full grace period ends at 4; running at 1: the one after it, at 8\n"
                     ">>> rcu_seq_snap(0), rcu_seq_snap(1), rcu_seq_snap(4), rcu_seq_snap(5)\n(4, 8, 8, 12)",
             "hidden": False, "locked": False},
            {"code": ">>> rcu_seq_done(4, 4), rcu_seq_done(5, 4), rcu_seq_done(3, 4), rcu_seq_done(7, 8)\n"
                     "(True, True, False, False)",
             "hidden": False, "locked": False},
        ],
    }],
}

OK_FORMAT = True

test = {
    "name": "answers-complete",
    "points": 1,
    "suites": [{
        "type": "doctest", "scored": True, "setup": "", "teardown": "",
        "cases": [{
            "code": ">>> # every question of your run has an answer of the right form (not: the right answer)\n"
                    ">>> from kstep.grading import predict\n"
                    ">>> predict.well_formed('damon', decided=False)\n"
                    "[]",
            "hidden": False, "locked": False,
        }],
    }],
}

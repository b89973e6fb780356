OK_FORMAT = True

test = {
    "name": "answer-well-formed",
    "points": 1,
    "suites": [{
        "type": "doctest", "scored": True, "setup": "", "teardown": "",
        "cases": [{
            "code": ">>> # a line as path:NUMBER, and a schedule naming your scenario's actors (not: the right ones)\n"
                    ">>> from kstep.grading import findbug\n"
                    ">>> findbug.well_formed('fork-batch')\n"
                    "[]",
            "hidden": False, "locked": False,
        }],
    }],
}

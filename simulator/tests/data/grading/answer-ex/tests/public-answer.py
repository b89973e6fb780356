OK_FORMAT = True

test = {
    "name": "public-answer",
    "points": 1,
    "suites": [{"type": "doctest", "scored": True, "setup": "", "teardown": "",
                "cases": [{"code": ">>> import sub\n>>> sub.answer()\n42", "hidden": False, "locked": False}]}],
}

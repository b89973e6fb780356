OK_FORMAT = True

test = {
    "name": "report-complete",
    "points": 1,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "import tomllib\n"
                 "r = tomllib.load(open('report.toml', 'rb'))\n",
        "cases": [
            {"code": ">>> # every count, as a whole number (not: whether they are right)\n"
                     ">>> for who, keys in (('kernel', ('faults', 'fell_back', 'retried', 'calls', 'pgfault')),\n"
                     "...                   ('model', ('faults', 'fell_back', 'retried'))):\n"
                     "...     for mode in ('faults', 'writer'):\n"
                     "...         print(who, mode, all(isinstance(r[who][mode].get(k), int) for k in keys))\n"
                     "kernel faults True\nkernel writer True\nmodel faults True\nmodel writer True",
             "hidden": False, "locked": False},
            {"code": ">>> c = r['conclusion']\n"
                     ">>> isinstance(c['agree'], bool), isinstance(c['kernel_share'], float), "
                     "isinstance(c['model_share'], float), isinstance(c['explanation'], str)\n"
                     "(True, True, True, True)",
             "hidden": False, "locked": False},
        ],
    }],
}

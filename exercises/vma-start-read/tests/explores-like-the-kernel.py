OK_FORMAT = True

test = {
    "name": "explores-like-the-kernel",
    "points": 2,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "from driver import student_model, verdict\n"
                 "from kstep.engine import scenario\n"
                 "from kstep.models.vma_locks import VmaLocksModel\n"
                 "sc = scenario.load('vma-locks', VmaLocksModel.scenario_schema, 'data/race.toml')\n",
        "cases": [{
            "code": ">>> # every interleaving of data/race.toml: the same verdict and the same states as Linux 6.12\n"
                    ">>> verdict(student_model('v6.12'), sc.config, 200000) == verdict(VmaLocksModel('v6.12'), sc.config, 200000)\n"
                    "True",
            "hidden": False, "locked": False,
        }],
    }],
}

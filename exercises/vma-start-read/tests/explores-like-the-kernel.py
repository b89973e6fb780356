OK_FORMAT = True

test = {
    "name": "explores-like-the-kernel",
    "points": 2,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "from driver import student_model\n"
                 "from kstep.scenario_spec import scenario\n"
                 "from kstep.grading.feedback import explain\n"
                 "from kstep.models.vma_locks import VmaLocksModel\n"
                 "sc = scenario.load('vma-locks', VmaLocksModel.scenario_schema, 'data/race.toml')\n",
        "cases": [{
            "code": ">>> # every interleaving of data/race.toml: the same verdict and the same states as Linux 6.12\n"
                    ">>> # (nothing printed); else the invariant your steps break and the shortest run that\n"
                    ">>> # breaks it, in counterexample.json: kstep show counterexample.json --steps vma_read.py\n"
                    ">>> explain(student_model('v6.12'), VmaLocksModel('v6.12'), sc.config, steps_file='vma_read.py',\n"
                    "...         scenario='data/race.toml')\n",
            "hidden": False, "locked": False,
        }],
    }],
}

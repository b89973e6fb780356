OK_FORMAT = True

test = {
    "name": "falls-back-when-write-locked",
    "points": 1,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "from driver import student_model\n"
                 "from kstep.engine import Action\n"
                 "from kstep.scenario_spec import scenario\n"
                 "m = student_model('v6.12')\n"
                 "sc = scenario.load('vma-locks', m.scenario_schema, 'data/race.toml')\n"
                 "s = m.initial(sc.config)\n"
                 "def next_label(s, who):\n"
                 "    return [t for t in s.threads if t.name == who][0].frames[0].label\n",
        "cases": [{
            "code": ">>> # W write-locks VMA 0 (vm_lock_seq = mm_lock_seq) before T1's check runs\n"
                    ">>> while s.vmas[0].vm_lock_seq != s.mm.mm_lock_seq:\n"
                    "...     s = m.step(s, Action('W', next_label(s, 'W')))\n"
                    ">>> while next_label(s, 'T1') != 'vma_start_read':\n"
                    "...     s = m.step(s, Action('T1', next_label(s, 'T1')))\n"
                    ">>> s = m.step(s, Action('T1', 'vma_start_read'))\n"
                    ">>> [f.label for f in [t for t in s.threads if t.name == 'T1'][0].frames[:2]]\n"
                    "['rcu_read_unlock', 'vma_lock_abort']",
            "hidden": False, "locked": False,
        }],
    }],
}

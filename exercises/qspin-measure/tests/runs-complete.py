OK_FORMAT = True

test = {
    "name": "runs-complete",
    "points": 1,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "import json, tomllib\n"
                 "runs = [json.loads(l) for l in open('runs.jsonl') if l.strip() and not l.lstrip().startswith('#')]\n"
                 "conclusion = tomllib.load(open('conclusion.toml', 'rb'))\n",
        "cases": [{
            "code": ">>> # at least three runs of each lock, and every field of the conclusion (not: whether they are right)\n"
                    ">>> sorted(l for l in ('qspinlock', 'ticket') if sum(r.get('lock') == l for r in runs) >= 3)\n"
                    "['qspinlock', 'ticket']\n"
                    ">>> sorted(k for k in ('faster', 'ratio', 'queued_share', 'explanation') if k in conclusion)\n"
                    "['explanation', 'faster', 'queued_share', 'ratio']",
            "hidden": False, "locked": False,
        }],
    }],
}

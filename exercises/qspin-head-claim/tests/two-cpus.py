OK_FORMAT = True

test = {
    "name": "two-cpus",
    "points": 2,
    "suites": [{
        "type": "doctest", "scored": True, "teardown": "",
        "setup": "import json, subprocess, sys\n"
                 "def torture(*args, arch='x86_64', pending_bits=8):\n"
                 "    request = {'arch': arch, 'pending_bits': pending_bits, 'seed': 1, 'args': list(args)}\n"
                 "    r = subprocess.run([sys.executable, 'driver.py'], input=json.dumps(request),\n"
                 "                       capture_output=True, text=True)\n"
                 "    answer = json.loads(r.stdout.strip().splitlines()[-1])\n"
                 "    return answer.get('errors') or answer['status']\n",
        "cases": [{
            "code": ">>> # it builds, and two CPUs racing through the pending path, the queue and set_locked\n"
                    ">>> # neither overlap nor hang (0: clean; 1: violation; 3: hang; 4: a path never taken)\n"
                    ">>> torture('--threads', '2', '--acquisitions', '8000', '--step-delay', '200',\n"
                    "...         '--delay-in', '100', '--hang-timeout', '2')\n"
                    "0",
            "hidden": False, "locked": False,
        }],
    }],
}

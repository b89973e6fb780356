"""Calls the submission's answer(): python driver.py < request.json (the grader's test exercise)."""

import json
import sys

import sub

print(json.dumps({"answer": sub.answer(), "echo": json.loads(sys.stdin.read())}))

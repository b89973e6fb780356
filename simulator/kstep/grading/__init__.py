"""Graded exercises: per-student variants, release bundles, and a grader that survives students.

exercise.py loads an exercise folder; variants.py derives a student's variant; sandbox.py runs a
submission confined; harness.py grades one submission (public tests in the sandbox, hidden tests
here); report.py writes Gradescope's results.json, JUnit XML and a readable summary; release.py
writes student bundles and Gradescope autograder zips.  docs/instructor/ explains all of it.
"""

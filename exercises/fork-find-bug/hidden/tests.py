"""Hidden tests of fork-find-bug: the line, the harm within the budget, and 6.12 left clean
(kstep.grading.findbug).

CANARY-KSTEP-HIDDEN-fork-find-bug: this line must never reach a student's output.
"""

from pathlib import Path

from kstep.grading import findbug

test_line, test_reaches_the_harm, test_clean_on_v6_12 = findbug.hidden_tests("fork-batch", Path(__file__).parent / "keys.toml")

"""``python -m kstep.lab.replay MECH``: replay many observation logs of one mechanism in one process.

One log path a line on standard input; one line a log on standard output, as soon as it is
replayed: the exit status ``kstep check MECH LOG`` would give (0 accepted, 1 rejected, 2 not a log
it can read) and its verdict.  Starting Python and importing a model cost more than replaying one
log of a torture menu (kernel-lab/tests/vmacheck.py runs dozens), so the lab's checks keep one of
these running rather than start kstep check for each log."""

import sys

from ...errors import UserError
from . import check_file

if len(sys.argv) != 2:
    print("usage: python -m kstep.lab.replay MECH (log paths on standard input, one a line)", file=sys.stderr)
    sys.exit(2)
for path in sys.stdin:
    try:
        r = check_file(sys.argv[1], path.rstrip("\n"))
    except UserError as e:
        status, verdict = 2, str(e)
    else:
        status, verdict = (0, "accepted") if r.ok else (1, f"{r.verdict}: line {r.line}: {r.why}")
    print(status, verdict.replace("\n", " "), flush=True)

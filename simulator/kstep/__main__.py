"""``python -m kstep`` is the ``kstep`` command."""

import sys

from .cli import main

sys.exit(main())

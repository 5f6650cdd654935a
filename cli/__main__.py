"""`python -m kernelskill.cli ARGS`: the same as the installed `kernelskill ARGS`."""

import sys

from .main import main

sys.exit(main())

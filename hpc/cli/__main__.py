"""`python -m hpc.cli`, as `psle`."""

import sys

from hpc.cli import main

sys.exit(main())

"""`python -m retrylake` is the `retrylake` command."""

import sys

from retrylake.cli import main

sys.exit(main())

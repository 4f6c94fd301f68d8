"""``python -m transferkit``: the command line of :mod:`transferkit.cli`."""
import sys

from .cli import main

sys.exit(main())

"""``python -m transferkit``: the command line of :mod:`transferkit.cli`."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())

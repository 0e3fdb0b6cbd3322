"""``python -m picklable``: the command line (see :mod:`picklable._cli`)."""

from __future__ import annotations

from ._cli import main

raise SystemExit(main())

"""An ndarray subclass of an importable module (numpy needed)."""

from __future__ import annotations

import numpy as np


class Marked(np.ndarray):  # type: ignore[type-arg]
    """Instances carry attributes in their ``__dict__`` (``arr.label = ...``)."""

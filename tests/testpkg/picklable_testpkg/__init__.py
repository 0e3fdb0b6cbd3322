"""A package with every shipping problem kind, for tests and the audit."""

from .relocated import Moved

__all__ = ["Moved"]

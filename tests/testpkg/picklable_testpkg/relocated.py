"""A class re-homed to its package, as pandas does with ``set_module("pandas")``."""


class Moved:
    """Defined here, but says it lives in ``picklable_testpkg``."""

    def __init__(self, n=0):
        self.n = n

    @classmethod
    def build(cls, n):
        return cls(n)

    @property
    def double(self):
        return 2 * self.n


Moved.__module__ = "picklable_testpkg"

"""A class whose own ``__module__`` is no name: a property, so that its instances
report the module of what they wrap (as wrapt's pure-Python proxies do, where wrapt
has no C extension)."""


class ReportsWrapped:
    """Stands for what it wraps, module included."""

    def __init__(self, wrapped: object) -> None:
        self.wrapped = wrapped

    @property  # type: ignore[misc]
    def __module__(self) -> str:  # type: ignore[override]
        return str(getattr(self.wrapped, "__module__", None))

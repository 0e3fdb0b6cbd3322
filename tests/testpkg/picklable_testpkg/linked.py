"""Wrappers of one module that call each other by their global names, each
keeping a configuration on itself (what sacred's captured functions do): the
state the sender sets travels with each, on copies that must call each other."""

from __future__ import annotations

from typing import Any

import wrapt


def configured(func: Any) -> Any:
    """A wrapt proxy that calls ``func`` with the keyword arguments in its ``config``."""

    @wrapt.decorator
    def call(wrapped: Any, instance: Any, args: Any, kwargs: Any) -> Any:
        return wrapped(*args, **{**wrapped.config, **kwargs})

    proxy = call(func)
    proxy.config = {}  # on func, through the proxy
    return proxy


@configured
def inner(x: int, scale: int = 1) -> int:
    return x * scale


@configured
def outer(x: int, offset: int = 0) -> int:
    return inner(x) + offset


def states() -> tuple[dict[str, Any], dict[str, Any]]:
    """The configurations of this process's own ``inner`` and ``outer``."""
    return dict(inner.config), dict(outer.config)

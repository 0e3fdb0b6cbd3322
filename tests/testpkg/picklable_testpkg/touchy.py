"""A module whose globals hold a context-local proxy, as Flask's do (werkzeug's
``LocalProxy``: ``flask.current_app``): outside a context, touching it (its
attributes, its ``__dict__``) raises."""

from __future__ import annotations

import collections
from typing import Any

UNBOUND = "Working outside of application context."


class ContextProxy:
    """Stands for an object bound to a context; unbound, every use raises."""

    def _unbound(self, *args: Any) -> Any:
        raise RuntimeError(UNBOUND)

    def __getattr__(self, name: str) -> Any:
        return self._unbound()

    @property
    def __dict__(self) -> Any:  # type: ignore[override]
        return self._unbound()

    __bool__ = __eq__ = __iter__ = __len__ = __call__ = _unbound
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "<unbound ContextProxy>"


current_app = ContextProxy()


class Blueprint:
    """Keeps handlers in defaultdicts whose factory is a lambda of this module
    (Flask's ``Scaffold.error_handler_spec``)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.handlers: Any = collections.defaultdict(lambda: collections.defaultdict(dict))

"""What a payload actually does with its top object, read by loading it.

An independent oracle for ``explain``'s verdicts: the payload is loaded with
the pure-Python unpickler, which records for every object it makes which
opcode and which callable made it. The top object is then

* ``("global", "module:name")`` -- loaded by name (GLOBAL / STACK_GLOBAL),
* ``("call", callable)`` -- the result of REDUCE / NEWOBJ on ``callable``
  (a BUILD afterwards keeps the same object),
* ``("data", None)`` -- anything else (a list, a dict, a string ...).
"""

from __future__ import annotations

import io
import pickle
from typing import Any, ClassVar

_Unpickler: Any = pickle._Unpickler  # type: ignore[attr-defined]


class _Recording(_Unpickler):  # type: ignore[misc]
    dispatch: ClassVar[dict[int, Any]] = dict(_Unpickler.dispatch)

    def __init__(self, file: Any, buffers: Any = None) -> None:
        super().__init__(file, buffers=buffers)
        self.made: dict[int, tuple[str, Any]] = {}
        self.keep: list[Any] = []  # ids stay unique while the load runs

    def _record(self, how: str, what: Any) -> None:
        # The first operation that made an object made it; a state setter
        # called later with the object (and returning it) does not.
        obj = self.stack[-1]
        self.keep.append(obj)
        self.made.setdefault(id(obj), (how, what))

    def load_global_(self) -> None:
        _Unpickler.load_global(self)
        obj = self.stack[-1]
        self._record(
            "global", f"{getattr(obj, '__module__', '?')}:{getattr(obj, '__qualname__', '?')}"
        )

    def load_stack_global_(self) -> None:
        name = self.stack[-1]
        module = self.stack[-2]
        _Unpickler.load_stack_global(self)
        self._record("global", f"{module}:{name}")

    def load_reduce_(self) -> None:
        func = self.stack[-2]
        _Unpickler.load_reduce(self)
        self._record("call", func)

    def load_newobj_(self) -> None:
        cls = self.stack[-2]
        _Unpickler.load_newobj(self)
        self._record("call", cls)

    def load_newobj_ex_(self) -> None:
        cls = self.stack[-3]
        _Unpickler.load_newobj_ex(self)
        self._record("call", cls)

    dispatch[pickle.GLOBAL[0]] = load_global_
    dispatch[pickle.STACK_GLOBAL[0]] = load_stack_global_
    dispatch[pickle.REDUCE[0]] = load_reduce_
    dispatch[pickle.NEWOBJ[0]] = load_newobj_
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex_


def top_operation(payload: bytes, buffers: Any = None) -> tuple[Any, tuple[str, Any]]:
    """``(loaded object, how the payload made it)`` (see the module doc)."""
    unpickler = _Recording(io.BytesIO(payload), buffers=buffers)
    obj = unpickler.load()
    return obj, unpickler.made.get(id(obj), ("data", None))

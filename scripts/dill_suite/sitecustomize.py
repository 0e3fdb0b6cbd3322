"""The swap for scripts/dill-suite: dill's ``dumps``, ``loads``, ``dump`` and
``load`` bound to another serializer in every process of a run.

Python imports this module at start-up (it is on the run's PYTHONPATH), so
the test file, and every child interpreter a test starts, pickles with the
serializer that ``DILL_SUITE_SERIALIZER`` names: ``picklable`` or ``pickle``
(unset or ``dill``: dill itself). dill's own helpers that the tests call
(``copy``, ``pickles``, ``check``, ``detect.errors``...) call these names, so
they go through the swapped serializer too.

dill's options have no counterpart in picklable or pickle: ``byref``,
``recurse``, ``fmode``, ``strictio`` (dumps) and ``ignore`` (loads), and
``dill.settings``, are accepted and have no effect. Each serializer has one
behaviour, and the tests measure it.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import types
from typing import Any

_DILL_ONLY = ("byref", "recurse", "fmode", "strictio", "ignore")


def _without_dill_options(options: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in options.items() if name not in _DILL_ONLY}


def _install(serializer: str) -> None:
    import dill
    import dill._dill

    if serializer == "picklable":
        import picklable as chosen
    elif serializer == "pickle":
        import pickle as chosen
    else:
        raise SystemExit(f"DILL_SUITE_SERIALIZER={serializer!r}: picklable, pickle or dill")

    def dumps(obj: Any, protocol: int | None = None, *dill_args: Any, **options: Any) -> bytes:
        return chosen.dumps(obj, protocol, **_without_dill_options(options))

    def loads(data: bytes, *dill_args: Any, **options: Any) -> Any:
        return chosen.loads(data, **_without_dill_options(options))

    def dump(
        obj: Any, file: Any, protocol: int | None = None, *dill_args: Any, **options: Any
    ) -> None:
        chosen.dump(obj, file, protocol, **_without_dill_options(options))

    def load(file: Any, *dill_args: Any, **options: Any) -> Any:
        return chosen.load(file, **_without_dill_options(options))

    swapped = {
        id(dill._dill.dumps): dumps,
        id(dill._dill.loads): loads,
        id(dill._dill.dump): dump,
        id(dill._dill.load): load,
    }
    # Every name of dill's modules that holds one of the four (dill, dill._dill,
    # dill.detect's imports...): dill imports all its submodules at its own import.
    for name, module in list(sys.modules.items()):
        if name == "dill" or name.startswith("dill."):
            namespace = vars(module)
            for attribute, value in list(namespace.items()):
                replacement = swapped.get(id(value))
                if replacement is not None:
                    namespace[attribute] = replacement


class _SwapOnImport(importlib.abc.MetaPathFinder):
    """Makes the swap once dill is imported (by the test file), not before: dill
    notes which module is ``__main__`` at its import (``dill._dill._main_module``),
    and a runner may replace ``__main__`` first (dill_suite/runner.py does)."""

    def __init__(self, serializer: str) -> None:
        self.serializer = serializer

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name != "dill":
            return None
        sys.meta_path.remove(self)  # the real finders find dill
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        load = loader.exec_module
        serializer = self.serializer

        def exec_module(module: types.ModuleType) -> None:
            load(module)  # dill imports all its submodules here
            _install(serializer)

        loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


_serializer = os.environ.get("DILL_SUITE_SERIALIZER", "dill")
if _serializer != "dill":
    sys.meta_path.insert(0, _SwapOnImport(_serializer))

"""cloudpickle's API, answered by picklable.

Code written for cloudpickle swaps serializers with one import::

    import picklable.compat.cloudpickle as cloudpickle

    payload = cloudpickle.dumps(job, protocol=5)
    cloudpickle.register_pickle_by_value(my_local_module)

Every name is picklable's own object, or its spelling of the same thing:
``dumps``, ``dump``, ``loads``, ``load`` (pickle's signatures, plus picklable's
own options), ``Pickler`` and its older name ``CloudPickler``,
``DEFAULT_PROTOCOL``, and the by-value registry with cloudpickle's contract
(module objects only; ``list_registry_pickle_by_value`` returns a set). What
picklable does differently, on purpose, is listed in docs/cloudpickle.md: a
few objects that cloudpickle copies into something else are refused, with the
reason and a way to get cloudpickle's behaviour.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

from .._api import dump, dumps, load, loads
from .._pickler import DEFAULT_PROTOCOL, Pickler
from .._reduce.registry import (
    list_registry_pickle_by_value,
    register_pickle_by_value,
    unregister_pickle_by_value,
)
from ..exceptions import PicklingError, UnpicklingError

__all__ = [
    "DEFAULT_PROTOCOL",
    "CloudPickler",
    "Pickler",
    "PicklingError",
    "UnpicklingError",
    "dump",
    "dumps",
    "is_tornado_coroutine",
    "list_registry_pickle_by_value",
    "load",
    "loads",
    "register_pickle_by_value",
    "unregister_pickle_by_value",
]

CloudPickler = Pickler
"""cloudpickle's older name for its pickler class: the same class."""


def is_tornado_coroutine(func: Any) -> bool:
    """Whether ``func`` is a Tornado coroutine function (deprecated).

    cloudpickle keeps this helper for old callers, deprecated; so does this
    module. It answers ``tornado.gen.is_coroutine_function(func)`` when Tornado
    is imported, else False. Call Tornado's function directly instead.
    """
    warnings.warn(
        "is_tornado_coroutine is deprecated (as in cloudpickle): "
        "call tornado.gen.is_coroutine_function instead",
        DeprecationWarning,
        stacklevel=2,
    )
    gen = sys.modules.get("tornado.gen")
    check = getattr(gen, "is_coroutine_function", None)
    return bool(check(func)) if check is not None else False

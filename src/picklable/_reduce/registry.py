"""Modules whose objects ship by value: scripts, and those the user registers.

``__main__`` (and ``__mp_main__``, a script re-imported by a spawn worker)
exists under that name in every process, but holds another program there. A
module the user registers with :func:`register_by_value` exists on the sending
side only (a helper file next to a script, a notebook's module).
"""

from __future__ import annotations

import sys
import types
from typing import Any

from .. import _locator
from .._compat import MAIN_MODULES

__all__ = [
    "list_registry_by_value",
    "list_registry_pickle_by_value",
    "register_by_value",
    "register_pickle_by_value",
    "registered_by_value",
    "ships_by_value",
    "unregister_by_value",
    "unregister_pickle_by_value",
]

# Importable modules the user asked to ship by value (see register_by_value).
_by_value_modules: set[str] = set()


def register_by_value(module: types.ModuleType | str) -> None:
    """Ship functions and classes of ``module`` (and its submodules) by value.

    For code that exists on the sending side only: a module imported from a
    local folder that workers do not have, or a script's helper module.

    Parameters
    ----------
    module:
        The module, or its name; it must be imported.

    Raises
    ------
    ValueError
        ``module`` is not an imported module.
    """
    name = module if isinstance(module, str) else module.__name__
    if name not in sys.modules:
        raise ValueError(f"{name!r} is not an imported module; import it first")
    _by_value_modules.add(name)
    _locator.clear_cache()  # answers "by reference" given before no longer hold


def unregister_by_value(module: types.ModuleType | str) -> None:
    """Undo :func:`register_by_value`.

    Raises
    ------
    ValueError
        ``module`` was not registered.
    """
    name = module if isinstance(module, str) else module.__name__
    if name not in _by_value_modules:
        raise ValueError(f"{name!r} was not registered with register_by_value()")
    _by_value_modules.discard(name)
    _locator.clear_cache()


def list_registry_by_value() -> list[str]:
    """Names of the modules registered with :func:`register_by_value`."""
    return sorted(_by_value_modules)


# ------------------------------------------------- cloudpickle's names for them


def _imported_module(module: Any) -> str:
    if not isinstance(module, types.ModuleType):
        raise ValueError(
            f"{module!r} is not a module object: pass the module itself "
            "(picklable.register_by_value also takes its name)"
        )
    name = module.__name__
    if sys.modules.get(name) is not module:
        raise ValueError(
            f"{module!r} is not the module sys.modules holds under {name!r}: "
            "import it with an import statement, then register it"
        )
    return name


def register_pickle_by_value(module: types.ModuleType) -> None:
    """Ship functions and classes of ``module`` (and its submodules) by value.

    cloudpickle's name and contract for :func:`register_by_value`: ``module``
    must be an imported module object (``ValueError`` otherwise).

    .. versionadded:: 0.2.0
    """
    register_by_value(_imported_module(module))


def unregister_pickle_by_value(module: types.ModuleType) -> None:
    """Undo :func:`register_pickle_by_value` (cloudpickle's name and contract).

    .. versionadded:: 0.2.0

    Raises
    ------
    ValueError
        ``module`` is not a module object, or is not registered.
    """
    if not isinstance(module, types.ModuleType):
        raise ValueError(f"{module!r} is not a module object: pass the module itself")
    if module.__name__ not in _by_value_modules:
        raise ValueError(f"{module!r} is not registered to ship by value")
    unregister_by_value(module)


def list_registry_pickle_by_value() -> set[str]:
    """Names of the modules registered to ship by value, as a set (cloudpickle's
    name and contract for :func:`list_registry_by_value`).

    .. versionadded:: 0.2.0
    """
    return set(_by_value_modules)


def ships_by_value(module_name: Any) -> bool:
    """Whether objects whose ``__module__`` is ``module_name`` must go by value."""
    if module_name in MAIN_MODULES:
        return True
    if not _by_value_modules or type(module_name) is not str:
        return False
    if module_name in _by_value_modules:
        return True
    return any(module_name.startswith(m + ".") for m in _by_value_modules)


def registered_by_value(module_name: Any) -> str | None:
    """The registered module that covers ``module_name``, or None."""
    if not _by_value_modules or type(module_name) is not str:
        return None
    for name in _by_value_modules:
        if module_name == name or module_name.startswith(name + "."):
            return name
    return None

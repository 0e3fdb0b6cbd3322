"""Checks run in a child interpreter for the built-in kinds (issue 17): views,
buffers, type variables, generic classes, weak collections, streams, modules."""

from __future__ import annotations

import sys
from typing import Any

import picklable


class Member:
    """A member of weak collections, importable in the child."""

    def __init__(self, x: int) -> None:
        self.x = x


def dict_views(payload: bytes) -> dict[str, Any]:
    """Load (mapping, keys, values, items), add a key, and say what the views see."""
    mapping, keys, values, items = picklable.loads(payload)
    mapping["added"] = 0
    return {
        "types": [type(v).__name__ for v in (keys, values, items)],
        "keys": list(keys),
        "values": list(values),
        "items": list(items),
    }


def memoryview_facts(payload: bytes, buffers: list[bytes] | None = None) -> list[dict[str, Any]]:
    """Load (view, base) pairs; say what each view is (base None: not shipped beside it)."""
    found = []
    for view, base in picklable.loads(payload, buffers=buffers):
        found.append(
            {
                "type": type(view).__name__,
                "format": view.format,
                "shape": view.shape,
                "readonly": view.readonly,
                "data": view.tolist(),
                "views_base": base is not None and view.obj is base,
                "obj_type": type(view.obj).__name__,
            }
        )
    return found


def typevar_facts(payload: bytes) -> dict[str, Any]:
    """Load a type variable; say what it is, and send it back."""
    variable = picklable.loads(payload)
    return {
        "type": type(variable).__name__,
        "name": variable.__name__,
        "module": variable.__module__,
        "bound": getattr(variable, "__bound__", None),
        "constraints": getattr(variable, "__constraints__", ()),
        "covariant": getattr(variable, "__covariant__", False),
        "again": picklable.loads(payload) is variable,
        "back": picklable.dumps(variable),
    }


def is_typing_own(payload: bytes, name: str) -> bool:
    import typing

    return picklable.loads(payload) is getattr(typing, name)


def generic_facts(payload: bytes) -> dict[str, Any]:
    """Load (alias, its class): the class's generic bases, parameters and MRO names."""
    alias, cls = picklable.loads(payload)
    return {
        "origin_is_class": alias.__origin__ is cls,
        "args": [a.__name__ for a in alias.__args__],
        "orig_bases": [repr(b) for b in cls.__orig_bases__],
        "parameters": [p.__name__ for p in getattr(cls, "__parameters__", ())],
        "mro": [c.__name__ for c in cls.__mro__],
        "instance": type(alias()).__name__,
    }


def class_bases(payload: bytes) -> dict[str, Any]:
    """Load a class: its MRO names and generic bases."""
    cls = picklable.loads(payload)
    return {
        "mro": [c.__name__ for c in cls.__mro__],
        "orig_bases": [repr(b) for b in cls.__orig_bases__],
    }


def abstract_facts(payload: bytes) -> dict[str, Any]:
    """Load (abstract base, concrete subclass): call what the abstract methods became."""
    base, concrete = picklable.loads(payload)
    try:
        base()
        abstract = False
    except TypeError:
        abstract = True
    return {
        "base_is_abstract": abstract,
        "abstract_methods": sorted(base.__abstractmethods__),
        "classmethod": concrete.build(),
        "staticmethod": concrete.helper(),
        "registered_tuple": issubclass(tuple, base),
    }


def submodule_call(payload: bytes, module: str) -> dict[str, Any]:
    """Load a function that uses a submodule this interpreter has not imported; call it."""
    before = module in sys.modules
    result = picklable.loads(payload)()
    return {"imported_before": before, "result": result, "imported_after": module in sys.modules}


def module_facts(payload: bytes) -> dict[str, Any]:
    """Load a module shipped by value and say what it holds."""
    module = picklable.loads(payload)
    return {
        "name": module.__name__,
        "is_sys_module": sys.modules.get(module.__name__) is module,
        "has_builtins": "__builtins__" in vars(module),
        "result": module.compute(-3),
    }


def load_error(payload: bytes) -> dict[str, Any]:
    """Load a payload that fails here; say which types its error has."""
    try:
        picklable.loads(payload)
    except Exception as exc:
        return {
            "import_error": isinstance(exc, ImportError),
            "unpickling_error": isinstance(exc, picklable.UnpicklingError),
            "name": getattr(exc, "name", None),
            "message": str(exc),
        }
    return {}


def weak_facts(payload: bytes) -> dict[str, Any]:
    """Load (WeakSet, WeakKeyDictionary, WeakValueDictionary, members...)."""
    weak_set, by_key, by_value, *members = picklable.loads(payload)
    return {
        "types": [type(c).__name__ for c in (weak_set, by_key, by_value)],
        "set_members": sorted(m.x for m in weak_set),
        "set_is_members": all(any(m is s for s in members) for m in weak_set),
        "by_key": sorted((k.x, v) for k, v in by_key.items()),
        "by_value": sorted((k, v.x) for k, v in by_value.items()),
    }


def own_class_attributes(payload: bytes) -> list[str]:
    """Load ``[(owner, name, attribute)]``: each attribute is this
    interpreter's own ``vars(owner)[name]``; the names of those that are not."""
    return [
        f"{owner.__qualname__}.{name}"
        for owner, name, attribute in picklable.loads(payload)
        if vars(owner)[name] is not attribute
    ]


def streams(payload: bytes) -> list[bool]:
    """Load (stdout, stderr): each is this interpreter's own."""
    out, err = picklable.loads(payload)
    return [out is sys.stdout, err is sys.stderr]


def redump(payload: bytes, deterministic: bool = False) -> bytes:
    """Load a payload and dump what it holds again."""
    return picklable.dumps(picklable.loads(payload), deterministic=deterministic)


def namespace_items(payload: bytes) -> list[str]:
    """Load a class's namespace (a mappingproxy): the names whose values are
    this interpreter's own, each value of the class it names."""
    namespace = picklable.loads(payload)
    owner = namespace["__dict__"].__objclass__
    return sorted(name for name, value in namespace.items() if vars(owner)[name] is value)

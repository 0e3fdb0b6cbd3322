"""What a fresh interpreter sees of the objects newer Pythons added (issue 26).

:func:`facts` is every fact an exact copy keeps, as plain data that compares
across processes (reprs without addresses): names and module, type parameters
(bounds, constraints, defaults, variance), annotations in every format of
``annotationlib`` (3.14+; ``__annotations__`` before), a class's
``__static_attributes__`` and ``__firstlineno__`` (3.13+), an alias's value,
what a function's globals hold (lazy imports: 3.15), and behaviour (a call).

:func:`loaded` loads a payload made by one serializer (pickle, cloudpickle,
picklable) and answers those facts and whether the object is the receiver's
own (found by its module and name); :func:`verdict` says identity, copy,
wrong or fails. The reference facts come from a fresh interpreter too
(:func:`made_facts`): computing them in the sender would use the names that
a lazy import leaves unimported.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
import sys
import types
import warnings
from typing import Any

try:
    import annotationlib  # Python 3.14
except ImportError:
    annotationlib = None  # type: ignore[assignment]

SERIALIZERS = ("pickle", "cloudpickle", "picklable")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")
# What a class's own namespace may hold that makes it that class (3.13+, 3.15).
_CLASS_FACTS = (
    "__static_attributes__",
    "__firstlineno__",
    "__deprecated__",
    "__disjoint_base__",
    "__closed__",
    "__extra_items__",
    "__required_keys__",
    "__readonly_keys__",
)
_PARAM_FACTS = (
    "__bound__",
    "__constraints__",
    "__default__",
    "__covariant__",
    "__contravariant__",
    "__infer_variance__",
)


def shown(value: Any) -> str:
    """``repr(value)`` without memory addresses."""
    try:
        return _ADDRESS.sub("", repr(value))
    except Exception as exc:  # a repr that evaluates what is not defined
        return f"{type(exc).__name__}: {exc}"


def _attribute(obj: Any, name: str) -> str | None:
    try:
        return shown(getattr(obj, name))
    except AttributeError:
        return None
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def param_facts(param: Any) -> dict[str, Any]:
    """A type parameter (TypeVar, ParamSpec, TypeVarTuple): its kind and all it says."""
    found = {"kind": type(param).__name__, "name": param.__name__, "module": param.__module__}
    for name in _PARAM_FACTS:
        value = _attribute(param, name)
        if value is not None:
            found[name] = value
    return found


def annotation_facts(obj: Any) -> dict[str, Any]:
    """The annotations of a function or class in every format the Python has."""
    if annotationlib is None:
        return {"VALUE": shown(inspect.get_annotations(obj))}
    found: dict[str, Any] = {}
    for fmt in (
        annotationlib.Format.VALUE,
        annotationlib.Format.FORWARDREF,
        annotationlib.Format.STRING,
    ):
        try:
            found[fmt.name] = shown(annotationlib.get_annotations(obj, format=fmt))
        except Exception as exc:
            found[fmt.name] = f"{type(exc).__name__}: {exc}"
    # Whether ``__annotate__`` itself is there is no fact: a copy whose
    # annotations read the same in every format carries them evaluated instead
    # (picklable's cheap form, as on 3.13); the three formats above are the facts.
    return found


def _args(value: Any, depth: int = 0) -> list[Any]:
    """Everything a typing construct is made of, depth first."""
    if depth > 8:
        return []
    found = []
    args = getattr(value, "__args__", ())
    origin = getattr(value, "__origin__", None)
    for inner in (
        *(args if type(args) is tuple else ()),
        None if isinstance(value, type) else origin,
        *(value if type(value) in (list, tuple) else ()),
    ):
        if inner is not None:
            found.append(inner)
            found.extend(_args(inner, depth + 1))
    return found


def _call(func: Any) -> str | None:
    """What ``func()`` returns (or raises), for a function needing no argument."""
    try:
        if annotationlib is None:
            signature = inspect.signature(func)
        else:  # annotations that name what is defined nowhere must not fail it
            signature = inspect.signature(func, annotation_format=annotationlib.Format.FORWARDREF)
        signature.bind()
    except (TypeError, ValueError):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # warnings.deprecated's own
            return shown(func())
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


def _globals_held(func: types.FunctionType) -> dict[str, str]:
    """The kind of what a function's globals hold for the names its code reads:
    a module or a lazy import (read from the dict: a name's lookup imports)."""
    namespace = func.__globals__
    names: set[str] = set()
    todo = [func.__code__]
    while todo:
        code = todo.pop()
        names.update(code.co_names)
        todo.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    held = {}
    for name in sorted(names):
        if name in namespace:
            kind = type(dict.__getitem__(namespace, name)).__name__
            if kind in ("module", "lazy_import"):
                held[name] = kind
    return held


def facts(obj: Any) -> dict[str, Any]:
    """Every fact a copy of ``obj`` keeps (see the module doc)."""
    found: dict[str, Any] = {"type": type(obj).__qualname__}
    for name in ("__name__", "__qualname__", "__module__", "__doc__"):
        value = _attribute(obj, name)
        if value is not None:
            found[name] = value
    params = getattr(obj, "__type_params__", None)
    if type(params) is tuple:
        found["__type_params__"] = [param_facts(p) for p in params]
    if type(obj).__name__ in ("TypeVar", "ParamSpec", "TypeVarTuple"):
        found["param"] = param_facts(obj)
    if isinstance(obj, type):
        found.update(_class_facts(obj))
    elif isinstance(obj, types.FunctionType):
        found["annotations"] = annotation_facts(obj)
        found["defaults"] = shown(obj.__defaults__)
        found["kwdefaults"] = shown(obj.__kwdefaults__)
        found["attributes"] = {key: shown(value) for key, value in sorted(vars(obj).items())}
        found["globals"] = _globals_held(obj)  # before the call, which imports them
        found["call"] = _call(obj)
    elif type(obj).__name__ == "TypeAliasType":
        found.update(_alias_facts(obj))
    elif type(obj) is functools.partial:
        found["func"] = facts(obj.func)
        found["args"] = shown(obj.args)
        found["keywords"] = shown(obj.keywords)
        holes = sum(1 for arg in obj.args if arg is getattr(functools, "Placeholder", object()))
        found["call"] = shown(obj(*range(holes)))
    elif type(obj).__name__ == "frozendict":
        found["items"] = {
            key: _call(value) if callable(value) else shown(value) for key, value in obj.items()
        }
    else:
        found["repr"] = shown(obj)
    return found


def _class_facts(cls: type) -> dict[str, Any]:
    found: dict[str, Any] = {"mro": [c.__qualname__ for c in cls.__mro__]}
    namespace = cls.__dict__
    for name in _CLASS_FACTS:
        if name in namespace:
            found[name] = shown(namespace[name])
    found["annotations"] = annotation_facts(cls)
    found["methods"] = {
        key: {
            "__type_params__": [param_facts(p) for p in value.__type_params__]
            if hasattr(value, "__type_params__")
            else None,
            "annotations": annotation_facts(value),
        }
        for key, value in sorted(namespace.items())
        if type(value) is types.FunctionType
    }
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            instance = cls()
        found["instance"] = sorted(vars(instance))
    except Exception as exc:
        found["instance"] = f"{type(exc).__name__}: {exc}"
    return found


def _alias_facts(alias: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    try:
        value = alias.__value__
    except Exception as exc:
        found["__value__"] = f"{type(exc).__name__}: {exc}"
        return found
    found["__value__"] = shown(value)
    inside = _args(value)
    found["mentions itself"] = any(arg is alias for arg in inside)
    found["its parameters in its value"] = [
        any(arg is param for arg in inside) for param in alias.__type_params__
    ]
    if alias.__type_params__:
        found["subscripted"] = shown(alias[(int,) * len(alias.__type_params__)])
    return found


def _walk(module: str, qualname: str) -> Any:
    """``module.qualname``: ``qualname``'s steps as attributes (imports ``module``)."""
    found: Any = importlib.import_module(module)
    for step in qualname.split("."):
        found = getattr(found, step)
    return found


def made_facts(module: str, qualname: str, index: int | None = None) -> dict[str, Any]:
    """The facts of ``module.qualname``, or of the ``index``-th object its call
    makes (a factory's local objects), in this (fresh) interpreter."""
    found = _walk(module, qualname)
    if index is not None:
        made = found()
        found = made[index] if type(made) is tuple else made
    return facts(found)


def loaded(serializer: str, payload: bytes, home: tuple[str, str] | None = None) -> dict[str, Any]:
    """Load ``payload`` with ``serializer``: its facts, and whether it is this
    process's own ``home`` object; or the error loading raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            obj = importlib.import_module(serializer).loads(payload)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
    found: dict[str, Any] = {"facts": facts(obj)}
    if home is not None:
        try:
            found["identity"] = _walk(*home) is obj
        except Exception:
            found["identity"] = False
    return found


def dumped(obj: Any) -> dict[str, bytes | None]:
    """``obj`` dumped by each serializer; None where it refused."""
    payloads: dict[str, bytes | None] = {}
    for name in SERIALIZERS:
        try:
            payloads[name] = importlib.import_module(name).dumps(obj)
        except Exception:
            payloads[name] = None
    return payloads


def verdict(expected: dict[str, Any], result: dict[str, Any] | None) -> str:
    """``identity`` (the receiver's own), ``copy`` (every fact kept), ``wrong``
    (loads, but differs) or ``fails`` (refused or not loaded)."""
    if result is None or "error" in result:
        return "fails"
    if result.get("identity"):
        return "identity"
    return "copy" if result["facts"] == expected else "wrong"


def difference(expected: dict[str, Any], result: dict[str, Any] | None) -> dict[str, Any]:
    """The facts that differ (for an assertion's message)."""
    if result is None or "error" in result:
        return {"error": None if result is None else result["error"]}
    got = result["facts"]
    return {
        key: (expected.get(key), got.get(key))
        for key in sorted(set(expected) | set(got))
        if expected.get(key) != got.get(key)
    }


_RANK = {"wrong": 0, "fails": 1, "copy": 2, "identity": 3}


def never_worse(verdicts: dict[str, str]) -> bool:
    """picklable is never worse than pickle, and right wherever cloudpickle is."""
    ours = _RANK[verdicts["picklable"]]
    right = {"copy", "identity"}
    if verdicts["cloudpickle"] in right and verdicts["picklable"] not in right:
        return False
    return ours >= _RANK[verdicts["pickle"]]


def python() -> str:
    return f"{sys.version_info[0]}.{sys.version_info[1]}"


def compare(
    child: Any,
    reference: Any,
    obj: Any,
    made: tuple[Any, ...],
    home: tuple[str, str] | None = None,
) -> tuple[dict[str, str], dict[str, Any]]:
    """``obj`` dumped here by each serializer and loaded in ``child``, against
    the facts ``reference`` (another fresh interpreter) finds for ``made``
    (:func:`made_facts`'s arguments): the verdicts, and picklable's difference."""
    payloads = dumped(obj)
    expected = reference.run(made_facts, *made)
    results = {
        name: None if data is None else child.run(loaded, name, data, home)
        for name, data in payloads.items()
    }
    verdicts = {name: verdict(expected, results[name]) for name in SERIALIZERS}
    return verdicts, difference(expected, results["picklable"])


def table(rows: dict[str, dict[str, str]]) -> str:
    """The verdicts as lines: ``case  pickle  cloudpickle  picklable``."""
    return "\n".join(
        f"{case:40} " + " ".join(f"{verdicts[name]:9}" for name in SERIALIZERS)
        for case, verdicts in rows.items()
    )


def _holds(container: Any, obj: Any) -> bool:
    return any(arg is obj for arg in _args(container))


def parameter_links(payload: bytes) -> dict[str, Any]:
    """Loaded with picklable: whether the type parameters of a class, a function
    and aliases (``test_features_py312``'s) are those their annotations, values
    and the payload hold, and recursive aliases name themselves."""
    import picklable

    box, first, local, bounded, n, ts, nested, mutual = picklable.loads(payload)

    def check(test: Any) -> Any:
        try:
            return test()
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"

    def mutual_links() -> bool:
        other = next(a for a in _args(mutual.__value__) if type(a).__name__ == "TypeAliasType")
        return _holds(other.__value__, mutual)

    return {
        "class's in its methods": check(
            lambda: _holds(box.get.__annotations__["return"], box.__type_params__[0])
        ),
        "function's in its annotations": check(
            lambda: first.__annotations__["return"] is first.__type_params__[0]
        ),
        "alias's in its value": check(
            lambda: [_holds(local.__value__, p) for p in local.__type_params__]
        ),
        "alias's shipped beside it": check(
            lambda: [n is bounded.__type_params__[0], ts is bounded.__type_params__[1]]
        ),
        "recursive alias in its value": check(lambda: _holds(nested.__value__, nested)),
        "mutual aliases": check(mutual_links),
    }


def load_error(payload: bytes, allowed: list[str] | None = None) -> str:
    """What loading ``payload`` with picklable raised (``"loaded"`` if nothing),
    under an allow-list of ``allowed`` (by-value code admitted) if given."""
    import picklable

    try:
        if allowed is None:
            picklable.loads(payload)
        else:
            picklable.loads(payload, allowed=picklable.Policy(allowed, by_value_code=True))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return "loaded"


def same_loaded(first: bytes, second: bytes) -> list[bool]:
    """Loaded with picklable: a sentinel, then (a frozendict holding it, it):
    whether the second payload's are the first's very object."""
    import picklable

    alone = picklable.loads(first)
    mapping, again = picklable.loads(second)
    return [again is alone, mapping["marker"] is alone]


def module_rows(
    child: Any, reference: Any, module: str, qualnames: list[str], expect: str = "identity"
) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    """The verdicts for objects of ``module`` (by qualname), and the cases where
    picklable's is not ``expect`` or is worse than pickle's or cloudpickle's."""
    rows, problems = {}, {}
    for qualname in qualnames:
        obj = _walk(module, qualname)
        home = (module, qualname) if expect == "identity" else None
        verdicts, diff = compare(child, reference, obj, (module, qualname), home=home)
        rows[qualname] = verdicts
        if verdicts["picklable"] != expect or not never_worse(verdicts):
            problems[qualname] = (verdicts, diff)
    return rows, problems


def local_rows(
    child: Any, reference: Any, module: str, factories: dict[str, tuple[str, ...]]
) -> tuple[dict[str, dict[str, str]], dict[str, Any]]:
    """As :func:`module_rows` for what ``module``'s factories make (named by
    ``factories[factory]``, in the order it returns them): exact copies."""
    rows, problems = {}, {}
    for factory, names in factories.items():
        made = _walk(module, factory)()
        made = made if type(made) is tuple else (made,)
        for index, (name, obj) in enumerate(zip(names, made, strict=True)):
            verdicts, diff = compare(child, reference, obj, (module, factory, index))
            rows[name] = verdicts
            if verdicts["picklable"] != "copy" or not never_worse(verdicts):
                problems[name] = (verdicts, diff)
    return rows, problems


def script_rows(cases: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """In a script: each case dumped by each serializer (all of them first: the
    facts call functions, which imports what they lazily import), loaded in a
    fresh interpreter, its verdicts and picklable's difference."""
    from support.child import Child

    payloads = {name: dumped(obj) for name, obj in cases.items()}
    rows: dict[str, dict[str, Any]] = {}
    child = Child()
    try:
        for name, obj in cases.items():
            expected = facts(obj)
            results = {
                serializer: None if data is None else child.run(loaded, serializer, data)
                for serializer, data in payloads[name].items()
            }
            rows[name] = {s: verdict(expected, results[s]) for s in results}
            rows[name]["difference"] = difference(expected, results["picklable"])
    finally:
        child.close()
    return rows


def script_problems(rows: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The script's cases that are not exact copies, or worse than another serializer."""
    return {
        name: row
        for name, row in rows.items()
        if row["picklable"] != "copy" or not never_worse(row)
    }

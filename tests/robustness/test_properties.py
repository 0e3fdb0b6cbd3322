"""Property tests: generated data, closures, classes and wrappers round-trip equal
(or identical, where they are importable or come back to their own process).

Functions and classes are made from generated parts by exec'ing factory source
in a namespace named ``__main__``, so they ship by value as a script's would.
"""

from __future__ import annotations

import functools
import keyword
import math
import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import picklable
from picklable import _tracker
from support import checks

KEY = b"property-test-key-0123456789abcd"

# ------------------------------------------------------------------ data

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=False)
    | st.complex_numbers(allow_nan=False)
    | st.text(max_size=20)
    | st.binary(max_size=20)
)
hashables = st.recursive(
    leaves, lambda inner: st.tuples(inner, inner) | st.frozensets(inner, max_size=4), max_leaves=8
)
data = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.tuples(inner, inner)
        | st.dictionaries(hashables, inner, max_size=5)
        | st.sets(hashables, max_size=5)
        | st.frozensets(hashables, max_size=5)
        | st.builds(bytearray, st.binary(max_size=10))
    ),
    max_leaves=30,
)
identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda s: not keyword.iskeyword(s)
)


def same(a: Any, b: Any) -> bool:
    """Equal, with the same types all the way down (a tuple must not come back a list)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def reshuffled(value: Any) -> Any:
    """A copy whose sets are filled in another order (their iteration order may differ)."""
    if type(value) is list:
        return [reshuffled(x) for x in value]
    if type(value) is tuple:
        return tuple(reshuffled(x) for x in value)
    if type(value) is dict:
        return {k: reshuffled(v) for k, v in value.items()}
    if type(value) in (set, frozenset):
        return type(value)(reversed([reshuffled(x) for x in value]))
    return pickle.loads(pickle.dumps(value))


class TestData:
    @pytest.mark.timeout(60)
    @given(data)
    def test_round_trip(self, value):
        """Nested data comes back equal, types included, through every mode."""
        assert same(picklable.loads(picklable.dumps(value)), value)
        assert same(picklable.loads(picklable.dumps(value, 2)), value)
        assert same(picklable.loads(picklable.dumps(value, key=KEY), key=KEY), value)
        assert same(picklable.loads(picklable.dumps(value), allowed=[]), value)

    @pytest.mark.timeout(60)
    @given(data)
    def test_deterministic(self, value):
        """Deterministic bytes load back equal and do not depend on set insertion order."""
        payload = picklable.dumps(value, deterministic=True)
        assert same(picklable.loads(payload), value)
        assert picklable.dumps(reshuffled(value), deterministic=True) == payload


# -------------------------------------------------------------- closures

_TEMPLATES = {
    "plain": '''
def factory(captured, default):
    def NAME(x, y=default):
        """DOC"""
        return (captured, x, y)
    return NAME
''',
    "nested": """
def factory(captured, default):
    def outer(k):
        def NAME(x, *rest, flag=default, **options):
            return (captured, k, x, rest, flag, sorted(options.items()))
        return NAME
    return outer(default)
""",
    "lambda": """
def factory(captured, default):
    return lambda x, *a, **kw: (captured, default, x, a, sorted(kw.items()))
""",
    "recursive": """
def factory(captured, default):
    def NAME(n):
        return (captured, default) if n <= 0 else NAME(n - 1)
    return NAME
""",
    "global": """
GLOBAL = None
def factory(captured, default):
    global GLOBAL
    GLOBAL = captured
    def NAME(x):
        return (GLOBAL, default, x)
    return NAME
""",
    "generator": """
def factory(captured, default):
    def NAME(x):
        yield captured
        yield default
        yield x
    return NAME
""",
}


def make_function(template: str, name: str, doc: str, captured: Any, default: Any):
    source = _TEMPLATES[template].replace("NAME", name).replace("DOC", doc)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, f"<generated {template}>", "exec"), namespace)
    return namespace["factory"](captured, default)


def call(fn: Any, *args: Any) -> Any:
    """What calling ``fn`` gives: its result (a generator's items), or the error it raises."""
    try:
        return materialised(fn(*args))
    except Exception as exc:
        return ("raised", type(exc).__name__, str(exc))


def materialised(result: Any) -> Any:
    if hasattr(result, "__next__"):
        return list(result)
    if type(result) is tuple:
        return tuple(materialised(x) for x in result)
    return result


def metadata(fn: Any) -> tuple[Any, ...]:
    return (
        fn.__name__,
        fn.__qualname__,
        fn.__module__,
        fn.__doc__,
        fn.__defaults__,
        fn.__kwdefaults__,
    )


closures = st.builds(
    make_function,
    st.sampled_from(sorted(_TEMPLATES)),
    identifiers.map("fn_{}".format),  # never a name the templates use
    st.text(alphabet=st.characters(categories=["L", "N", "Zs"]), max_size=20),
    data,
    data,
)


class TestClosures:
    @pytest.mark.timeout(60)
    @given(closures, data)
    def test_same_behaviour_and_metadata(self, fn, arg):
        """A by-value closure comes back as a copy that behaves and looks the same."""
        back = picklable.loads(picklable.dumps(fn))
        assert back is not fn
        assert metadata(back) == metadata(fn)
        assert same(call(back, arg), call(fn, arg))

    @pytest.mark.timeout(60)
    @given(closures)
    def test_deterministic_and_signed(self, fn):
        """Deterministic and signed payloads of closures load and behave the same."""
        payload = picklable.dumps(fn, deterministic=True)
        assert payload == picklable.dumps(fn, deterministic=True)
        assert same(call(picklable.loads(payload), 0), call(fn, 0))
        policy = picklable.Policy(["__main__"], by_value_code=True)
        back = picklable.loads(picklable.dumps(fn, key=KEY), key=KEY, allowed=policy)
        assert same(call(back, 1), call(fn, 1))


# --------------------------------------------------------------- classes

_METHODS = """
def total(self):
    return (self.a, self.b, type(self).__name__)

def scaled(self, factor=2):
    return [self.a] * factor

@classmethod
def make(cls, a):
    return cls(a, None)

@staticmethod
def helper(x):
    return ("helper", x)

@property
def described(self):
    return f"{type(self.a).__name__}/{type(self.b).__name__}"

def __init__(self, a, b):
    self.a = a
    self.b = b

def __eq__(self, other):
    return type(other) is type(self) and (self.a, self.b) == (other.a, other.b)

__hash__ = None

def behaviour(obj):
    cls = type(obj)
    out = {"a": obj.a, "b": obj.b}
    for name in ("total", "scaled"):
        if name in vars(cls):
            out[name] = getattr(obj, name)()
    if "make" in vars(cls):
        out["make"] = cls.make(1).a
    if "helper" in vars(cls):
        out["helper"] = cls.helper(obj.a)
    if "described" in vars(cls):
        out["described"] = obj.described
    out["attrs"] = {k: v for k, v in vars(cls).items() if k.startswith("attr_")}
    return out
"""

# The class-building source, run once as a script would be: its functions ship by value.
_SOURCE: dict[str, Any] = {"__name__": "__main__"}
exec(compile(_METHODS, "<generated methods>", "exec"), _SOURCE)
behaviour = _SOURCE["behaviour"]


def make_class(
    name: str, attributes: dict[str, Any], methods: list[str], slots: bool, base: type
) -> type:
    namespace: dict[str, Any] = {"__module__": "__main__", "__qualname__": name}
    for method in ("__init__", "__eq__", "__hash__", *methods):
        namespace[method] = _SOURCE[method]
    for key, value in attributes.items():
        namespace.setdefault(f"attr_{key}", value)
    if slots:
        namespace["__slots__"] = ("a", "b")
    return type(name, (base,), namespace)


classes = st.builds(
    make_class,
    identifiers.map(str.title),
    st.dictionaries(identifiers, data, max_size=4),
    st.lists(st.sampled_from(["total", "scaled", "make", "helper", "described"]), unique=True),
    st.booleans(),
    st.sampled_from([object, Exception]),
)


class TestClasses:
    @pytest.mark.timeout(60)
    @given(classes, data, data)
    def test_identity_at_home_and_instances(self, cls, a, b):
        """Back in its process a by-value class is itself; its instances keep their state."""
        assert picklable.loads(picklable.dumps(cls)) is cls
        obj = cls(a, b)
        back = picklable.loads(picklable.dumps(obj))
        assert type(back) is cls and same(behaviour(back), behaviour(obj))

    @pytest.mark.timeout(60)
    @given(classes, data)
    def test_rebuilt_copy(self, cls, a):
        """Rebuilt where its tracker id is unknown, the class behaves the same."""
        payload = picklable.dumps([cls, cls(a, [a])])
        _tracker._class_by_id.pop(_tracker._id_by_class[cls])  # as in another process
        try:
            copy, obj = picklable.loads(payload)
        finally:
            _tracker.track(cls, _tracker._id_by_class[cls])
        assert copy is not cls and type(obj) is copy
        assert (copy.__name__, copy.__qualname__, copy.__module__) == (
            cls.__name__,
            cls.__qualname__,
            "__main__",
        )
        assert same(behaviour(obj), behaviour(cls(a, [a])))
        assert ("__dict__" in vars(copy)) == ("__dict__" in vars(cls))

    @pytest.mark.timeout(120)
    @settings(max_examples=max(10, settings.default.max_examples // 3))
    @given(classes, data)
    def test_in_another_interpreter(self, child, cls, a):
        """In a fresh interpreter the copy behaves as the original does here."""
        obj = cls(a, None)
        expected = behaviour(obj)
        got = child.run(checks.run_payload, picklable.dumps((behaviour, (obj,))))
        assert same(picklable.loads(got), expected)


# -------------------------------------------------------------- wrappers

_HOLDER = """
class Holder:
    def __init__(self, fn):
        self.fn = fn
    def call(self, x):
        return ("held", self.fn(x))
"""


def wrap(kind: str, fn: Any) -> tuple[Any, tuple[Any, ...]]:
    """A wrapper of ``fn`` and the arguments to call it with."""
    if kind == "partial":
        return functools.partial(fn, 3), ()
    if kind == "lru_cache":
        return functools.lru_cache(maxsize=8)(fn), (4,)
    if kind == "wraps":

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return ("wrapped", fn(*args, **kwargs))

        return wrapper, (5,)
    if kind == "no_wraps":

        def plain_wrapper(*args, **kwargs):
            return ("plain", fn(*args, **kwargs))

        return plain_wrapper, (6,)
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(_HOLDER, namespace)
    return namespace["Holder"](fn).call, (7,)


wrappers = st.builds(
    wrap, st.sampled_from(["partial", "lru_cache", "wraps", "no_wraps", "bound"]), closures
)


class TestWrappers:
    @pytest.mark.timeout(60)
    @given(wrappers)
    def test_same_result(self, wrapped):
        """Wrapped by-value functions (partial, lru_cache, decorators, bound methods) behave the same."""
        wrapper, args = wrapped
        back = picklable.loads(picklable.dumps(wrapper))
        assert type(back) is type(wrapper)
        assert same(call(back, *args), call(wrapper, *args))

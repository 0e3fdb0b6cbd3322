"""A third held-out set: the routes a security review found through ``allowed=``.

Each payload is written opcode by opcode (``support.opcodes``) after the routes the
review reported, one family per section:

1. ``_make_singledispatch`` registering an object that is no class: singledispatch
   reads its string ``__annotations__`` with ``typing.get_type_hints``, which
   evaluates them;
2. ``_script_or_build`` with an origin that matches no script: it calls the builder
   it is given, a constructor the list refuses (``numpy.memmap`` reading or making
   a file, ``logging.FileHandler`` making one);
3. ``_make_wrapt_proxy(cls, x)`` running ``cls.__init__`` of any class, and
   ``_bind_descriptor(property(f), <a module>)`` handing a module to ``f``;
4. ``_make_cached_property`` (its ``func`` and ``attrname`` set by ``BUILD``)
   bound to an imported module by ``_bind_descriptor``: its ``__get__`` writes
   into the module's ``__dict__`` (``numpy.testing`` replaced);
5. the ``__dict__`` getset descriptor of a class, bound to ``logging.root``, and
   ``_exception_setstate`` making that dict the ``__dict__`` of the payload's own
   exception: the exception's fields land in ``logging.root``;
6. ``_make_class`` with a script origin finding the receiver's own ``__main__``
   class, and its ``__classdictcell__`` handing out the class's real namespace;
7. ``_make_class`` of a class with no code whose base the list refuses to call
   (``numpy.memmap``, ``logging.FileHandler``), then called;
8. 70,000 ``functools.partial`` objects linked by ``BUILD`` (each below the depth
   bookkeeping), then called: C recursion, run in a child interpreter.

Under every list the review used, each must be refused with an UnpicklingError and
leave no effect: no file made or read, no code run, no module, ``logging.root``
or class of the script changed. ``TestTheAttacksAreReal`` loads the same payloads
with plain ``pickle.loads`` (in a child for the crash): each reaches its goal, but
family 6, whose cell now holds a read-only view of the class's namespace in every
load.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import pickle
import subprocess
import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import picklable
from support.child import child_env
from support.guarded import refused as _refused
from support.opcodes import (
    BUILD,
    EMPTY_DICT,
    EMPTY_LIST,
    FALSE,
    MARK,
    NONE,
    POP,
    TRUE,
    TUPLE,
    appends,
    build,
    call,
    dict_,
    get,
    getattr_,
    integer,
    list_,
    newobj,
    newobj_ex,
    pairs,
    payload,
    payload_class,
    put,
    rebuilder,
    setitems,
    stack_global,
    text,
    tuple_,
)

np = pytest.importorskip("numpy")

MARKER = "PICKLABLE_HELDOUT3_MARKER"
# An annotation that makes the marker file when evaluated, and is a class then.
CODE = f"(open(__import__('os').environ[{MARKER!r}], 'w').close(), int)[1]"
SCRIPT_FILE = "/heldout3/script.py"  # the receiver's script (the `script` fixture)
NO_SCRIPT = tuple_(text("x"), tuple_(), NONE, NONE)  # an origin no script matches
CHAIN = 70_000

NOTHING: list[str] = []
NUMPY = ["numpy"]
PANDAS = ["pandas", "numpy"]
LOGGING = ["logging"]
MAIN = ["__main__"]


def _id(allowed: list[str]) -> str:
    return "+".join(allowed) or "nothing"


def _tracker_id() -> str:
    """A by-value class id no other payload of the run uses."""
    return f"heldout3-{uuid.uuid4().hex}"


def read_on_a_str(holder: bytes, module: str, target: Path) -> bytes:
    """A payload class X(str) of ``module`` holding ``holder`` (a descriptor) as
    ``cp``; ``getattr(X(target), "cp")`` runs its ``__get__`` on that str."""
    cls = payload_class(
        text("X"),
        tuple_(stack_global("builtins", "str")),
        dict_(__module__=text(module), cp=holder),
    )
    return getattr_(newobj(cls, text(str(target))), "cp")


def _changed(before: dict[str, Any], namespace: dict[str, Any]) -> set[str]:
    """The names added to, removed from or rebound in ``namespace`` since ``before``."""
    return {
        name
        for name in set(before) | set(namespace)
        if name not in before or name not in namespace or namespace[name] is not before[name]
    }


@contextlib.contextmanager
def _restored(namespace: dict[str, Any]) -> Iterator[None]:
    """Put ``namespace`` back as it was on entry, whatever a payload did to it."""
    saved = dict(namespace)
    try:
        yield
    finally:
        for name in set(namespace) - set(saved):
            del namespace[name]
        namespace.update(saved)


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file CODE makes when it runs."""
    path = tmp_path / "pwned"
    monkeypatch.setenv(MARKER, str(path))
    return path


@contextlib.contextmanager
def _plain_root() -> Iterator[logging.Logger]:
    """logging.root as a program's that configured none (no handler: pytest's, which
    it adds for each phase, is refused by its module), put back afterwards."""
    with _restored(vars(logging.root)):
        logging.root.handlers = []
        yield logging.root


@pytest.fixture
def script(monkeypatch: pytest.MonkeyPatch) -> type:
    """A script this process runs as ``__main__``, and its class ``Config`` (new per test)."""

    def is_admin(self: Any) -> bool:
        return bool(getattr(self, "ADMIN", False))

    # Defined here, as the script's: its function's module is the script's too.
    is_admin.__module__, is_admin.__qualname__ = "__main__", "Config.is_admin"
    config = type("Config", (), {"__module__": "__main__", "is_admin": is_admin})
    module = types.ModuleType("__main__")
    module.__file__ = SCRIPT_FILE
    module.Config = config
    monkeypatch.setitem(sys.modules, "__main__", module)
    return config


# ------------------------------------------------ 1. singledispatch's registration


def singledispatch_eval() -> bytes:
    """_make_singledispatch(len, [(a namespace annotated with CODE, None)])."""
    annotated = build(
        call(stack_global("types", "SimpleNamespace")), dict_(__annotations__=dict_(x=text(CODE)))
    )
    return payload(
        call(
            rebuilder("_make_singledispatch"),
            stack_global("builtins", "len"),
            list_(tuple_(annotated, NONE)),
        )
    )


@pytest.mark.parametrize("allowed", [NOTHING, NUMPY, PANDAS], ids=_id)
def test_singledispatch_evaluates_no_annotation(allowed: list[str], marker: Path) -> None:
    """Refused; the annotation's code never runs."""
    refused = _refused(singledispatch_eval(), allowed)
    assert not marker.exists(), "the annotation was evaluated"
    assert refused


# ------------------------------------------------ 2. _script_or_build's builder


def script_or_build(builder: bytes, *args: bytes) -> bytes:
    """_script_or_build(an origin no script matches, builder, args): builder(*args)."""
    return payload(call(rebuilder("_script_or_build"), NO_SCRIPT, builder, tuple_(*args)))


def memmap_read(path: Path) -> bytes:
    """numpy.memmap(path, uint8, "r"): the file's bytes."""
    return script_or_build(
        stack_global("numpy", "memmap"), text(str(path)), stack_global("numpy", "uint8"), text("r")
    )


def memmap_create(path: Path) -> bytes:
    """numpy.memmap(path, uint8, "w+", 0, (4096,)): makes (or truncates) the file."""
    return script_or_build(
        stack_global("numpy", "memmap"),
        text(str(path)),
        stack_global("numpy", "uint8"),
        text("w+"),
        integer(0),
        tuple_(integer(4096)),
    )


@pytest.mark.parametrize("allowed", [NUMPY, PANDAS], ids=_id)
def test_script_or_build_reads_no_file_by_memmap(allowed: list[str], tmp_path: Path) -> None:
    """Refused: numpy.memmap, refused as a call, is not called as a builder either."""
    secret = tmp_path / "secret"
    secret.write_bytes(b"root:x:0:0")
    assert _refused(memmap_read(secret), allowed)


@pytest.mark.parametrize("allowed", [NUMPY, PANDAS], ids=_id)
def test_script_or_build_makes_no_file_by_memmap(allowed: list[str], tmp_path: Path) -> None:
    """Refused; no file is made."""
    target = tmp_path / "made"
    refused = _refused(memmap_create(target), allowed)
    assert not target.exists(), "numpy.memmap made the file"
    assert refused


def test_script_or_build_makes_no_file_by_file_handler(tmp_path: Path) -> None:
    """Refused under ["logging"]; logging.FileHandler makes no file."""
    target = tmp_path / "made.log"
    data = script_or_build(stack_global("logging", "FileHandler"), text(str(target)))
    refused = _refused(data, LOGGING)
    assert not target.exists(), "logging.FileHandler made the file"
    assert refused


# ------------------------------------------------ 3. wrapt proxies, bound properties


def wrapt_proxy(cls: bytes, wrapped: bytes) -> bytes:
    """_make_wrapt_proxy(cls, wrapped): cls.__init__(cls.__new__(cls), wrapped)."""
    return payload(call(rebuilder("_make_wrapt_proxy"), cls, wrapped))


def bound_property(fget: bytes, module: str) -> bytes:
    """_bind_descriptor(property(fget), the module, None): fget(module)."""
    prop = call(
        rebuilder("_make_property"), stack_global("builtins", "property"), fget, NONE, NONE, NONE
    )
    return payload(
        call(rebuilder("_bind_descriptor"), prop, call(rebuilder("_import"), text(module)), NONE)
    )


def update_wrapper_of(module: str) -> bytes:
    """A bound property whose getter is partial(update_wrapper, wrapped=a namespace
    holding loads="pwned"): update_wrapper(module, ...) writes into the module."""
    holder = build(call(stack_global("types", "SimpleNamespace")), dict_(loads=text("pwned")))
    fget = newobj_ex(
        stack_global("functools", "partial"),
        tuple_(stack_global("functools", "update_wrapper")),
        dict_(wrapped=holder),
    )
    return bound_property(fget, module)


def test_wrapt_proxy_runs_no_constructor(tmp_path: Path) -> None:
    """Refused under ["logging"]: FileHandler.__init__ does not run, no file is made."""
    target = tmp_path / "made.log"
    data = wrapt_proxy(stack_global("logging", "FileHandler"), text(str(target)))
    refused = _refused(data, LOGGING)
    assert not target.exists(), "FileHandler.__init__ made the file"
    assert refused


@pytest.mark.parametrize(
    ("module", "allowed"),
    [("collections", ["collections"]), ("numpy", NUMPY), ("numpy", PANDAS), ("logging", LOGGING)],
    ids=["collections", "numpy", "pandas+numpy", "logging"],
)
def test_bound_property_gets_no_module(module: str, allowed: list[str]) -> None:
    """Refused: property(repr) bound to a module would hand the module to repr."""
    assert _refused(bound_property(stack_global("builtins", "repr"), module), allowed)


def test_bound_property_writes_no_module() -> None:
    """Refused, even with update_wrapper named: json's namespace is left as it was."""
    import json

    with _restored(vars(json)):
        before = dict(vars(json))
        refused = _refused(update_wrapper_of("json"), ["json", "functools.update_wrapper"])
        changed = _changed(before, vars(json))
    assert not changed, f"json was written: {sorted(changed)}"
    assert refused


# ------------------------------------------------ 4. cached_property bound to a module


def cached_property_on(module: str, attrname: str) -> bytes:
    """A cached_property (func: {module: a fake}.get, attrname) bound to the module:
    its __get__ stores the fake in the module's __dict__ under attrname."""
    fake = build(
        call(stack_global("types", "SimpleNamespace")),
        dict_(
            assert_allclose=stack_global("builtins", "slice"),
            assert_array_equal=stack_global("builtins", "slice"),
        ),
    )
    lookup = setitems(EMPTY_DICT + put(2), (get(1), fake))  # {module: fake}, filled after
    prop = build(
        call(
            rebuilder("_make_cached_property"), stack_global("functools", "cached_property"), TRUE
        ),
        dict_(func=getattr_(get(2), "get"), attrname=text(attrname)),
    )
    return payload(
        call(rebuilder("_import"), text(module)) + put(1) + POP,
        lookup + POP,
        call(rebuilder("_bind_descriptor"), prop, get(1), NONE),
    )


@pytest.mark.parametrize("allowed", [NUMPY, PANDAS], ids=_id)
def test_cached_property_writes_no_module(allowed: list[str]) -> None:
    """Refused; numpy's namespace (its lazy ``testing`` absent) is left as it was."""
    with _restored(vars(np)):
        vars(np).pop("testing", None)  # loaded lazily: absent, the write would happen
        before = dict(vars(np))
        refused = _refused(cached_property_on("numpy", "testing"), allowed)
        changed = _changed(before, vars(np))
    assert not changed, f"numpy was written: {sorted(changed)}"
    assert refused


# ------------------------------------------------ 5. logging.root's __dict__


def exception_fields(exc: bytes, **fields: bytes) -> bytes:
    """_exception_setstate(exc, (None, None, fields)): object.__setattr__ of each."""
    return call(rebuilder("_exception_setstate"), exc, tuple_(NONE, NONE, dict_(**fields)))


def root_dict_write() -> bytes:
    """Filterer.__dict__['__dict__'] bound to logging.root (its dict, memo 2) made the
    __dict__ of a ValueError (memo 3), whose fields then set disabled and level."""
    descriptor = call(
        rebuilder("_resolve"),
        text("logging"),
        tuple_(text("Filterer"), text("__dict__"), tuple_(text("__dict__"))),
    )
    root_dict = call(
        rebuilder("_bind_descriptor"), descriptor, stack_global("logging", "root"), NONE
    )
    return payload(
        root_dict + put(2) + POP,
        call(stack_global("builtins", "ValueError")) + put(3) + POP,
        exception_fields(get(3), __dict__=get(2)) + POP,
        exception_fields(get(3), disabled=TRUE, level=integer(50)),
    )


def test_logging_root_is_not_written() -> None:
    """Refused under ["logging"]; logging.root stays enabled, at its level."""
    with _plain_root() as root:
        before = dict(vars(root))
        refused = _refused(root_dict_write(), LOGGING)
        changed = _changed(before, vars(root))
        state = root.disabled, root.level
    assert state == (before["disabled"], before["level"]), "logging.root was disabled"
    assert not changed, f"logging.root was written: {sorted(changed)}"
    assert refused


# ------------------------------------------------ 6. the script's own class


def main_class_write() -> bytes:
    """_make_class finds the script's Config and fills the payload's cell (memo 1) with
    its namespace; cell_contents bound to the cell reads it (memo 2), a ValueError
    (memo 3) takes it as its __dict__ and sets ADMIN and is_admin in it."""
    cls = payload_class(
        text("Config"),
        tuple_(),
        dict_(__module__=text("__main__"), __classdictcell__=get(1)),
        tuple_(text("__main__"), text("Config"), text(SCRIPT_FILE)),
    )
    contents = getattr_(stack_global("types", "CellType"), "cell_contents")
    return payload(
        call(rebuilder("_make_cell")) + put(1) + POP,
        cls + POP,
        call(rebuilder("_bind_descriptor"), contents, get(1), NONE) + put(2) + POP,
        call(stack_global("builtins", "ValueError")) + put(3) + POP,
        exception_fields(get(3), __dict__=get(2)) + POP,
        exception_fields(get(3), ADMIN=TRUE, is_admin=stack_global("builtins", "callable")),
    )


def test_main_class_namespace_is_not_written(script: type) -> None:
    """Refused under ["__main__"]; the script's class is left as it was."""
    before = dict(vars(script))
    refused = _refused(main_class_write(), MAIN)
    changed = _changed(before, dict(vars(script)))
    assert "ADMIN" not in vars(script)
    assert not changed, f"the script's class was written: {sorted(changed)}"
    assert refused


# ------------------------------------------------ 7. a class with no code, a refused base


def subclass_called(base: bytes, module: str, *args: bytes) -> bytes:
    """_make_class(type, "Sub", (base,), {"__module__": module}, ...) called with args."""
    cls = payload_class(text("Sub"), tuple_(base), dict_(__module__=text(module)))
    return payload(call(cls, *args))


def memmap_subclass(path: Path) -> bytes:
    return subclass_called(
        stack_global("numpy", "memmap"),
        "numpy",
        text(str(path)),
        stack_global("numpy", "uint8"),
        text("w+"),
        integer(0),
        tuple_(integer(8)),
    )


def file_handler_subclass(path: Path) -> bytes:
    return subclass_called(stack_global("logging", "FileHandler"), "logging", text(str(path)))


@pytest.mark.parametrize(
    ("make", "allowed"),
    [(memmap_subclass, NUMPY), (memmap_subclass, PANDAS), (file_handler_subclass, LOGGING)],
    ids=["memmap-numpy", "memmap-pandas+numpy", "FileHandler-logging"],
)
def test_class_without_code_runs_no_refused_constructor(
    make: Any, allowed: list[str], tmp_path: Path
) -> None:
    """Refused: a payload's subclass does not vouch for its base's constructor; no file."""
    target = tmp_path / "made"
    refused = _refused(make(target), allowed)
    assert not target.exists(), "the base's constructor made the file"
    assert refused


# ------------------------------------------------ 8. a chain of partials, called


def partial_chain(length: int, *, called: bool = True) -> bytes:
    """partial(len) (memo 4), each partial's func set by BUILD to a new partial(len)
    (memo 3), ``length`` deep, then the first one called (``called``): one level at a
    time for the unpickler, ``length`` nested calls in C."""
    link = (
        MARK
        + call(get(0), get(1))
        + put(3)
        + get(2)
        + NONE
        + NONE
        + TUPLE
        + BUILD  # partial.__setstate__((the next partial, (), None, None))
        + POP
        + get(3)
    )
    return payload(
        stack_global("functools", "partial") + put(0) + POP,
        stack_global("builtins", "len") + put(1) + POP,
        tuple_() + put(2) + POP,
        call(get(0), get(1)) + put(4),
        link * (length - 1),
        POP + (call(get(4)) if called else get(4)),
    )


CHILD = """
import pickle
import sys

import picklable

data = open(sys.argv[1], "rb").read()
try:
    if sys.argv[2] == "guarded":
        picklable.loads(data, allowed=[])
    else:
        pickle.loads(data)
except picklable.UnpicklingError:
    print("UnpicklingError", flush=True)
else:
    print("loaded", flush=True)
"""


def load_in_child(data: bytes, directory: Path, mode: str) -> subprocess.CompletedProcess[str]:
    """Load ``data`` in a fresh interpreter (``mode``: "guarded" or "plain")."""
    path = directory / "payload.pkl"
    path.write_bytes(data)
    return subprocess.run(
        [sys.executable, "-c", CHILD, str(path), mode],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
        cwd=directory,
    )


def test_partial_chain_is_refused_not_a_crash(tmp_path: Path) -> None:
    """Under allowed=[]: a clean UnpicklingError in the child, never a signal."""
    done = load_in_child(partial_chain(CHAIN), tmp_path, "guarded")
    assert done.returncode >= 0, f"killed by signal {-done.returncode}"
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["UnpicklingError"], done.stdout


# ------------------------------------------------ the controls


# ------------------------------------------------ a second review's routes
#
# 9. ``memmap.__new__`` (reached by getattr) called to make another class: the
#    check looked at the class it was given, not at the one whose __new__ runs;
# 10. wrapping rebuilders (lru_cache, singledispatch) around a refused class, and a
#    payload's class whose __call__ is one: calling the result runs it;
# 11. _class_setstate's Enum members, taken from the payload's own namespace:
#     any object's __dict__ written (logging.root);
# 12. _class_setstate registering a class of this process with a payload's ABC
#     that derives from collections.abc.Mapping: isinstance(5, Mapping) is True;
# 13. a partial made to call a bound method of itself: C recursion, a crash;
# 14. _own_or_copy comparing two states made of shared parts: exponential time.


def new_of_another_class(target: Path) -> bytes:
    """getattr(numpy.memmap, "__new__")(numpy.ndarray, path, uint8, "w+", 0, (16,))."""
    new = getattr_(stack_global("numpy", "memmap"), "__new__")
    return payload(
        call(
            new,
            stack_global("numpy", "ndarray"),
            text(str(target)),
            stack_global("numpy", "uint8"),
            text("w+"),
            integer(0),
            tuple_(integer(16)),
        )
    )


@pytest.mark.parametrize("allowed", [NUMPY, PANDAS], ids=_id)
def test_a_new_of_another_class_makes_no_file(allowed: list[str], tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(new_of_another_class(target), allowed)
    assert not target.exists() and refused


def wrapped_class_called(wrapper: str, target: Path) -> bytes:
    """A wrapper rebuilder around logging.FileHandler, then called with a path."""
    handler = stack_global("logging", "FileHandler")
    if wrapper == "lru_cache":
        made = call(rebuilder("_make_lru_cache"), handler, NONE, FALSE)
    elif wrapper == "singledispatch":
        made = call(rebuilder("_make_singledispatch"), handler, list_())
    else:  # a payload's class whose __call__ is the handler class, an instance called
        cls = payload_class(
            text("X"),
            tuple_(stack_global("builtins", "object")),
            dict_(__module__=text("logging"), __call__=handler),
        )
        made = newobj(cls)
    return payload(call(made, text(str(target))))


@pytest.mark.parametrize("wrapper", ["lru_cache", "singledispatch", "class __call__"])
def test_a_wrapped_class_makes_no_file(wrapper: str, tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(wrapped_class_called(wrapper, target), LOGGING)
    assert not target.exists() and refused


def class_state_writes(victim: bytes) -> bytes:
    """_class_setstate of a payload's class whose _member_map_ holds ``victim``."""
    namespace = pairs(
        (text("__module__"), text("logging")),
        (text("_member_map_"), pairs((text("A"), victim))),
    )
    cls = payload_class(text("X"), tuple_(stack_global("builtins", "object")), namespace)
    members = pairs((text("A"), dict_(disabled=TRUE)))
    return payload(call(rebuilder("_class_setstate"), cls, tuple_(EMPTY_DICT, list_(), members)))


def test_class_state_writes_no_other_object() -> None:
    with _plain_root() as root:
        refused = _refused(class_state_writes(stack_global("logging", "root")), LOGGING)
        assert root.disabled is False and refused


def abc_registration() -> bytes:
    """A payload's class deriving from collections.abc.Mapping registers int."""
    cls = payload_class(
        text("X"),
        tuple_(stack_global("collections.abc", "Mapping")),
        dict_(__module__=text("collections")),
    )
    registered = list_(stack_global("builtins", "int"))
    return payload(call(rebuilder("_class_setstate"), cls, tuple_(EMPTY_DICT, registered)))


def test_no_class_of_this_process_is_registered() -> None:
    import collections.abc

    refused = _refused(abc_registration(), ["collections"])
    assert not isinstance(5, collections.abc.Mapping) and refused


def partial_calls_itself(through_method: bool) -> bytes:
    """partial(len) (memo 0) whose func is set by BUILD to itself, or to a method
    bound to 0 whose function is the partial; then called."""
    func = (
        call(stack_global("types", "MethodType"), get(0), integer(0)) if through_method else get(0)
    )
    return payload(
        call(stack_global("functools", "partial"), stack_global("builtins", "len")) + put(0),
        MARK + func + tuple_() + EMPTY_DICT + NONE + TUPLE + BUILD,
        POP + call(get(0)),
    )


@pytest.mark.parametrize("through_method", [False, True], ids=["itself", "through a method"])
def test_a_partial_calling_itself_is_refused_not_a_crash(
    through_method: bool, tmp_path: Path
) -> None:
    done = load_in_child(partial_calls_itself(through_method), tmp_path, "guarded")
    assert done.returncode == 0 and done.stdout.strip() == "UnpicklingError", done


def shared_parts(k: int, depth: int = 12) -> bytes:
    """Two chains of ``depth`` lists, each holding ``k`` times the next one, compared
    by _own_or_copy (a payload's namespace holding one, the state the other)."""

    def chain(base: int) -> bytes:
        out = list_(*[integer(0)] * k) + put(base) + POP
        for level in range(1, depth):
            out += list_(*[get(base + level - 1)] * k) + put(base + level) + POP
        return out

    holder = build(call(stack_global("types", "SimpleNamespace")), dict_(x=get(100 + depth - 1)))
    state = dict_(x=get(200 + depth - 1))
    return payload(chain(100), chain(200), call(rebuilder("_own_or_copy"), holder, state))


def test_shared_parts_are_compared_once() -> None:
    """10 ** 12 comparisons before; loads at once now (the pairs found the same
    are remembered, and a comparison stops after 100,000 steps)."""
    import time

    start = time.perf_counter()
    loaded = picklable.loads(shared_parts(10), allowed=[])
    assert time.perf_counter() - start < 5
    assert type(loaded) is types.SimpleNamespace and len(loaded.x) == 10


# ------------------------------------------------ a third review's routes
#
# 15. BUILD gives a cached_property made by REDUCE (checked) a refused class as its
#     func; a payload class holds it under a plain name, and getattr runs it;
# 16. NEWOBJ makes a partial bound to a refused class (REDUCE refused it);
# 17. _own_or_copy's links make a copy of an admitted function read the
#     payload's objects as its globals (logging.getLogger calling FileHandler).


def cached_property_func_set(target: Path) -> bytes:
    """cached_property(str) whose func BUILD sets to FileHandler, held by a payload
    class (a str) as ``cp``; an instance made with ``target`` reads ``cp``."""
    holder = build(
        call(stack_global("functools", "cached_property"), stack_global("builtins", "str")),
        dict_(func=stack_global("logging", "FileHandler")),
    )
    return payload(read_on_a_str(holder, "logging", target))


def test_a_descriptors_state_holds_no_refused_class(tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(cached_property_func_set(target), LOGGING)
    assert not target.exists() and refused


def partial_by_newobj(target: Path) -> bytes:
    """partial.__new__(partial, numpy.memmap, path, "uint8", "w+", 0, (4,))."""
    return payload(
        newobj(
            stack_global("functools", "partial"),
            stack_global("numpy", "memmap"),
            text(str(target)),
            text("uint8"),
            text("w+"),
            integer(0),
            tuple_(integer(4)),
        )
    )


@pytest.mark.parametrize("allowed", [NUMPY, PANDAS], ids=_id)
def test_a_partial_made_by_newobj_binds_no_refused_class(
    allowed: list[str], tmp_path: Path
) -> None:
    assert _refused(partial_by_newobj(tmp_path / "made"), allowed)


def copy_reading_the_payload(target: Path) -> bytes:
    """_own_or_copy(logging.getLogger, None, True, {"Logger": a namespace whose
    manager.getLogger is FileHandler}), then the copy called with ``target``:
    getLogger runs Logger.manager.getLogger(name), FileHandler(target)."""

    def namespace(**items: bytes) -> bytes:
        return build(call(stack_global("types", "SimpleNamespace")), dict_(**items))

    links = dict_(
        Logger=namespace(manager=namespace(getLogger=stack_global("logging", "FileHandler")))
    )
    copy = call(rebuilder("_own_or_copy"), stack_global("logging", "getLogger"), NONE, TRUE, links)
    return payload(call(copy, text(str(target))))


def test_a_copy_reads_no_global_from_the_payload(tmp_path: Path) -> None:
    """Refused: links name only copies the payload made of the module's objects."""
    target = tmp_path / "made"
    refused = _refused(copy_reading_the_payload(target), LOGGING)
    assert not target.exists() and refused


# ------------------------------------------------ a fourth review's routes
#
# 18. picklable's state rebuilders (_set_instance_state, _set_state_and_dict,
#     _exception_setstate) setting what BUILD may not: a cached_property's func,
#     a partial's state (its __setstate__ called directly);
# 19. lists handed to map() empty, filled afterwards: what map calls when iterated
#     (FileHandler), and a chain of 50,000 maps, each in the list the previous one
#     reads, that recurses in C when iterated.


def state_rebuilder_sets(rebuilder_name: str, target: Path) -> bytes:
    """``rebuilder_name`` gives a cached_property(str) FileHandler as its func; a
    payload class (a str) holds it as ``cp``, read on an instance made of ``target``."""
    holder = call(stack_global("functools", "cached_property"), stack_global("builtins", "str"))
    handler = stack_global("logging", "FileHandler")
    if rebuilder_name == "_set_instance_state":
        state = dict_(func=handler)
    elif rebuilder_name == "_set_state_and_dict":
        state = tuple_(NONE, dict_(func=handler))
    else:  # _exception_setstate on an object that is no exception
        state = tuple_(NONE, NONE, dict_(func=handler))
    holder = call(rebuilder(rebuilder_name), holder, state)
    return payload(read_on_a_str(holder, "logging", target))


@pytest.mark.parametrize(
    "name", ["_set_instance_state", "_set_state_and_dict", "_exception_setstate"]
)
def test_a_state_rebuilder_sets_no_refused_class(name: str, tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(state_rebuilder_sets(name, target), LOGGING)
    assert not target.exists() and refused


def partial_state_through_a_rebuilder(target: Path) -> bytes:
    """partial(str) (memo 0), held by a cached_property (checked while harmless),
    its state then set by _set_state_and_dict to (memmap, (), {mode, shape}, None);
    a payload class (a str) holds the cached_property, read on an instance made
    of ``target``: the partial runs outside the checks."""
    state = tuple_(
        stack_global("numpy", "memmap"),
        tuple_(),
        dict_(mode=text("w+"), shape=tuple_(integer(4))),
        NONE,
    )
    made = call(stack_global("functools", "partial"), stack_global("builtins", "str")) + put(0)
    holder = call(stack_global("functools", "cached_property"), get(0)) + put(1)
    return payload(
        made + POP,
        holder + POP,
        call(rebuilder("_set_state_and_dict"), get(0), tuple_(state, EMPTY_DICT)) + POP,
        read_on_a_str(get(1), "numpy", target),
    )


@pytest.mark.parametrize("allowed", [NUMPY, PANDAS], ids=_id)
def test_a_partials_state_set_by_a_rebuilder_is_checked(allowed: list[str], tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(partial_state_through_a_rebuilder(target), allowed)
    assert not target.exists() and refused


def map_filled_later(target: Path) -> bytes:
    """map(map, [], []) made while both lists are empty; FileHandler and [target]
    appended afterwards; the outer map consumed by list(map(list, ...))."""
    return payload(
        EMPTY_LIST + put(0) + POP,
        EMPTY_LIST + put(1) + POP,
        call(stack_global("builtins", "map"), stack_global("builtins", "map"), get(0), get(1))
        + put(2)
        + POP,
        appends(get(0), stack_global("logging", "FileHandler")) + POP,
        appends(get(1), list_(text(str(target)))) + POP,
        call(
            stack_global("builtins", "list"),
            call(stack_global("builtins", "map"), stack_global("builtins", "list"), get(2)),
        ),
    )


def test_a_list_an_iterator_reads_is_not_filled_later(tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(map_filled_later(target), LOGGING)
    assert not target.exists() and refused


def map_chain(length: int) -> bytes:
    """Lists L_k (memo 1000 + k) and maps M_k = map(list, L_k), each M_k appended to
    L_(k-1) after M_(k-1) was made; list(M_0) then recurses ``length`` deep in C."""
    parts = [EMPTY_LIST + put(1000) + POP]
    parts.append(call(stack_global("builtins", "map"), stack_global("builtins", "list"), get(1000)))
    parts.append(put(0) + POP)
    for k in range(1, length):
        parts.append(EMPTY_LIST + put(1000 + k) + POP)
        made = call(
            stack_global("builtins", "map"), stack_global("builtins", "list"), get(1000 + k)
        )
        parts.append(appends(get(1000 + k - 1), made) + POP)
    parts.append(call(stack_global("builtins", "list"), get(0)))
    return payload(*parts)


def test_a_chain_of_maps_is_refused_not_a_crash(tmp_path: Path) -> None:
    done = load_in_child(map_chain(50_000), tmp_path, "guarded")
    assert done.returncode == 0 and done.stdout.strip() == "UnpicklingError", done


# ------------------------------------------------ a fifth review's routes
#
# 20. an Enum by value whose _missing_ (a sunder enum calls, not a dunder) is
#     FileHandler, called with a value that is no member;
# 21. BUILD putting a "__setstate__" in a namespace's own __dict__, and a second
#     BUILD calling it (pickle asks the instance for it).


def enum_missing(target: Path) -> bytes:
    """_make_enum(EnumType, "E", (Enum,), {_missing_: FileHandler}, {A: 1}), then
    E(target): enum calls E._missing_(target)."""
    cls = call(
        rebuilder("_make_enum"),
        stack_global("enum", "EnumType"),
        text("E"),
        tuple_(stack_global("enum", "Enum")),
        dict_(__module__=text("logging"), _missing_=stack_global("logging", "FileHandler")),
        dict_(A=integer(1)),
        text(_tracker_id()),
        NONE,
    )
    return payload(call(cls, text(str(target))))


def test_an_enums_hooks_hold_no_refused_class(tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(enum_missing(target), LOGGING)
    assert not target.exists() and refused


def instance_setstate(target: Path) -> bytes:
    """SimpleNamespace(__setstate__=FileHandler) by BUILD, then BUILD with ``target``."""
    namespace = build(
        call(stack_global("types", "SimpleNamespace")),
        dict_(__setstate__=stack_global("logging", "FileHandler")),
    )
    return payload(build(namespace, text(str(target))))


def test_build_asks_the_class_for_setstate(tmp_path: Path) -> None:
    target = tmp_path / "made"
    refused = _refused(instance_setstate(target), LOGGING)
    assert not target.exists() and refused


class TestTheAttacksAreReal:
    """Without an allow-list (plain ``pickle.loads``) each payload reaches its goal."""

    def test_singledispatch_evaluates_the_annotation(self, marker: Path) -> None:
        if sys.version_info >= (3, 14):
            # Python 3.14 reads annotations only of a function given to register():
            # a payload's function is by-value code, which the list refuses anyway.
            with pytest.raises(TypeError, match="Invalid first argument to `register\\(\\)`"):
                pickle.loads(singledispatch_eval())
            assert not marker.exists()
            return
        pickle.loads(singledispatch_eval())
        assert marker.exists()

    def test_script_or_build_reads_the_file(self, tmp_path: Path) -> None:
        secret = tmp_path / "secret"
        secret.write_bytes(b"root:x:0:0")
        assert bytes(pickle.loads(memmap_read(secret))) == b"root:x:0:0"

    def test_script_or_build_makes_the_file(self, tmp_path: Path) -> None:
        target = tmp_path / "made"
        pickle.loads(memmap_create(target))
        assert target.stat().st_size == 4096

    def test_script_or_build_file_handler_makes_the_file(self, tmp_path: Path) -> None:
        target = tmp_path / "made.log"
        data = script_or_build(stack_global("logging", "FileHandler"), text(str(target)))
        pickle.loads(data).close()
        assert target.exists()

    def test_wrapt_proxy_runs_the_constructor(self, tmp_path: Path) -> None:
        target = tmp_path / "made.log"
        data = wrapt_proxy(stack_global("logging", "FileHandler"), text(str(target)))
        pickle.loads(data).close()
        assert target.exists()

    def test_bound_property_gets_the_module(self) -> None:
        import collections

        data = bound_property(stack_global("builtins", "repr"), "collections")
        assert pickle.loads(data) == repr(collections)

    def test_bound_property_writes_the_module(self) -> None:
        import json

        with _restored(vars(json)):
            pickle.loads(update_wrapper_of("json"))
            written = json.loads
        assert written == "pwned"

    def test_cached_property_writes_the_module(self) -> None:
        with _restored(vars(np)):
            vars(np).pop("testing", None)
            fake = pickle.loads(cached_property_on("numpy", "testing"))
            written = vars(np).get("testing")
        assert written is fake
        assert fake.assert_allclose is slice

    def test_logging_root_is_written(self) -> None:
        with _plain_root() as root:
            pickle.loads(root_dict_write())
            written = root.disabled, root.level
        assert written == (True, 50)

    def test_main_class_namespace_is_read_only_everywhere(self, script: type) -> None:
        """The attack was real until _make_class put the script's class namespace
        itself in the payload's cell: it now puts a read-only view of it there, so
        even without an allow-list the write fails and the class is unchanged."""
        before = dict(vars(script))
        with pytest.raises(TypeError, match="__dict__ must be set to a dictionary"):
            pickle.loads(main_class_write())
        assert "ADMIN" not in vars(script) and not _changed(before, dict(vars(script)))

    @pytest.mark.parametrize(
        "make", [memmap_subclass, file_handler_subclass], ids=["memmap", "FileHandler"]
    )
    def test_class_without_code_runs_the_constructor(self, make: Any, tmp_path: Path) -> None:
        target = tmp_path / "made"
        built = pickle.loads(make(target))
        if isinstance(built, logging.Handler):
            built.close()
        assert target.exists()

    def test_partial_chain_is_a_chain(self) -> None:
        """The chain's payload, 3 deep and not called: partials nested through func."""
        first = pickle.loads(partial_chain(3, called=False))
        assert type(first) is functools.partial
        assert type(first.func) is functools.partial
        assert type(first.func.func) is functools.partial
        assert first.func.func.func is len

    def test_partial_chain_crashes(self, tmp_path: Path) -> None:
        done = load_in_child(partial_chain(CHAIN), tmp_path, "plain")
        # SIGSEGV in partial's C call; a Python that checks its C stack raises instead.
        assert done.returncode < 0 or "RecursionError" in done.stderr, done

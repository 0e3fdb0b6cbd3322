"""A fourth held-out set: a sixth security review's routes through ``allowed=``.

Each payload is written opcode by opcode (``support.opcodes``), one family per
section:

1. ``_make_class`` / ``_make_enum`` given an admitted class that is no metaclass
   (``logging.handlers.TimedRotatingFileHandler``): the rebuilder calls it with the
   class's name (a path), bases and namespace, and it opens the file;
2. ``operator.getitem(<a module's array>, slice(None))``, a view, then ``SETITEM``
   on the view: the write lands in the module's array;
3. a class the list refuses to call, called with no arguments
   (``logging.handlers.SysLogHandler()`` opens a socket), directly or through
   ``copyreg._reconstructor`` with a ``None`` state;
4. a class built by the payload (no code) whose ``__iter__`` is a
   ``property(itemgetter(0))``: chained through ``partial(tuple, ...)`` it recurses
   in C without a check (a crash from 30,000 links);
5. ``operator.getitem`` on a receiver's ``defaultdict`` (``typing``'s overload
   registry): its ``__missing__`` writes the key;
6. ``operator.getitem(numpy.r_, "...")``: its ``__getitem__`` evaluates the string
   in its caller's frame (a hang, or the guard's own globals in the result).

A seventh review's, past the fixes of the sixth:

7. an Enum class whose mixin base is such a class (``FileHandler``, ``memmap``):
   making its members calls the mixin's constructor with the payload's values;
8. a receiver's registry or ``numpy.r_`` subscripted by an ``itemgetter``, a
   ``partial`` of ``getitem``, ``map`` or a ``ChainMap`` over it;
9. ``_frombuffer(memoryview(<a module's array>))``, then ``SETITEM``: the view's
   base is an array whose base is the memoryview of the module's array.

And an eighth's:

10. a payload class deriving from ``collections.abc.Mapping`` whose
    ``__subclasshook__`` is the builtin ``callable``: every class became a Mapping
    for the whole process (the ABC caches the answers);
11. ``pandas.arrays.NumpyExtensionArray(<a module's array>)``, then ``SETITEM``:
    the wrapper writes into the array it was handed.

And a ninth's, past those:

12. the same hooked class made by ``builtins.type(name, bases, namespace)``
    (always admitted), directly or through ``map``: a class made registers with
    its bases as it is made, before any check of its namespace.

And a tenth's:

13. ``_make_module`` (a module built in memory) whose ``__getattr__`` is
    ``FileHandler``: every missing attribute read makes a file (a refusal's message
    showing the module read ``__file__``);
14. a payload ``UserDict`` (or ``ChainMap``) whose ``data`` is a module's array,
    then ``SETITEM``: its own ``__setitem__`` writes into the array.

And an eleventh's:

15. a ``logging.Logger`` whose state (or a payload subclass's namespace) sets
    ``getEffectiveLevel`` to ``SysLogHandler``: ``Logger.__repr__`` calls it, and a
    refusal's message showed the object with ``repr()`` (a socket opened during a
    refused load).

Each must be refused with an UnpicklingError and leave no effect; the controls
load what a program's pickles of the same kinds hold. ``TestTheAttacksAreReal``
loads the payloads with plain ``pickle.loads``: each reaches its goal.
"""

from __future__ import annotations

import logging
import pickle
import subprocess
import sys
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest

import picklable
from support.child import child_env
from support.guarded import refused as _refused
from support.opcodes import (
    NONE,
    build,
    call,
    dict_,
    integer,
    list_,
    newobj,
    payload,
    payload_class,
    rebuilder,
    setitems,
    stack_global,
    text,
    tuple_,
)

np = pytest.importorskip("numpy")

LOGGING = ["logging"]
NUMPY = ["numpy"]
TYPING = ["typing", "collections"]


def getitem(target: bytes, key: bytes) -> bytes:
    return call(stack_global("_operator", "getitem"), target, key)


# ------------------------------------------------ 1. a class as the metaclass


def metaclass_call(path: Path, enum_class: bool) -> bytes:
    """_make_class (or _make_enum) with TimedRotatingFileHandler as the metaclass
    and the path as the class's name."""
    handler = stack_global("logging.handlers", "TimedRotatingFileHandler")
    namespace = dict_(__module__=text("logging"))
    tracker = text(f"heldout4-{uuid.uuid4().hex}")
    if enum_class:
        return payload(
            call(
                rebuilder("_make_enum"),
                handler,
                text(str(path)),
                tuple_(),
                namespace,
                dict_(),
                tracker,
                NONE,
            )
        )
    return payload(
        call(rebuilder("_make_class"), handler, text(str(path)), tuple_(), namespace, tracker, NONE)
    )


@pytest.mark.parametrize("enum_class", [False, True], ids=["class", "enum"])
def test_a_constructor_is_no_metaclass(enum_class: bool, tmp_path: Path) -> None:
    """Refused before the rebuilder runs: no file."""
    path = tmp_path / "made-by-the-payload"
    assert _refused(metaclass_call(path, enum_class), LOGGING)
    assert not path.exists()


# ------------------------------------------------ 2. a view of a module's array


@pytest.fixture
def polyone() -> Any:
    """numpy's module constant, put back whatever a payload did to it."""
    from numpy.polynomial import polynomial

    saved = polynomial.polyone.copy()
    yield polynomial.polyone
    polynomial.polyone[...] = saved


def view_write() -> bytes:
    """getitem(numpy.polynomial.polynomial.polyone, slice(None))[0] = 999."""
    view = getitem(
        stack_global("numpy.polynomial.polynomial", "polyone"),
        call(stack_global("builtins", "slice"), NONE),
    )
    return payload(setitems(view, (integer(0), integer(999))))


def test_no_write_through_a_view_of_a_modules_array(polyone: Any) -> None:
    assert _refused(view_write(), NUMPY)
    assert polyone.tolist() == [1]


def test_control_a_masked_array_whose_data_its_rebuilder_made_loads() -> None:
    """A masked array's rebuilder makes its data, of which the array is a view, and
    its state is then set: the payload's own memory."""
    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    loaded = picklable.loads(pickle.dumps(masked), allowed=NUMPY)
    assert loaded.tolist() == [1.0, None, 3.0]


# ------------------------------------------------ 3. a constructor with no arguments


def syslog_call() -> bytes:
    return payload(call(stack_global("logging.handlers", "SysLogHandler")))


def syslog_reconstructor() -> bytes:
    handler = stack_global("logging.handlers", "SysLogHandler")
    return payload(call(stack_global("copyreg", "_reconstructor"), handler, handler, NONE))


@pytest.mark.parametrize("make", [syslog_call, syslog_reconstructor], ids=["call", "copyreg"])
def test_no_constructor_runs_without_arguments(make: Any) -> None:
    """Refused: pickle makes such an instance with its __new__ alone; no handler
    is made (logging keeps a reference to each handler made)."""
    before = len(logging._handlerList)  # type: ignore[attr-defined]
    assert _refused(make(), LOGGING)
    assert len(logging._handlerList) == before  # type: ignore[attr-defined]


def test_control_a_class_whose_reduction_calls_it_loads() -> None:
    """OrderedDict's reduction calls OrderedDict() without arguments."""
    import collections

    value = collections.OrderedDict(a=1)
    assert picklable.loads(pickle.dumps(value, 2), allowed=["collections"]) == value


# ------------------------------------------------ 4. a special method made of parts


def iter_chain(links: int, callable_dunder: bool) -> bytes:
    """A payload class C(list) whose __iter__ is property(itemgetter(0)) (or the
    itemgetter itself), ``links`` instances each holding partial(tuple, next),
    then tuple(first)."""
    getter = call(stack_global("operator", "itemgetter"), integer(0))
    dunder = getter if callable_dunder else call(stack_global("builtins", "property"), getter)
    cls = payload_class(
        text("C"),
        tuple_(stack_global("builtins", "list")),
        dict_(__module__=text("numpy"), __iter__=dunder),
    )
    memoize, pop, empty_tuple, newobj, appends = b"\x94", b"0", b")", b"\x81", b"e"
    parts = [cls, memoize, pop]  # memo 0: the class
    # memo 1..links: the instances, empty when made
    parts.extend(_get(0) + empty_tuple + newobj + memoize + pop for _ in range(links))
    partial = stack_global("functools", "partial")
    for k in range(1, links):  # instance k holds partial(tuple, instance k + 1)
        link = call(partial, stack_global("builtins", "tuple"), _get(k + 1))
        parts.append(_get(k) + b"(" + link + appends + pop)
    parts.append(call(stack_global("builtins", "tuple"), _get(1)))
    return payload(*parts)


def _get(index: int) -> bytes:
    return b"j" + index.to_bytes(4, "little")


@pytest.mark.parametrize("callable_dunder", [False, True], ids=["property", "itemgetter"])
def test_a_special_method_made_of_parts_is_refused(callable_dunder: bool) -> None:
    assert _refused(iter_chain(20, callable_dunder), NUMPY)


CHILD = """
import sys, picklable
data = open(sys.argv[1], "rb").read()
try:
    picklable.loads(data, allowed=["numpy"])
except picklable.UnpicklingError:
    print("UnpicklingError")
"""


def load_in_child(data: bytes, code: str, directory: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter, the payload's file as ``sys.argv[1]``:
    for a crash, or for what a load leaves changed in a whole process."""
    path = directory / "payload"
    path.write_bytes(data)
    return subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=child_env(),
    )


PLAIN_LOAD = "import pickle, sys\npickle.loads(open(sys.argv[1], 'rb').read())\n"


def test_the_chain_is_refused_not_a_crash(tmp_path: Path) -> None:
    """30,000 links (a SIGSEGV when loaded): a clean refusal in a child."""
    done = load_in_child(iter_chain(30_000, False), CHILD, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "UnpicklingError", done


# ------------------------------------------------ 5. and 6. a receiver's object read


def registry_read() -> bytes:
    return payload(getitem(stack_global("typing", "_overload_registry"), text("heldout4")))


def test_no_item_added_to_a_receivers_defaultdict() -> None:
    registry = typing._overload_registry  # type: ignore[attr-defined]
    try:
        assert _refused(registry_read(), TYPING)
        assert "heldout4" not in registry
    finally:
        registry.pop("heldout4", None)


def test_numpy_r_evaluates_nothing() -> None:
    """Refused at once (it ran forever on "args", and read the guard's globals)."""
    data = payload(getitem(stack_global("numpy", "r_"), text("args")))
    assert _refused(data, NUMPY)


def test_control_subscriptions_pickle_writes_load() -> None:
    """What a program's pickles subscribe: a class (``list[int]``), typing's special
    forms (``Union[int, str]``), an array the payload made, read."""
    assert picklable.loads(pickle.dumps(list[int]), allowed=[]) == list[int]
    union = typing.Union[int, str]  # noqa: UP007 - typing's special form, subscripted
    assert picklable.loads(pickle.dumps(union), allowed=["typing"]) == union
    made = pickle.dumps(np.arange(3))[2:-1]  # the array's opcodes, without PROTO and STOP
    assert picklable.loads(payload(getitem(made, integer(1))), allowed=NUMPY) == 1


# ------------------------------------------------ the attacks are real


class TestTheAttacksAreReal:
    """Plain ``pickle.loads`` of the same payloads reaches each goal."""

    # The handler the failed class leaves behind is collected with its file open.
    @pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
    def test_metaclass_makes_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "made"
        with pytest.raises((AttributeError, TypeError)):  # after the file is made
            pickle.loads(metaclass_call(path, False))
        assert path.exists()

    def test_view_writes_the_modules_array(self, polyone: Any) -> None:
        pickle.loads(view_write())
        assert polyone.tolist() == [999]

    def test_syslog_handler_is_made(self) -> None:
        handler = pickle.loads(syslog_call())
        try:
            assert isinstance(handler, logging.handlers.SysLogHandler)
        finally:
            handler.close()

    def test_registry_gets_the_key(self) -> None:
        registry = typing._overload_registry  # type: ignore[attr-defined]
        try:
            pickle.loads(registry_read())
            assert "heldout4" in registry
        finally:
            registry.pop("heldout4", None)

    def test_enum_member_makes_the_file(self, tmp_path: Path) -> None:
        path = tmp_path / "member-file"
        members = pickle.loads(enum_mixin(path))
        try:
            assert path.exists()
        finally:
            for member in members:
                member.close()

    @pytest.mark.parametrize("route", ["itemgetter", "partial", "map", "chainmap"])
    def test_registry_gets_the_key_later(self, route: str) -> None:
        registry = typing._overload_registry  # type: ignore[attr-defined]
        try:
            pickle.loads(later_subscripts()[route])
            assert "heldout4" in registry
        finally:
            registry.pop("heldout4", None)

    def test_view_through_a_memoryview_writes_the_modules_array(self, polyone: Any) -> None:
        pickle.loads(view_through_memoryview())
        assert polyone.tolist() == [999]

    def test_every_class_becomes_a_mapping(self, tmp_path: Path) -> None:
        """In a child: the ABC's caches would stay changed for this test run."""
        code = (
            PLAIN_LOAD + "import collections.abc as abc\nprint(issubclass(complex, abc.Mapping))\n"
        )
        done = load_in_child(subclass_hook(), code, tmp_path)
        assert done.stdout.strip() == "True", done

    def test_type_makes_every_class_a_mapping(self, tmp_path: Path) -> None:
        code = PLAIN_LOAD + "import collections.abc as abc\nprint(issubclass(bytes, abc.Mapping))\n"
        done = load_in_child(type_call(), code, tmp_path)
        assert done.stdout.strip() == "True", done

    def test_module_getattr_makes_a_file(self, tmp_path: Path, monkeypatch: Any) -> None:
        monkeypatch.chdir(tmp_path)
        module = pickle.loads(module_getattr())
        module.missing.close()  # the FileHandler the lookup made
        assert (tmp_path / "missing").exists()

    def test_userdict_writes_the_modules_array(self, polyone: Any) -> None:
        pickle.loads(userdict_holding_polyone())
        assert polyone.tolist() == [99]

    def test_wrapper_writes_the_modules_array(self, polyone: Any) -> None:
        pytest.importorskip("pandas")
        pickle.loads(wrapped_array_write())
        assert polyone.tolist() == [999]

    def test_the_chain_crashes(self, tmp_path: Path) -> None:
        done = load_in_child(iter_chain(30_000, False), PLAIN_LOAD, tmp_path)
        # A signal on 3.11 (SIGSEGV); where a Python checks that recursion, an error.
        assert done.returncode != 0, done


# ------------------------------------------------ 7. an Enum's mixin constructor


def enum_mixin(path: Path) -> bytes:
    """_make_enum(EnumType, "E", (FileHandler, Enum), ..., {"A": (path,)})."""
    return payload(
        call(
            rebuilder("_make_enum"),
            stack_global("enum", "EnumType"),
            text("E"),
            tuple_(stack_global("logging", "FileHandler"), stack_global("enum", "Enum")),
            dict_(__module__=text("logging")),
            dict_(A=tuple_(text(str(path)))),
            text(f"heldout4-{uuid.uuid4().hex}"),
            NONE,
        )
    )


def test_an_enum_makes_no_member_by_a_refused_constructor(tmp_path: Path) -> None:
    path = tmp_path / "member-file"
    assert _refused(enum_mixin(path), LOGGING)
    assert not path.exists()


def test_control_an_enum_with_a_builtin_mixin_loads() -> None:
    """An Enum of int members shipped by value (no code) loads under its module."""
    members = dict_(A=integer(1), B=integer(2))
    data = payload(
        call(
            rebuilder("_make_enum"),
            stack_global("enum", "EnumType"),
            text("Level"),
            tuple_(stack_global("builtins", "int"), stack_global("enum", "Enum")),
            dict_(__module__=text("logging")),
            members,
            text(f"heldout4-{uuid.uuid4().hex}"),
            NONE,
        )
    )
    level = picklable.loads(data, allowed=LOGGING)
    assert [member.value for member in level] == [1, 2]


# ------------------------------------------------ 8. subscripted later


def _registry() -> bytes:
    return stack_global("typing", "_overload_registry")


def later_subscripts() -> dict[str, bytes]:
    key = text("heldout4")
    getitem_ = stack_global("_operator", "getitem")
    itemgetter = call(stack_global("_operator", "itemgetter"), key)
    partial = stack_global("functools", "partial")
    to_list = stack_global("builtins", "list")
    return {
        "itemgetter": payload(call(itemgetter, _registry())),
        "partial": payload(call(call(partial, getitem_, _registry()), key)),
        "map": payload(
            call(
                to_list,
                call(stack_global("builtins", "map"), getitem_, list_(_registry()), list_(key)),
            )
        ),
        "chainmap": payload(
            getitem(call(stack_global("collections", "ChainMap"), _registry()), key)
        ),
    }


@pytest.mark.parametrize("route", ["itemgetter", "partial", "map", "chainmap"])
def test_no_item_added_by_a_later_subscription(route: str) -> None:
    registry = typing._overload_registry  # type: ignore[attr-defined]
    try:
        assert _refused(later_subscripts()[route], TYPING)
        assert "heldout4" not in registry
    finally:
        registry.pop("heldout4", None)


def test_numpy_r_is_not_reached() -> None:
    itemgetter = call(stack_global("_operator", "itemgetter"), text("args"))
    assert _refused(payload(call(itemgetter, stack_global("numpy", "r_"))), NUMPY)


# ------------------------------------------------ 9. a view through a memoryview


def view_through_memoryview() -> bytes:
    buffer = call(
        stack_global("builtins", "memoryview"),
        stack_global("numpy.polynomial.polynomial", "polyone"),
    )
    view = call(
        stack_global("numpy._core.numeric", "_frombuffer"),
        buffer,
        call(stack_global("numpy", "dtype"), text("i8")),  # polyone: int64
        tuple_(integer(1)),
        text("C"),
    )
    return payload(setitems(view, (integer(0), integer(999))))


def test_no_write_through_a_view_of_a_memoryview_of_a_modules_array(polyone: Any) -> None:
    assert _refused(view_through_memoryview(), NUMPY)
    assert polyone.tolist() == [1]


# ------------------------------------------------ 10. a subclass hook


def subclass_hook() -> bytes:
    return payload(
        payload_class(
            text("C"),
            tuple_(stack_global("collections.abc", "Mapping")),
            dict_(
                __module__=text("collections"),
                __subclasshook__=stack_global("builtins", "callable"),
            ),
        )
    )


def test_no_class_answers_for_an_abc_of_this_process() -> None:
    from collections.abc import Mapping

    assert _refused(subclass_hook(), ["collections"])
    assert not issubclass(complex, Mapping)


# ------------------------------------------------ 11. memory lent to a wrapper


def wrapped_array_write() -> bytes:
    wrapper = call(
        stack_global("pandas.arrays", "NumpyExtensionArray"),
        stack_global("numpy.polynomial.polynomial", "polyone"),
    )
    return payload(setitems(wrapper, (integer(0), integer(999))))


def test_no_write_through_a_wrapper_of_a_modules_array(polyone: Any) -> None:
    pytest.importorskip("pandas")
    assert _refused(wrapped_array_write(), ["pandas", "numpy"])
    assert polyone.tolist() == [1]


def test_control_a_dataframe_loads() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"a": [1, 2]})
    loaded = picklable.loads(pickle.dumps(frame), allowed=["pandas", "numpy"])
    assert loaded.equals(frame)


# ------------------------------------------------ 12. a class made by type()


def _hooked_namespace() -> bytes:
    return dict_(
        __module__=text("collections"),
        __subclasshook__=stack_global("builtins", "callable"),
    )


def type_call() -> bytes:
    return payload(
        call(
            stack_global("builtins", "type"),
            text("C"),
            tuple_(stack_global("collections.abc", "Mapping")),
            _hooked_namespace(),
        )
    )


def type_through_map() -> bytes:
    mapping = stack_global("collections.abc", "Mapping")
    made = call(
        stack_global("builtins", "map"),
        stack_global("builtins", "type"),
        list_(text("C")),
        list_(tuple_(mapping)),
        list_(_hooked_namespace()),
    )
    return payload(call(stack_global("builtins", "list"), made))


@pytest.mark.parametrize("make", [type_call, type_through_map], ids=["call", "map"])
def test_no_class_made_by_type(make: Any) -> None:
    from collections.abc import Mapping

    assert _refused(make(), ["collections"])
    assert not issubclass(bytes, Mapping)


def test_control_type_of_an_object_loads() -> None:
    """type(x), one argument: the class of x, as before."""
    data = payload(call(stack_global("builtins", "type"), integer(1)))
    assert picklable.loads(data, allowed=[]) is int


# ------------------------------------------------ 13. a module's __getattr__


def module_getattr() -> bytes:
    namespace = dict_(__getattr__=stack_global("logging", "FileHandler"))
    return payload(call(rebuilder("_make_module"), text("m"), namespace))


def test_no_module_built_with_a_refused_getattr(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    assert _refused(module_getattr(), LOGGING)
    assert list(tmp_path.iterdir()) == []


def test_control_a_module_built_in_memory_loads() -> None:
    data = payload(call(rebuilder("_make_module"), text("m"), dict_(x=integer(1))))
    assert picklable.loads(data, allowed=["m"]).x == 1


# ------------------------------------------------ 14. a holder of a module's array


def userdict_holding_polyone() -> bytes:
    holder = newobj(stack_global("collections", "UserDict"))
    held = build(holder, dict_(data=stack_global("numpy.polynomial.polynomial", "polyone")))
    return payload(setitems(held, (integer(0), integer(99))))


def test_no_array_of_this_process_held(polyone: Any) -> None:
    assert _refused(userdict_holding_polyone(), ["collections", "numpy"])
    assert polyone.tolist() == [1]


# ------------------------------------------------ 15. a class where a method is


def logger_state() -> bytes:
    logger = build(
        newobj(stack_global("logging", "Logger")),
        dict_(
            name=text("x"),
            getEffectiveLevel=stack_global("logging.handlers", "SysLogHandler"),
        ),
    )
    # Shown by a refusal's message: _import given it as a module name.
    return payload(call(rebuilder("_import"), logger))


def logger_subclass() -> bytes:
    return payload(
        payload_class(
            text("L"),
            tuple_(stack_global("logging", "Logger")),
            dict_(
                __module__=text("logging"),
                getEffectiveLevel=stack_global("logging.handlers", "SysLogHandler"),
            ),
        )
    )


@pytest.mark.parametrize("make", [logger_state, logger_subclass], ids=["state", "class"])
def test_no_refused_class_where_a_method_is(make: Any) -> None:
    before = len(logging._handlerList)  # type: ignore[attr-defined]
    assert _refused(make(), LOGGING)
    assert len(logging._handlerList) == before  # type: ignore[attr-defined]


def test_control_a_logger_with_its_own_state_loads() -> None:
    data = payload(build(newobj(stack_global("logging", "Logger")), dict_(name=text("x"))))
    assert picklable.loads(data, allowed=LOGGING).name == "x"

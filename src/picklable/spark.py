"""Spark with picklable: the functions of a job, and the exceptions they raise.

PySpark ships every function of a job with its copy of cloudpickle, on the driver
only: ``pyspark.core.rdd._prepare_for_python_RDD`` pickles the *command* of an RDD
function, a UDF, a pandas UDF, a UDTF, a Python data source and a streaming
``foreach`` writer with the ``CloudPickleSerializer`` named in that module (and
broadcasts the bytes when they pass 1 MiB), and Spark Connect's client pickles its
commands in three modules of its own (UDFs, UDTFs and data sources, ``foreach``
and ``foreachBatch``). The Python workers load a command with plain
``pickle.loads``. There is no setting for that serializer, so :func:`enable` binds
that one name, in those modules, to :class:`Serializer`, which writes picklable
payloads; :func:`disable` puts PySpark's own back. Nothing else of PySpark
changes: data (RDD elements, rows, broadcast values) travels as before.

* A function of a command (an RDD's function, a UDF's) arrives in the worker
  wrapped in a task function named like it, with its signature, which calls it
  and, when it raises, adds to the exception a note holding the exception
  itself, shipped with picklable and signed with this driver's key (an RDD's
  function returns an iterator that the command's serializer consumes: that
  serializer adds the note to what is raised meanwhile). PySpark
  reports the worker's traceback as text, notes included, in the
  ``PythonException`` (or ``Py4JJavaError``) the driver raises:
  :func:`original` finds the note there and returns the task's own exception,
  of its class, with its attributes, chain, notes and the worker's traceback;
  the :func:`original_errors` context manager raises it in place of Spark's.
* Before the first command of an application (and again for executors that
  registered since, at most every :data:`RECHECK_SECONDS`) the serializer asks
  every executor's Python worker which picklable and Python it runs, with a
  small job shipped by PySpark's own serializer, and raises
  :class:`IncompatibleExecutorsError` naming each executor that cannot load
  picklable payloads: otherwise its tasks would fail with an ``ImportError``
  deep in a Spark stack trace.

Workers need picklable installed in the Python that runs them, and by-value code
needs the same Python minor version as the driver (PySpark requires it anyway).

See ``docs/spark.md``.

.. versionadded:: 0.2.0
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import importlib
import inspect
import keyword
import re
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterator
from typing import Any

try:
    from pyspark.core.context import SparkContext
    from pyspark.serializers import CloudPickleSerializer
    from pyspark.util import PythonEvalType
except ModuleNotFoundError as missing:
    if missing.name is None or missing.name.partition(".")[0] != "pyspark":
        raise  # PySpark is installed but something it imports is not: its own error
    raise ModuleNotFoundError(
        "picklable.spark needs PySpark 4, which is not installed for this Python "
        f"({sys.version_info[0]}.{sys.version_info[1]}). Fix: pip install 'picklable[spark]'. "
        "PySpark 4.3 supports Python 3.11 to 3.14 (see docs/spark.md).",
        name="pyspark",
    ) from None

from . import __version__
from ._api import dumps, loads
from ._signing import new_key
from ._transit import remote_error
from .exceptions import UnpicklingError

__all__ = [
    "ENVIRONMENT",
    "RECHECK_SECONDS",
    "IncompatibleExecutorsError",
    "Serializer",
    "check_executors",
    "disable",
    "enable",
    "hooked",
    "is_enabled",
    "original",
    "original_errors",
]

# ------------------------------------------------------------------ the hook

# Where PySpark pickles the commands it sends to Python workers: the name
# ``CloudPickleSerializer`` in each of these modules (PySpark 4.x). The first is
# classic PySpark; the others are Spark Connect's client, present when its
# dependencies (grpcio, pyarrow, pandas, zstandard) are installed.
SITES = (
    "pyspark.core.rdd",
    "pyspark.sql.connect.expressions",
    "pyspark.sql.connect.plan",
    "pyspark.sql.connect.streaming.readwriter",
)
_NAME = "CloudPickleSerializer"
_lock = threading.Lock()
# module name -> PySpark's own serializer class, for the modules enable() hooked
_hooked: dict[str, type] = {}
# module name -> why it is not hooked (Spark Connect's client not installed)
_missing: dict[str, str] = {}


def enable() -> None:
    """Ship the functions of every Spark job of this process with picklable.

    Binds ``CloudPickleSerializer`` in the PySpark modules that pickle commands
    (classic PySpark, and Spark Connect's client when it is installed) to
    :class:`Serializer`. Call it on the driver, before or after the session is
    made; it holds for every session and job of the process until
    :func:`disable`. Calling it again does nothing.

    Raises
    ------
    RuntimeError
        If this PySpark pickles commands elsewhere than picklable expects
        (PySpark 4.0 to 4.3 do as expected); nothing is changed then.

    Examples
    --------
    >>> picklable.spark.enable()
    >>> spark.sparkContext.parallelize([1, 2, 3]).map(wrapt_decorated).collect()
    """
    with _lock:
        modules = {}
        for name in SITES:
            try:
                modules[name] = importlib.import_module(name)
            except ImportError as exc:
                if name == SITES[0]:
                    raise
                _missing[name] = f"{type(exc).__name__}: {exc}"
        for name, module in modules.items():
            current = getattr(module, _NAME, None)
            if not (isinstance(current, type) and issubclass(current, CloudPickleSerializer)):
                raise RuntimeError(
                    f"picklable.spark.enable: {name} has no {_NAME}, so this PySpark "
                    f"({_pyspark_version()}) pickles its commands elsewhere than picklable "
                    "knows; nothing was changed. PySpark 4.0 to 4.3 are supported."
                )
        for name, module in modules.items():
            _missing.pop(name, None)
            current = getattr(module, _NAME)
            if current is not Serializer:
                _hooked[name] = current
                setattr(module, _NAME, Serializer)


def disable() -> None:
    """Put PySpark's own serializer back where :func:`enable` replaced it.

    Functions made into RDDs or UDFs after this ship with PySpark's cloudpickle
    again; what was already pickled stays as it is. Calling it when not enabled
    does nothing.
    """
    with _lock:
        for name, original_class in list(_hooked.items()):
            module = sys.modules.get(name)
            if module is not None and getattr(module, _NAME, None) is Serializer:
                setattr(module, _NAME, original_class)
            del _hooked[name]


def is_enabled() -> bool:
    """Whether :func:`enable` is in effect (and classic PySpark is hooked)."""
    module = sys.modules.get(SITES[0])
    return module is not None and getattr(module, _NAME, None) is Serializer


def hooked() -> dict[str, str]:
    """Each module where PySpark pickles commands, and who pickles there now.

    Returns
    -------
    dict
        Module name -> ``"picklable"``, ``"PySpark"`` (not enabled), or why the
        module is not there (Spark Connect's client not installed: its
        ``ImportError``).
    """
    out = {}
    for name in SITES:
        module = sys.modules.get(name)
        if module is None:
            out[name] = _missing.get(name, "PySpark (not imported)")
        else:
            out[name] = "picklable" if getattr(module, _NAME, None) is Serializer else "PySpark"
    return out


def _pyspark_version() -> str:
    try:
        from pyspark.version import __version__ as version
    except ImportError:
        return "unknown version"
    return f"PySpark {version}"


# ------------------------------------------------------------ the serializer

# This driver's key: the exceptions that tasks send back are signed with it, so
# that text in an error message (a row's content, say) cannot pass for one.
_KEY = new_key()
_probing = threading.local()


class Serializer(CloudPickleSerializer):
    """PySpark's command serializer, writing picklable payloads.

    What :func:`enable` binds in PySpark's modules; you never need to make one.
    ``dumps`` ships a command (a function, or a tuple whose first item is the
    function, as PySpark builds them) with picklable, the function wrapped so
    that its exceptions come back (:func:`original`); classes (UDTFs, data
    sources) ship as they are. ``loads`` is PySpark's (workers load with plain
    ``pickle.loads``). Errors are :class:`pickle.PicklingError`, as PySpark's:
    a :class:`picklable.PicklingError` naming the attribute path of what
    cannot ship.
    """

    def dumps(self, obj: Any) -> bytes:
        if getattr(_probing, "active", False):  # the check's own job: PySpark's way
            data: bytes = super().dumps(obj)  # type: ignore[no-untyped-call]
            return data
        _check_active_context()
        # Python workers never run the driver's script: its objects always travel
        # as copies (a reference alone could not load there).
        return dumps(_command(obj, as_is=_for_row_udf()), scripts="copy")


def _command(obj: Any, *, as_is: bool = False) -> Any:
    """The command with its function (the command itself, or its first item) as a task.

    ``as_is``: the function's result is a value the worker takes as it is (a
    row-at-a-time UDF's). An RDD's command (also a foreach writer's) names the
    serializer whose ``dump_stream`` consumes the function's result: that
    serializer marks the exceptions raised while it does, once per partition,
    and the function's result is passed on as it is (no step per element).
    """
    if type(obj) is tuple and obj and _is_function(obj[0]):
        if len(obj) == 4 and callable(getattr(obj[3], "dump_stream", None)):
            # (function, profiler, deserializer, serializer): PySpark's worker
            # runs serializer.dump_stream(function(split, iterator), outfile).
            return (_Task(obj[0], as_is=True), obj[1], obj[2], _Stream(obj[3]))
        # (function, return type) of a UDF.
        return (_Task(obj[0], as_is), *obj[1:])
    if _is_function(obj):
        return _Task(obj, as_is)
    return obj  # a UDTF's or a data source's class: nothing of ours to add


def _is_function(obj: Any) -> bool:
    return callable(obj) and not isinstance(obj, type)


# The UDFs whose function PySpark's worker calls once per row and whose results it
# takes as they are (a row's value, never an iterator it goes on to consume).
_ROW_EVAL_TYPES = frozenset({PythonEvalType.SQL_BATCHED_UDF, PythonEvalType.SQL_ARROW_BATCHED_UDF})
# How far up from Serializer.dumps PySpark's UserDefinedFunction._create_judf is
# looked for (it is three frames up in PySpark 4.0 to 4.3).
_UDF_FRAMES = 6


def _for_row_udf() -> bool:
    """Whether the command being pickled is a row-at-a-time UDF's.

    The serializer is handed the command alone; the UDF it belongs to, with its
    eval type, is ``self`` of PySpark's ``UserDefinedFunction._create_judf`` up
    the stack (``_create_judf`` -> ``_wrap_function`` ->
    ``_prepare_for_python_RDD`` -> ``dumps``). Read, never changed; where it is
    not found (another PySpark, Spark Connect, an RDD), the answer is False and
    the function gets the wrapper that suits every command.
    """
    udf_module = sys.modules.get("pyspark.sql.udf")
    make = getattr(getattr(udf_module, "UserDefinedFunction", None), "_create_judf", None)
    code = getattr(make, "__code__", None)
    if code is None:
        return False
    frame: types.FrameType | None = sys._getframe(2)
    for _ in range(_UDF_FRAMES):
        if frame is None:
            return False
        if frame.f_code is code:
            return getattr(frame.f_locals.get("self"), "evalType", None) in _ROW_EVAL_TYPES
        frame = frame.f_back
    return False


class _Task:
    """A command's function on its way to the worker, where it loads as :func:`_task`."""

    __slots__ = ("fn", "as_is")

    def __init__(self, fn: Callable[..., Any], as_is: bool = False) -> None:
        self.fn = fn
        self.as_is = as_is

    def __reduce__(self) -> tuple[Any, ...]:
        return (_task, (self.fn, _KEY, self.as_is))


class _Stream:
    """An RDD command's output serializer on its way to the worker, where it
    loads as :func:`_stream`."""

    __slots__ = ("serializer",)

    def __init__(self, serializer: Any) -> None:
        self.serializer = serializer

    def __reduce__(self) -> tuple[Any, ...]:
        return (_stream, (self.serializer, _KEY))


# The note a task adds to its exception: the exception itself, shipped with
# picklable, signed with the driver's key, in base64 (Spark reports text).
_MARK = "picklable.spark exception:"
_NOTE = "(picklable.spark.original(error) on the driver returns this exception) " + _MARK
_FOUND = re.compile(re.escape(_MARK) + r"([A-Za-z0-9+/=]+)")
# Results that are values, never iterators to pass on: one look per call.
_VALUES = frozenset({int, float, str, bool, bytes, type(None), tuple, list, dict})


def _task(fn: Callable[..., Any], key: bytes, as_is: bool = False) -> Callable[..., Any]:
    """Rebuilder named in commands: ``fn`` wrapped so that its exceptions carry themselves.

    The wrapper takes ``fn``'s name, module, docstring and signature (PySpark's
    worker reads a grouped-map function's parameters) and calls it. An iterator
    UDF's function returns an iterator whose items are computed while the
    worker consumes it: such a result is passed on item by item, its exceptions
    marked too. With ``as_is`` the result is returned as it is: a row-at-a-time
    UDF's function returns a row's value, and an RDD's function (PySpark's
    pipeline of the user's functions) an iterator that its command's
    serializer consumes, marking what is raised meanwhile (:func:`_stream`).
    """
    mark = functools.partial(_mark, key=key)
    returns = _RETURNS_VALUE if as_is else _RETURNS_ITEMS
    task = _exact_task(fn, mark, returns) or _made_task(fn, mark, "*args, **kwargs", returns)
    with contextlib.suppress(Exception):
        functools.update_wrapper(task, fn)
    signature = _argspec_signature(fn)
    if signature is not None:
        task.__signature__ = signature  # type: ignore[attr-defined]
    return task


# The one wrapper, made for each function with its parameters: ``fn``'s own
# where they are plain (see _exact_task), ``*args, **kwargs`` otherwise, and
# what it does with a result. A row-at-a-time UDF's function runs once per row,
# inside PySpark's own three calls per row: its own parameters spare the
# packing of a tuple and a dict of arguments, and returning the value as it is
# spares the look at its type; each is half of the wrapper's cost, measured with
# callgrind (+745 instructions per row in PySpark's chain of calls, +373 without
# the look).
_TASK = """
def task({params}):
    try:
        result = _picklable_fn({args})
    except Exception as exc:
        _picklable_mark(exc)
        raise
{returns}"""
_RETURNS_VALUE = "    return result\n"
_RETURNS_ITEMS = """\
    kind = type(result)
    if kind in _picklable_values or not hasattr(kind, "__next__"):
        return result
    return _picklable_items(result, _picklable_mark)
"""


def _made_task(
    fn: Callable[..., Any],
    mark: Callable[[BaseException], None],
    params: str,
    returns: str,
    args: str | None = None,
) -> Callable[..., Any]:
    namespace: dict[str, Any] = {
        "_picklable_fn": fn,
        "_picklable_mark": mark,
        "_picklable_values": _VALUES,
        "_picklable_items": _items,
    }
    source = _TASK.format(params=params, args=params if args is None else args, returns=returns)
    exec(source, namespace)
    task: Callable[..., Any] = namespace["task"]
    return task


def _exact_task(
    fn: Callable[..., Any], mark: Callable[[BaseException], None], returns: str
) -> Callable[..., Any] | None:
    """A wrapper taking exactly ``fn``'s parameters, or None where they are not plain.

    Plain: a Python function whose parameters are positional (or positional or
    keyword), without defaults, ``*args`` or ``**kwargs``, so that a call the
    wrapper accepts is a call ``fn`` accepts, by position or by name.
    """
    if type(fn) is not types.FunctionType or fn.__defaults__ or fn.__kwdefaults__:
        return None
    code = fn.__code__
    if code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) or code.co_kwonlyargcount:
        return None
    names = code.co_varnames[: code.co_argcount]
    if not all(
        n.isidentifier() and not keyword.iskeyword(n) and not n.startswith("_picklable_")
        for n in names
    ):
        return None
    params = list(names)
    if code.co_posonlyargcount:
        params.insert(code.co_posonlyargcount, "/")
    return _made_task(fn, mark, ", ".join(params), returns, ", ".join(names))


def _items(iterator: Iterator[Any], mark: Callable[[BaseException], None]) -> Iterator[Any]:
    try:
        yield from iterator
    except Exception as exc:
        mark(exc)
        raise


def _stream(serializer: Any, key: bytes) -> _MarkingSerializer:
    """Rebuilder named in RDD commands: their serializer, marking exceptions."""
    return _MarkingSerializer(serializer, functools.partial(_mark, key=key))


class _MarkingSerializer:
    """An RDD command's output serializer in the worker. PySpark's worker hands
    it the function's result, an iterator whose items (the user's functions,
    applied lazily) are computed while ``dump_stream`` writes them: what is
    raised meanwhile is marked here, once per partition, where a wrapper around
    the iterator would add a generator step to every element (measured: +34% on
    ``sum(map(f, range(n)))``). Anything else reads and writes the serializer
    itself (the worker sets ``_flush_per_batch`` on it when it pipelines)."""

    __slots__ = ("_serializer", "_mark")

    def __init__(self, serializer: Any, mark: Callable[[BaseException], None]) -> None:
        object.__setattr__(self, "_serializer", serializer)
        object.__setattr__(self, "_mark", mark)

    def dump_stream(self, iterator: Iterator[Any], stream: Any) -> Any:
        try:
            return self._serializer.dump_stream(iterator, stream)
        except Exception as exc:
            self._mark(exc)
            raise

    def __getattr__(self, name: str) -> Any:
        return getattr(self._serializer, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._serializer, name, value)

    def __repr__(self) -> str:
        return f"{self._serializer!r} (exceptions marked by picklable.spark)"


def _argspec_signature(fn: Any) -> inspect.Signature | None:
    """A signature that ``inspect.getfullargspec`` reads back as ``fn``'s own.

    PySpark's worker counts ``getfullargspec(f).args`` of a grouped-map function
    (which does not follow ``__wrapped__``, and counts ``self`` of a bound method).
    """
    try:
        spec = inspect.getfullargspec(fn)
    except TypeError:
        return None
    empty = inspect.Parameter.empty
    defaults = spec.defaults or ()
    first_default = len(spec.args) - len(defaults)
    kind = inspect.Parameter
    params = [
        kind(
            name,
            kind.POSITIONAL_OR_KEYWORD,
            default=defaults[i - first_default] if i >= first_default else empty,
            annotation=spec.annotations.get(name, empty),
        )
        for i, name in enumerate(spec.args)
    ]
    if spec.varargs:
        params.append(
            kind(
                spec.varargs,
                kind.VAR_POSITIONAL,
                annotation=spec.annotations.get(spec.varargs, empty),
            )
        )
    kwdefaults = spec.kwonlydefaults or {}
    params.extend(
        kind(
            name,
            kind.KEYWORD_ONLY,
            default=kwdefaults.get(name, empty),
            annotation=spec.annotations.get(name, empty),
        )
        for name in spec.kwonlyargs
    )
    if spec.varkw:
        params.append(
            kind(spec.varkw, kind.VAR_KEYWORD, annotation=spec.annotations.get(spec.varkw, empty))
        )
    try:
        return inspect.Signature(params, return_annotation=spec.annotations.get("return", empty))
    except ValueError:
        return None


def _mark(exc: BaseException, *, key: bytes) -> None:
    """Add the note that carries ``exc`` to the driver (once: tasks may nest)."""
    notes = getattr(exc, "__notes__", None)
    if isinstance(notes, list) and any(isinstance(n, str) and _MARK in n for n in notes):
        return
    tb = exc.__traceback__
    if tb is not None:
        # Our own frame is of no interest to the user; put it back for the raise.
        vars(BaseException)["__traceback__"].__set__(exc, tb.tb_next)
    try:
        try:
            payload = dumps(exc, key=key)
            loads(payload, key=key)  # fails here, where it can still be reported
        except Exception as why:
            payload = dumps(remote_error(exc, why), key=key)
    except Exception:
        return  # the traceback text still goes back, as without picklable
    finally:
        vars(BaseException)["__traceback__"].__set__(exc, tb)
    note = _NOTE + base64.b64encode(payload).decode("ascii")
    try:
        exc.add_note(note)
    except Exception:  # a frozen exception refuses setattr: notes live in its __dict__
        with contextlib.suppress(Exception):
            object.__setattr__(exc, "__notes__", [*(notes or ()), note])


# ------------------------------------------------------------------ exceptions


def _texts(error: BaseException) -> Iterator[str]:
    """The texts that may hold a task's exception: messages along the chain."""
    seen: set[int] = set()
    stack: list[BaseException | None] = [error]
    while stack:
        exc = stack.pop()
        if exc is None or id(exc) in seen:
            continue
        seen.add(id(exc))
        with contextlib.suppress(Exception):
            yield str(exc)
        desc = getattr(exc, "desc", None)  # pyspark.errors' captured exceptions
        if isinstance(desc, str):
            yield desc
        stack.extend((exc.__context__, exc.__cause__))


def original(error: BaseException) -> BaseException | None:
    """The exception a Spark task raised, from the error the driver got.

    Spark reports a failed Python task as the worker's traceback in text
    (``pyspark.errors.PythonException``, or a ``Py4JJavaError`` from an RDD
    action, or an error that holds one in its chain). With :func:`enable`, that
    text holds the task's exception itself: this returns it, loaded, of its own
    class (a ``__main__`` class of the driver's script is that very class),
    with its attributes, ``__cause__``, notes and the worker's traceback.

    Parameters
    ----------
    error:
        What the driver caught.

    Returns
    -------
    BaseException or None
        The task's exception (the last one, when the text holds several), or
        None when ``error`` holds none made by this driver's jobs: a task
        shipped without :func:`enable`, an error raised by Spark itself, or
        text that only pretends to be one (it is signed with this driver's key).

    Examples
    --------
    >>> try:
    ...     rdd.map(parse).collect()
    ... except Exception as error:
    ...     task_error = picklable.spark.original(error)
    ...     if isinstance(task_error, ParseError):
    ...         print(task_error.line)
    """
    found = None
    for text in _texts(error):
        for match in _FOUND.finditer(text):
            try:
                payload = base64.b64decode(match.group(1), validate=True)
                loaded = loads(payload, key=_KEY)
            except (binascii.Error, UnpicklingError, ValueError):
                continue  # not ours, or cut short
            if isinstance(loaded, BaseException):
                found = loaded
        if found is not None:
            return found
    return None


def original_errors() -> contextlib.AbstractContextManager[None]:
    """A ``with`` block whose failed Spark tasks raise the task's own exception.

    An exception leaving the block that holds a task's exception (see
    :func:`original`) is replaced by it, so ``except KwOnlyError`` catches what
    the task raised. Its ``__context__`` is then Spark's error (the task's own
    ``__cause__``, attributes, notes and traceback are kept). Any other
    exception passes unchanged.

    Examples
    --------
    >>> with picklable.spark.original_errors():
    ...     rdd.map(parse).collect()
    Traceback (most recent call last):
      ...
    ParseError: line 3: unexpected ','
    """
    return _OriginalErrors()


class _OriginalErrors(contextlib.AbstractContextManager[None]):
    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: object
    ) -> None:
        if isinstance(error, Exception):
            found = original(error)
            if found is not None:
                raise found


# ---------------------------------------------------------------- executors

# What a process reports about itself: the picklable and Python a worker loads
# payloads with. An executor's Python worker answers by importing this module.
ENVIRONMENT = (
    f"picklable {__version__}, {sys.implementation.name} "
    f"{sys.version_info[0]}.{sys.version_info[1]}"
)
# Executors that registered after an application's last check are asked before
# its next command, at most this often (asking for the list is a JVM round trip).
RECHECK_SECONDS = 5.0


class IncompatibleExecutorsError(RuntimeError):
    """Executors whose Python workers cannot load picklable payloads.

    Raised on the driver when a job's command is shipped (the action, or the
    query, that needs it), before the job runs: an executor whose workers lack
    picklable, or run another picklable version or Python minor version.

    Attributes
    ----------
    executors:
        ``"executor ID on HOST"`` -> what was found there, for each executor
        that differs.
    """

    def __init__(self, message: str, executors: dict[str, str]) -> None:
        super().__init__(message)
        self.executors = executors

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.args[0], self.executors))


class _Checked:
    __slots__ = ("executors", "at", "lock")

    def __init__(self) -> None:
        self.executors: set[str] = set()
        self.at = float("-inf")
        self.lock = threading.Lock()


# A SparkContext (or a Spark Connect session) -> its workers' Python and
# environment (classic) -> what was checked there.
_checked: weakref.WeakKeyDictionary[Any, dict[tuple[str, str], _Checked]] = (
    weakref.WeakKeyDictionary()
)
Reply = tuple[str, str, str]  # (executor ID or "", host, answer)


def _probe_functions() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The check's task functions (for an RDD's partitions, for a UDF's rows), made
    here so that PySpark's cloudpickle copies them (local functions): a worker
    without picklable runs them and answers."""

    def answer() -> list[str]:
        import os
        import re
        import socket

        try:
            from picklable.spark import ENVIRONMENT as found
        except Exception as exc:
            found = f"cannot import picklable.spark ({type(exc).__name__}: {exc})"
        # Standalone executors know their ID from their log URLs; Kubernetes sets it.
        url = re.search(r"[?&]executorId=([^&]+)", os.environ.get("SPARK_LOG_URL_STDERR", ""))
        executor = url.group(1) if url else os.environ.get("SPARK_EXECUTOR_ID", "")
        return [executor, socket.gethostname(), found]

    def per_partition(index: int, iterator: Iterator[Any]) -> Iterator[list[str]]:
        yield answer()

    def per_row(value: Any) -> list[str]:
        return answer()

    return per_partition, per_row


def _active_target() -> Any:
    """The active SparkContext, else the active Spark Connect session, else None."""
    sc = SparkContext._active_spark_context
    if sc is not None and getattr(sc, "_jsc", None) is not None:
        return sc
    connect = sys.modules.get("pyspark.sql.connect.session")
    if connect is not None:
        return connect.SparkSession.getActiveSession()
    return None


def _check_active_context() -> None:
    target = _active_target()
    if target is not None:
        check_executors(target)


def check_executors(spark: Any = None, *, force: bool = False) -> None:
    """Check that every executor's Python workers can load picklable payloads.

    Runs a small job (shipped with PySpark's own serializer, one task or more per
    executor) whose tasks report the picklable and Python they run: once per
    application, Python executable and worker environment, and again for
    executors that registered since, at most every :data:`RECHECK_SECONDS`.
    Through Spark Connect, whose client cannot list the executors, it runs once
    per session, on the executors its tasks reach. With :func:`enable`, every
    command calls it first; call it yourself to check a cluster before work
    starts.

    Parameters
    ----------
    spark:
        A ``SparkSession`` (classic or Spark Connect) or a ``SparkContext``;
        default: the active one.
    force:
        Ask every executor again, now.

    Raises
    ------
    IncompatibleExecutorsError
        Naming each executor (ID and host) whose workers cannot import picklable,
        or run another picklable version or Python minor version than this driver,
        and how to fix it.
    RuntimeError
        Without ``spark``, if no session is active.
    """
    target = _active_target() if spark is None else spark
    if target is None:
        raise RuntimeError("picklable.spark.check_executors: no active Spark session")
    if not isinstance(target, SparkContext):
        jsc = getattr(target, "_jsc", None)  # a classic SparkSession
        target = target.sparkContext if jsc is not None else target
    if isinstance(target, SparkContext):
        _check_classic(target, force)
    else:
        _check_connect(target, force)


def _check_classic(sc: SparkContext, force: bool) -> None:
    key = (str(sc.pythonExec), repr(sorted(sc.environment.items())))
    state = _checked.setdefault(sc, {}).setdefault(key, _Checked())
    if not force and state.executors and time.monotonic() - state.at < RECHECK_SECONDS:
        return
    with state.lock:
        now = time.monotonic()
        if not force and state.executors and now - state.at < RECHECK_SECONDS:
            return
        ids = _executor_ids(sc)
        state.at = now
        if ids and not force and state.executors.issuperset(ids):
            return
        tasks = max(2 * len(ids), sc.defaultParallelism, 2)
        replies = _run_probe(lambda: _probe_classic(sc, tasks))
        bad = _verdict(replies)
        # Executors the probe did not reach are not asked again until they differ.
        state.executors.update(ids)
        state.executors.difference_update(e for e, _, a in replies if a != ENVIRONMENT)
    if bad:
        _refuse(bad, max(len(ids), len(bad)), f"their Python: {sc.pythonExec}")


def _check_connect(spark: Any, force: bool) -> None:
    state = _checked.setdefault(spark, {}).setdefault(("connect", ""), _Checked())
    if state.executors and not force:
        return
    with state.lock:
        if state.executors and not force:
            return
        replies = _run_probe(lambda: _probe_connect(spark, 8))
        bad = _verdict(replies)
        state.executors.update(e or h for e, h, _ in replies)
    if bad:
        _refuse(bad, len({e or h for e, h, _ in replies}), "through Spark Connect")


def _executor_ids(sc: SparkContext) -> list[str]:
    ids = sc._jsc.sc().getExecutorIds()
    return sorted(str(ids.apply(i)) for i in range(ids.size()))


def _run_probe(run: Callable[[], list[Reply]]) -> list[Reply]:
    _probing.active = True
    try:
        return run()
    finally:
        _probing.active = False


def _probe_classic(sc: SparkContext, tasks: int) -> list[Reply]:
    per_partition, _ = _probe_functions()
    previous = sc.getLocalProperty("spark.job.description")
    sc.setLocalProperty("spark.job.description", "picklable.spark: check the executors")
    try:
        rdd = sc.parallelize(range(tasks), tasks).mapPartitionsWithIndex(per_partition)
        return [(str(e), str(h), str(a)) for e, h, a in rdd.collect()]
    finally:
        sc.setLocalProperty("spark.job.description", previous)  # type: ignore[arg-type]


def _probe_connect(spark: Any, tasks: int) -> list[Reply]:
    from pyspark.sql.functions import udf

    _, per_row = _probe_functions()
    probe = udf(per_row, "array<string>")
    rows = spark.range(0, tasks, 1, tasks).select(probe("id").alias("reply")).collect()
    return [(str(e), str(h), str(a)) for e, h, a in (row.reply for row in rows)]


def _verdict(replies: list[Reply]) -> dict[str, str]:
    """Each executor whose answer is not this driver's, and what it answered."""
    bad: dict[str, str] = {}
    for executor, host, answer in sorted(set(replies)):
        if answer != ENVIRONMENT:
            where = f"executor {executor} on {host}" if executor else f"an executor on {host}"
            bad[where] = answer if answer.startswith("cannot") else f"runs {answer}"
    return bad


def _refuse(bad: dict[str, str], total: int, python: str) -> None:
    lines = "\n".join(f"  {where}: {problem}" for where, problem in bad.items())
    raise IncompatibleExecutorsError(
        f"picklable.spark: {len(bad)} of {total} executors cannot load picklable payloads "
        f"(this driver: {ENVIRONMENT}; {python}):\n{lines}\n"
        f"Fix: install picklable {__version__} (pip install 'picklable[spark]=={__version__}') "
        "in the Python that runs the executors' workers (spark.pyspark.python, "
        "PYSPARK_PYTHON), or ship it with spark.submit.pyFiles / --py-files (see "
        "docs/spark.md). The job was not submitted.",
        bad,
    )

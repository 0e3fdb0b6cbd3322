"""Find *where* a payload fails: the attribute path from the root to the culprit.

The C pickler stops at the first object it cannot save and says only what that
object is. To say where it sits, walk the same graph in Python: take each piece
of an object (closure cells, referenced globals, defaults, instance state, items,
an exception's cause and context) as its kind declares them
(:mod:`picklable._reduce.table`), try each piece alone, and descend into the one
that fails until its pieces all pickle, or until an object of a kind that never
ships (a lock, an open file, a running generator: the table's verdict,
:func:`picklable._reduce.table.refusal`).
That object is the culprit; its path reads like the Python expression that
reaches it: ``job.__closure__[0].cell_contents._lock``.

:func:`shipping` answers the other question ``explain`` asks of every node: does
it go by reference (via which path), by value (and why it is not importable),
taken apart as a wrapper, or as plain data. It asks the reducers for their
decision (with a pickler that writes nowhere) and reads what the rebuilder
they name is declared to mean: it never decides again.
"""

from __future__ import annotations

import copyreg
import dataclasses
import pickle
import traceback
import types
from collections.abc import Callable, Iterator
from typing import Any

from .. import _reconstruct
from .._compat import PICKLE_OWN_TYPES
from .._pickler import Pickler
from .._reduce.attributes import candidate_state
from .._reduce.reference import locate_anywhere, split_state
from .._reduce.table import (
    DATA,
    DATA_KIND,
    Kind,
    Shipping,
    default_reduction,
    kind_for,
    refusal,
    verdict,
)
from .._reduce.wrappers import WithState
from ..exceptions import PicklingError
from .hints import REDUCE_METHODS, explain_failure
from .wording import CANNOT_PICKLE, first_line, type_name

__all__ = [
    "Decision",
    "Shipping",
    "children",
    "decide",
    "find_culprit",
    "root_name",
    "search",
    "shipping",
    "state_left_behind",
    "type_name",
]

MAX_CHILDREN = 10_000
# Saved by the C pickler itself: never a culprit, never a wrapper.
PLAIN_TYPES = PICKLE_OWN_TYPES


def root_name(obj: Any) -> str:
    """The name a path starts with: the object's own name for functions,
    classes and modules, else ``obj``."""
    t = type(obj)  # not isinstance: it asks obj.__class__, which may raise or recurse
    if (callable(obj) and not issubclass(t, types.MethodType)) or issubclass(t, types.ModuleType):
        try:
            name = obj.__name__
        except Exception:
            name = None
        if isinstance(name, str) and name.isidentifier():
            return name
    return "obj"


class _Discard:
    """A write target that keeps nothing: trying a piece costs no memory."""

    __slots__ = ()

    def write(self, data: Any) -> int:
        return len(data)


def _out_of_band(buffer: Any) -> bool:
    return False  # large buffers (arrays) are never copied while probing


class _AboveSkipped(Pickler):
    """A probe that writes a persistent id for the objects above the one tried
    (the path walked so far): a piece is blamed for what fails inside it, not
    for leading back to its container (sacred's run and its main function
    reach each other)."""

    def __init__(self, above: dict[int, Any]) -> None:
        super().__init__(_Discard(), buffer_callback=_out_of_band)  # type: ignore[arg-type]
        self.context.check_copies = True  # as dumps decides in the end (see _probe)
        self._above = above

    def persistent_id(self, obj: Any) -> Any:
        return 0 if id(obj) in self._above else None


def _pickles(obj: Any, above: dict[int, Any] | None = None) -> BaseException | None:
    """None if ``obj`` pickles alone (``above`` left out), else the error."""
    try:
        if above:
            _AboveSkipped({k: v for k, v in above.items() if k != id(obj)}).dump(obj)
        else:
            _probe().dump(obj)
    except RecursionError as exc:
        return exc
    except Exception as exc:
        return exc
    return None


# ------------------------------------------------------------- how it ships


def _probe() -> Pickler:
    """A pickler that writes nowhere, to ask the reducers for their decision.

    It decides as ``dumps`` does in the end: checking from the start what
    ``dumps`` checks on its second try (a script object that cannot be copied
    travels as a reference alone).
    """
    probe = Pickler(_Discard(), buffer_callback=_out_of_band)  # type: ignore[arg-type]
    probe.context.check_copies = True
    return probe


@dataclasses.dataclass(frozen=True)
class Decision:
    """What the pickler does with one object itself (its pieces aside).

    Attributes
    ----------
    kind:
        Its kind, from the table (:mod:`picklable._reduce.table`).
    reduction:
        What the kind's reducer answers (or pickle's own reduction when the
        reducer leaves the object to pickle; ``NotImplemented`` when pickle
        saves it by name); None when deciding raised.
    shipping:
        What that means: by reference, by value, taken apart, data or fails.
    """

    kind: Kind
    reduction: Any
    shipping: Shipping


def decide(obj: Any) -> Decision:
    """Ask the reducers how ``obj`` ships, with a pickler that writes nowhere.

    The pieces the reduction names are not pickled. The answer is read from
    that reduction and the declaration of the rebuilder it names: never
    decided a second time here.
    """
    kind = kind_for(type(obj))
    # A reducer registered for its type (copyreg.pickle) decides, not the kind.
    if not kind.by_name and kind is not DATA_KIND and type(obj) not in copyreg.dispatch_table:
        known = refusal(obj)
        if known is not None:
            return Decision(kind, None, Shipping("fails", why=known[0], fix=known[1]))
    context = _probe().context
    try:
        reduction = kind.reduce(context, obj) if kind.reduce is not None else NotImplemented
        if reduction is NotImplemented and not kind.by_name and kind is not DATA_KIND:
            reduction = default_reduction(context, obj)
    except PicklingError as exc:
        return Decision(kind, None, Shipping("fails", why=exc.reason or str(exc), fix=exc.hint))
    except RecursionError:
        raise
    except Exception as exc:
        why, fix = explain_failure(obj, exc)
        return Decision(kind, None, Shipping("fails", why=why, fix=fix))
    if type(reduction) is tuple and reduction and reduction[0] is _reconstruct._with_state:
        return Decision(kind, reduction, shipping(reduction[1][0]))
    return Decision(kind, reduction, verdict(kind, obj, reduction))


def shipping(obj: Any) -> Shipping:
    """How the pickler ships ``obj`` (see :class:`Shipping`); pickles nothing.

    Parameters
    ----------
    obj:
        Any object met in a payload.

    Returns
    -------
    Shipping
        ``how`` it goes, ``via`` which path, and ``why`` (see :func:`decide`).
    """
    if type(obj) in PLAIN_TYPES:
        return DATA
    return decide(obj).shipping


def reference_path(obj: Any) -> str | None:
    """``module:path`` under which the receiver finds ``obj`` itself, or None."""
    how = shipping(obj)
    return how.via if how.how == "reference" else None


def state_left_behind(obj: Any) -> list[str]:
    """Names of the attributes of ``obj`` that do not travel when it is shipped.

    A function importable by its own name goes by reference, as with pickle: its
    attributes stay in the sender, and the receiver sees its own values. A
    wrapper found by reference (a decorator product, a proxy) carries what the
    sender set on it, except what cannot be pickled (a lock, a thread, a
    connection), which stays behind. A copy carries them all.

    Parameters
    ----------
    obj:
        Any object that could be shipped.

    Returns
    -------
    list of str
        Sorted attribute names (metadata such as ``__name__`` or ``__wrapped__``
        left out); empty when ``obj`` travels by value or has no state.
    """
    probe = _probe().context
    where = locate_anywhere(probe, obj)
    if where is None:
        return []  # a copy carries all of it
    if type(obj) is types.FunctionType and where[0] in ("name", "script"):
        return sorted(candidate_state(obj))  # by its own name, as pickle sends a function
    return sorted(split_state(probe, obj)[1])  # what cannot be pickled stays


# ------------------------------------------------------------------ pieces


def children(obj: Any, decided: Decision | None = None) -> Iterator[tuple[str, Any]]:
    """(path suffix, piece) for each piece that shipping ``obj`` would ship.

    The pieces are the ones its kind declares (:mod:`picklable._reduce.table`).

    Parameters
    ----------
    obj:
        Any object.
    decided:
        ``decide(obj)`` when already known.

    Returns
    -------
    iterator of (str, object)
        Nothing for objects that go by reference (their pieces stay behind),
        except the state a ``with_state`` marker carries.
    """
    kind = kind_for(type(obj))
    reduction = None
    if type(obj) is not WithState and type(obj) not in PLAIN_TYPES:
        if decided is None:
            decided = decide(obj)
        reduction = decided.reduction
        if decided.shipping.how == "reference":
            # Nothing of it travels but the state a reference carries.
            yield from _carried_pieces(reduction)
            return
        if decided.shipping.how == "fails":
            return
    if kind.pieces is None:
        return
    for i, piece in enumerate(kind.pieces(obj, reduction)):
        if i >= MAX_CHILDREN:
            return
        yield piece
    if kind.class_piece and shipping(type(obj)).how != "reference":
        yield ".__class__", type(obj)  # a class shipped by value can hold the culprit


def _carried_pieces(reduction: Any) -> Iterator[tuple[str, Any]]:
    if type(reduction) is not tuple or not reduction:
        return
    state = None
    if reduction[0] is _reconstruct._own_or_copy and len(reduction) > 1:
        args = reduction[1]
        state = args[1] if len(args) > 1 and args[1] is not None else None
        if state is None and len(reduction) > 2:
            state = reduction[2]
        links = args[3] if len(args) > 3 else None
        if type(links) is dict:
            for key, value in links.items():
                yield f".__globals__[{key!r}]", value
    elif len(reduction) > 5 and reduction[5] is _reconstruct._with_state:
        state = reduction[2]
    if type(state) is dict:
        for key, value in state.items():
            yield f".{key}", value


# ----------------------------------------------------------------- culprit


def find_culprit(
    root: Any, error: BaseException | None = None, name: str | None = None
) -> tuple[str, Any, BaseException]:
    """Return (path, culprit, its error) for an object that fails to pickle.

    When the error says which object failed (the ``self`` of the ``__reduce__``
    or ``__getstate__`` that raised, or the type the C pickler names in "cannot
    pickle 'X' object"), the path to it is found by walking the graph in
    pickling order without pickling anything: the culprit's own reduction is
    not run again (stdlib pickle runs it once; a walk that pickles each piece
    alone would run it once per level). Otherwise each piece is pickled alone,
    descending into the one that fails.

    Parameters
    ----------
    root:
        The object whose pickling failed.
    error:
        Its error, when known (else it is pickled once more to get it).
    name:
        The name the path starts with (default: :func:`root_name`).
    """
    path = name or root_name(root)
    current_error = error if error is not None else _pickles(root)
    assert current_error is not None
    target = _named_by(current_error)
    if target is not None:
        found = search(root, path, target)
        if found is not None:
            return (*found, current_error)
    current = root
    above: dict[int, Any] = {}
    while current_error is not None and id(current) not in above:
        above[id(current)] = current
        if refusal(current) is not None:
            break  # the lock inside an Event is not the news: the Event is
        for suffix, child in children(current):
            child_error = _pickles(child, above)
            if child_error is not None:
                path += suffix
                current, current_error = child, child_error
                break
        else:
            break
    assert current_error is not None
    return path, current, current_error


# Objects visited at most by the walk that looks for a named culprit.
_SEARCH_LIMIT = 100_000


def _named_by(error: BaseException) -> Callable[[Any], bool] | None:
    """A test for the object ``error`` says failed, or None when it does not say.

    The innermost frame of a pickling method (``__reduce__``, ``__getstate__``,
    ...) in its traceback ran on that object (its ``self``); the C pickler's
    "cannot pickle 'X' object" names its type.
    """
    for frame, _ in reversed(list(traceback.walk_tb(error.__traceback__))):
        if frame.f_code.co_name in REDUCE_METHODS and "self" in frame.f_locals:
            culprit = frame.f_locals["self"]
            return lambda obj: obj is culprit
    if isinstance(error, TypeError):
        named = CANNOT_PICKLE.match(first_line(error))
        if named is not None:
            wanted = named.group(1)

            def of_named_type(obj: Any) -> bool:
                t = type(obj)
                return wanted in (t.__name__, t.__qualname__, type_name(obj))

            return of_named_type
    return None


def search(root: Any, path: str, is_culprit: Callable[[Any], bool]) -> tuple[str, Any] | None:
    """(path, object) of the first object in pickling order that ``is_culprit``
    or cannot ship by itself, or None (not found within :data:`_SEARCH_LIMIT`).

    Depth first over each kind's pieces, as the pickler goes; pieces that ship
    by reference are not entered (their insides stay behind), and each object
    is visited once (pickle's memo).
    """
    seen: set[int] = set()
    stack: list[tuple[str, Iterator[tuple[str, Any]]]] = []
    node: tuple[str, Any] | None = (path, root)
    visited = 0
    while True:
        if node is not None:
            where, obj = node
            node = None
            visited += 1
            if visited > _SEARCH_LIMIT:
                return None
            seen.add(id(obj))
            if is_culprit(obj):
                return where, obj
            if type(obj) not in PLAIN_TYPES:
                decided = decide(obj)
                if decided.shipping.how == "fails":
                    if _pickles(obj) is not None:  # decided alone: check it really fails
                        return where, obj
                    continue  # it ships, and so does all it holds
                pieces = children(obj, decided)
            else:
                pieces = children(obj)
            stack.append((where, pieces))
        if not stack:
            return None
        where, pieces = stack[-1]
        try:
            suffix, child = next(pieces)
        except StopIteration:
            stack.pop()
            continue
        except Exception:  # a piece that cannot even be listed: not this way
            stack.pop()
            continue
        if id(child) not in seen and type(child) not in _LEAVES:
            node = (where + suffix, child)


# Saved by the C pickler as they are: never a culprit, nothing inside.
_LEAVES = frozenset(
    {type(None), bool, int, float, complex, str, bytes, bytearray, pickle.PickleBuffer}
)

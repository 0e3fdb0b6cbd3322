"""What the reducers of one pickler read and call: its :class:`DumpContext`.

Each pickler (:class:`picklable.Pickler`, the deterministic one) owns one
context, made with it, and hands it to every reducer in place of itself: the
reducers see the fields below and the operations the context offers, never
the pickler. The context is the one owner of the state of the payloads that
pickler makes; the front door (:mod:`picklable._api`) reads and resets that
state through the same fields, and steers its one retry with :meth:`retry`.

This module is the bottom of :mod:`picklable._reduce`: every reducer is typed
against it, and it imports none of them (the operations that need the table of
kinds or a pickler are implemented by :class:`picklable._pickler.PicklerContext`).
"""

from __future__ import annotations

import abc
import types
from typing import Any, Protocol

from .state import PayloadState

__all__ = ["Canonical", "DumpContext"]


class Canonical(Protocol):
    """The policy of deterministic payloads (``DumpContext.canonical``): the
    answers of the default pickler that vary between processes, made to
    depend on the object alone (see :mod:`picklable._deterministic`)."""

    def code_bytes(self, code: types.CodeType) -> bytes:
        """marshal bytes of ``code`` that depend on the code alone."""

    def class_id(self, klass: type) -> str:
        """The tracker id of a class shipped by value."""

    def object_id(self, obj: Any) -> str:
        """The tracker id of a type variable shipped by value."""


class DumpContext(abc.ABC):
    """The per-dump state of one pickler and the operations its reducers need.

    Attributes
    ----------
    protocol:
        The pickle protocol of the payloads.
    scripts:
        How objects of the sender's script travel (``Pickler``'s ``scripts``:
        ``"auto"``, ``"reference"`` or ``"copy"``; see :mod:`.scripts`).
    check_copies:
        Set for a second try after a failed dump (:meth:`retry`): script
        objects that cannot be copied then travel as references alone (see
        :mod:`.scripts`). The diagnostics set it from the start, to decide as
        ``dumps`` does in the end.
    stand_ins:
        Set for a second try after a dump failed inside an exception's chain
        (:meth:`retry`): a ``__cause__`` or ``__context__`` that cannot travel
        is stood in for by a :class:`picklable.RemoteError` naming it and why
        (see ``exceptions.chain``), so that the exception itself still does,
        as pickle ships it (without any chain).
    trial:
        Whether this is the context of a pickler that only tries whether
        something pickles (:meth:`copy_failure`, :meth:`round_trips`): it tries
        nothing itself (a wrapper's state inside is carried as it is).
    canonical:
        The policy of deterministic payloads (code bytes and class ids that
        depend on the object alone: :class:`Canonical`), None for the default.
    table:
        The dispatch table pickle consults after the hook (the plain-instance
        reducer defers to its entries): the pickler's own, or
        ``copyreg.dispatch_table``.
    payload:
        The state the reducers of the payload being made share, None until a
        reducer needs it (a payload of plain data never makes one; see
        :meth:`state`). The front door reads it when the dump is done, and sets
        it back to None.
    memo_off:
        Whether the pickler writes without a memo (``fast``): no object can be
        referred to again, so a closure's cells always travel as cells.
    trying:
        ids of the objects whose state is being tried (``split_state`` in
        :mod:`.reference`): met again inside that state (it leads back to
        them), they are references without state, and the real dump sets the
        state once, after the object is memoized. One set for a pickler and
        the trial picklers it makes, which try that state; empty between dumps.
    """

    __slots__ = (
        "protocol",
        "scripts",
        "check_copies",
        "stand_ins",
        "trial",
        "canonical",
        "table",
        "payload",
        "memo_off",
        "trying",
    )

    def __init__(
        self, protocol: int, scripts: str, canonical: Canonical | None, table: Any
    ) -> None:
        self.protocol = protocol
        self.scripts = scripts
        self.check_copies = False
        self.stand_ins = False
        self.trial = False
        self.canonical = canonical
        self.table = table
        self.payload: PayloadState | None = None
        self.memo_off = False
        self.trying: set[int] = set()

    def state(self) -> PayloadState:
        """The state the reducers of this payload share (made on first need)."""
        state = self.payload
        if state is None:
            state = self.payload = PayloadState()
        return state

    def copied_scripts(self) -> bool:
        """Whether the payload so far copied objects of the script that might
        have gone as references alone (``scripts="auto"``): after a failed
        dump, one of them may be what cannot be copied, and a second try that
        checks each copy (:meth:`retry`) may succeed."""
        payload = self.payload
        return payload is not None and payload.script_copies and self.scripts == "auto"

    def retry(self, check_copies: bool, stand_ins: bool = False) -> None:
        """Start the payload over, for a second try after a failed dump;
        ``check_copies``, ``stand_ins``: see the attributes."""
        self.payload = None
        self.check_copies = check_copies
        self.stand_ins = stand_ins

    @abc.abstractmethod
    def reclassify(self, obj: Any) -> Any:
        """Reduce ``obj`` after its class changed how it pickles (a reducer
        noticed): the reduction of its kind found again, or ``NotImplemented``."""

    @abc.abstractmethod
    def copy_failure(self, obj: Any) -> str | None:
        """Why ``obj`` cannot be copied (a trial dump of its copy), or None."""

    @abc.abstractmethod
    def trial_failure(self, value: Any) -> str | None:
        """Why ``value`` does not pickle on its own and load again (a trial),
        or None when it does."""

    @abc.abstractmethod
    def round_trips(self, value: Any) -> bool:
        """Whether ``value`` pickles on its own and loads again (a trial)."""

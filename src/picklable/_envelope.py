"""``ship(obj)``: an envelope any pickle-based engine can carry.

Engines that pickle with stdlib pickle (multiprocessing, concurrent.futures,
Ray, mpi4py, Celery's pickle serializer), or with cloudpickle (loky, joblib),
cannot ship what picklable ships. Wrap the object instead::

    pool.map(picklable.ship(fn), items)

Dask distributed is the exception: its scheduler unpickles and re-pickles task
graphs with its own serializer, which opens the envelope on the way. Use
:mod:`picklable.dask`, whose envelopes stay bytes until a worker opens them.

The envelope's pickle reduction is ``(_open_envelope, (digest, payload))``:
the picklable payload as bytes, made once by :func:`ship`. The receiving
process loads the payload once, keeps the object under the payload's digest,
and hands out that same object for every later envelope with that digest: an
engine that pickles the envelope with every task pays for the bytes, not for
loading them again.

``_open_envelope`` is written into payloads by name: it is frozen (add new
rebuilders, never rename this one).
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Generic, TypeVar

try:
    from _blake2 import blake2b  # what hashlib.blake2b is, without importing OpenSSL
except ImportError:  # pragma: no cover - Pythons built without it
    from hashlib import blake2b

from . import _caches
from ._api import dumps, loads

__all__ = ["Envelope", "ship"]

T = TypeVar("T")

# Objects loaded from envelopes in this process, by digest (least recently
# used first). Big enough for the handful of functions and models a program
# ships; a shipped object that falls out is loaded again if it comes back.
CACHE_SIZE = 128
_cache: collections.OrderedDict[bytes, Any] = collections.OrderedDict()
_lock = threading.Lock()
_caches.register("envelope.opened", _cache.clear)


class Envelope(Generic[T]):
    """An object packed with picklable, for engines that pickle with something else.

    Made by :func:`ship`. Pickled by any pickler, it loads (in the receiving
    process) as the object itself, loaded once per process and digest. In the
    sending process it can be called like the object it holds, so an engine
    that runs a task in-process (joblib with one job) needs no special case.

    Attributes
    ----------
    obj:
        The object, as it was given to :func:`ship`.
    payload:
        Its picklable payload (made when the envelope was made).
    digest:
        BLAKE2b digest (16 bytes) of the payload: the receiver's cache key.
    """

    __slots__ = ("obj", "payload", "digest", "__weakref__")

    def __init__(self, obj: T, payload: bytes, digest: bytes) -> None:
        self.obj = obj
        self.payload = payload
        self.digest = digest

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.obj(*args, **kwargs)  # type: ignore[operator]

    def __reduce__(self) -> tuple[Any, ...]:
        return (_open_envelope, (self.digest, self.payload))

    def __repr__(self) -> str:
        kind = type(self.obj)
        return (
            f"<picklable.Envelope of {kind.__module__}.{kind.__qualname__}, "
            f"{len(self.payload)} bytes, digest {self.digest.hex()[:12]}>"
        )


def ship(obj: T) -> Envelope[T]:
    """Pack ``obj`` with picklable into an envelope any pickler can carry.

    The payload is made now, so an object that cannot ship fails here, with
    picklable's explanation, and later changes to ``obj`` do not travel (ship
    again to send a new state). In the receiving process the envelope loads as
    the object itself; the payload is loaded once per process and digest and
    the object reused after that, so treat it as read-only there.

    Parameters
    ----------
    obj:
        Anything picklable ships: a lambda, a closure, a decorated or
        ``__main__`` function, an object holding them.

    Returns
    -------
    Envelope
        Callable like ``obj`` in this process.

    Raises
    ------
    picklable.PicklingError
        If ``obj`` cannot be shipped; names the attribute path of the culprit.

    Examples
    --------
    >>> with multiprocessing.get_context("spawn").Pool(2) as pool:
    ...     pool.map(picklable.ship(lambda x: x * 2), range(4))
    [0, 2, 4, 6]
    >>> joblib.Parallel(n_jobs=2)(joblib.delayed(picklable.ship(fn))(x) for x in data)
    """
    payload = dumps(obj)
    return Envelope(obj, payload, blake2b(payload, digest_size=16).digest())


def _open_envelope(digest: bytes, payload: bytes) -> Any:
    """Rebuilder named in envelope pickles (frozen): the object, loaded once per digest."""
    with _lock:
        try:
            obj = _cache[digest]
        except KeyError:
            pass
        else:
            _cache.move_to_end(digest)
            return obj
    # Loaded outside the lock: a payload may itself hold envelopes.
    obj = loads(payload)
    with _lock:
        if digest in _cache:
            obj = _cache[digest]  # another thread won the race: one object per digest
            _cache.move_to_end(digest)
        else:
            _cache[digest] = obj
            if len(_cache) > CACHE_SIZE:
                _cache.popitem(last=False)
    return obj

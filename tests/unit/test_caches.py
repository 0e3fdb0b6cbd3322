"""Tests for `picklable._caches`: every process-wide cache, reset by one call."""

from __future__ import annotations

import functools

import picklable
from picklable import _api, _caches, _code, _deterministic, _envelope, _locator, _traceback
from picklable._reduce import classes, functions, type_cache
from picklable_testpkg import api


def fill() -> None:
    """Use every cache once: dump and load functions, classes, errors, envelopes."""
    scale = 2

    def closure(x):
        return x * scale

    class Local:  # its instances' kind is cached by id, a weak entry
        pass

    payload = picklable.dumps([closure, api.make_class(), api.plain, api.Frame.mean, Local()])
    picklable.loads(payload)
    try:
        raise ValueError("x")
    except ValueError as exc:
        picklable.loads(picklable.dumps(exc))
    sealed = picklable.loads(picklable.dumps(picklable.ship(api.plain)))
    assert sealed(1) == 2  # a loaded envelope opens (and fills its cache) when called
    picklable.dumps(closure, deterministic=True)
    key = picklable.new_key()
    picklable.loads(picklable.dumps(1, key=key), key=key)
    picklable.explain(functools.partial(closure, 1))
    picklable.dumps(b"x", buffer_callback=lambda buffer: True)


class TestClearCaches:
    def test_public(self):
        """picklable.clear_caches is public and listed."""
        assert picklable.clear_caches is _caches.clear_caches
        assert "clear_caches" in picklable.__all__

    def test_every_cache_is_emptied(self):
        """After clear_caches, each cache a payload filled is empty."""
        fill()
        caches = {
            "kinds": type_cache.HANDLERS,
            "lasting kinds": type_cache.LASTING,
            "by name": _locator.by_name,
            "module indexes": _locator._indexes,
            "located answers": _locator._hits,
            "code info": functions._code_cache,
            "loaded code": _code.CODES,
            "deterministic code": _deterministic._codes,
            "traceback records": _traceback._records,
            "rebuilt frames": _traceback._frames,
            "opened envelopes": _envelope._cache,
            "idle picklers": _api._idle,
            "idle out-of-band picklers": _api._idle_out_of_band,
        }
        filled = sorted(name for name, cache in caches.items() if cache)
        assert filled == sorted(caches)
        picklable.clear_caches()
        assert sorted(name for name, cache in caches.items() if cache) == []
        # The two built-in types every by-value payload names stay seeded.
        assert len(classes._builtin_type_refs) == 2

    def test_everything_still_works_after(self):
        """Clearing is never needed for correctness, and never breaks anything."""
        fill()
        picklable.clear_caches()
        fill()
        assert picklable.loads(picklable.dumps(api.plain)) is api.plain

    def test_registered_names(self):
        """Each owner registers under a name that says which cache it is."""
        names = _caches.registered()
        assert {
            "locator",
            "reduce.kinds",
            "functions.code_info",
            "code.loaded",
            "repeat.kept_payloads",
        } <= set(names)
        assert all(name == name.strip() and name for name in names)

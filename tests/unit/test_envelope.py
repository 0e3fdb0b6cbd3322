"""Tests for `picklable._envelope` (``ship``): here and in a fresh interpreter."""

from __future__ import annotations

import pickle
import sys
import threading
import types

import cloudpickle
import pytest
from dask.base import tokenize

import picklable
from picklable import _envelope
from picklable_testpkg import api
from support import envelope_checks

PICKLERS = [pickle.dumps, cloudpickle.dumps, picklable.dumps]


@pytest.fixture(autouse=True)
def empty_cache():
    _envelope._cache.clear()
    yield
    _envelope._cache.clear()


class TestShip:
    def test_returns_envelope(self):
        """ship() wraps the object with its payload and digest."""
        fn = lambda x: x + 1  # noqa: E731
        env = picklable.ship(fn)
        assert isinstance(env, picklable.Envelope) and env.obj is fn and env.opened
        assert picklable.loads(env.payload)(1) == 2
        assert len(env.digest) == 16

    def test_callable_like_the_object(self):
        """In the sending process the envelope calls the object."""
        assert picklable.ship(lambda a, b=1: a * b)(3, b=4) == 12

    def test_same_payload_same_digest(self):
        """The digest is that of the payload: equal payloads, equal digests."""
        assert picklable.ship(api.plain).digest == picklable.ship(api.plain).digest
        assert picklable.ship(api.plain).digest != picklable.ship(api.add).digest

    def test_unshippable_fails_at_ship(self):
        """What cannot ship fails in ship(), with picklable's explanation."""
        lock = threading.Lock()
        with pytest.raises(picklable.PicklingError) as info:
            picklable.ship(lambda: lock)
        assert "lock" in str(info.value)

    def test_repr(self):
        """The repr names the object, the size, the digest and whether it is opened."""
        env = picklable.ship([1, 2])
        assert repr(env) == (
            f"<picklable.Envelope of list, {len(env.payload)} bytes, "
            f"digest {env.digest.hex()[:12]}, opened>"
        )
        assert repr(pickle.loads(pickle.dumps(env))).endswith(", sealed>")

    def test_name_and_dask_token(self):
        """Engines name tasks by __name__ and Dask tokenizes by the digest."""

        def area(w, h):
            return w * h

        env = picklable.ship(area)
        loaded = pickle.loads(pickle.dumps(env))
        assert env.__name__ == loaded.__name__ == "area"
        assert not loaded.opened  # naming it opened nothing
        assert tokenize(env) == tokenize(loaded) != tokenize(picklable.ship(lambda: 1))


class TestSealed:
    """An unpickled envelope stays sealed until used, and re-pickles as the same bytes."""

    @pytest.mark.parametrize("dumps", PICKLERS)
    def test_any_pickler_carries_it(self, dumps):
        """stdlib pickle, cloudpickle and picklable all carry the envelope; it opens on call."""
        offset = 5
        loaded = pickle.loads(dumps(picklable.ship(lambda x: x + offset)))
        assert type(loaded) is picklable.Envelope and not loaded.opened
        assert loaded(1) == 6 and loaded.opened

    @pytest.mark.parametrize("dumps", PICKLERS)
    def test_repickles_as_the_same_bytes(self, dumps):
        """Unpickled (and even opened), it pickles again as exactly the bytes it came in."""
        env = picklable.ship(lambda x: x * 2)
        first = dumps(env)
        loaded = pickle.loads(first)
        assert dumps(loaded) == first
        loaded(1)
        assert dumps(loaded) == first

    def test_through_hops_of_different_picklers(self):
        """pickle, then cloudpickle, then picklable, then pickle: the object arrives whole."""

        class Counter:
            def __init__(self):
                self.calls = 0

            def __call__(self, x):
                self.calls += 1
                return (self.calls, x)

        env = picklable.ship(Counter())
        hop = env
        for dumps in [pickle.dumps, cloudpickle.dumps, picklable.dumps, pickle.dumps]:
            hop = pickle.loads(dumps(hop))
            assert not hop.opened
        assert hop(7) == (1, 7) and type(hop.obj).__qualname__.endswith("Counter")
        assert hop.obj is not env.obj  # a copy: the class is local

    def test_not_loaded_until_used(self):
        """Unpickling loads nothing; the content is loaded on first use, into the cache."""
        env = picklable.ship(lambda: "used")
        loaded = pickle.loads(pickle.dumps(env))
        assert env.digest not in _envelope._cache
        assert loaded() == "used" and env.digest in _envelope._cache

    def test_passes_where_its_content_cannot_load(self, monkeypatch):
        """A hop without the content's module still passes the envelope on intact."""
        module = types.ModuleType("only_on_the_sender")
        exec("def hello():\n    return 'hi'\n", module.__dict__)
        monkeypatch.setitem(sys.modules, "only_on_the_sender", module)
        wire = pickle.dumps(picklable.ship(module.hello))
        monkeypatch.delitem(sys.modules, "only_on_the_sender")

        relayed = pickle.loads(wire)  # this hop has no such module
        assert pickle.dumps(relayed) == wire
        with pytest.raises(picklable.UnpicklingError, match="only_on_the_sender"):
            relayed()
        monkeypatch.setitem(sys.modules, "only_on_the_sender", module)
        assert pickle.loads(wire)() == "hi"  # the receiver has it

    def test_loaded_once_per_digest(self):
        """Two envelopes with the same payload open to the same object."""
        env = picklable.ship(lambda: "shipped")
        first = pickle.loads(pickle.dumps(env))
        second = pickle.loads(pickle.dumps(picklable.ship(env.obj)))
        assert first.obj is second.obj and first.obj is not env.obj

    def test_cache_is_bounded(self, monkeypatch):
        """The receiver keeps at most CACHE_SIZE objects, least recent out first."""
        monkeypatch.setattr(_envelope, "CACHE_SIZE", 2)
        envs = [picklable.ship([i]) for i in range(3)]
        first = pickle.loads(pickle.dumps(envs[0])).obj
        for env in envs[1:]:
            pickle.loads(pickle.dumps(env)).obj  # noqa: B018 - opening is the point
        assert len(_envelope._cache) == 2
        assert pickle.loads(pickle.dumps(envs[0])).obj is not first

    def test_importable_object_stays_itself(self):
        """An importable object opens as the receiver's very object."""
        loaded = pickle.loads(pickle.dumps(picklable.ship(api.Frame.mean)))
        assert loaded.obj is api.Frame.mean

    def test_envelope_arguments_are_opened(self):
        """Envelopes passed to an envelope's call reach the object opened."""
        check = pickle.loads(pickle.dumps(picklable.ship(lambda f, *, g: (f is g, f(2)))))
        mean = pickle.loads(pickle.dumps(picklable.ship(lambda x: x / 2)))
        assert check(mean, g=mean) == (True, 1.0)

    def test_nested_envelope_stays_sealed(self):
        """An envelope inside a shipped object is sealed after the outer one opens."""
        inner = picklable.ship(lambda: "inner")
        outer = pickle.loads(pickle.dumps(picklable.ship({"job": inner})))
        job = outer.obj["job"]
        assert type(job) is picklable.Envelope and not job.opened and job() == "inner"

    def test_old_rebuilder_loads_the_object(self):
        """Payloads written with the 0.1.0 rebuilder still load as the object itself."""
        env = picklable.ship(lambda: 3)
        assert _envelope._open_envelope(env.digest, env.payload)() == 3

    def test_in_a_fresh_interpreter(self, child):
        """In another interpreter: sealed, same bytes again, opened once, the object itself."""
        env = picklable.ship(lambda x: x * 7)
        payload = pickle.dumps(env)
        assert child.run(envelope_checks.load_twice_and_call, payload, 3) == (True, True, True, 21)
        assert child.run(
            envelope_checks.opens_to_importable_object,
            pickle.dumps(picklable.ship(api.Frame.mean)),
            "picklable_testpkg.api",
            "Frame.mean",
        )
        relayed = child.run(envelope_checks.relay, payload)
        assert relayed == payload

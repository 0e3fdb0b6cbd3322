"""Tests for `picklable._envelope` (``ship``): here and in a fresh interpreter."""

from __future__ import annotations

import pickle
import threading

import cloudpickle
import pytest

import picklable
from picklable import _envelope
from picklable_testpkg import api, pool_tasks


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
        assert isinstance(env, picklable.Envelope) and env.obj is fn
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
        """The repr names the type, the size and the digest."""
        env = picklable.ship([1, 2])
        assert repr(env).startswith("<picklable.Envelope of builtins.list, ") and env.digest.hex()[
            :12
        ] in repr(env)


class TestOpenEnvelope:
    @pytest.mark.parametrize("dumps", [pickle.dumps, cloudpickle.dumps, picklable.dumps])
    def test_any_pickler_carries_it(self, dumps):
        """stdlib pickle, cloudpickle and picklable all carry the envelope."""
        offset = 5
        loaded = pickle.loads(dumps(picklable.ship(lambda x: x + offset)))
        assert loaded(1) == 6

    def test_loaded_once_per_digest(self):
        """A second envelope with the same payload gives the same object."""
        env = picklable.ship(lambda: "shipped")
        first = pickle.loads(pickle.dumps(env))
        second = pickle.loads(pickle.dumps(picklable.ship(env.obj)))
        assert first is second and first is not env.obj

    def test_cache_is_bounded(self, monkeypatch):
        """The receiver keeps at most CACHE_SIZE objects, least recent out first."""
        monkeypatch.setattr(_envelope, "CACHE_SIZE", 2)
        envs = [picklable.ship([i]) for i in range(3)]
        first = pickle.loads(pickle.dumps(envs[0]))
        for env in envs[1:]:
            pickle.loads(pickle.dumps(env))
        assert len(_envelope._cache) == 2
        assert pickle.loads(pickle.dumps(envs[0])) is not first

    def test_importable_object_stays_itself(self):
        """An importable object arrives as the receiver's very object."""
        assert pickle.loads(pickle.dumps(picklable.ship(api.Frame.mean))) is api.Frame.mean

    def test_in_a_fresh_interpreter(self, child):
        """In another interpreter the envelope loads once and is the object itself."""
        from support import checks

        env = picklable.ship(lambda x: x * 7)
        payload = pickle.dumps(env)
        assert child.run(pool_tasks.load_twice_and_call, payload, 3) == (True, 21)
        assert child.run(
            checks.is_importable_object,
            pickle.dumps(picklable.ship(api.Frame.mean)),
            "picklable_testpkg.api",
            "Frame.mean",
        )

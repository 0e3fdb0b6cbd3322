"""Tests for `picklable.compat.cloudpickle` and cloudpickle's names and signatures
in picklable's API (issue 17): code written for cloudpickle swaps the import."""

from __future__ import annotations

import io
import pickle
import sys
import threading
import types

import pytest

import picklable
import picklable.compat.cloudpickle as cloudpickle


class NoState:
    def __getstate__(self):
        raise TypeError("nope")


class TestModule:
    def test_names(self):
        """cloudpickle's public names, bound to picklable's own objects."""
        assert cloudpickle.dumps is picklable.dumps
        assert cloudpickle.loads is picklable.loads
        assert cloudpickle.dump is picklable.dump
        assert cloudpickle.load is picklable.load
        assert cloudpickle.Pickler is cloudpickle.CloudPickler is picklable.Pickler
        assert cloudpickle.DEFAULT_PROTOCOL == pickle.HIGHEST_PROTOCOL == 5
        assert cloudpickle.register_pickle_by_value is picklable.register_pickle_by_value
        assert all(hasattr(cloudpickle, name) for name in cloudpickle.__all__)

    def test_is_tornado_coroutine_is_deprecated(self):
        """The old helper answers Tornado's own check, with a DeprecationWarning."""
        gen = pytest.importorskip("tornado.gen")

        @gen.coroutine
        def coroutine():
            yield gen.sleep(0)

        with pytest.warns(DeprecationWarning, match="tornado.gen.is_coroutine_function"):
            assert cloudpickle.is_tornado_coroutine(coroutine)
        with pytest.warns(DeprecationWarning, match="is deprecated"):
            assert not cloudpickle.is_tornado_coroutine(len)


class TestRegistry:
    def test_cloudpickle_contract(self, monkeypatch):
        """Module objects only; the registry as a set."""
        module = types.ModuleType("registry_probe")
        monkeypatch.setitem(sys.modules, "registry_probe", module)
        assert picklable.list_registry_pickle_by_value() == set()
        picklable.register_pickle_by_value(module)
        try:
            assert picklable.list_registry_pickle_by_value() == {"registry_probe"}
            assert picklable.list_registry_by_value() == ["registry_probe"]
            with pytest.raises(ValueError, match="is not a module object"):
                picklable.unregister_pickle_by_value("registry_probe")  # type: ignore[arg-type]
        finally:
            picklable.unregister_pickle_by_value(module)
        assert picklable.list_registry_pickle_by_value() == set()
        with pytest.raises(ValueError, match="is not registered to ship by value"):
            picklable.unregister_pickle_by_value(module)
        with pytest.raises(ValueError, match="is not a module object"):
            picklable.register_pickle_by_value("registry_probe")  # type: ignore[arg-type]

    def test_module_not_imported(self):
        """A module that sys.modules does not hold under its name is refused."""
        with pytest.raises(ValueError, match="import it with an import statement"):
            picklable.register_pickle_by_value(types.ModuleType("nowhere"))


class TestSignatures:
    def test_pickler_third_positional(self):
        """pickle's third positional is fix_imports; cloudpickle's is buffer_callback."""
        buffers: list[pickle.PickleBuffer] = []
        data = pickle.PickleBuffer(bytearray(100))
        out = io.BytesIO()
        cloudpickle.Pickler(out, 5, buffers.append).dump(data)
        assert len(buffers) == 1
        out = io.BytesIO()
        picklable.Pickler(out, 2, False).dump(ValueError)
        assert b"cbuiltins\nValueError" in out.getvalue()
        out = io.BytesIO()
        picklable.Pickler(out, 5, True, buffers.append).dump(data)
        assert len(buffers) == 2
        with pytest.raises(TypeError, match="buffer_callback given twice"):
            picklable.Pickler(io.BytesIO(), 5, buffers.append, buffer_callback=buffers.append)

    def test_dump_buffer_callback_positional(self):
        """dump(obj, file, protocol, buffer_callback), as cloudpickle.dump."""
        buffers: list[pickle.PickleBuffer] = []
        out = io.BytesIO()
        cloudpickle.dump(pickle.PickleBuffer(b"x" * 100), out, 5, buffers.append)
        assert len(buffers) == 1
        assert bytes(picklable.loads(out.getvalue(), buffers=buffers)) == b"x" * 100


class TestDaskProtocol:
    """Dask's own protocol (distributed.protocol.pickle), its cloudpickle swapped."""

    @pytest.fixture
    def protocol(self, monkeypatch):
        module = pytest.importorskip("distributed.protocol.pickle")
        monkeypatch.setattr(module, "cloudpickle", cloudpickle)
        return module

    def test_nested_failure_keeps_its_type(self, protocol, caplog):
        """What Dask's tests expect of a nested object that refuses: its TypeError."""
        with pytest.raises(TypeError, match="nope"):
            protocol.dumps([NoState()])

    def test_local_function_ships(self, protocol):
        """What pickle refuses goes through the swapped serializer."""
        offset = 3
        payload = protocol.dumps(lambda x: x + offset)
        assert protocol.loads(payload)(1) == 4

    def test_lock_is_a_type_error(self, protocol, caplog):
        with pytest.raises(TypeError, match="locks hold OS state"):
            protocol.dumps({"lock": threading.Lock()})

"""Tests for `picklable._reduce.exceptions` and `picklable._traceback` (in this process)."""

from __future__ import annotations

import copyreg
import functools
import importlib.util
import io
import linecache
import pickle
import sys
import traceback
import types

import pytest

import picklable
from picklable import _traceback
from picklable._reduce import exceptions as _reduce_exceptions
from picklable._reduce import table as _table
from picklable_testpkg import errors


def roundtrip(obj, protocol=None):
    return picklable.loads(picklable.dumps(obj, protocol))


def raised(exc):
    """``exc`` after a raise, with a one-frame traceback."""
    try:
        raise exc
    except BaseException as caught:
        return caught


def stdlib_dumps(obj):
    """stdlib pickle as shipped, without reducers other libraries put in copyreg
    (importing distributed runs tblib's install(), which changes exceptions)."""
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.dispatch_table = {}
    pickler.dump(obj)
    return buffer.getvalue()


class TestStdlibPickleFails:
    """The problems picklable solves, as stdlib pickle shows them."""

    def test_kw_only_init_fails_to_load(self):
        """pickle dumps a KwOnlyError, then cannot load it: __init__ needs `code`."""
        payload = pickle.dumps(errors.KwOnlyError("bad", code=2))
        with pytest.raises(TypeError, match="required keyword-only argument: 'code'"):
            pickle.loads(payload)

    def test_extra_args_init_fails_to_load(self):
        """pickle calls ExtraArgsError with its one formatted arg instead of three."""
        payload = pickle.dumps(errors.ExtraArgsError("a.py", 3, "oops"))
        with pytest.raises(TypeError, match="missing 2 required positional arguments"):
            pickle.loads(payload)

    def test_init_side_effect_runs_again(self):
        """pickle runs __init__ again when loading."""
        exc = errors.SideEffectError("once")
        before = len(errors.INIT_CALLS)
        pickle.loads(pickle.dumps(exc))
        assert errors.INIT_CALLS[before:] == ["once"]

    def test_chain_and_traceback_dropped(self):
        """pickle drops __cause__, __context__ and __traceback__."""
        exc = raised(ValueError("x"))
        exc.__cause__ = KeyError("k")
        back = pickle.loads(stdlib_dumps(exc))
        assert back.__cause__ is None and back.__traceback__ is None


class TestUserExceptions:
    def test_kw_only(self):
        """A keyword-only __init__ argument comes back without calling __init__."""
        back = roundtrip(errors.KwOnlyError("bad", code=2))
        assert type(back) is errors.KwOnlyError
        assert back.args == ("bad",) and back.code == 2 and str(back) == "bad"

    def test_extra_args(self):
        """An __init__ whose parameters differ from args."""
        back = roundtrip(errors.ExtraArgsError("a.py", 3, "oops"))
        assert back.args == ("a.py:3: oops",)
        assert (back.path, back.line, back.reason) == ("a.py", 3, "oops")

    def test_side_effect_init_not_run(self):
        """Loading never runs __init__ again."""
        exc = errors.SideEffectError("once")
        before = len(errors.INIT_CALLS)
        back = roundtrip(exc)
        assert errors.INIT_CALLS[before:] == [] and back.args == ("once",)

    def test_attributes_set_after_construction(self):
        """Attributes added after __init__ travel."""
        exc = errors.KwOnlyError("bad", code=2)
        exc.retries = [1, 2]
        assert roundtrip(exc).retries == [1, 2]

    def test_slots(self):
        """Slot values travel, private (mangled) ones included."""
        back = roundtrip(errors.SlottedError({"k": 1}, "h"))
        assert back.detail == {"k": 1} and back.hidden == "h"

    def test_empty_slot_stays_empty(self):
        """An unset slot stays unset."""
        exc = errors.SlottedError.__new__(errors.SlottedError)
        back = roundtrip(exc)
        assert not hasattr(back, "detail")

    def test_frozen_setattr(self):
        """A class that refuses setattr still gets its state and chain."""
        exc = raised(errors.FrozenError("m", field="f"))
        object.__setattr__(exc, "__cause__", KeyError("k"))
        back = roundtrip(exc)
        assert back.field == "f" and back.args == ("m",)
        assert type(back.__cause__) is KeyError and back.__traceback__ is not None

    def test_own_reduce_is_kept(self):
        """A class's own __reduce__ is used, and the chain is added to it."""
        exc = raised(errors.OwnReduceError(1, b=2))
        exc.__context__ = ValueError("ctx")
        before = errors.OwnReduceError.rebuilt
        back = roundtrip(exc)
        assert errors.OwnReduceError.rebuilt == before + 1
        assert (back.a, back.b) == (1, 2) and repr(back.__context__) == "ValueError('ctx')"
        assert back.__traceback__ is not None

    def test_state_hooks(self):
        """__getstate__ and __setstate__ are honoured."""
        back = roundtrip(errors.StateHooksError("m", secret="s"))
        assert vars(back) == {"secret": "s", "restored": True}
        assert back.args == ("m",)

    def test_copyreg_reducer_is_kept(self):
        """A reducer registered with copyreg wins over ours."""
        rebuild = functools.partial(errors.KwOnlyError, code=0)
        copyreg.pickle(errors.KwOnlyError, lambda e: (rebuild, (f"via copyreg: {e}",)))
        try:
            back = roundtrip(errors.KwOnlyError("x", code=1))
        finally:
            del copyreg.dispatch_table[errors.KwOnlyError]
        assert back.args == ("via copyreg: x",) and back.code == 0

    def test_oserror_subclass(self):
        """errno, strerror and filename of an OSError subclass stay right."""
        back = roundtrip(errors.MissingConfigError("/etc/app.toml", hint="create it"))
        assert (back.errno, back.strerror, back.filename) == (
            2,
            "No such file or directory",
            "/etc/app.toml",
        )
        assert back.args == (2, "No such file or directory") and back.hint == "create it"
        assert str(back) == "[Errno 2] No such file or directory: '/etc/app.toml'"

    def test_group_subclass_with_new(self):
        """A group whose __new__ takes a keyword-only argument."""
        group = errors.StagedGroup(
            "g", [errors.KwOnlyError("a", code=1), ValueError("v")], stage="init"
        )
        back = roundtrip(group)
        assert type(back) is errors.StagedGroup and back.stage == "init" and back.message == "g"
        assert [type(e) for e in back.exceptions] == [errors.KwOnlyError, ValueError]
        assert back.exceptions[0].code == 1 and str(back) == "g (2 sub-exceptions)"

    def test_local_class_by_value(self):
        """A class that is not importable travels by value."""

        class LocalError(Exception):
            def __init__(self, *, why):
                super().__init__(why)
                self.why = why

        back = roundtrip(LocalError(why="w"))
        assert type(back) is LocalError and back.why == "w"

    @pytest.mark.parametrize("protocol", [0, 1, 2, 3, 4, 5])
    def test_protocols(self, protocol):
        """Every protocol rebuilds a kw-only exception with its chain."""
        exc = raised(errors.KwOnlyError("bad", code=2))
        exc.__cause__ = raised(errors.SideEffectError("cause"))
        back = roundtrip(exc, protocol)
        assert back.code == 2 and type(back.__cause__) is errors.SideEffectError
        assert back.__suppress_context__ is True


class TestBuiltinExceptions:
    def test_plain_is_stdlib_bytes(self):
        """A builtin exception without chain or traceback is pickled as stdlib does."""
        exc = KeyError("k")
        assert picklable.dumps(exc) == stdlib_dumps(exc)

    def test_plain_simple_subclass_is_stdlib_bytes(self):
        """So is an importable subclass that defines nothing."""
        exc = errors.PlainError("plain")
        assert picklable.dumps(exc) == stdlib_dumps(exc)

    def test_keyword_only_fields(self):
        """NameError.name and AttributeError.name/obj travel (stdlib drops them)."""
        assert roundtrip(NameError("n", name="x")).name == "x"
        back = roundtrip(AttributeError("a", name="attr", obj=[1]))
        assert (back.name, back.obj) == ("attr", [1])

    @pytest.mark.parametrize(
        "exc",
        [
            OSError(2, "No such file", "/a", None, "/b"),
            FileNotFoundError(2, "nope", "/x"),
            BlockingIOError(11, "blocked", 5),
            SyntaxError("bad", ("f.py", 1, 2, "x = (", 1, 3)),
            UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"),
            StopIteration(5),
            SystemExit(3),
            ImportError("no", name="mod", path="/p"),
        ],
        ids=lambda e: type(e).__name__,
    )
    def test_fields_with_traceback(self, exc):
        """Builtin C-level fields survive alongside a traceback."""
        exc = raised(exc)
        back = roundtrip(exc)
        assert type(back) is type(exc) and back.args == exc.args and str(back) == str(exc)
        for name in (
            "errno",
            "strerror",
            "filename",
            "filename2",
            "lineno",
            "offset",
            "text",
            "value",
            "code",
        ):
            assert getattr(back, name, None) == getattr(exc, name, None), name
        assert back.__traceback__ is not None

    def test_group(self):
        """An ExceptionGroup with nested groups and chained members."""
        inner = ExceptionGroup("inner", [raised(ValueError(1))])
        member = raised(errors.KwOnlyError("k", code=5))
        member.add_note("note")
        group = raised(ExceptionGroup("outer", [inner, member]))
        back = roundtrip(group)
        assert type(back) is ExceptionGroup and back.message == "outer"
        assert type(back.exceptions[0]) is ExceptionGroup and back.exceptions[0].exceptions[
            0
        ].args == (1,)
        assert back.exceptions[1].code == 5 and back.exceptions[1].__notes__ == ["note"]
        assert back.exceptions[1].__traceback__ is not None


class TestChain:
    def test_cause_context_suppress(self):
        """__cause__, __context__ and __suppress_context__ travel."""
        try:
            try:
                raise errors.ExtraArgsError("a", 1, "r")
            except errors.ExtraArgsError as first:
                raise errors.KwOnlyError("second", code=1) from first
        except errors.KwOnlyError as exc:
            caught = exc
        back = roundtrip(caught)
        assert type(back.__cause__) is errors.ExtraArgsError
        assert back.__context__ is back.__cause__ and back.__suppress_context__ is True

    def test_context_suppressed_without_cause(self):
        """`raise X from None` keeps the context and its suppression."""
        exc = raised(ValueError("v"))
        exc.__context__ = KeyError("k")
        exc.__suppress_context__ = True
        back = roundtrip(exc)
        assert (
            back.__cause__ is None
            and back.__suppress_context__ is True
            and type(back.__context__) is KeyError
        )

    def test_cause_without_suppression(self):
        """A cause with __suppress_context__ reset to False keeps False."""
        exc = ValueError("v")
        exc.__cause__ = KeyError("k")
        exc.__suppress_context__ = False
        assert roundtrip(exc).__suppress_context__ is False

    def test_notes(self):
        """__notes__ travel."""
        exc = errors.KwOnlyError("bad", code=2)
        exc.add_note("first")
        exc.add_note("second")
        assert roundtrip(exc).__notes__ == ["first", "second"]

    def test_context_cycle(self):
        """A context chain that loops back loads as the same loop."""
        a, b = (
            errors.KwOnlyError("a", code=1),
            errors.SideEffectError.__new__(errors.SideEffectError, "b"),
        )
        a.__context__, b.__context__ = b, a
        back = roundtrip(a)
        assert back.__context__.__context__ is back

    @pytest.mark.parametrize(
        "make", [ExceptionGroup, lambda m, e: errors.StagedGroup(m, e, stage="s")]
    )
    def test_group_member_context_is_group(self, make):
        """A group member whose context is the group itself."""
        member = ValueError("m")
        group = make("g", [member])
        member.__context__ = group
        back = roundtrip(group)
        assert back.exceptions[0].__context__ is back and back.args == ("g", [back.exceptions[0]])

    def test_holders(self):
        """Exceptions inside result tuples, lists and dicts ship the same way."""
        exc = raised(errors.KwOnlyError("bad", code=2))
        results = [("ok", 1), ("error", exc), {"failures": [exc, exc]}]
        back = roundtrip(results)
        assert back[1][1].code == 2 and back[2]["failures"][0] is back[1][1]

    def test_exc_info_tuple(self):
        """A sys.exc_info() triple ships: the traceback on its own too."""
        try:
            errors.fail_chained().with_traceback(None)
            raise errors.KwOnlyError("x", code=1)
        except errors.KwOnlyError:
            info = sys.exc_info()
        back = roundtrip(info)
        assert back[0] is errors.KwOnlyError and type(back[2]) is types.TracebackType
        assert back[1].__traceback__.tb_lineno == back[2].tb_lineno


class TestTraceback:
    def test_printed_like_the_original(self):
        """traceback.format_exception prints the rebuilt exception as the original."""
        for kind in ("chained", "context", "group"):
            exc, text = errors.fail_and_format(kind)
            assert "".join(traceback.format_exception(roundtrip(exc))) == text

    def test_names_and_lines(self):
        """The rebuilt frames carry file, function and line of the original."""
        exc = roundtrip(errors.fail_chained())
        frames = traceback.extract_tb(exc.__cause__.__traceback__)
        assert [f.name for f in frames] == ["_load", "_parse"]
        assert frames[-1].filename == errors.__file__
        assert (
            frames[-1].line == 'raise ExtraArgsError(path, line, "unexpected token")  # LINE: parse'
        )

    def test_frames_keep_nothing_alive(self):
        """Rebuilt frames have no locals and no f_back (the loader's stack is not kept)."""
        tb = roundtrip(errors.fail_chained()).__traceback__
        while tb is not None:
            assert tb.tb_frame.f_back is None and tb.tb_frame.f_locals == {}
            assert tb.tb_frame.f_lineno == tb.tb_lineno
            tb = tb.tb_next

    def test_locals_never_travel(self):
        """A large local in a failing frame is not in the payload."""

        def fail():
            secret = "s3cr3t-" * 1000  # noqa: F841
            raise ValueError("v")

        exc = raised_from(fail)
        payload = picklable.dumps(exc)
        assert b"s3cr3t" not in payload and len(payload) < 1000

    def test_frames_shared_between_loads(self):
        """Two loads of the same failure share frame objects (built once)."""
        exc = errors.fail_chained()
        one, two = roundtrip(exc), roundtrip(exc)
        assert one.__traceback__.tb_frame is two.__traceback__.tb_frame
        assert one.__traceback__ is not two.__traceback__

    def test_deep_recursion_payload(self):
        """1,000 identical recursive frames cost a few bytes each."""

        def recurse(n):
            if n == 0:
                raise RecursionError("deep")
            return recurse(n - 1)

        exc = raised_from(lambda: recurse(900))
        payload = picklable.dumps(exc)
        assert len(payload) < 900 * 8
        back = picklable.loads(payload)
        assert len(traceback.extract_tb(back.__traceback__)) == len(
            traceback.extract_tb(exc.__traceback__)
        )

    def test_fifty_distinct_frames_payload(self):
        """A 50-frame traceback of distinct functions stays small (no locals, one line each)."""
        source = (
            "\n".join(
                f"def f{i}(x):\n    return f{i + 1}(x + {i})  # calling the next one"
                for i in range(50)
            )
            + "\ndef f50(x):\n    raise ValueError(x)\n"
        )
        namespace: dict = {}
        exec(compile(source, "<generated>", "exec"), namespace)
        exc = raised_from(lambda: namespace["f0"](0))
        size = len(picklable.dumps(exc)) - len(picklable.dumps(exc.with_traceback(None)))
        assert size < 51 * 60
        exc.__traceback__ = None

    def test_shipped_line_when_file_is_gone(self, tmp_path):
        """A receiver without the source file still prints the shipped line."""
        path = tmp_path / "vanishing_module.py"
        path.write_text("def boom():\n    raise KeyError('gone')  # the shipped line\n")
        spec = importlib.util.spec_from_file_location("vanishing_module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        payload = picklable.dumps(raised_from(module.boom))
        path.unlink()
        linecache.checkcache(str(path))
        _traceback._frames.clear()
        text = "".join(traceback.format_exception(picklable.loads(payload)))
        assert (
            f"File \"{path}\", line 2, in boom\n    raise KeyError('gone')  # the shipped line\n"
            in text
        )

    def test_call_over_several_lines_when_file_is_gone(self, tmp_path):
        """Of a call spanning lines only the first travels: without the file it is shown
        alone, underlined to its end (3.13+ would print blank lines for the others)."""
        path = tmp_path / "spanning_module.py"
        path.write_text(
            "def boom():\n    return fail(\n        1,\n    )\n\n\n"
            "def fail(x):\n    raise KeyError(x)\n"
        )
        spec = importlib.util.spec_from_file_location("spanning_module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        payload = picklable.dumps(raised_from(module.boom))
        path.unlink()
        linecache.checkcache(str(path))
        _traceback._frames.clear()
        text = "".join(traceback.format_exception(picklable.loads(payload)))
        assert (
            f'  File "{path}", line 2, in boom\n'
            "    return fail(\n"
            "           ^^^^^\n"
            f'  File "{path}", line 8, in fail\n'
        ) in text

    def test_lines_of_later_tracebacks_are_added(self, tmp_path):
        """A second traceback from the same missing file brings its own lines."""
        path = tmp_path / "twice_module.py"
        path.write_text(
            "def one():\n    raise KeyError('one')\n\n\ndef two():\n    raise KeyError('two')\n"
        )
        spec = importlib.util.spec_from_file_location("twice_module", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        first, second = (
            picklable.dumps(raised_from(module.one)),
            picklable.dumps(raised_from(module.two)),
        )
        path.unlink()
        linecache.checkcache(str(path))
        assert "    raise KeyError('one')\n" in "".join(
            traceback.format_exception(picklable.loads(first))
        )
        assert "    raise KeyError('two')\n" in "".join(
            traceback.format_exception(picklable.loads(second))
        )
        assert linecache.getline(str(path), 2) == "    raise KeyError('one')\n"

    def test_registered_traceback_reducer_is_kept(self):
        """A TracebackType reducer in copyreg (tblib's install()) wins."""
        copyreg.pickle(types.TracebackType, lambda tb: (type(None), ()))
        try:
            back = roundtrip(raised(ValueError("v")))
        finally:
            del copyreg.dispatch_table[types.TracebackType]
        assert back.__traceback__ is None


class TestLocationTable:
    @pytest.mark.parametrize(
        "positions",
        [
            (12, 12, 4, 19),
            (3, 5, 0, 200),
            (100_000, 100_001, 70, 4000),
            (7, None, None, None),
            (None, None, None, None),
        ],
    )
    def test_positions_roundtrip(self, positions):
        """A rebuilt frame's code reports the shipped positions for every instruction."""
        record = ("f.py", "fn", None, "m", *positions, None)
        frame = _traceback._make_frame(record)
        found = set(frame.f_code.co_positions())
        lineno, _end_lineno, colno, _end_colno = positions
        if colno is None:
            expected = (
                {(lineno, lineno, None, None)} if lineno is not None else {(None, None, None, None)}
            )
        else:
            expected = {positions}
        assert found == expected

    @pytest.mark.parametrize("end_lineno", [10_013, 10**9])
    def test_span_longer_than_any_statement_keeps_its_line(self, end_lineno):
        """A span of over 10,001 lines (forged: 3.13+ would read each line) keeps the
        first line, without columns."""
        frame = _traceback._make_frame(("f.py", "fn", None, "m", 12, end_lineno, 4, 9, None))
        assert set(frame.f_code.co_positions()) == {(12, 12, None, None)}

    def test_columns_out_of_order_are_dropped(self):
        """On one line, an end column before the start (damaged) keeps the line alone."""
        frame = _traceback._make_frame(("f.py", "fn", None, "m", 12, 12, 9, 4, None))
        assert set(frame.f_code.co_positions()) == {(12, 12, None, None)}

    def test_longest_span_is_kept(self):
        """A statement of 10,001 lines keeps its positions."""
        positions = (12, 10_012, 4, 9)
        frame = _traceback._make_frame(("f.py", "fn", None, "m", *positions, None))
        assert set(frame.f_code.co_positions()) == {positions}


class TestExceptionChildren:
    def test_pieces(self):
        """args, attributes, slots, group members and the chain, each with its path."""
        member = errors.SlottedError("d", "h")
        group = ExceptionGroup("g", [member])
        group.__cause__ = KeyError("k")
        group.extra = 1
        found = dict(_reduce_exceptions.exception_pieces(group))
        assert found[".args[0]"] == "g" and found[".extra"] == 1
        assert found[".exceptions[0]"] is member and type(found[".__cause__"]) is KeyError
        assert ".__context__" not in found
        slots = dict(_reduce_exceptions.exception_pieces(member))
        assert slots[".detail"] == "d" and slots["._SlottedError__hidden"] == "h"


class TestExceptionKind:
    def test_not_an_exception(self):
        """Other types are other kinds."""
        assert _table.kind_for(dict).name == "dict" and _table.kind_for(int).name == "data"

    def test_plans(self):
        """Builtin, own-reduce and other classes get the reducer of their kind."""
        assert _table.handler_for(ValueError).__name__ == "reduce_builtin"
        assert _table.handler_for(ExceptionGroup).__name__ == "reduce_builtin"
        assert _table.handler_for(errors.OwnReduceError).__name__ == "reduce_own"
        assert _table.handler_for(errors.KwOnlyError).__name__ == "reduce_instance"


def raised_from(fn):
    try:
        fn()
    except BaseException as exc:
        return exc
    raise AssertionError("did not raise")


class TestBlanketReducers:
    def test_tblib_install_does_not_take_over(self, monkeypatch):
        """tblib's install() (run by importing distributed) does not replace our reductions."""
        import copyreg
        import pickletools

        from tblib import pickling_support

        # install() mutates the global table: work on a copy, restored afterwards.
        monkeypatch.setattr(copyreg, "dispatch_table", dict(copyreg.dispatch_table))
        pickling_support.install()
        assert ValueError in copyreg.dispatch_table
        try:
            raise ValueError("boom")
        except ValueError as exc:
            error = exc
        data = picklable.dumps([error, ValueError("plain")])
        modules = {arg for _, arg, _ in pickletools.genops(data) if isinstance(arg, str)}
        assert not any(m.startswith("tblib") for m in modules), modules
        back, plain = picklable.loads(data)
        assert type(back) is ValueError and back.__traceback__ is not None
        assert type(plain) is ValueError and plain.args == ("plain",)

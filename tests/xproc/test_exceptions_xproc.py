"""Exceptions and tracebacks between fresh interpreters (issue 9).

Exceptions made here load in a child interpreter that never saw them; exceptions
raised in the child come back here with a traceback that prints the child's
frames. The ``__main__`` case runs a real script that gets its own exception
class back from a child interpreter and from a spawn pool.
"""

from __future__ import annotations

import importlib.util
import pathlib
import textwrap
import traceback

import pytest

import picklable
from picklable_testpkg import errors
from support.child import run_script


def _raised(exc):
    try:
        raise exc
    except BaseException as caught:
        return caught


def _chained():
    try:
        try:
            raise errors.ExtraArgsError("a.toml", 3, "bad key")
        except errors.ExtraArgsError as first:
            raise errors.KwOnlyError("load failed", code=4) from first
    except errors.KwOnlyError as exc:
        exc.add_note("note one")
        return exc


def _after_construction():
    exc = _raised(errors.SideEffectError("side"))
    exc.retries = 3
    exc.__context__ = _raised(ZeroDivisionError("zero"))
    return exc


def _fields_set_later():
    """C fields set after the exception was made (``e.errno = ...``): what its
    arguments make differs, and str() shows them."""
    refused = OSError("connect failed")
    refused.errno, refused.strerror = 111, "refused"
    syntax = SyntaxError("bad config")
    syntax.filename, syntax.lineno = "app.cfg", 3
    stop, own_stop, leaving = StopIteration(), errors.OwnStop(), SystemExit()
    stop.value, own_stop.value, leaving.code = 42, 7, 2
    decode = UnicodeDecodeError("utf-8", b"\xff\xfe", 0, 1, "invalid start byte")
    decode.start, decode.end = 1, 2
    blocked = BlockingIOError(11, "busy")
    blocked.characters_written = 5
    return [refused, syntax, stop, own_stop, leaving, decode, blocked]


def _group():
    members = [
        _chained(),
        _after_construction(),
        _raised(errors.MissingConfigError("/etc/x.toml", hint="create it")),
        errors.SlottedError([1, 2], "hidden"),
        _raised(NameError("n", name="undefined_name")),
    ]
    return _raised(errors.StagedGroup("several failed", members, stage="load"))


CASES = {
    "kw_only": lambda: _raised(errors.KwOnlyError("bad", code=2)),
    "extra_args": lambda: errors.ExtraArgsError("a.py", 3, "oops"),
    "side_effect_init": lambda: errors.SideEffectError("once"),
    "after_construction": _after_construction,
    "chained_with_notes": _chained,
    "slots": lambda: errors.SlottedError({"k": 1}, "h"),
    "frozen": lambda: errors.FrozenError("m", field="f"),
    "oserror_subclass": lambda: errors.MissingConfigError("/etc/app.toml", hint="create it"),
    "group": _group,
    **{f"fields_set_later[{i}]": (lambda i=i: _fields_set_later()[i]) for i in range(7)},
}


class TestLoadInChild:
    @pytest.mark.parametrize("case", sorted(CASES))
    def test_same_exception_in_child(self, child, case):
        """The child rebuilds the exception as it is here, without running __init__."""
        exc = CASES[case]()
        seen = child.run(errors.describe, picklable.dumps(exc))
        assert seen.pop("init_calls") == []
        assert seen == errors.summary(exc)

    def test_shipped_line_when_file_is_missing(self, child, tmp_path):
        """A child without the source file prints the line shipped with the traceback."""
        path = tmp_path / "only_here.py"
        path.write_text("def boom(x):\n    return {}[x]  # only the sender has this file\n")
        spec = importlib.util.spec_from_file_location("only_here", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        try:
            module.boom("key")
        except KeyError as exc:
            payload = picklable.dumps(exc)
        path.unlink()
        text = child.run(errors.format_loaded, payload)
        assert (
            f'  File "{path}", line 2, in boom\n    return {{}}[x]  # only the sender has this file\n'
            in text
        )


class TestFromChild:
    @pytest.mark.parametrize("kind", ["chained", "context", "group"])
    def test_traceback_prints_as_in_child(self, child, kind):
        """traceback.format_exception here prints exactly what it printed in the child."""
        exc, text_there = child.run(errors.fail_and_format, kind)
        assert "".join(traceback.format_exception(exc)) == text_there

    def test_remote_function_name_and_line(self, child):
        """The printed traceback names the child's functions, file and lines."""
        before = list(errors.INIT_CALLS)
        exc, _ = child.run(errors.fail_and_format, "chained")
        assert before == errors.INIT_CALLS
        assert type(exc) is errors.KwOnlyError and exc.code == 2
        assert type(exc.__cause__) is errors.ExtraArgsError and exc.__cause__.line == 7
        text = "".join(traceback.format_exception(exc))
        lines = pathlib.Path(errors.__file__).read_text().splitlines()
        parse = next(i for i, line in enumerate(lines, 1) if line.endswith("# LINE: parse"))
        load = next(i for i, line in enumerate(lines, 1) if line.endswith("# LINE: load"))
        assert f'File "{errors.__file__}", line {parse}, in _parse\n' in text
        assert f'File "{errors.__file__}", line {load}, in _load\n' in text
        assert text.count(", in _step\n") == 4
        assert "while starting the worker" in text
        with pytest.raises(errors.KwOnlyError):
            raise exc

    def test_group_from_child(self, child):
        """A group raised in the child comes back with its members, chains and tracebacks."""
        group = child.run(errors.fail_group)
        assert type(group) is errors.StagedGroup and group.stage == "init"
        kinds = [type(e) for e in group.exceptions]
        assert kinds == [errors.KwOnlyError, errors.SideEffectError, errors.MissingConfigError]
        assert (
            group.exceptions[1].attempt == 3
            and type(group.exceptions[1].__context__) is ZeroDivisionError
        )
        assert group.exceptions[2].filename == "/etc/app.toml"
        matched, rest = group.split(errors.KwOnlyError)
        assert type(matched) is errors.StagedGroup and len(rest.exceptions) == 2
        assert [f.name for f in traceback.extract_tb(group.__traceback__)] == ["fail_group"]


def test_main_exception_comes_back_as_the_original_class(tmp_path):
    """A __main__ exception class raised in a child and in a spawn pool comes back as itself."""
    source = textwrap.dedent(
        '''
        import concurrent.futures, multiprocessing, pickle, traceback
        import picklable
        from support.child import Child

        class JobError(Exception):
            def __init__(self, job, *, attempt):
                super().__init__(f"job {job} failed")
                self.job = job
                self.attempt = attempt

        def run_job(job):
            raise JobError(job, attempt=2)  # MARK

        def catching(job):
            try:
                run_job(job)
            except JobError as exc:
                return exc

        def catching_to_bytes(job):
            """A spawn worker: here JobError is __mp_main__.JobError."""
            exc = catching(job)
            assert type(exc).__module__ == "__mp_main__"
            return picklable.dumps(exc)

        if __name__ == "__main__":
            line = next(i for i, l in enumerate(open(__file__), 1) if l.rstrip().endswith("# MARK"))
            # stdlib pickle cannot even load it in this very process:
            try:
                pickle.loads(pickle.dumps(JobError(1, attempt=1)))
            except TypeError as exc:
                print("pickle fails:", exc)
            child = Child()
            exc = child.run(catching, 7)
            child.close()
            assert type(exc) is JobError, type(exc)
            assert (exc.job, exc.attempt, exc.args) == (7, 2, ("job 7 failed",))
            text = "".join(traceback.format_exception(exc))
            assert f'File "{__file__}", line {line}, in run_job' in text, text
            try:
                raise exc
            except JobError:
                print("child: caught as JobError")
            context = multiprocessing.get_context("spawn")
            with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
                exc = picklable.loads(pool.submit(catching_to_bytes, 8).result())
            assert type(exc) is JobError, type(exc)
            assert (exc.job, exc.attempt) == (8, 2)
            text = "".join(traceback.format_exception(exc))
            assert f'line {line}, in run_job' in text, text
            print("OK")
        '''
    )
    out = run_script(source, tmp_path)
    assert (
        "pickle fails: JobError.__init__() missing 1 required keyword-only argument: 'attempt'"
        in out
    )
    assert "child: caught as JobError" in out and out.strip().endswith("OK")


class TestUnshippableChain:
    """A cause that cannot travel (it holds a lock) stays behind as a stand-in,
    where pickle ships the exception without any chain: the exception itself
    still arrives as itself, so ``except RuntimeError`` catches it."""

    def _raised(self) -> BaseException:
        try:
            errors.fail_with_unshippable_cause()
        except RuntimeError as exc:
            return exc
        raise AssertionError("it did not raise")

    def test_loads_in_a_child_with_a_stand_in_cause(self, child):
        seen = child.run(errors.describe, picklable.dumps(self._raised()))
        assert seen["type"] == "builtins.RuntimeError" and seen["str"] == "task failed"
        cause = seen["cause"]
        assert cause["type"] == "picklable.RemoteError"
        assert "picklable_testpkg.errors.HoldsLock: db down" in cause["str"]
        assert "cannot pickle '_thread.lock' object" in cause["str"]
        assert seen["context"] == cause  # the context is the cause: one stand-in

    def test_a_pool_raises_it_as_itself(self):
        with (
            picklable.ProcessPoolExecutor(1) as pool,
            pytest.raises(RuntimeError, match="task failed") as caught,
        ):
            pool.submit(errors.fail_with_unshippable_cause).result()
        remote = caught.value.__cause__
        assert type(remote) is picklable.RemoteTraceback
        assert "HoldsLock: db down" in remote.text  # the worker's whole chain
        assert type(remote.cause) is picklable.RemoteError
        assert remote.cause.type_name == "picklable_testpkg.errors.HoldsLock"

    def test_dumps_still_names_a_culprit_outside_the_chain(self):
        exc = self._raised()
        exc.conn = errors.HoldsLock("outer").conn  # on the exception itself
        with pytest.raises(picklable.PicklingError, match=r"at obj\.conn"):
            picklable.dumps(exc)

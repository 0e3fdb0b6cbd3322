"""Tests for `picklable.executors` and `picklable._pool` pieces that need no worker.

Frames, the codec and error round trips, error messages, argument checks (made
before any process starts). The pools themselves are
tested with real workers in tests/xproc/test_pools.py.
"""

from __future__ import annotations

import pickle
import signal
import threading
from concurrent.futures.process import BrokenProcessPool

import pytest

import picklable
from picklable import executors
from picklable._pool import _protocol as P
from picklable._pool._broken import describe_exit
from picklable._pool._dispatch import OVERDUE_MIN, QUEUE_BUDGET, may_queue, overdue_after
from picklable._pool._jobs import Failure, ItemsJob, call_repr
from picklable._pool._link import Inbox as _Inbox
from picklable._pool._submit import callable_name, start_method
from picklable_testpkg import errors


def frame(body: bytes) -> bytes:
    return P.LENGTH.pack(len(body)) + body


class TestInbox:
    def test_whole_frames_in_one_chunk(self):
        """Several complete frames in one read come out in order."""
        inbox = _Inbox()
        got = inbox.feed(frame(b"Vone") + frame(b"Rtwo"))
        assert [bytes(f) for f in got] == [b"Vone", b"Rtwo"]

    def test_frame_split_across_reads(self):
        """A frame cut anywhere (even inside its length) is put back together."""
        data = frame(b"A" * 1000) + frame(b"B")
        for cut in (3, 8, 9, 500, 1007, 1008):
            inbox = _Inbox()
            first = inbox.feed(data[:cut])
            rest = inbox.feed(data[cut:])
            assert [bytes(f) for f in first + rest] == [b"A" * 1000, b"B"]

    def test_large_frame_in_many_reads(self):
        """A frame larger than a read buffer arrives whole."""
        body = bytes(range(256)) * 4096
        data = frame(body)
        inbox = _Inbox()
        out = []
        for start in range(0, len(data), 65536):
            out += inbox.feed(data[start : start + 65536])
        assert [bytes(f) for f in out] == [body]


class TestCodec:
    def test_round_trip(self):
        """encode/decode round-trips lambdas with picklable."""
        codec = P.Codec()
        assert codec.decode(codec.encode(lambda x: x + 1))(1) == 2

    def test_codec_pickles_by_reference(self):
        """The codec ships to workers with plain pickle."""
        assert type(pickle.loads(pickle.dumps(P.Codec()))) is P.Codec

    def test_function_payload_in_pieces(self):
        """A copied task function's payload is signed pieces: joined, the codec loads
        it; the frame sends them in order; its digest is its MAC's, equal for equal
        bytes and different for other bytes."""
        codec = P.Codec()
        scale = 3

        def times(x):
            return x * scale

        pieces = codec.encode_function(times, workers_import_script=True)
        assert len(pieces) == 2
        assert codec.decode(b"".join(pieces))(2) == 6
        digest = codec.digest(pieces)
        again = codec.encode_function(times, workers_import_script=True)
        assert codec.digest(again) == digest and len(digest) == 16
        scale = 4
        other = codec.encode_function(times, workers_import_script=True)
        assert codec.digest(other) != digest
        head, *rest = P.func_frame(digest, pieces)
        assert rest == list(pieces)
        assert P.LENGTH.unpack_from(head)[0] == len(head) - 8 + sum(map(len, pieces))

    @pytest.mark.parametrize(
        "value",
        [
            0,
            -1,
            2**64,
            2**1000,
            1.5,
            float("inf"),
            "",
            "é" * 10,
            "x" * 100_000,
            b"",
            b"\x00" * 70_000,
            True,
            False,
            None,
        ],
        ids=repr,
    )
    def test_plain_scalars_encode_as_dumps_does(self, value):
        """A plain scalar (a worker's usual result) is encoded without picklable's
        pickler, into the very bytes ``dumps(value, key=...)`` makes."""
        codec = P.Codec()
        assert P._PROTOCOL == picklable.DEFAULT_PROTOCOL
        assert codec.encode(value) == picklable.dumps(value, key=codec.key)
        assert codec.decode(codec.encode(value)) == value

    def test_subclasses_of_plain_types_go_through_the_pickler(self):
        """Only exact types take the shortcut: an int subclass is picklable's to reduce."""

        class Level(int):
            pass

        codec = P.Codec()
        loaded = codec.decode(codec.encode(Level(3)))
        assert type(loaded).__qualname__.endswith("Level") and loaded == 3

    def test_task_frame_layout(self):
        """A task frame carries kind, id and digest before the payload."""
        data = P.task_frame(P.MAP, 7, b"d" * 16, b"payload")
        (length,) = P.LENGTH.unpack_from(data)
        assert length == len(data) - 8
        assert P.TASK_BODY.unpack_from(data, 8) == (b"M", 7, b"d" * 16)
        assert data.endswith(b"payload")


def raised(exc: BaseException) -> BaseException:
    try:
        raise exc
    except BaseException as caught:
        return caught


class TestErrorInfo:
    def test_exception_round_trip(self):
        """A raised exception comes back with its type, attributes and traceback text."""
        codec = P.Codec()
        info = P.error_info(raised(errors.KwOnlyError("bad", code=3)), codec)
        exc = P.rebuild_error(info, codec)
        assert type(exc) is errors.KwOnlyError and exc.code == 3
        assert isinstance(exc.__cause__, executors.RemoteTraceback)
        assert "KwOnlyError: bad" in exc.__cause__.text

    def test_unshippable_exception_becomes_remote_error(self):
        """An exception holding a lock turns into RemoteError with the reason."""
        codec = P.Codec()
        exc = ValueError("locked")
        exc.lock = threading.Lock()  # type: ignore[attr-defined]
        info = P.error_info(raised(exc), codec)
        assert info[0] is None and "lock" in info[4]
        rebuilt = P.rebuild_error(info, codec)
        assert isinstance(rebuilt, executors.RemoteError)
        assert (rebuilt.type_name, rebuilt.message) == ("ValueError", "locked")
        assert "could not be shipped back" in str(rebuilt) and "Fix:" in str(rebuilt)

    def test_frozen_exception(self):
        """An exception refusing setattr still gets its cause and traceback."""
        codec = P.Codec()
        rebuilt = P.rebuild_error(
            P.error_info(raised(errors.FrozenError("f", field="x")), codec, 1), codec
        )
        assert type(rebuilt) is errors.FrozenError
        assert isinstance(rebuilt.__cause__, executors.RemoteTraceback)

    def test_broken_str(self):
        """An exception whose __str__ raises is described, not fatal."""

        class Ugly(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no")

        info = P.error_info(raised(Ugly()), P.Codec())
        assert info[1].endswith("Ugly") and "str() failed" in info[2]

    def test_payload_that_cannot_load_in_the_parent(self):
        """A payload that fails to load here becomes RemoteError saying so."""
        codec = P.Codec()
        info = (b"not a pickle", "mod.Err", "message", "Traceback ...", "")
        rebuilt = P.rebuild_error(info, codec)
        assert isinstance(rebuilt, executors.RemoteError)
        assert "could not be loaded in the parent" in rebuilt.reason


class TestErrors:
    def test_worker_died_message(self):
        """WorkerDiedError names the worker, the task, the signal and the fix."""
        err = executors.WorkerDiedError("work(3)", -signal.SIGKILL, pid=42, worker_index=1)
        text = str(err)
        assert text.startswith(
            "Worker 1 (pid 42) died while running task work(3): killed by signal SIGKILL"
        )
        assert "OOM killer" in text and "retries=N" in text
        assert (err.signal, err.exitcode, err.attempts) == (signal.SIGKILL, -9, 1)
        assert err.signal.name == "SIGKILL" and isinstance(err.signal, signal.Signals)

    def test_worker_died_is_broken_process_pool(self):
        """Code written for concurrent.futures catches it."""
        assert issubclass(executors.WorkerDiedError, BrokenProcessPool)
        assert issubclass(executors.BrokenPoolError, BrokenProcessPool)

    @pytest.mark.parametrize(
        ("dumps", "loads"), [(pickle.dumps, pickle.loads), (picklable.dumps, picklable.loads)]
    )
    def test_errors_pickle_with_their_fields(self, dumps, loads):
        """The pool's errors travel on with their fields."""
        died = loads(dumps(executors.WorkerDiedError("t", 3, pid=1, worker_index=0, attempts=2)))
        assert (died.task, died.exitcode, died.pid, died.worker_index, died.attempts) == (
            "t",
            3,
            1,
            0,
            2,
        )
        remote = loads(dumps(executors.RemoteError("m.E", "msg", "why", "tb")))
        assert (remote.type_name, remote.message, remote.reason, remote.remote_traceback) == (
            "m.E",
            "msg",
            "why",
            "tb",
        )
        broken = loads(dumps(executors.BrokenPoolError("gone", reason="terminated")))
        assert (str(broken), broken.reason) == ("gone", "terminated")
        late = loads(dumps(executors.TaskTimeoutError("t", 2.5, count=3, pid=7, worker_index=1)))
        assert (late.task, late.timeout, late.count, late.pid, late.worker_index) == (
            "t",
            2.5,
            3,
            7,
            1,
        )

    def test_task_timeout_message(self):
        """TaskTimeoutError names the task, the limit, the worker, and the fix."""
        err = executors.TaskTimeoutError("work(3) (item 3 of map(work))", 2, pid=42, worker_index=1)
        assert str(err) == (
            "Task work(3) (item 3 of map(work)) did not finish within its task_timeout (2 s): "
            "worker 1 (pid 42) was killed and replaced, and the other tasks carry on. Fix: "
            "make the task return sooner, or give it a larger task_timeout (math.inf: no limit)."
        )
        chunk = executors.TaskTimeoutError("items 0-3 of map(work)", 0.5, count=4)
        assert "(0.5 s per item, 2 s): its worker was killed" in str(chunk)
        assert isinstance(err, TimeoutError)  # concurrent.futures.TimeoutError too

    @pytest.mark.parametrize(
        ("code", "words"),
        [
            (3, "exited with code 3"),
            (-signal.SIGSEGV, "SIGSEGV (a crash in native code)"),
            (None, "killed"),
        ],
    )
    def test_describe_exit(self, code, words):
        """Exit codes and signals are said in words."""
        assert words in describe_exit(code)


class TestItemsJob:
    def test_outcomes_in_order_and_first_error(self):
        """Outcomes land at their index; the first failure is remembered."""
        job = ItemsJob("map(f)", None)
        job.reserve(3)
        job.seal()
        boom = ValueError("x")
        job.fail_range(1, 1, boom)
        assert job.first_error is boom and not job._check_finished()
        job._settle(0, ["a"])
        job._settle(2, ["c"])
        assert job._check_finished()
        assert job.values[0] == "a" and type(job.values[1]) is Failure and job.values[2] == "c"

    def test_wait_item_times_out(self):
        """Waiting for a missing item past the deadline raises TimeoutError."""
        job = ItemsJob("map(f)", None)
        job.reserve(1)
        with pytest.raises(TimeoutError):
            job.wait_item(0, deadline=0.0)

    def test_call_repr_is_short(self):
        """Task names shorten long arguments."""
        text = call_repr("work", (list(range(1000)), "x" * 500))
        assert text.startswith("work([0, 1, 2, 3, ...], 'xxx") and len(text) < 120


class TestArguments:
    @pytest.mark.parametrize(
        ("kwargs", "error"),
        [
            ({"processes": 0}, ValueError),
            ({"maxtasksperchild": 0}, ValueError),
            ({"context": "thread"}, ValueError),
            ({"context": 3}, TypeError),
            ({"initializer": 5}, TypeError),
            ({"retries": -1}, ValueError),
        ],
    )
    def test_pool_rejects_bad_arguments(self, kwargs, error):
        """Bad arguments fail before any worker starts."""
        with pytest.raises(error):
            picklable.Pool(**kwargs)

    def test_unshippable_initializer(self):
        """An initializer that cannot ship fails at once, naming the culprit."""
        lock = threading.Lock()
        with pytest.raises(picklable.PicklingError):
            picklable.Pool(1, initializer=lambda: lock)

    @pytest.mark.parametrize(
        ("kwargs", "words"),
        [
            ({"max_workers": 0}, "max_workers"),
            ({"max_tasks_per_child": 0}, "max_tasks_per_child"),
            ({"mp_context": "nope"}, "start method"),
            ({"retries": -2}, "retries"),
        ],
    )
    def test_executor_rejects_bad_arguments(self, kwargs, words):
        """The executor checks its arguments first too."""
        with pytest.raises(ValueError, match=words):
            picklable.ProcessPoolExecutor(**kwargs)

    def test_start_method(self):
        """spawn by default; names and multiprocessing contexts are accepted."""
        import multiprocessing

        assert start_method(None) == "spawn"
        assert start_method("fork") == "fork"
        assert start_method(multiprocessing.get_context("forkserver")) == "forkserver"

    def test_callable_name(self):
        """Task names use the qualified name, or the type for other callables."""
        assert callable_name(len) == "len"
        assert callable_name(lambda: 0) == "TestArguments.test_callable_name.<locals>.<lambda>"
        assert callable_name(errors.KwOnlyError("x", code=1).__class__) == "KwOnlyError"


class TestPublicNames:
    def test_exports(self):
        """The pool API is exported lazily from picklable."""
        for name in (
            "Pool",
            "ProcessPoolExecutor",
            "WorkerDiedError",
            "BrokenPoolError",
            "RemoteError",
            "TaskTimeoutError",
            "worker_index",
        ):
            assert getattr(picklable, name) is getattr(executors, name)
            assert name in picklable.__all__

    def test_worker_index_outside_a_worker(self):
        """worker_index() is None in a process that is not a pool worker."""
        assert picklable.worker_index() is None

    def test_pools_do_not_pickle(self):
        """Pools refuse to be pickled, as multiprocessing's do."""
        with picklable.Pool(1) as pool, pytest.raises(NotImplementedError):
            pickle.dumps(pool)


class TestMayQueue:
    @pytest.mark.parametrize(
        ("inflight", "queued", "est", "expected"),
        [
            (1, 0.0, 0.000002, True),  # trivial tasks stream
            (1, 0.0, 0.00505, True),  # just over the budget: still one queued, no round trip
            (2, 0.00505, 0.005, False),  # enough queued already
            (1, 0.0, None, False),  # never ran: its cost is unknown
            (1, 0.0, 0.2, False),  # long: never behind another
            (256, 0.0, 0.000001, False),  # the cap on units held
        ],
    )
    def test_policy(self, inflight, queued, est, expected):
        """Short units queue up to the budget; long or unknown ones wait for an idle worker."""
        assert may_queue(inflight, queued, est) is expected

    @pytest.mark.parametrize(("running", "expected"), [(0.001, True), (0.2, False), (0.1, False)])
    def test_nothing_queues_behind_a_long_unit(self, running, expected):
        """Behind a unit estimated long (or never run: 0.1 s), short ones would wait for all of it."""
        assert may_queue(1, 0.0, 0.000002, running) is expected

    def test_budget_is_small(self):
        """The queue budget keeps tail imbalance to a few milliseconds."""
        assert 0 < QUEUE_BUDGET <= 0.01

    @pytest.mark.parametrize(("est", "late"), [(0.00001, OVERDUE_MIN), (0.1, 0.4), (1.0, 4.0)])
    def test_overdue_after(self, est, late):
        """A running unit is late after 4 times its estimate, never sooner than OVERDUE_MIN."""
        assert overdue_after(est) == pytest.approx(late)


class TestTickets:
    def test_retag_frame(self):
        """A task sent again keeps its frame but for the id: stale copies match no ticket."""
        frame = P.task_frame(P.CALL, 5, b"d" * 16, b"payload")
        again = P.retag_frame(frame, 99)
        assert P.TASK_BODY.unpack_from(again, 8) == (P.CALL, 99, b"d" * 16)
        assert again[33:] == frame[33:] == b"payload"
        assert P.TASK_BODY.unpack_from(frame, 8)[1] == 5  # the original is left as it was

    @pytest.mark.parametrize(
        ("value", "default", "limit"),
        [(None, None, None), (None, 3, 3.0), (2, 3.0, 2.0), (float("inf"), 3.0, None)],
    )
    def test_task_timeout(self, value, default, limit):
        """A call's own task_timeout wins; math.inf lifts the pool's."""
        assert P.task_timeout(value, default) == limit

    @pytest.mark.parametrize("value", [0, -1.5, float("nan"), "3", True])
    def test_bad_task_timeout(self, value):
        """task_timeout is a positive number of seconds or None."""
        with pytest.raises((TypeError, ValueError), match="task_timeout must be"):
            P.check_task_timeout(value)

    def test_executor_rejects_bad_task_timeout(self):
        """Checked before any worker starts."""
        with pytest.raises(ValueError, match="task_timeout must be greater than 0"):
            picklable.ProcessPoolExecutor(1, task_timeout=0)


class TestSignedFrames:
    """Pools sign every frame with a per-pool random key (issue 8)."""

    def test_each_codec_has_its_own_key(self):
        """Two pools never share a key."""
        from picklable._pool._protocol import Codec

        assert Codec().key != Codec().key and len(Codec().key) == 32

    def test_tampered_frame_refused(self):
        """A frame altered in transit is refused before it is unpickled."""
        from picklable._pool._protocol import Codec

        codec = Codec()
        frame = bytearray(codec.encode(("task", 1, [1, 2, 3])))
        assert codec.decode(bytes(frame)) == ("task", 1, [1, 2, 3])
        frame[-3] ^= 0xFF
        with pytest.raises(picklable.UnpicklingError, match="signature"):
            codec.decode(bytes(frame))

    def test_frame_from_another_pool_refused(self):
        """A frame signed with another pool's key is refused."""
        from picklable._pool._protocol import Codec

        with pytest.raises(picklable.UnpicklingError):
            Codec().decode(Codec().encode("hello"))

    def test_unsigned_frame_refused(self):
        """An unsigned pickle injected into the channel is refused."""
        from picklable._pool._protocol import Codec

        with pytest.raises(picklable.UnpicklingError, match="not signed"):
            Codec().decode(picklable.dumps("injected"))

    def test_key_reaches_workers(self):
        """The codec travels to workers with its key (plain pickle, at start)."""
        import pickle

        from picklable._pool._protocol import Codec

        codec = Codec()
        assert pickle.loads(pickle.dumps(codec)).key == codec.key


class TestInherit:
    """`picklable._pool._inherit`: what reaches workers at start (issue 19)."""

    def test_spawning_collects_descriptors(self):
        """Inside the spawning context a socket reduces to its descriptor, passed on."""
        import multiprocessing.reduction  # registers the socket reducer
        import socket

        from picklable._pool import _inherit

        assert multiprocessing.reduction.ForkingPickler
        one, other = socket.socketpair()
        with one, other:
            codec = P.Codec()
            with _inherit.spawning(_inherit.Spawning()) as popen:
                data = codec.encode_inherited({"end": one, "f": lambda: 1})
            assert popen.fds == [one.fileno()]
            rebuilt = codec.decode(data)  # same process: the same descriptor number
            assert rebuilt["end"].detach() == one.fileno() and rebuilt["f"]() == 1

    def test_start_payload_round_trip(self):
        """A StartPayload pickles to signed bytes that the pool's codec loads."""
        from picklable._pool._inherit import StartPayload

        codec = P.Codec()
        start = StartPayload((len, ("ab",)), codec=codec)
        start.check()
        from picklable._pool._inherit import Spawning, spawning

        with spawning(Spawning()):
            copy = pickle.loads(pickle.dumps(start))
        initializer, initargs = copy.load(codec)
        assert initializer is len and initargs == ("ab",)
        assert start.load(codec) == (len, ("ab",))  # not pickled (fork): the objects themselves

    def test_unshippable_initargs_named(self):
        """An initarg that cannot reach a worker is named by its index."""
        with pytest.raises(picklable.PicklingError) as info:
            P.start_codec(print, (1, threading.Lock()), 0, "spawn")
        assert info.value.path == "initargs[1]"

    def test_fork_checks_nothing(self):
        """Under fork nothing is pickled: the child gets the objects themselves."""
        lock = threading.Lock()
        _, start = P.start_codec(print, (lock,), 0, "fork")
        assert start is not None and start.load(None)[1][0] is lock


class TestErrorsInUserTerms:
    def test_result_error_reroots_the_path(self):
        """A result's pickling error names the task and gets the fix for results."""
        from picklable._pool._failures import result_error

        error = picklable.PicklingError(
            "Cannot pickle _thread.lock - at obj['lock']: locks hold OS state. Fix: x.",
            path="obj['lock']",
            type_name="_thread.lock",
            reason="locks hold OS state",
            hint="create it inside the worker (e.g. in the pool initializer)",
        )
        rebuilt = result_error("work(1) (item 1 of map(work))", error)
        assert rebuilt.path == "the result of work(1) (item 1 of map(work))['lock']"
        assert str(rebuilt).startswith(
            "Cannot pickle _thread.lock - at the result of work(1) (item 1 of map(work))['lock']: "
            "locks hold OS state. Fix: return what the parent needs"
        )

    def test_arguments_error_names_the_piece(self):
        """The first piece that fails alone names the error."""
        from picklable._pool._failures import arguments_error

        codec = P.Codec()
        lock = threading.Lock()
        try:
            codec.encode([1, {"c": lock}])
        except picklable.PicklingError as exc:
            error = arguments_error(
                codec, exc, [("item 0 of map(f)", 1), ("item 1 of map(f)", {"c": lock})]
            )
        assert error.path == "item 1 of map(f)['c']"

    def test_task_load_error(self):
        """TaskLoadError is an UnpicklingError and a BrokenProcessPool, and pickles with its fields."""
        err = executors.TaskLoadError("m", task="f(1)", where="worker", reason="r")
        assert isinstance(err, picklable.UnpicklingError) and isinstance(err, BrokenProcessPool)
        copy = picklable.loads(picklable.dumps(err))
        assert (copy.task, copy.where, copy.reason, str(copy)) == ("f(1)", "worker", "r", "m")

    def test_exit_signal(self):
        """Exit codes become signal.Signals members, or the bare number for unnamed ones."""
        from picklable._pool._broken import exit_signal

        assert exit_signal(-9) is signal.SIGKILL
        assert exit_signal(3) is None and exit_signal(None) is None
        assert exit_signal(-200) == 200

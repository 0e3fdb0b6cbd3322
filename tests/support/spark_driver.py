"""One real Spark for the test session: a driver process that runs scripts as ``__main__``.

Starting Spark on ``local-cluster[2,1,1024]`` (a driver JVM holding a standalone
master and two workers, two executor JVMs, a Python worker daemon in each) takes
17-40 s on a shared 2-core machine, so the suite starts it once: this module, run as
``python -m support.spark_driver DIR``, is a PySpark driver that keeps that cluster
up and runs what the tests send it, one at a time, in its main thread:

* a script file, run as ``__main__`` with ``runpy.run_path`` (its directory first
  on ``sys.path``, ``sys.argv`` as given, its cwd its directory), as
  ``python script.py`` would run it: its ``SparkSession.builder...getOrCreate()``
  returns this driver's session, and its functions, classes and lambdas are
  objects of a real ``__main__`` module;
* the session blocks of a docs page, in order, in one fresh ``__main__`` namespace,
  as tests/docs/test_docs_examples.py runs them in a fresh interpreter.

Its stdout and stderr (Python's) and exit status go back to the test. After each
run the driver puts back what a script may have changed (``picklable.spark``'s
hook, ``sys.path``, the cwd, the Python executable of the workers, modules
imported from the script's directory).

The same driver serves Spark Connect (its ``SparkConnectPlugin``, loopback only,
an ephemeral port): client scripts connect with the ``connect`` URL that the
``info`` request returns, from processes of their own (a Connect client needs no
JVM).

The tests reach it through the session-scoped ``spark_driver`` fixture
(tests/conftest.py), which :func:`connect` serves: it starts the driver when none
is listening in ``DIR`` (a directory shared by the pytest-xdist workers of one
run, under a file lock, so the run starts one cluster, never two at a time) and
keeps a connection open until the session ends. The driver stops Spark and exits
a few seconds after its last connection closes (a pytest process that dies closes
its connection too), and at exit ends every process of its process group: the
gateway JVM, the executors and their Python workers.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import io
import json
import os
import queue
import runpy
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

MASTER = "local-cluster[2,1,1024]"
SOCKET = "driver.sock"
READY = "driver.json"
LOCK = "driver.lock"
LOG = "driver.log"
# The driver exits this long after its last client went away.
GRACE_SECONDS = 3.0
# ... or this long after it started, if no client ever connected.
UNCLAIMED_SECONDS = 300.0
START_TIMEOUT = 420.0


# ---------------------------------------------------------------------- server


def _spark_conf(workdir: Path) -> dict[str, str]:
    return {
        "spark.master": MASTER,
        "spark.app.name": "picklable-tests",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.local.dir": str(workdir / "local"),
        # A failing task fails its job at once (local-cluster retries it 4 times).
        "spark.task.maxFailures": "1",
        # Spark Connect on the same cluster, loopback only, an ephemeral port.
        "spark.plugins": "org.apache.spark.sql.connect.SparkConnectPlugin",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": "0",
    }


def _start_spark(workdir: Path) -> Any:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in _spark_conf(workdir).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _connect_port(spark: Any) -> int:
    service = getattr(spark._jvm, "org.apache.spark.sql.connect.service.SparkConnectService$")
    return int(getattr(service, "MODULE$").localPort())


class _Driver:
    """The server: Spark, the socket, the clients, the queue of runs."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.requests: queue.Queue[tuple[dict[str, Any], queue.Queue[dict[str, Any]]]] = (
            queue.Queue()
        )
        self.clients = 0
        self.had_client = False
        self.idle_since = time.monotonic()
        self.lock = threading.Lock()
        self.spark: Any = None
        self.info: dict[str, Any] = {}

    # -- lifecycle

    def start(self) -> None:
        workdir = self.directory / "spark"
        workdir.mkdir(exist_ok=True)
        began = time.monotonic()
        self.spark = _start_spark(workdir)
        sc = self.spark.sparkContext
        # The cluster is up when both executors have registered (the driver's own
        # block manager is the third entry).
        while sc._jsc.sc().getExecutorMemoryStatus().size() < 3:
            time.sleep(0.2)
        self.python_exec = sc.pythonExec
        self.environment = dict(sc.environment)
        self.info = {
            "pid": os.getpid(),
            "master": MASTER,
            "python": sys.executable,
            "connect": f"sc://127.0.0.1:{_connect_port(self.spark)}",
            "app_id": sc.applicationId,
            "started_in": round(time.monotonic() - began, 1),
        }
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(str(self.directory / SOCKET))
        server.listen()
        threading.Thread(target=self._accept, args=(server,), daemon=True).start()
        (self.directory / READY).write_text(json.dumps(self.info))

    def _accept(self, server: socket.socket) -> None:
        while True:
            conn, _ = server.accept()
            with self.lock:
                self.clients += 1
                self.had_client = True
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn, conn.makefile("rwb") as stream:
                for line in stream:
                    reply: queue.Queue[dict[str, Any]] = queue.Queue()
                    self.requests.put((json.loads(line), reply))
                    stream.write(json.dumps(reply.get()).encode() + b"\n")
                    stream.flush()
        except OSError:
            pass
        finally:
            with self.lock:
                self.clients -= 1
                self.idle_since = time.monotonic()

    def loop(self) -> None:
        started = time.monotonic()
        while True:
            try:
                request, reply = self.requests.get(timeout=0.5)
            except queue.Empty:
                if self._should_stop(started):
                    return
                continue
            reply.put(self.handle(request))

    def _should_stop(self, started: float) -> bool:
        with self.lock:
            if self.clients:
                return False
            if self.had_client:
                waited = time.monotonic() - self.idle_since >= GRACE_SECONDS
            else:
                waited = time.monotonic() - started >= UNCLAIMED_SECONDS
        if not waited:
            return False
        # No new client may connect between this check and the socket's removal.
        with _locked(self.directory):
            with self.lock:
                if self.clients:
                    return False
            for name in (SOCKET, READY):
                (self.directory / name).unlink(missing_ok=True)
        return True

    def stop(self) -> None:
        try:
            if self.spark is not None:
                self.spark.stop()
        finally:
            # Whatever is left of the gateway JVM, the executors and their Python
            # workers (they are in this process group): never leave a JVM behind.
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            with contextlib.suppress(OSError):
                os.killpg(os.getpgid(0), signal.SIGTERM)

    # -- runs

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        if op == "info":
            return dict(self.info)
        if op in ("script", "blocks"):
            return self._run(request)
        return {"status": 2, "stdout": "", "stderr": f"unknown request {op!r}\n"}

    def _run(self, request: dict[str, Any]) -> dict[str, Any]:
        cwd = request["cwd"]
        out, err = io.StringIO(), io.StringIO()
        saved_path, saved_argv, saved_cwd = list(sys.path), list(sys.argv), os.getcwd()
        saved_main = sys.modules["__main__"]
        before = set(sys.modules)
        status = 0
        try:
            os.chdir(cwd)
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    if request["op"] == "script":
                        path = request["path"]
                        sys.path.insert(0, os.path.dirname(path))
                        sys.argv = [path, *request.get("argv", ())]
                        runpy.run_path(path, run_name="__main__")
                    else:
                        sys.path.insert(0, "")
                        sys.argv = ["-c"]
                        self._run_blocks(request["path"], request["blocks"])
                except SystemExit as exc:
                    status = _exit_status(exc, err)
                except BaseException:
                    traceback.print_exc()
                    status = 1
        finally:
            sys.modules["__main__"] = saved_main
            os.chdir(saved_cwd)
            sys.path[:] = saved_path
            sys.argv[:] = saved_argv
            self._restore(cwd, before)
        return {"status": status, "stdout": out.getvalue(), "stderr": err.getvalue()}

    @staticmethod
    def _run_blocks(page: str, blocks: list[tuple[int, str]]) -> None:
        main = types.ModuleType("__main__")
        main.__dict__["__builtins__"] = __builtins__
        sys.modules["__main__"] = main
        for line, code in blocks:
            exec(compile("\n" * (line - 1) + code, page, "exec"), main.__dict__)

    def _restore(self, cwd: str, before: set[str]) -> None:
        """Put back what a run may have changed in this long-lived driver."""
        hook = sys.modules.get("picklable.spark")
        if hook is not None:
            hook.disable()
        from pyspark import SparkContext

        sc = SparkContext._active_spark_context
        if sc is None:  # a script stopped Spark: the next one gets a new cluster
            self.spark = _start_spark(self.directory / "spark")
            self.info["connect"] = f"sc://127.0.0.1:{_connect_port(self.spark)}"
            sc = self.spark.sparkContext
        sc.pythonExec = self.python_exec
        sc.environment.clear()
        sc.environment.update(self.environment)
        # Modules a script imported from its own directory: the next script's
        # module of the same name must be its own.
        root = os.path.realpath(cwd) + os.sep
        for name in set(sys.modules) - before:
            file = getattr(sys.modules[name], "__file__", None)
            if isinstance(file, str) and os.path.realpath(file).startswith(root):
                del sys.modules[name]
        picklable = sys.modules.get("picklable")
        if picklable is not None:
            picklable.clear_caches()


def _exit_status(exc: SystemExit, err: io.StringIO) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=err)
    return 1


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    with open(directory / LOCK, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def serve(directory: Path) -> None:
    driver = _Driver(directory)
    try:
        driver.start()
        driver.loop()
    finally:
        driver.stop()


# ---------------------------------------------------------------------- client


class SparkDriverError(AssertionError):
    """The driver could not be started or reached."""


class SparkDriver:
    """A connection to the session's Spark driver."""

    def __init__(self, directory: Path, sock: socket.socket) -> None:
        self.directory = directory
        self.sock = sock
        self.stream = sock.makefile("rwb")
        self.info = self.request({"op": "info"})

    @property
    def connect_url(self) -> str:
        """``sc://host:port`` of the driver's Spark Connect server."""
        return str(self.info["connect"])

    def request(self, message: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        try:
            self.stream.write(json.dumps(message).encode() + b"\n")
            self.stream.flush()
            line = self.stream.readline()
        except OSError as exc:
            message = f"the Spark driver did not answer: {exc}\n{self.log_tail()}"
            raise SparkDriverError(message) from exc
        if not line:
            raise SparkDriverError(f"the Spark driver went away\n{self.log_tail()}")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run_script(
        self,
        source: str,
        directory: Path,
        *,
        args: tuple[str, ...] = (),
        timeout: float = 240,
        name: str = "script.py",
        check: bool = True,
    ) -> dict[str, Any]:
        """Run ``source`` as ``__main__`` in the driver; its stdout, stderr and status.

        Fails the test with the script's output when it exits non-zero (unless
        ``check`` is false).
        """
        script = directory / name
        script.write_text(source)
        request = {"op": "script", "path": str(script), "argv": list(args), "cwd": str(directory)}
        done = self.request(request, timeout=timeout)
        if check and done["status"] != 0:
            raise AssertionError(
                f"script exited with {done['status']}\n--- stdout\n{done['stdout']}"
                f"\n--- stderr\n{done['stderr']}"
            )
        return done

    def run_blocks(
        self, page: Path, blocks: list[tuple[int, str]], directory: Path, *, timeout: float = 240
    ) -> dict[str, Any]:
        """Run a docs page's session blocks in order in one fresh ``__main__``."""
        request = {"op": "blocks", "path": str(page), "blocks": blocks, "cwd": str(directory)}
        return self.request(request, timeout=timeout)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = (self.directory / LOG).read_text(errors="replace")
        except OSError:
            return ""
        return "--- driver log (end)\n" + "\n".join(text.splitlines()[-lines:])

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.stream.close()
        with contextlib.suppress(OSError):
            self.sock.close()


def _try_connect(directory: Path) -> socket.socket | None:
    path = directory / SOCKET
    if not path.exists():
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        path.unlink(missing_ok=True)  # a driver that died: start another
        return None
    return sock


def connect(directory: Path, env: dict[str, str]) -> SparkDriver:
    """Connect to the driver listening in ``directory``, starting it if none is.

    ``env`` is the driver's environment (its executors' Python workers inherit
    it). Waits for Spark to be up: 17-40 s when it starts it.
    """
    directory.mkdir(parents=True, exist_ok=True)
    with _locked(directory):
        sock = _try_connect(directory)
        if sock is None:
            sock = _start(directory, env)
    return SparkDriver(directory, sock)


_STARTED: list[subprocess.Popen[bytes]] = []
# How long a pytest process that started the driver waits at exit for it to stop
# (its grace period, then Spark's shutdown), before ending its process group.
EXIT_WAIT_SECONDS = 60.0


@atexit.register
def _reap_started() -> None:
    """Wait for the drivers this process started, so that none outlives the run.

    The driver exits once its last client is gone (another pytest-xdist worker
    may still hold it for a while); a Popen left to the interpreter's exit while
    its process runs warns "subprocess ... is still running".
    """
    for process in _STARTED:
        try:
            process.wait(timeout=EXIT_WAIT_SECONDS)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _start(directory: Path, env: dict[str, str]) -> socket.socket:
    (directory / READY).unlink(missing_ok=True)
    with open(directory / LOG, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "support.spark_driver", str(directory)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=directory,
            start_new_session=True,  # its own process group: the JVMs go with it
        )
    _STARTED.append(process)  # it outlives this call on purpose: _reap_started waits
    deadline = time.monotonic() + START_TIMEOUT
    while not (directory / READY).exists():
        if process.poll() is not None:
            log_text = (directory / LOG).read_text(errors="replace")
            raise SparkDriverError(f"the Spark driver exited with {process.returncode}\n{log_text}")
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.killpg(process.pid, signal.SIGKILL)
            raise SparkDriverError(f"Spark did not start within {START_TIMEOUT:.0f} s")
        time.sleep(0.2)
    sock = _try_connect(directory)
    if sock is None:
        raise SparkDriverError("the Spark driver is ready but its socket refuses connections")
    return sock


if __name__ == "__main__":
    serve(Path(sys.argv[1]))

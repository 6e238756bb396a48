"""The ``docker`` backend: candidates run in a locked-down container through the docker SDK.

Design (measured by ``bench/docker_session_start.py``): one long-lived, idle container per
*case*, and one ``docker exec`` per *session*. Starting a session is then an exec plus the
readiness handshake instead of a whole container start: about half the start-up cost of a
container per session on the 2-core reference machine (median 63 vs 149 ms at load 3, 245 vs
479 ms at load 17). The price is one container start and removal per case, so a case of a
single session costs more than with a container per session, and cases of three or more cost
less. The guarantees of a container per session are kept:

* The case container runs ``docker-init -- sleep <seconds>`` as pid 1 under a uid of its own
  (:data:`IDLE_USER`), the seconds ending shortly after the case deadline: a container whose
  EvalArc died without cleaning up (SIGKILL, a lost node) stops by itself then and the engine
  removes it (auto-remove). Every container carries its owner (:mod:`evalarc.runtime.owner`)
  and that expiry as labels, and each new backend first sweeps leftovers of dead owners
  (:func:`sweep_containers`). Candidates run as 65534:65534 and therefore can neither signal
  the idle processes nor be mistaken for them. docker-init reaps orphans, so killed processes
  do not linger as zombies inside the pids limit.
* Network off, read-only root, every capability dropped, no-new-privileges, 1 CPU, 256 MiB without
  extra swap, 64 pids, a 16 MiB ``noexec,nosuid`` tmpfs on /tmp, the snapshot read-only at
  /candidate, and /state a tmpfs of the case container (mode 0777) bounded in size
  (:data:`STATE_SIZE_BYTES`) and inodes (:data:`STATE_INODES`), workdir /candidate. /state lives
  in memory charged to the container's own memory limit: a candidate writing past the bound
  gets ENOSPC (its failure, graded like any other), and the host disk is never written. The
  sessions of a case share it; it goes with the container (when the reaper cannot run and the
  container must be replaced, the next session starts with an empty /state).
  Execs inherit the container's cgroup, capabilities and no-new-privileges; nothing else (no
  grader, no Docker socket) is mounted.
* Each session execs a trusted ``/bin/sh -c`` prelude that prints ``evalarc-<32 hex>:ready`` and
  execs the candidate; the host consumes the marker before any request.
* Killing a session runs a trusted *reaper* exec (as 65534) that SIGKILLs every process of uid
  65534 but itself, waits until /proc lists none of them (zombies included), and empties /tmp and
  /dev/shm, so the next session of the case starts with nothing but /state. If the reaper cannot
  run (a fork bomb holding every pid, say) the container is removed instead and the next session
  gets a fresh one. A session that exits by itself after EOF is reaped the same way before the
  next session starts (or when the case closes).
* Leaving :meth:`DockerBackend.open_case` removes the container (killing whatever still runs,
  /state with it), each Docker call bounded by :data:`CLEANUP_TIMEOUT` seconds.
* Only a local engine (``unix://``) is accepted: the snapshot is a bind mount of a host path,
  and a remote engine's exec streams do not carry the stdin half-close; any other
  ``DOCKER_HOST`` is an environment error before anything runs.

Streams come from ``exec_start(socket=True)``: one socket carrying stdin one way and Docker's
multiplexed stdout/stderr frames (8-byte headers) the other way; closing stdin is a half-close of
the socket. The JSON-lines logic (limits, parsing, fault wording) is :mod:`evalarc.runtime.jsonl`.
"""

from __future__ import annotations

import math
import os
import secrets
import select
import socket
import struct
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, DockerException, ImageNotFound, NotFound

from evalarc.errors import EnvironmentFailure
from evalarc.runtime.jsonl import (
    CASE_BUDGET_EXHAUSTED,
    NO_COMPLETE_RESPONSE,
    NO_EXIT_AFTER_EOF,
    RESPONSE_TIMEOUT,
    STDIN_WRITE_TIMEOUT,
    ResponseReader,
    capped_deadline,
    exit_code_message,
)
from evalarc.runtime.owner import EXPIRES_LABEL, OWNER_LABEL, owner_alive, owner_id
from evalarc.runtime.protocol import AgentFault, Limits, Transcript
from evalarc.runtime.recording import CLEANUP_FAILED
from evalarc.runtime.session_common import (
    CaseClock,
    Session,
    check_case_budget,
    host_runtime,
    kill_sessions,
)
from evalarc.runtime.snapshot import expand_command

DEFAULT_IMAGE = "python:3.12-slim"
CANDIDATE_USER = "65534:65534"
"""Who every candidate process runs as."""
IDLE_USER = "65533:65533"
"""Who the case container's idle pid 1 runs as: not the candidate, so it cannot be signalled."""
CANDIDATE_UID = 65534
CLEANUP_TIMEOUT = 20.0
"""Seconds any single Docker call may take (cleanup included) before it counts as failed."""
LAUNCH_FAILURE_CODES = frozenset({125, 126, 127})
"""Exit codes that mean the command could not be launched (Docker's and the shell's)."""
CASE_LABEL = "evalarc.case"
"""Container label holding the case's UUID."""
BACKEND_LABEL = "evalarc.backend"
"""Container label holding the UUID of the :class:`DockerBackend` that made it."""
MEMORY_LIMIT_BYTES = 256 * 1024 * 1024
PIDS_LIMIT = 64
NANO_CPUS = 1_000_000_000
TMPFS_OPTIONS = "rw,noexec,nosuid,size=16m"
STATE_SIZE_BYTES = 64 * 1024 * 1024
"""Bytes /state may hold (a tmpfs of the case container)."""
STATE_INODES = 4096
"""Files and folders /state may hold."""
STATE_OPTIONS = (
    f"rw,nosuid,nodev,size={STATE_SIZE_BYTES // 1024}k,nr_inodes={STATE_INODES},mode=0777"
)
LIFETIME_SLACK_SECONDS = 3 * CLEANUP_TIMEOUT
"""How long after its case deadline an idle case container ends by itself: room for the last
exchange and the cleanup calls of a live EvalArc, which removes it first."""
LOCAL_ENGINE = "http+docker://localhost"
"""The docker SDK's base URL for an engine on a unix socket."""
POOL_SIZE = 64
"""HTTP connections to the engine kept per backend (cases of one backend run side by side)."""

_PRELUDE = 'printf "%s\\n" "$0" && exec "$@"'
"""Runs as ``sh -c _PRELUDE <marker> <argv...>``: prints the marker line, becomes the candidate."""
_REAPER = r"""
round=0
while :; do
  kill -9 -1 2>/dev/null
  left=
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    [ "$pid" = "$$" ] && continue
    uid=
    { while read -r key value rest; do
        if [ "$key" = Uid: ]; then uid=$value; break; fi
      done < "$dir/status"; } 2>/dev/null
    [ "$uid" = 65534 ] && left="$left $pid"
  done
  [ -z "$left" ] && break
  round=$((round + 1))
  if [ "$round" -gt 4000 ]; then echo "processes still running:$left" >&2; exit 3; fi
  sleep 0.005
done
for dir in /tmp /dev/shm "$@"; do
  for entry in "$dir"/* "$dir"/.[!.]* "$dir"/..?*; do
    if [ -e "$entry" ] || [ -L "$entry" ]; then
      find "$dir" -mindepth 1 -type d ! -perm -u=rwx -exec chmod u+rwx {} + 2>/dev/null
      rm -rf "$dir"/* "$dir"/.[!.]* "$dir"/..?* || exit 4
      break
    fi
  done
done
exit 0
"""
"""Runs as ``sh -c _REAPER reaper [extra dirs to empty]`` under uid 65534: SIGKILL every other
process of that uid (``kill -1`` spares the caller and uids it may not signal), wait until none
is listed in /proc, then empty the scratch folders (folders the candidate locked, e.g. mode
0500, are first made writable again: find does not follow links)."""
_READ_CHUNK = 65536
_POLL_INTERVAL = 0.005
_FRAME_HEADER = struct.Struct(">BxxxL")
_STDOUT, _STDERR = 1, 2


class FrameDecoder:
    """Splits Docker's multiplexed attach stream into ``(stream, payload)`` chunks.

    Each frame is an 8-byte header (stream type, three zero bytes, big-endian payload length)
    followed by the payload; frames may arrive split or merged in any way.
    """

    def __init__(self) -> None:
        self._pending = bytearray()

    def feed(self, data: bytes) -> list[tuple[int, bytes]]:
        self._pending += data
        frames: list[tuple[int, bytes]] = []
        while len(self._pending) >= _FRAME_HEADER.size:
            stream, size = _FRAME_HEADER.unpack_from(self._pending)
            end = _FRAME_HEADER.size + size
            if len(self._pending) < end:
                break
            if stream not in (_STDOUT, _STDERR):
                raise EnvironmentFailure(f"unexpected Docker stream type {stream} in exec output")
            frames.append((stream, bytes(self._pending[_FRAME_HEADER.size : end])))
            del self._pending[:end]
        return frames

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete frame still waiting for the rest."""
        return len(self._pending)


def _docker_failure(action: str, error: BaseException) -> EnvironmentFailure:
    explanation = getattr(error, "explanation", None) or str(error) or type(error).__name__
    return EnvironmentFailure(f"Docker could not {action}: {explanation}")


class DockerSession(Session):
    """One candidate process: a ``docker exec`` of the readiness prelude in the case container.

    Any AgentFault ends the session: the fault is recorded, the process killed, the fault
    re-raised. :meth:`exchange` or :meth:`stop_eof` on an ended session is a harness bug
    (RuntimeError); :meth:`kill` is always allowed and idempotent.
    """

    def __init__(self, case: DockerCaseRun, index: int, argv: list[str]) -> None:
        self._case = case
        self._limits = case.limits
        self._clock = case.clock
        self._transcript = case.transcript
        self.index = index
        self._reader = ResponseReader(
            self._limits.session_output_limit_bytes, self._limits.stderr_tail_bytes
        )
        self._decoder = FrameDecoder()
        self._marker = f"evalarc-{secrets.token_hex(16)}:ready\n".encode("ascii")
        self._marker_seen = bytearray()
        self._ready = False
        self._draining = False
        self._eof = False
        self._stdin_open = True
        self._ended = False
        self._exit_code: int | None = None
        self._exec_id = ""
        self._socket: socket.socket | None = None
        self._socket_owner: Any = None
        self._argv = argv

    # -- diagnostics --------------------------------------------------------------------------

    @property
    def exec_id(self) -> str:
        return self._exec_id

    @property
    def exit_code(self) -> int | None:
        """The exit status once ended (-9 when the host killed it), else None."""
        return self._exit_code

    # -- start-up -----------------------------------------------------------------------------

    def start(self, deadline: float, case_bound: bool) -> None:
        """Exec the prelude and consume the readiness marker (called by the case run)."""
        container_id = self._case.container_id()
        api = self._case.backend.client.api
        command = ["/bin/sh", "-c", _PRELUDE, self._marker[:-1].decode("ascii"), *self._argv]
        try:
            self._exec_id = api.exec_create(
                container_id,
                command,
                stdin=True,
                stdout=True,
                stderr=True,
                tty=False,
                user=CANDIDATE_USER,
                workdir="/candidate",
            )["Id"]
            self._socket_owner = api.exec_start(self._exec_id, socket=True)
        except (DockerException, OSError) as error:
            raise _docker_failure("start the candidate process", error) from None
        raw = getattr(self._socket_owner, "_sock", self._socket_owner)
        if not isinstance(raw, socket.socket):
            raise EnvironmentFailure("the Docker connection is not a socket; use a local engine")
        self._socket = raw
        raw.setblocking(False)
        self._take_buffered_bytes()
        self._await_marker(deadline, case_bound)
        self._record("ready")

    def _take_buffered_bytes(self) -> None:
        """Feed stream bytes the HTTP layer read ahead together with the response headers."""
        response = getattr(self._socket_owner, "_response", None)
        reader: Any = getattr(getattr(getattr(response, "raw", None), "_fp", None), "fp", None)
        peek = getattr(reader, "peek", None)
        if peek is None:
            return
        with suppress(OSError, ValueError):
            buffered = peek()
            if buffered:
                self._dispatch(reader.read(len(buffered)))

    def _await_marker(self, deadline: float, case_bound: bool) -> None:
        while not self._ready:
            if self._eof:
                self._exit_code = self._wait_exit_code(deadline)
                raise EnvironmentFailure(
                    "the container process exited before the startup readiness marker "
                    f"(exit code {self._exit_code})"
                )
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if case_bound:
                    raise AgentFault(CASE_BUDGET_EXHAUSTED)
                raise EnvironmentFailure(
                    f"startup readiness timeout after {self._limits.startup_timeout:g} s"
                )
            self._pump(remaining, write=None)

    # -- the exit after EOF (the rest of the protocol is in Session) --------------------------

    def _wait_clean_exit(self) -> None:
        deadline, case_bound = self._response_deadline(NO_EXIT_AFTER_EOF)
        while not self._eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault(CASE_BUDGET_EXHAUSTED if case_bound else NO_EXIT_AFTER_EOF)
            self._pump(remaining, write=None)
        code = self._wait_exit_code(deadline)
        if code is None:
            raise AgentFault(CASE_BUDGET_EXHAUSTED if case_bound else NO_EXIT_AFTER_EOF)
        self._exit_code = code
        if code in LAUNCH_FAILURE_CODES:
            raise self._launch_failure(code)
        if code != 0:
            raise AgentFault(exit_code_message(code))

    # -- internals ----------------------------------------------------------------------------

    def _pump(self, timeout: float, write: memoryview | None) -> int:
        """Wait up to ``timeout`` for output (and for room to write ``write``); handle what came.

        Returns how many bytes of ``write`` were sent.
        """
        sock = self._socket
        assert sock is not None
        readers = [] if self._eof else [sock]
        writers = [sock] if write else []
        if not readers and not writers:
            time.sleep(min(timeout, _POLL_INTERVAL))
            return 0
        readable, writable, _ = select.select(readers, writers, [], timeout)
        if readable:
            self._receive()
        if writable and write:
            try:
                return sock.send(write)
            except BlockingIOError:
                return 0
            except OSError:
                # Docker keeps the socket open when the candidate closes its stdin, so this only
                # happens when the exec is gone: the response read will report it.
                self._stdin_open = False
                return len(write)
        return 0

    def _receive(self) -> None:
        sock = self._socket
        assert sock is not None
        try:
            chunk = sock.recv(_READ_CHUNK)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._eof = True
            return
        self._dispatch(chunk)

    def _dispatch(self, chunk: bytes) -> None:
        for stream, payload in self._decoder.feed(chunk):
            if self._draining:
                # The session is over: only the stderr tail still matters (bounded memory).
                if stream == _STDERR:
                    with suppress(AgentFault):
                        self._reader.feed_stderr(payload)
            elif stream == _STDOUT:
                if self._ready:
                    self._reader.feed_stdout(payload)
                else:
                    self._feed_marker(payload)
            elif self._ready:
                self._reader.feed_stderr(payload)
            else:
                try:
                    self._reader.feed_stderr(payload)
                except AgentFault:
                    raise EnvironmentFailure(
                        "stderr output limit exceeded during startup"
                    ) from None

    def _feed_marker(self, payload: bytes) -> None:
        wanted = len(self._marker) - len(self._marker_seen)
        head, rest = payload[:wanted], payload[wanted:]
        self._marker_seen += head
        if not self._marker.startswith(self._marker_seen):
            raise EnvironmentFailure("invalid startup prelude: unexpected output before the marker")
        if len(self._marker_seen) == len(self._marker):
            self._ready = True
            if rest:
                self._reader.feed_stdout(rest)

    def _write(self, data: bytes, deadline: float, case_bound: bool) -> None:
        view = memoryview(data)
        while view and self._stdin_open and not self._eof:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault(CASE_BUDGET_EXHAUSTED if case_bound else STDIN_WRITE_TIMEOUT)
            view = view[self._pump(remaining, write=view) :]

    def _read_line(self, deadline: float, case_bound: bool) -> bytes:
        while True:
            line = self._reader.take_line()
            if line is not None:
                return line
            if self._eof:
                # Both streams are closed; Docker reports the exit a moment later (or never, if
                # the process lives on without them: then it is killed as usual).
                code = self._wait_exit_code(deadline)
                if code is not None:
                    self._exit_code = code
                    if code in LAUNCH_FAILURE_CODES:
                        raise self._launch_failure(code)
                raise AgentFault(NO_COMPLETE_RESPONSE)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AgentFault(CASE_BUDGET_EXHAUSTED if case_bound else RESPONSE_TIMEOUT)
            self._pump(remaining, write=None)

    def _launch_failure(self, code: int) -> EnvironmentFailure:
        tail = self._reader.stderr_tail().strip().splitlines()
        detail = f": {tail[-1][:200]}" if tail else ""
        return EnvironmentFailure(
            f"candidate command {self._argv[0]!r} could not be launched in the container "
            f"(exit code {code}){detail}"
        )

    def _wait_exit_code(self, deadline: float) -> int | None:
        """The exec's exit code once Docker reports it stopped; None if still running."""
        api = self._case.backend.client.api
        while True:
            try:
                state = api.exec_inspect(self._exec_id)
            except (DockerException, OSError) as error:
                raise _docker_failure("inspect the candidate process", error) from None
            if not state.get("Running"):
                code = state.get("ExitCode")
                return int(code) if code is not None else None
            if time.monotonic() >= deadline:
                return None
            time.sleep(_POLL_INTERVAL)

    def _close_stdin(self) -> None:
        if self._stdin_open and self._socket is not None:
            self._stdin_open = False
            with suppress(OSError):
                self._socket.shutdown(socket.SHUT_WR)

    def _finish(self, killed: bool) -> None:
        """Make sure the process is gone, then record exit and diagnostics."""
        if self._ended:
            return
        self._ended = True
        self._stdin_open = False
        try:
            if self._exec_id and killed and self._exit_code is None:
                self._record("kill")
                # No warning: stdin stays open until the process is gone. Meanwhile its output
                # keeps being read, because Docker 20.10 waits (without a timeout) for an exec's
                # output copy to finish before it handles the container's next exec exit; an
                # unread flood would otherwise wedge every later exec of the case container.
                self._draining = True
                try:
                    self._case.reap(self._exec_id, wait=self._drain_for)
                    self._exit_code = -9
                except EnvironmentFailure as failure:
                    # Not even the container could be removed (the engine has gone): the case
                    # cannot be assessed, which its close reports and records. Raising here
                    # would replace the recorded fault and skip the exit and diagnostics, so a
                    # replay of the transcript could not reproduce the case.
                    self._case.cleanup_problems.append(failure.message)
            elif self._exec_id:
                self._case.needs_reap = True
        finally:
            self._close_stream()
        if not self._exec_id:
            return
        self._record_exit(self._exit_code)

    def _drain_for(self, timeout: float) -> None:
        """Read whatever output arrives within ``timeout`` seconds (used while killing)."""
        if self._socket is None or self._eof:
            time.sleep(timeout)
            return
        readable, _, _ = select.select([self._socket], [], [], timeout)
        if readable:
            with suppress(AgentFault, EnvironmentFailure):
                self._receive()

    def _close_stream(self) -> None:
        """Keep what output is already here (for the stderr tail), then drop the connection."""
        if self._socket is None:
            return
        self._draining = True
        while not self._eof:
            readable, _, _ = select.select([self._socket], [], [], 0)
            if not readable:
                break
            with suppress(AgentFault, EnvironmentFailure):
                self._receive()
        with suppress(OSError):
            self._socket.shutdown(socket.SHUT_RDWR)
        for stream in (self._socket_owner, self._socket):
            if stream is not None:
                with suppress(OSError):
                    stream.close()
        self._socket = None
        self._socket_owner = None


class DockerCaseRun:
    """One case: the case deadline and (once needed) its container, whose tmpfs is /state."""

    def __init__(self, backend: DockerBackend, clock: CaseClock) -> None:
        self.backend = backend
        self.limits = backend.limits
        self.clock = clock
        self.case_id = uuid.uuid4().hex
        self.transcript = Transcript()
        self.sessions: list[DockerSession] = []
        self.needs_reap = False
        """A session ended on its own; its leftovers must be reaped before the next one."""
        self.containers_made = 0
        self.sweep_needed = False
        """A container may exist that :attr:`container` does not know (its creation failed)."""
        self.cleanup_problems: list[str] = []
        """Kills the engine could not confirm; :meth:`close` reports them."""
        self._container: Any = None
        self._closed = False

    def start_session(self) -> DockerSession:
        if self._closed:
            raise RuntimeError("case is closed")
        index = len(self.sessions)
        check_case_budget(self.transcript, self.clock, index)
        argv = self.backend.expand()
        self.transcript.add("start", index, self.clock.elapsed(), argv=argv)
        session = DockerSession(self, index, argv)
        self.sessions.append(session)
        deadline, message = capped_deadline(
            time.monotonic(),
            self.limits.startup_timeout,
            self.clock.deadline,
            "startup readiness timeout",
        )
        try:
            if self.needs_reap and self._container is not None:
                self.reap(None)
            session.start(deadline, message == CASE_BUDGET_EXHAUSTED)
        except (AgentFault, EnvironmentFailure) as failure:
            session._fail(failure)
            raise
        return session

    @property
    def container(self) -> Any:
        """The docker SDK container of this case, or None when none is running."""
        return self._container

    def container_id(self) -> str:
        """The running case container, created and started first if there is none."""
        if self._container is None:
            self._container = self.backend.create_container(self)
            self.containers_made += 1
        container_id: str = self._container.id
        return container_id

    def reap(
        self, exec_id: str | None, *empty: str, wait: Callable[[float], None] = time.sleep
    ) -> None:
        """Kill every candidate process in the container and empty /tmp, /dev/shm and ``empty``.

        When ``exec_id`` is given, also wait until Docker reports that exec stopped; ``wait`` is
        how to pass the time between polls (a session drains its stream meanwhile). If any of
        this fails or takes longer than :data:`CLEANUP_TIMEOUT`, the container is removed
        instead: its processes die with it, and the next session gets a fresh one.
        """
        self.needs_reap = False
        if self._container is None:
            return
        api = self.backend.client.api
        deadline = time.monotonic() + CLEANUP_TIMEOUT
        reaped = False
        try:
            reaper = api.exec_create(
                self._container.id,
                ["/bin/sh", "-c", _REAPER, "reaper", *empty],
                user=CANDIDATE_USER,
                stdout=False,
                stderr=False,
            )["Id"]
            # Detached: the verdict comes from exec_inspect, polled against our own deadline.
            api.exec_start(reaper, detach=True)
            # The reaper's success already proves inside the container that no candidate process
            # is left; Docker's own record of the session's exec follows (exit events of one
            # container are handled in order), and is checked last.
            watched = [reaper] if exec_id is None else [reaper, exec_id]
            while watched and time.monotonic() < deadline:
                state = api.exec_inspect(watched[0])
                if state["Running"]:
                    wait(_POLL_INTERVAL)
                elif watched[0] == reaper and state.get("ExitCode") != 0:
                    break
                else:
                    watched.pop(0)
            reaped = not watched
        except (DockerException, OSError):
            reaped = False
        if not reaped:
            self.remove_container()

    def remove_container(self) -> None:
        """Force-remove the case container (Docker kills its processes first).

        After a failed creation the container object may be unknown, so every container carrying
        this case's label is swept instead.
        """
        container, self._container = self._container, None
        try:
            if self.sweep_needed:
                self.sweep_needed = False
                for leftover in self.backend.client.containers.list(
                    all=True, filters={"label": f"{CASE_LABEL}={self.case_id}"}
                ):
                    _force_remove(leftover)
            elif container is not None:
                _force_remove(container)
        except (DockerException, OSError) as error:
            raise _docker_failure(f"remove the containers of case {self.case_id}", error) from None

    def close(self) -> None:
        """Kill every session and remove the container (its /state goes with it)."""
        if self._closed:
            return
        self._closed = True
        problems: list[str] = self.cleanup_problems
        kill_sessions(self.sessions, problems)
        try:
            self.remove_container()
        except EnvironmentFailure as error:
            problems.append(error.message)
        if problems:
            # Recorded, so that a replay of this case (``verify``) fails its cleanup the same way.
            message = CLEANUP_FAILED + "; ".join(problems)
            self.transcript.add(
                "fault",
                max(len(self.sessions) - 1, 0),
                self.clock.elapsed(),
                message=message,
                kind="environment",
            )
            raise EnvironmentFailure(message)


class DockerBackend:
    """Runs the snapshot's command in containers of one locally available image."""

    name = "docker"

    def __init__(
        self,
        snapshot_dir: Path,
        command: list[str],
        limits: Limits,
        work_root: Path,
        image: str = DEFAULT_IMAGE,
        owner: str | None = None,
    ) -> None:
        if not command:
            raise ValueError("the candidate command template is empty")
        self.owner = owner or owner_id()
        """Labels every container (:data:`OWNER_LABEL`): the process responsible for it."""
        self.snapshot_dir = snapshot_dir.resolve()
        self.command = list(command)
        self.limits = limits
        self.work_root = work_root.resolve()
        self.image = image
        self.backend_id = uuid.uuid4().hex
        """Labels every container of this backend (:data:`BACKEND_LABEL`)."""
        self.client: Any = connect()
        sweep_once(self.client)
        self.image_id = self._resolve_image()

    def _resolve_image(self) -> str:
        try:
            image_id: str = self.client.images.get(self.image).id
        except ImageNotFound:
            raise EnvironmentFailure(
                f"Docker image {self.image!r} is not available locally; EvalArc never pulls: "
                f"build it (bash scripts/build_images.sh makes evalarc-python:local and "
                f"evalarc-node:local) or pull it yourself (docker pull {self.image})"
            ) from None
        except (DockerException, OSError) as error:
            raise _docker_failure(f"inspect image {self.image!r}", error) from None
        if not image_id.startswith("sha256:"):
            raise EnvironmentFailure(f"Docker image {self.image!r} has no sha256 id: {image_id}")
        return image_id

    def runtime(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "image": self.image,
            "image_id": self.image_id,
            "command": list(self.command),
            **self.limits.to_json(),
            "state_size_bytes": STATE_SIZE_BYTES,
            "state_inodes": STATE_INODES,
            **host_runtime(),
        }

    def expand(self) -> list[str]:
        return expand_command(self.command, "python3", "/candidate", "/state")

    def create_container(self, case: DockerCaseRun) -> Any:
        """Create and start an idle case container with every sandbox limit.

        A container that was created but could not be started is removed again by the case's
        label sweep (:meth:`DockerCaseRun.remove_container`).
        """
        # Until the start succeeds, a container may exist that the case does not know about
        # (a failed or interrupted call): the case then sweeps by label when it closes.
        case.sweep_needed = True
        lifetime = max(
            1, math.ceil(case.clock.deadline - time.monotonic() + LIFETIME_SLACK_SECONDS)
        )
        expires = math.ceil(time.time() + lifetime)
        try:
            # The low-level calls: the SDK's containers.create would inspect the new container
            # once more to build its model, a round trip per case that nothing here needs.
            api = self.client.api
            created = api.create_container(
                self.image_id,
                ["sleep", str(lifetime)],
                name=f"evalarc-{case.case_id}-{case.containers_made}",
                user=IDLE_USER,
                labels={
                    CASE_LABEL: case.case_id,
                    BACKEND_LABEL: self.backend_id,
                    OWNER_LABEL: self.owner,
                    EXPIRES_LABEL: str(expires),
                },
                network_disabled=True,
                volumes=["/candidate"],
                working_dir="/candidate",
                stdin_open=False,
                tty=False,
                host_config=api.create_host_config(
                    # The engine removes the container itself once it stops, also when it comes
                    # back after dying mid-run: nothing is left behind even when we cannot.
                    auto_remove=True,
                    init=True,
                    network_mode="none",
                    read_only=True,
                    cap_drop=["ALL"],
                    security_opt=["no-new-privileges"],
                    nano_cpus=NANO_CPUS,
                    mem_limit=MEMORY_LIMIT_BYTES,
                    memswap_limit=MEMORY_LIMIT_BYTES,
                    pids_limit=PIDS_LIMIT,
                    tmpfs={"/tmp": TMPFS_OPTIONS, "/state": STATE_OPTIONS},
                    binds={str(self.snapshot_dir): {"bind": "/candidate", "mode": "ro"}},
                ),
            )
            container = self.client.containers.prepare_model({"Id": created["Id"]})
            container.start()
        except (DockerException, OSError) as error:
            failure = _docker_failure("start the case container", error)
            try:
                case.remove_container()
            except EnvironmentFailure as cleanup:
                raise EnvironmentFailure(f"{failure.message}; {cleanup.message}") from None
            raise failure from None
        case.sweep_needed = False
        return container

    @contextmanager
    def open_case(self, label: str) -> Iterator[DockerCaseRun]:
        """Open one case; /state is the case container's own bounded tmpfs, so nothing of the
        case is written on the host (``label`` only names the case in messages)."""
        del label
        clock = CaseClock.start(self.limits.case_timeout)
        run = DockerCaseRun(self, clock)
        try:
            yield run
        finally:
            run.close()


def connect() -> Any:
    """A docker SDK client of the local engine; a remote or unreachable engine is an
    environment failure with a one-line message."""
    host = os.environ.get("DOCKER_HOST", "").strip()
    if host and not host.startswith("unix://"):
        raise EnvironmentFailure(
            f"DOCKER_HOST={host} is not a local engine: EvalArc runs candidates only on a "
            "unix:// Docker socket on this machine (bind mounts and stdin half-close need one); "
            "unset DOCKER_HOST or point it at unix:///var/run/docker.sock"
        )
    try:
        client: Any = docker.from_env(timeout=int(CLEANUP_TIMEOUT), max_pool_size=POOL_SIZE)
        client.ping()
    except (DockerException, OSError) as error:
        raise EnvironmentFailure(
            f"cannot reach the Docker engine ({error}); start it (as root: bash "
            f"scripts/docker_setup.sh) or point DOCKER_HOST at a running engine"
        ) from None
    if getattr(client.api, "base_url", LOCAL_ENGINE) != LOCAL_ENGINE:
        client.close()
        raise EnvironmentFailure(
            "the Docker engine is not on a local unix:// socket; EvalArc runs candidates only "
            "on a local engine"
        )
    return client


def leftover(labels: dict[str, str], now: float) -> bool:
    """Whether a container with these labels belongs to nobody any more: its case deadline has
    passed (whoever owns it: a container created but never started has no idle process that
    ends at the deadline), or its owner is gone (a zombie included, see
    :mod:`evalarc.runtime.owner`)."""
    try:
        expires = float(labels.get(EXPIRES_LABEL, ""))
    except ValueError:
        expires = math.nan
    if math.isfinite(expires) and expires < now:
        return True
    owner = labels.get(OWNER_LABEL, "")
    return bool(owner) and owner_alive(owner) is False


def sweep_containers(client: Any) -> int:
    """Remove EvalArc case containers left by dead owners or past their deadline, running or
    only created (see :func:`leftover`); return how many were removed. Engine errors are
    ignored: the sweep is a safety net."""
    removed = 0
    try:
        containers = client.containers.list(all=True, filters={"label": OWNER_LABEL})
    except (DockerException, OSError):
        return 0
    now = time.time()
    for container in containers:
        labels = dict(container.labels or {})
        if leftover(labels, now):
            with suppress(DockerException, OSError):
                _force_remove(container)
                removed += 1
    return removed


_swept = threading.Lock()
_sweep_done = False


def sweep_once(client: Any) -> None:
    """Sweep leftovers the first time this process connects to the engine."""
    global _sweep_done
    with _swept:
        if _sweep_done:
            return
        _sweep_done = True
    sweep_containers(client)


def _force_remove(container: Any) -> None:
    """Remove a container, killing it first; one already gone (or being removed by the engine,
    as auto-removal does once it stops) counts as removed."""
    try:
        container.remove(force=True)
    except NotFound:
        pass
    except APIError as error:
        if error.status_code != 409 or "already in progress" not in str(error.explanation):
            raise

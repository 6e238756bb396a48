"""How much does starting one candidate session cost in Docker? Two designs, same sandbox.

(a) ``run``: one container per session (``docker run --rm -i`` through the SDK): create with the
    sandbox limits, attach, start, read the readiness marker, one exchange; the kill is a forced
    container removal.
(b) ``exec``: one long-lived container per case (``docker-init -- sleep infinity`` as pid 1 under
    a uid of its own, same limits); each session is ``exec_create`` + ``exec_start(socket=True)``
    of the readiness prelude as 65534; the kill is a second exec that SIGKILLs every process of
    uid 65534, waits until /proc lists none, and empties /tmp; then the session's exec must be
    reported as stopped.

The designs run interleaved (one case of each per round) so that load from anything else on the
machine hits them alike. Printed: medians and p90 of session start (start + readiness + first
exchange), kill, and for (b) the once-per-case container start and removal; then the same
figures for the implemented ``DockerBackend`` through the Session protocol, and the summed cost
of whole cases of 1-5 sessions under each design.

    python bench/docker_session_start.py [--sessions 20] [--image evalarc-python:local]

Needs a running engine and the image (scripts/docker_setup.sh).
"""

from __future__ import annotations

import argparse
import secrets
import select
import socket
import statistics
import struct
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import Container

CANDIDATE = """\
import sys
for line in sys.stdin:
    sys.stdout.write('{"ok": true}\\n')
    sys.stdout.flush()
"""
PRELUDE = 'printf "%s\\n" "$0"; exec "$@"'
PER_CASE = 4
IDLE_USER = "65533:65533"
"""The case container's pid 1 (docker-init) and its ``sleep`` run as a uid the candidate is not, so
the candidate can neither signal them nor be confused with them."""
REAPER = r"""
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
  if [ "$round" -gt 2000 ]; then echo "still running:$left"; exit 1; fi
  sleep 0.005
done
rm -rf /tmp/* /tmp/.[!.]* /tmp/..?* 2>/dev/null
exit 0
"""


def host_config(
    client: docker.DockerClient, snapshot: Path, state: Path, init: bool, user: str = "65534:65534"
) -> dict[str, Any]:
    return dict(
        network_disabled=True,
        network_mode="none",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        nano_cpus=1_000_000_000,
        mem_limit=256 * 1024 * 1024,
        memswap_limit=256 * 1024 * 1024,
        pids_limit=64,
        user=user,
        tmpfs={"/tmp": "rw,noexec,nosuid,size=16m"},
        volumes={
            str(snapshot): {"bind": "/candidate", "mode": "ro"},
            str(state): {"bind": "/state", "mode": "rw"},
        },
        working_dir="/candidate",
        init=init,
        labels={"evalarc.bench": "docker_session_start"},
    )


def raw_socket(wrapped: Any) -> socket.socket:
    sock = getattr(wrapped, "_sock", wrapped)
    assert isinstance(sock, socket.socket)
    return sock


def read_stdout_line(sock: socket.socket, buffer: bytearray, timeout: float = 30.0) -> bytes:
    """Read multiplexed frames until stdout holds one line; return it (buffer keeps the rest)."""
    pending = bytearray()
    end = time.monotonic() + timeout
    while b"\n" not in buffer:
        ready, _, _ = select.select([sock], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            raise TimeoutError("no line")
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError("stream closed before a line")
        pending += chunk
        while len(pending) >= 8:
            kind, size = struct.unpack(">BxxxL", pending[:8])
            if len(pending) < 8 + size:
                break
            if kind == 1:
                buffer += pending[8 : 8 + size]
            del pending[: 8 + size]
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line


def one_exchange(sock: socket.socket, marker: str) -> None:
    buffer = bytearray()
    if read_stdout_line(sock, buffer).decode() != marker:
        raise RuntimeError("bad readiness marker")
    sock.sendall(b'{"op": "get", "key": "k"}\n')
    if read_stdout_line(sock, buffer) != b'{"ok": true}':
        raise RuntimeError("bad response")


def candidate_argv(marker: str) -> list[str]:
    return ["/bin/sh", "-c", PRELUDE, marker, "python3", "-I", "-B", "main.py", "/state/db"]


def bench_run(
    client: docker.DockerClient, image_id: str, snapshot: Path, state: Path, sessions: int
) -> dict[str, list[float]]:
    starts: list[float] = []
    kills: list[float] = []
    for _ in range(sessions):
        marker = f"evalarc-{secrets.token_hex(16)}:ready"
        began = time.perf_counter()
        container = client.containers.create(
            image_id,
            candidate_argv(marker),
            name=f"evalarc-bench-{uuid.uuid4().hex}",
            stdin_open=True,
            tty=False,
            **host_config(client, snapshot, state, init=False),
        )
        wrapped = client.api.attach_socket(
            container.id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
        )
        sock = raw_socket(wrapped)
        container.start()
        one_exchange(sock, marker)
        started = time.perf_counter()
        container.remove(force=True)
        sock.close()
        killed = time.perf_counter()
        starts.append(started - began)
        kills.append(killed - started)
    return {"start": starts, "kill": kills}


def bench_exec(
    client: docker.DockerClient,
    image_id: str,
    snapshot: Path,
    state: Path,
    sessions: int,
    per_case: int = 4,
) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {"start": [], "kill": [], "case_start": [], "case_stop": []}
    while len(figures["start"]) < sessions:
        began = time.perf_counter()
        container: Container = client.containers.run(
            image_id,
            ["sleep", "infinity"],
            name=f"evalarc-bench-{uuid.uuid4().hex}",
            detach=True,
            **host_config(client, snapshot, state, init=True, user=IDLE_USER),
        )
        figures["case_start"].append(time.perf_counter() - began)
        try:
            for _ in range(min(per_case, sessions - len(figures["start"]))):
                start, kill = exec_session(client, container)
                figures["start"].append(start)
                figures["kill"].append(kill)
        finally:
            began = time.perf_counter()
            container.remove(force=True)
            figures["case_stop"].append(time.perf_counter() - began)
    return figures


def exec_session(client: docker.DockerClient, container: Container) -> tuple[float, float]:
    """One session in a running case container: (start+first exchange, verified kill) seconds."""
    marker = f"evalarc-{secrets.token_hex(16)}:ready"
    began = time.perf_counter()
    exec_id = client.api.exec_create(
        container.id,
        candidate_argv(marker),
        stdin=True,
        stdout=True,
        stderr=True,
        tty=False,
        user="65534:65534",
        workdir="/candidate",
    )["Id"]
    sock = raw_socket(client.api.exec_start(exec_id, socket=True))
    one_exchange(sock, marker)
    started = time.perf_counter()
    reaper = client.api.exec_create(container.id, ["/bin/sh", "-c", REAPER], user="65534:65534")[
        "Id"
    ]
    output = client.api.exec_start(reaper)
    while (status := client.api.exec_inspect(reaper))["Running"]:
        time.sleep(0.002)
    if status["ExitCode"] != 0:
        raise RuntimeError(f"reaper failed: {output!r}")
    while client.api.exec_inspect(exec_id)["Running"]:
        time.sleep(0.002)
    sock.close()
    return started - began, time.perf_counter() - started


def bench_backend(
    client: docker.DockerClient, image: str, snapshot: Path, sessions: int, per_case: int = 4
) -> dict[str, list[float]]:
    """The implemented backend end to end, through the Session protocol."""
    from evalarc.runtime.docker_backend import DockerBackend
    from evalarc.runtime.protocol import Limits

    figures: dict[str, list[float]] = {
        "first_start": [], "start": [], "kill": [], "case_close": [],
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as work:
        backend = DockerBackend(
            snapshot, ["{python}", "-I", "-B", "main.py", "{state}/db"], Limits(), Path(work),
            image=image,
        )  # fmt: skip
        done = 0
        while done < sessions:
            context = backend.open_case("bench")
            run = context.__enter__()
            for index in range(min(per_case, sessions - done)):
                began = time.perf_counter()
                session = run.start_session()
                if session.exchange({"op": "get", "key": "k"}) != {"ok": True}:
                    raise RuntimeError("bad response")
                started = time.perf_counter()
                session.kill()
                figures["first_start" if index == 0 else "start"].append(started - began)
                figures["kill"].append(time.perf_counter() - started)
                done += 1
            began = time.perf_counter()
            context.__exit__(None, None, None)
            figures["case_close"].append(time.perf_counter() - began)
    return figures


def summary(values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))]
    return f"median {statistics.median(ordered) * 1000:7.1f} ms  p90 {p90 * 1000:7.1f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--image", default="evalarc-python:local")
    options = parser.parse_args()
    client = docker.from_env()
    image_id = client.images.get(options.image).id
    print(f"image {options.image} ({image_id[:19]}), {options.sessions} sessions per design,")
    print(f"designs interleaved in rounds of {PER_CASE} sessions (one case of each per round)")
    with tempfile.TemporaryDirectory() as folder:
        snapshot = Path(folder, "snapshot")
        snapshot.mkdir()
        (snapshot / "main.py").write_text(CANDIDATE)
        state = Path(folder, "state")
        state.mkdir()
        state.chmod(0o777)
        run: dict[str, list[float]] = {}
        exec_: dict[str, list[float]] = {}
        backend: dict[str, list[float]] = {}
        # Warm caches first (not counted), then interleave so load drift hits every design alike.
        bench_run(client, image_id, snapshot, state, 2)
        bench_exec(client, image_id, snapshot, state, 2)
        for _ in range(0, options.sessions, PER_CASE):
            for into, figures in (
                (run, bench_run(client, image_id, snapshot, state, PER_CASE)),
                (exec_, bench_exec(client, image_id, snapshot, state, PER_CASE, PER_CASE)),
                (backend, bench_backend(client, options.image, snapshot, PER_CASE, PER_CASE)),
            ):
                for key, values in figures.items():
                    into.setdefault(key, []).extend(values)
    rows = [
        ("(a) run: container per session", run),
        ("(b) exec: container per case", exec_),
        ("DockerBackend (implements b)", backend),
    ]
    labels = {
        "start": "session start + readiness + first exchange",
        "first_start": "first session incl. case container start",
        "kill": "kill, process verified gone",
        "case_start": "case container start",
        "case_stop": "case container removal",
        "case_close": "case close (container and state dir removed)",
    }
    for name, figures in rows:
        print(name)
        for key, label in labels.items():
            if figures.get(key):
                print(f"  {label:<45} {summary(figures[key])}")
    per_run = statistics.median(run["start"]) + statistics.median(run["kill"])
    per_exec = statistics.median(exec_["start"]) + statistics.median(exec_["kill"])
    case_exec = statistics.median(exec_["case_start"]) + statistics.median(exec_["case_stop"])
    for count in (1, 2, 3, 5):
        print(
            f"case of {count} session(s), medians summed: (a) {per_run * count * 1000:6.1f} ms,"
            f" (b) {(case_exec + per_exec * count) * 1000:6.1f} ms"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

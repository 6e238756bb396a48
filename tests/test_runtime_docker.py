"""The docker backend against the real engine and a local image (no mocks).

Needs a running engine and the image named by ``EVALARC_TEST_IMAGE`` (default
``evalarc-python:local``); ``bash scripts/docker_setup.sh`` provides both. Without them these
tests fail (never skip), because CI runs that script first.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import docker
import pytest

from evalarc.errors import EnvironmentFailure
from evalarc.runtime.docker_backend import (
    BACKEND_LABEL,
    CASE_LABEL,
    STATE_INODES,
    STATE_OPTIONS,
    STATE_SIZE_BYTES,
    DockerBackend,
    DockerSession,
    FrameDecoder,
    connect,
    sweep_containers,
)
from evalarc.runtime.jsonl import (
    CASE_BUDGET_EXHAUSTED,
    NO_COMPLETE_RESPONSE,
    NO_EXIT_AFTER_EOF,
    NOT_FINITE_JSON,
    OUTPUT_LIMIT_EXCEEDED,
    RESPONSE_TIMEOUT,
    UNSOLICITED_STDOUT,
)
from evalarc.runtime.owner import EXPIRES_LABEL, OWNER_LABEL, owner_id
from evalarc.runtime.protocol import AgentFault, Backend, Limits

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
NODE_IMAGE = os.environ.get("EVALARC_TEST_NODE_IMAGE", "evalarc-node:local")
FAST = Limits(response_timeout=2.0, case_timeout=30.0, session_output_limit_bytes=200_000)
MiB = 1024 * 1024

CANDIDATE = r'''
"""Test candidate for the docker backend: argv[1] picks the EOF behaviour, requests pick ops."""
import contextlib
import errno
import json
import os
import socket
import subprocess
import sys
import time

BEHAVIOUR = sys.argv[1]
STATE = sys.argv[2]


def reply(value):
    sys.stdout.write(json.dumps(value) + "\n")
    sys.stdout.flush()


def read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except OSError as error:
        return "error: " + errno.errorcode.get(error.errno, str(error.errno))


def attempt(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def status_field(name):
    for line in read("/proc/self/status").splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1].split()
    return None


def others():
    """Processes of my uid other than me (zombies included)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            for line in read("/proc/%s/status" % entry).splitlines():
                if line.startswith("Uid:") and line.split()[1] == str(os.getuid()):
                    found.append(int(entry))
    return sorted(found)


def write_file(path, text="x"):
    with open(path, "w") as handle:
        handle.write(text)


def try_exec_from_tmp():
    write_file("/tmp/tool.sh", "#!/bin/sh\necho hi\n")
    os.chmod("/tmp/tool.sh", 0o755)
    subprocess.run(["/tmp/tool.sh"], check=True, capture_output=True)


def connect(address):
    with socket.create_connection((address, 53), timeout=2):
        pass


def cgroup(*candidates):
    for path in candidates:
        value = read(path)
        if not value.startswith("error"):
            return value
    return None


DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")


def probe():
    return {
        "uid": os.getuid(), "gid": os.getgid(), "euid": os.geteuid(), "groups": os.getgroups(),
        "cap_eff": status_field("CapEff"), "no_new_privs": status_field("NoNewPrivs"),
        "cwd": os.getcwd(), "candidate": sorted(os.listdir("/candidate")),
        "interfaces": sorted(os.listdir("/sys/class/net")),
        "connect_public": attempt(lambda: connect("1.1.1.1")),
        "resolve": attempt(lambda: socket.getaddrinfo("deb.debian.org", 80)),
        "write_root": attempt(lambda: write_file("/evil")),
        "write_etc": attempt(lambda: write_file("/etc/evil")),
        "write_candidate": attempt(lambda: write_file("/candidate/evil")),
        "write_state": attempt(lambda: write_file(os.path.join(STATE, "probe"))),
        "write_tmp": attempt(lambda: write_file("/tmp/probe")),
        "exec_tmp": attempt(try_exec_from_tmp),
        "docker_socket": any(os.path.exists(path) for path in DOCKER_SOCKETS),
        "mounts": read("/proc/mounts").splitlines(),
        "memory_limit": cgroup("/sys/fs/cgroup/memory.max",
                               "/sys/fs/cgroup/memory/memory.limit_in_bytes"),
        "pids_max": cgroup("/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/pids/pids.max"),
        "cpu": cgroup("/sys/fs/cgroup/cpu.max", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
        "state_mode": oct(os.stat(STATE).st_mode & 0o777),
    }


def fork_bomb():
    children, failure = [], None
    for _ in range(200):
        try:
            pid = os.fork()
        except OSError as error:
            failure = errno.errorcode.get(error.errno, str(error.errno))
            break
        if pid == 0:
            time.sleep(120)
            os._exit(0)
        children.append(pid)
    return {"forked": len(children), "failure": failure}


def hog():
    chunks = []
    while True:
        chunks.append(b"m" * (16 * 1024 * 1024))


VALUE_PATH = os.path.join(STATE, "value")
PENDING = []


def store(value):
    with open(VALUE_PATH + ".tmp", "w") as handle:
        handle.write(json.dumps(value))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(VALUE_PATH + ".tmp", VALUE_PATH)


def handle(request):
    op = request.get("op") if isinstance(request, dict) else None
    value_path = VALUE_PATH
    if op == "put":
        store(request["value"])
        return {"ok": True}
    if op == "later":
        PENDING.append(request["value"])  # acknowledged now, written only when stdin ends
        return {"ok": True}
    if op == "nest":
        os.makedirs(os.path.join(STATE, "sub", "deeper"))
        write_file(os.path.join(STATE, "sub", "deeper", "file"))
        return {"ok": True}
    if op == "fill":
        # Write up to `bytes` into /state, then make empty files up to `files`: report how far
        # each got and the error that stopped it.
        written, made, errors = 0, 0, {}
        chunk = b"x" * (1 << 20)
        try:
            with open(os.path.join(STATE, "fill"), "wb") as handle:
                while written < request["bytes"]:
                    handle.write(chunk)
                    handle.flush()
                    written += len(chunk)
        except OSError as error:
            errors["bytes"] = errno.errorcode.get(error.errno, str(error.errno))
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(STATE, "fill"))
        try:
            while made < request["files"]:
                open(os.path.join(STATE, f"f{made}"), "wb").close()
                made += 1
        except OSError as error:
            errors["files"] = errno.errorcode.get(error.errno, str(error.errno))
        return {"written": written, "made": made, "errors": errors}
    if op == "get":
        return {"value": json.loads(read(value_path)) if os.path.exists(value_path) else None}
    if op == "spawn":
        child = subprocess.Popen(["sleep", "120"], start_new_session=True)
        return {"child": child.pid, "others": others()}
    if op == "others":
        return {"others": others()}
    if op == "litter":
        write_file("/tmp/litter")
        write_file("/dev/shm/litter")
        if request.get("locked"):
            os.mkdir("/tmp/locked")
            write_file("/tmp/locked/file")
            os.chmod("/tmp/locked", 0o500)
        return {"ok": True}
    if op == "scratch":
        return {"tmp": sorted(os.listdir("/tmp")), "shm": sorted(os.listdir("/dev/shm")),
                "state": sorted(os.listdir(STATE))}
    if op == "probe":
        return probe()
    if op == "fork":
        return fork_bomb()
    if op == "hog":
        hog()
    if op == "sleep":
        time.sleep(60)
    if op == "nan":
        return float("nan")
    if op == "huge":
        sys.stdout.write('{"n": 1e999}\n')
        sys.stdout.flush()
        return None
    if op == "flood":
        while True:
            sys.stdout.write("x" * 65536)
    if op == "stderr":
        sys.stderr.write(request["text"])
        sys.stderr.flush()
    return {"echo": request}


for line in sys.stdin:
    answer = handle(json.loads(line))
    if answer is not None:
        sys.stdout.write(json.dumps(answer, allow_nan=True) + "\n")
        sys.stdout.flush()
if PENDING:
    store(PENDING[-1])
if BEHAVIOUR == "exit-3":
    sys.exit(3)
if BEHAVIOUR == "ignore-eof":
    time.sleep(60)
if BEHAVIOUR == "trailing":
    sys.stdout.write("bye\n")
'''

NODE_CANDIDATE = r"""
const readline = require("readline");
const lines = readline.createInterface({ input: process.stdin });
lines.on("line", (line) => {
  process.stdout.write(JSON.stringify({ echo: JSON.parse(line), node: process.version }) + "\n");
});
"""


def docker_cli(*args: str) -> str:
    return subprocess.run(
        ["docker", *args], check=True, capture_output=True, text=True, timeout=60
    ).stdout


@pytest.fixture()
def snapshot(tmp_path: Path) -> Path:
    folder = tmp_path / "snapshot"
    folder.mkdir()
    (folder / "main.py").write_text(CANDIDATE)
    return folder


MakeBackend = Callable[..., DockerBackend]


@pytest.fixture()
def make_backend(
    engine: docker.DockerClient, snapshot: Path, tmp_path: Path
) -> Iterator[MakeBackend]:
    """Backends for the test; afterwards none of their containers or state folders may remain."""
    made: list[DockerBackend] = []

    def make(
        behaviour: str = "serve",
        limits: Limits = FAST,
        command: list[str] | None = None,
        image: str = IMAGE,
        folder: Path = snapshot,
    ) -> DockerBackend:
        template = command or ["{python}", "-I", "-B", "main.py", behaviour, "{state}"]
        backend = DockerBackend(folder, template, limits, tmp_path / "work", image=image)
        made.append(backend)
        return backend

    yield make
    for backend in made:
        label = f"label={BACKEND_LABEL}={backend.backend_id}"
        assert docker_cli("ps", "-a", "--filter", label, "--format", "{{.Names}}") == ""
        assert not backend.work_root.exists() or not list(backend.work_root.glob("state-*"))


def fault_of(action: Callable[[], object]) -> str:
    with pytest.raises(AgentFault) as caught:
        action()
    return caught.value.message


def container_state(container_id: str) -> dict[str, Any]:
    client = docker.from_env()
    try:
        attrs: dict[str, Any] = client.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return {}
    return attrs


# -- the stream format --------------------------------------------------------------------------


def test_frame_decoder_reassembles_split_and_merged_frames() -> None:
    frames = b"\x01\x00\x00\x00\x00\x00\x00\x03abc" + b"\x02\x00\x00\x00\x00\x00\x00\x02er"
    frames += b"\x01\x00\x00\x00\x00\x00\x00\x00"
    decoder = FrameDecoder()
    received = []
    for position in range(len(frames)):
        received += decoder.feed(frames[position : position + 1])
    assert received == [(1, b"abc"), (2, b"er"), (1, b"")]
    assert decoder.pending_bytes == 0
    merged = FrameDecoder().feed(frames + b"\x01\x00\x00\x00\x00\x00\x00\x05he")
    assert merged == [(1, b"abc"), (2, b"er"), (1, b"")]
    with pytest.raises(EnvironmentFailure, match="stream type 7"):
        FrameDecoder().feed(b"\x07\x00\x00\x00\x00\x00\x00\x01x")


# -- image resolution and the runtime object ----------------------------------------------------


def test_missing_image_is_an_environment_failure(
    engine: docker.DockerClient, tmp_path: Path
) -> None:
    with pytest.raises(EnvironmentFailure) as caught:
        DockerBackend(
            tmp_path, ["{python}", "main.py"], FAST, tmp_path, image="evalarc-absent:none"
        )
    assert "evalarc-absent:none" in caught.value.message
    assert "never pulls" in caught.value.message
    assert "build_images.sh" in caught.value.message


def test_runtime_names_the_resolved_image(make_backend: MakeBackend, engine: Any) -> None:
    backend = make_backend()
    contract: Backend = backend
    runtime = contract.runtime()
    assert runtime["backend"] == "docker"
    assert runtime["image"] == IMAGE
    assert runtime["image_id"] == engine.images.get(IMAGE).id
    assert runtime["image_id"].startswith("sha256:")
    assert runtime["command"] == ["{python}", "-I", "-B", "main.py", "serve", "{state}"]
    assert runtime["response_timeout_seconds"] == 2.0
    assert runtime["startup_timeout_seconds"] == 30.0
    assert runtime["session_output_limit_bytes"] == 200_000
    # What decides comparability, and not the host's kernel build.
    assert runtime["os"] == platform.system() and runtime["architecture"] == platform.machine()
    assert (runtime["state_size_bytes"], runtime["state_inodes"]) == (
        STATE_SIZE_BYTES, STATE_INODES)
    assert "platform" not in runtime and platform.release() not in json.dumps(runtime)


# -- the conversation ---------------------------------------------------------------------------


def test_well_behaved_exchange_eof_and_transcript(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with backend.open_case("17/read-write-delete") as run:
        first = run.start_session()
        assert first.exchange({"op": "put", "value": "ключ"}) == {"ok": True}
        assert first.exchange([1, None]) == {"echo": [1, None]}
        assert first.exchange({"op": "stderr", "text": "diagnostic line\n"}) == {
            "echo": {"op": "stderr", "text": "diagnostic line\n"}
        }
        first.stop_eof()
        assert first.exit_code == 0
        assert first.stderr_tail() == "diagnostic line\n"
        second = run.start_session()
        assert second.exchange({"op": "get"}) == {"value": "ключ"}
        second.stop_eof()
        events = [(event["event"], event["session"]) for event in run.transcript.events]
    assert events == [
        ("start", 0), ("ready", 0),
        ("send", 0), ("recv", 0), ("send", 0), ("recv", 0), ("send", 0), ("recv", 0),
        ("eof", 0), ("exit", 0), ("stderr", 0),
        ("start", 1), ("ready", 1), ("send", 1), ("recv", 1), ("eof", 1), ("exit", 1),
        ("stderr", 1),
    ]  # fmt: skip
    sent = run.transcript.events[2]
    assert sent["line"] == '{"op": "put", "value": "\\u043a\\u043b\\u044e\\u0447"}'
    assert run.transcript.events[0]["argv"] == [
        "python3", "-I", "-B", "main.py", "serve", "/state",
    ]  # fmt: skip
    times = [event["t"] for event in run.transcript.events]
    assert times == sorted(times)
    stderr_event = run.transcript.events[10]
    assert stderr_event["tail"] == "diagnostic line\n"
    assert stderr_event["stderr_bytes"] == len("diagnostic line\n")


def test_response_timeout(make_backend: MakeBackend) -> None:
    backend = make_backend(limits=Limits(response_timeout=0.5, case_timeout=30.0))
    with backend.open_case("timeout") as run:
        session = run.start_session()
        began = time.monotonic()
        assert fault_of(lambda: session.exchange({"op": "sleep"})) == RESPONSE_TIMEOUT
        assert 0.5 <= time.monotonic() - began < 3.0
        assert session.ended and session.exit_code == -9
        faults = [event for event in run.transcript.events if event["event"] == "fault"]
        assert faults == [
            {"event": "fault", "session": 0, "t": faults[0]["t"], "message": RESPONSE_TIMEOUT,
             "kind": "agent"}
        ]  # fmt: skip


def test_non_finite_json_is_an_agent_fault(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with backend.open_case("nan") as run:
        session = run.start_session()
        assert fault_of(lambda: session.exchange({"op": "nan"})) == NOT_FINITE_JSON
        session = run.start_session()
        assert fault_of(lambda: session.exchange({"op": "huge"})) == NOT_FINITE_JSON
        received = [event["line"] for event in run.transcript.events if event["event"] == "recv"]
    assert received == ["NaN", '{"n": 1e999}']


def test_output_flood_hits_the_session_limit(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with backend.open_case("flood") as run:
        session = run.start_session()
        assert fault_of(lambda: session.exchange({"op": "flood"})) == OUTPUT_LIMIT_EXCEEDED
        assert session.output_bytes > FAST.session_output_limit_bytes
        # The next session has its own budget.
        session = run.start_session()
        assert session.exchange({"op": "echo"}) == {"echo": {"op": "echo"}}
        session.stop_eof()


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("exit-3", "candidate exited with code 3"),
        ("ignore-eof", NO_EXIT_AFTER_EOF),
        ("trailing", UNSOLICITED_STDOUT),
    ],
)
def test_eof_requires_a_clean_quiet_exit(
    make_backend: MakeBackend, behaviour: str, message: str
) -> None:
    backend = make_backend(behaviour, limits=Limits(response_timeout=1.0, case_timeout=30.0))
    with backend.open_case(behaviour) as run:
        session = run.start_session()
        assert session.exchange({"op": "echo"}) == {"echo": {"op": "echo"}}
        assert fault_of(session.stop_eof) == message


def test_launch_failure_is_an_environment_failure(make_backend: MakeBackend) -> None:
    backend = make_backend(command=["no-such-runtime", "main.py"])
    with backend.open_case("missing") as run:
        session = run.start_session()
        with pytest.raises(EnvironmentFailure, match="exit code 127"):
            session.exchange({"op": "echo"})
        assert session.exit_code == 127
        assert "no-such-runtime" in session.stderr_tail()
        fault = next(event for event in run.transcript.events if event["event"] == "fault")
        assert fault["kind"] == "environment"


def test_readiness_timeout_is_an_environment_failure(make_backend: MakeBackend) -> None:
    backend = make_backend(limits=Limits(startup_timeout=0.001, case_timeout=30.0))
    with backend.open_case("slow-start") as run, pytest.raises(EnvironmentFailure) as caught:
        run.start_session()
    assert "startup readiness timeout" in caught.value.message


def test_case_budget_spans_sessions(make_backend: MakeBackend) -> None:
    backend = make_backend(limits=Limits(response_timeout=10.0, case_timeout=3.0))
    opened = time.monotonic()
    with backend.open_case("budget") as run:
        session = run.start_session()
        assert session.exchange({"op": "echo"}) == {"echo": {"op": "echo"}}
        # The response timeout (10 s) is capped by what is left of the case (3 s in all).
        assert fault_of(lambda: session.exchange({"op": "sleep"})) == CASE_BUDGET_EXHAUSTED
        assert 3.0 <= time.monotonic() - opened < 6.0
        assert fault_of(run.start_session) == CASE_BUDGET_EXHAUSTED


# -- kills, state and isolation -----------------------------------------------------------------


def test_kill_really_kills_and_acknowledged_writes_survive(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with backend.open_case("17/sigkill-after-acknowledgement") as run:
        first = run.start_session()
        assert isinstance(first, DockerSession)
        spawned = first.exchange({"op": "spawn"})
        assert isinstance(spawned, dict) and spawned["others"] == [spawned["child"]]
        assert first.exchange({"op": "put", "value": {"acknowledged": 1}}) == {"ok": True}
        first.kill()
        assert first.exit_code == -9
        api = docker.from_env().api
        assert api.exec_inspect(first.exec_id)["Running"] is False
        second = run.start_session()
        # The killed process and its detached grandchild are gone; the acknowledged write is not.
        assert second.exchange({"op": "others"}) == {"others": []}
        assert second.exchange({"op": "get"}) == {"value": {"acknowledged": 1}}
        second.kill()
        kills = [event["session"] for event in run.transcript.events if event["event"] == "kill"]
        assert kills == [0, 1]
        assert run.containers_made == 1


@pytest.mark.parametrize(("stop", "survives"), [("kill", False), ("eof", True)])
def test_kill_gives_no_warning(make_backend: MakeBackend, stop: str, survives: bool) -> None:
    # A write the candidate defers until stdin ends must be lost by a kill (SIGKILL without a
    # prior EOF), and kept by a clean EOF stop: this is what catches commit-on-exit faults.
    backend = make_backend()
    with backend.open_case(f"defer-{stop}") as run:
        first = run.start_session()
        assert first.exchange({"op": "later", "value": "deferred"}) == {"ok": True}
        if stop == "kill":
            first.kill()
        else:
            first.stop_eof()
        second = run.start_session()
        assert second.exchange({"op": "get"}) == {"value": "deferred" if survives else None}
        second.stop_eof()


def test_sessions_share_only_state_and_cases_share_nothing(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with backend.open_case("first") as run:
        session = run.start_session()
        assert session.exchange({"op": "put", "value": 1}) == {"ok": True}
        assert session.exchange({"op": "litter"}) == {"ok": True}
        session.stop_eof()
        session = run.start_session()
        assert session.exchange({"op": "scratch"}) == {"tmp": [], "shm": [], "state": ["value"]}
        assert session.exchange({"op": "litter"}) == {"ok": True}
        session.kill()
        first_container = run.container.id
    assert container_state(first_container) == {}
    with backend.open_case("second") as run:
        session = run.start_session()
        assert session.exchange({"op": "scratch"}) == {"tmp": [], "shm": [], "state": []}
        assert session.exchange({"op": "get"}) == {"value": None}
        assert run.container.id != first_container
        session.stop_eof()


def test_scratch_the_candidate_locked_is_emptied_in_place(make_backend: MakeBackend) -> None:
    # /state lives in the case container, so the container must survive a locked scratch
    # folder (mode 0500): the reaper makes it writable and empties it, and /state is kept.
    backend = make_backend()
    with backend.open_case("locked") as run:
        session = run.start_session()
        assert session.exchange({"op": "put", "value": "kept"}) == {"ok": True}
        assert session.exchange({"op": "litter", "locked": True}) == {"ok": True}
        first_container = run.container.id
        session.kill()
        assert run.container.id == first_container
        session = run.start_session()
        assert session.exchange({"op": "scratch"}) == {"tmp": [], "shm": [], "state": ["value"]}
        assert session.exchange({"op": "get"}) == {"value": "kept"}
        session.stop_eof()
        assert run.containers_made == 1


def test_state_lives_in_the_case_container_only(make_backend: MakeBackend) -> None:
    # /state is the case container's tmpfs: what the candidate writes there (folders of uid
    # 65534 included) never reaches the host, and goes with the container.
    backend = make_backend()
    with backend.open_case("nested") as run:
        session = run.start_session()
        assert session.exchange({"op": "put", "value": 2}) == {"ok": True}
        assert session.exchange({"op": "nest"}) == {"ok": True}
        session.kill()
        again = run.start_session()
        assert again.exchange({"op": "get"}) == {"value": 2}
        again.kill()
        container = run.container.id
    assert not backend.work_root.exists() or not list(backend.work_root.rglob("*"))
    assert docker_cli("ps", "-a", "--filter", f"id={container}", "--format", "{{.ID}}") == ""


def test_state_is_bounded_in_bytes_and_files(make_backend: MakeBackend, tmp_path: Path) -> None:
    # A candidate writing 3 GiB and 100,000 files into /state stops at the bound (ENOSPC, its
    # own problem); nothing reaches the host disk.
    backend = make_backend(limits=Limits(response_timeout=20.0, case_timeout=60.0))
    free_before = shutil.disk_usage(tmp_path).free
    with backend.open_case("fill") as run:
        session = run.start_session()
        answer = session.exchange({"op": "fill", "bytes": 3 << 30, "files": 100_000})
        free_during = shutil.disk_usage(tmp_path).free
        session.kill()
    assert isinstance(answer, dict)
    assert answer["errors"] == {"bytes": "ENOSPC", "files": "ENOSPC"}
    assert STATE_SIZE_BYTES - MiB <= answer["written"] <= STATE_SIZE_BYTES
    assert STATE_INODES - 16 <= answer["made"] <= STATE_INODES
    # Other processes share the disk: allow them 1 GiB, far below the 3 GiB asked for.
    assert free_before - free_during < 1 << 30
    assert not backend.work_root.exists() or not list(backend.work_root.rglob("*"))


def test_case_containers_carry_their_owner_and_end_by_their_deadline(
    make_backend: MakeBackend,
) -> None:
    backend = make_backend(limits=Limits(response_timeout=2.0, case_timeout=5.0))
    with backend.open_case("owner") as run:
        session = run.start_session()
        attrs = container_state(run.container.id)
        session.kill()
    labels = attrs["Config"]["Labels"]
    assert labels[OWNER_LABEL] == owner_id()
    lifetime = int(attrs["Config"]["Cmd"][1])
    assert attrs["Config"]["Cmd"][0] == "sleep" and 5 <= lifetime <= 5 + 61
    assert abs(int(labels[EXPIRES_LABEL]) - (time.time() + lifetime)) < 70


def test_sweep_removes_containers_of_dead_owners_only(engine: docker.DockerClient) -> None:
    # A container of an owner that is gone (a pid that no longer runs) is removed; a container
    # of this live process, and one of an owner this host cannot judge but whose deadline is
    # still ahead, are kept.
    boot, namespace, _pid, _start = owner_id().split("/")
    dead = subprocess.Popen(["true"])
    dead.wait()
    owners = {
        "dead": (f"{boot}/{namespace}/{dead.pid}/1", time.time() + 600),
        "live": (owner_id(), time.time() + 600),
        "elsewhere": ("other-boot/pid:[1]/1/1", time.time() + 600),
        "expired": ("other-boot/pid:[1]/1/1", time.time() - 5),
    }
    made = {}
    try:
        for name, (owner, expires) in owners.items():
            made[name] = engine.containers.create(
                IMAGE,
                ["sleep", "600"],
                labels={OWNER_LABEL: owner, EXPIRES_LABEL: str(int(expires))},
            )
        client = connect()
        try:
            sweep_containers(client)
        finally:
            client.close()
        left = {name for name, container in made.items()
                if docker_cli("ps", "-a", "--filter", f"id={container.id}", "-q").strip()}
        assert left == {"live", "elsewhere"}
    finally:
        for container in made.values():
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                container.remove(force=True)


_CREATE_AND_WAIT = """
import sys, time
import docker
from evalarc.runtime.owner import EXPIRES_LABEL, OWNER_LABEL, owner_id
client = docker.from_env()
created = client.api.create_container(
    sys.argv[1], ["sleep", "600"],
    labels={OWNER_LABEL: owner_id(), EXPIRES_LABEL: str(int(time.time()) + 600)},
)
print(created["Id"], flush=True)
time.sleep(600)
"""


def test_a_created_container_of_a_killed_unreaped_owner_is_swept(
    engine: docker.DockerClient,
) -> None:
    # Issue 24 item 10: EvalArc SIGKILLed between creating a case container and starting it
    # leaves it "Created": no idle process ends it at the deadline, so only the sweep can remove
    # it. A killed process its parent has not reaped yet is a zombie whose /proc entry keeps its
    # start time, and it was judged alive: the container stayed for good.
    child = subprocess.Popen(
        [sys.executable, "-c", _CREATE_AND_WAIT, IMAGE], stdout=subprocess.PIPE, text=True
    )
    container_id = ""
    try:
        assert child.stdout is not None
        container_id = child.stdout.readline().strip()
        assert container_id, "the child created no container"
        os.kill(child.pid, signal.SIGKILL)
        deadline = time.monotonic() + 30
        state = ""
        while time.monotonic() < deadline:
            state = Path(f"/proc/{child.pid}/stat").read_text().rpartition(")")[2].split()[0]
            if state == "Z":
                break
            time.sleep(0.05)
        assert state == "Z"  # killed, not reaped: /proc still lists it
        assert engine.containers.get(container_id).status == "created"
        client = connect()
        try:
            sweep_containers(client)
        finally:
            client.close()
        assert docker_cli("ps", "-a", "--filter", f"id={container_id}", "-q").strip() == ""
    finally:
        child.kill()
        child.wait()
        if container_id:
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                engine.containers.get(container_id).remove(force=True)


def test_a_created_container_past_its_deadline_is_swept_whoever_owns_it(
    engine: docker.DockerClient,
) -> None:
    # A live owner's container that was created and never started, once its case deadline has
    # passed, is a leftover (EXPIRES_LABEL): nothing else would ever remove it.
    made = {}
    try:
        for name, expires in (("expired", time.time() - 5), ("running-case", time.time() + 600)):
            made[name] = engine.containers.create(
                IMAGE,
                ["sleep", "600"],
                labels={OWNER_LABEL: owner_id(), EXPIRES_LABEL: str(int(expires))},
            )
        client = connect()
        try:
            sweep_containers(client)
        finally:
            client.close()
        left = {
            name
            for name, container in made.items()
            if docker_cli("ps", "-a", "--filter", f"id={container.id}", "-q").strip()
        }
        assert left == {"running-case"}
    finally:
        for container in made.values():
            with contextlib.suppress(docker.errors.NotFound, docker.errors.APIError):
                container.remove(force=True)


def test_killed_evalarc_leaves_nothing_behind(engine: docker.DockerClient, tmp_path: Path) -> None:
    # SIGKILL in the middle of a case: its container ends by itself at the case deadline, and
    # the next EvalArc removes it (and the work folder) at once since its owner is gone.
    from evalarc.packs import materialize_workspace

    workspace = tmp_path / "candidate"
    materialize_workspace("durable-kv", "python", reference=False, fault=None, dest=workspace)
    (workspace / "main.py").write_text(
        "import sys, time\nprint(sys.stdin.readline() and '', end='')\ntime.sleep(600)\n"
    )
    temp = tmp_path / "temp"
    temp.mkdir()
    environment = {**os.environ, "TMPDIR": str(temp)}
    evalarc = Path(sys.executable).with_name("evalarc")
    process = subprocess.Popen(
        [str(evalarc), "evaluate", str(workspace), "--image", IMAGE, "--seeds", "17",
         "--timeout", "300", "--case-timeout", "300", "--output", str(tmp_path / "out")],
        env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    owner_filter = "label=" + OWNER_LABEL
    try:
        deadline = time.monotonic() + 120
        mine: list[str] = []
        while time.monotonic() < deadline and not mine:
            time.sleep(0.2)
            mine = [
                container.id for container in engine.containers.list(
                    filters={"label": OWNER_LABEL})
                if container.labels[OWNER_LABEL].split("/")[2] == str(process.pid)
            ]
        assert mine, "the evaluation never started a case container"
    finally:
        process.kill()
        process.wait()
    assert [path.name for path in temp.iterdir() if path.name.startswith("evalarc-evaluate-")]
    from evalarc.runtime.owner import sweep_work_folders

    client = connect()
    try:
        sweep_containers(client)
    finally:
        client.close()
    assert sweep_work_folders(temp)
    assert not [path for path in temp.iterdir() if path.name.startswith("evalarc-")]
    for container_id in mine:
        assert docker_cli("ps", "-a", "--filter", f"id={container_id}", "-q").strip() == ""
    del owner_filter


def test_remote_engines_are_refused_before_anything_runs(
    monkeypatch: pytest.MonkeyPatch, snapshot: Path, tmp_path: Path
) -> None:
    # A tcp:// engine would fail every case as "did not exit after EOF" (the half-close never
    # reaches the exec): refused as an environment error instead.
    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:2376")
    with pytest.raises(EnvironmentFailure) as refused:
        DockerBackend(snapshot, ["{python}", "main.py"], FAST, tmp_path / "work", image=IMAGE)
    assert "DOCKER_HOST=tcp://127.0.0.1:2376 is not a local engine" in refused.value.message
    assert "\n" not in refused.value.message


# -- the sandbox --------------------------------------------------------------------------------


def test_sandbox_guarantees(make_backend: MakeBackend, snapshot: Path) -> None:
    backend = make_backend()
    with backend.open_case("probe") as run:
        session = run.start_session()
        facts = session.exchange({"op": "probe"})
        attrs = container_state(run.container.id)
        session.stop_eof()
    assert isinstance(facts, dict)
    assert (facts["uid"], facts["gid"], facts["euid"]) == (65534, 65534, 65534)
    assert facts["cap_eff"] == ["0000000000000000"]
    assert facts["no_new_privs"] == ["1"]
    assert facts["cwd"] == "/candidate"
    assert facts["candidate"] == sorted(path.name for path in snapshot.iterdir())
    assert facts["interfaces"] == ["lo"]
    assert facts["connect_public"] == "ENETUNREACH"
    assert facts["resolve"] != "ok"
    assert facts["write_root"] == "EROFS"
    assert facts["write_etc"] == "EROFS"
    assert facts["write_candidate"] == "EROFS"
    assert facts["write_state"] == "ok"
    assert facts["write_tmp"] == "ok"
    assert facts["exec_tmp"] == "EACCES"
    assert facts["docker_socket"] is False
    assert facts["state_mode"] == "0o777"
    tmp_mount = [line.split() for line in facts["mounts"] if line.split()[1] == "/tmp"]
    assert len(tmp_mount) == 1
    options = set(tmp_mount[0][3].split(","))
    assert {"rw", "noexec", "nosuid", "size=16384k"} <= options
    mounted = {line.split()[1]: set(line.split()[3].split(",")) for line in facts["mounts"]}
    assert "ro" in mounted["/candidate"] and "rw" in mounted["/state"]
    assert "ro" in mounted["/"]
    assert facts["memory_limit"] == str(256 * MiB)
    assert facts["pids_max"] == "64"
    assert facts["cpu"] in ("100000", "100000 100000")
    host = attrs["HostConfig"]
    assert host["NetworkMode"] == "none"
    assert host["ReadonlyRootfs"] is True
    assert host["CapDrop"] == ["ALL"]
    assert host["SecurityOpt"] == ["no-new-privileges"]
    assert host["NanoCpus"] == 1_000_000_000
    assert host["Memory"] == host["MemorySwap"] == 256 * MiB
    assert host["PidsLimit"] == 64
    assert host["Tmpfs"] == {"/tmp": "rw,noexec,nosuid,size=16m", "/state": STATE_OPTIONS}
    assert host["Binds"] == [f"{snapshot.resolve()}:/candidate:ro"]
    state_mount = [line.split() for line in facts["mounts"] if line.split()[1] == "/state"]
    assert len(state_mount) == 1 and state_mount[0][2] == "tmpfs"
    assert {"size=65536k", "nr_inodes=4096", "nosuid", "nodev"} <= set(
        state_mount[0][3].split(","))
    assert attrs["Config"]["Labels"][CASE_LABEL] == run.case_id
    assert not any("docker.sock" in bind for bind in host["Binds"])


def test_pids_limit_stops_a_fork_bomb(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with backend.open_case("fork-bomb") as run:
        session = run.start_session()
        outcome = session.exchange({"op": "fork"})
        assert isinstance(outcome, dict)
        assert outcome["failure"] == "EAGAIN"
        assert 40 <= outcome["forked"] < 64
        session.kill()
        session = run.start_session()
        assert session.exchange({"op": "others"}) == {"others": []}
        session.stop_eof()


def test_memory_hog_is_killed(make_backend: MakeBackend) -> None:
    backend = make_backend(limits=Limits(response_timeout=20.0, case_timeout=60.0))
    with backend.open_case("hog") as run:
        session = run.start_session()
        assert fault_of(lambda: session.exchange({"op": "hog"})) == NO_COMPLETE_RESPONSE
        assert session.exit_code == 137
        # Only the hog died: the case goes on in the same container.
        session = run.start_session()
        assert session.exchange({"op": "echo"}) == {"echo": {"op": "echo"}}
        session.stop_eof()
        assert run.containers_made == 1


def test_node_image_runs_javascript(make_backend: MakeBackend, tmp_path: Path) -> None:
    folder = tmp_path / "node-candidate"
    folder.mkdir()
    (folder / "main.js").write_text(NODE_CANDIDATE)
    backend = make_backend(command=["node", "main.js", "{state}/store.json"], image=NODE_IMAGE,
                           folder=folder)  # fmt: skip
    with backend.open_case("node") as run:
        session = run.start_session()
        answer = session.exchange({"op": "get", "key": "k"})
        session.stop_eof()
    assert isinstance(answer, dict)
    assert answer["echo"] == {"op": "get", "key": "k"}
    assert str(answer["node"]).startswith("v")


def test_cleanup_leaves_no_container_even_after_an_exception(make_backend: MakeBackend) -> None:
    backend = make_backend()
    with pytest.raises(KeyError), backend.open_case("raises") as run:
        session = run.start_session()
        assert session.exchange({"op": "echo"}) == {"echo": {"op": "echo"}}
        container_id = run.container.id
        raise KeyError("pack bug")
    assert container_state(container_id) == {}
    assert session.ended and session.exit_code == -9
    label = f"label={CASE_LABEL}={run.case_id}"
    assert docker_cli("ps", "-a", "--filter", label, "--format", "{{.ID}}") == ""


def test_setup_is_idempotent_and_quiet(engine: docker.DockerClient) -> None:
    before = {image: engine.images.get(image).id for image in (IMAGE, NODE_IMAGE)}
    script = Path(__file__).resolve().parents[1] / "scripts" / "build_images.sh"
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert {image: engine.images.get(image).id for image in before} == before


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        (
            {
                "etc/os-release": 'NAME="Ubuntu"\nVERSION_CODENAME=noble\n',
                "etc/apt/sources.list.d/ubuntu.sources": (
                    "Types: deb\nURIs: http://archive.example/ubuntu/\n"
                    "Suites: noble-security\nComponents: main\n\n"
                    "Types: deb deb-src\nURIs: http://archive.example/ubuntu/\n"
                    "Suites: noble noble-updates\nComponents: main universe\n"
                    "Signed-By: /usr/share/keyrings/ubuntu-archive-keyring.gpg\n"
                ),
                "etc/apt/sources.list.d/other.sources": (
                    "Types: deb\nURIs: https://vendor.example/apt\nSuites: nodistro\n"
                    "Components: main\n"
                ),
            },
            "http://archive.example/ubuntu/ noble main,universe "
            "/usr/share/keyrings/ubuntu-archive-keyring.gpg",
        ),
        (
            {
                "etc/os-release": "VERSION_CODENAME=bullseye\n",
                "etc/apt/sources.list": (
                    "# deb http://commented.example/debian bullseye main\n"
                    "deb-src http://source.example/debian bullseye main\n"
                    "deb [arch=amd64 signed-by=/k.gpg] http://mirror.example/debian "
                    "bullseye-updates main\n"
                    "deb [signed-by=/usr/share/keyrings/d.gpg] http://mirror.example/debian "
                    "bullseye main contrib\n"
                ),
            },
            "http://mirror.example/debian bullseye main,contrib /usr/share/keyrings/d.gpg",
        ),
    ],
)
def test_images_are_built_from_the_machines_own_apt_source(
    tmp_path: Path, files: dict[str, str], expected: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    script = Path(__file__).resolve().parents[1] / "scripts" / "build_images.sh"
    done = subprocess.run(
        ["bash", str(script), "--print-apt-source"],
        capture_output=True, text=True, timeout=60,
        env={**os.environ, "EVALARC_APT_ROOT": str(tmp_path)},
    )  # fmt: skip
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, expected, "")

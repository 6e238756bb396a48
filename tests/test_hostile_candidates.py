"""Hostile candidates through the real Docker backend, on durable-kv cases.

Each candidate (``tests/candidates/hostile/``) is the pack's Python reference with one attack
switched in for the process whose first request is the first request of ``read-write-delete``
(seed 17). Every attack is evaluated on that case and the next one, ``json-types-and-overwrite``,
which the same program must still pass: the attack gets its status (``agent_error`` for broken
protocol or limits, ``failed`` for a wrong answer, never ``environment_error``), the run stays
valid, the host is untouched, and no container, volume or temporary folder is left behind.

Needs a running engine and the image ``EVALARC_TEST_IMAGE`` (default ``evalarc-python:local``);
``bash scripts/docker_setup.sh`` provides both. Without them these tests fail, never skip. The
network attempts are made only from inside the sandbox (no network); the host connects nowhere.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import socket
import struct
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import docker
import pytest

from evalarc.packs import Pack, evaluate, load_pack
from evalarc.runtime.docker_backend import (
    BACKEND_LABEL,
    CLEANUP_TIMEOUT,
    MEMORY_LIMIT_BYTES,
    PIDS_LIMIT,
    STATE_INODES,
    STATE_SIZE_BYTES,
    DockerBackend,
)
from evalarc.runtime.jsonl import (
    CASE_BUDGET_EXHAUSTED,
    NO_COMPLETE_RESPONSE,
    NO_EXIT_AFTER_EOF,
    OUTPUT_LIMIT_EXCEEDED,
    RESPONSE_TIMEOUT,
)
from evalarc.runtime.protocol import Limits
from evalarc.runtime.snapshot import snapshot_candidate

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
HOSTILE = Path(__file__).resolve().parent / "candidates" / "hostile"
PACK = load_pack("durable-kv")
SEED = 17
HOSTILE_CASE = "read-write-delete"
NEXT_CASE = "json-types-and-overwrite"
LIMITS = replace(PACK.limits, response_timeout=3.0, case_timeout=20.0)
BUDGET_LIMITS = replace(LIMITS, response_timeout=5.0, case_timeout=12.0)
SLOW_DELAY = 3.5
"""Per-request delay of the slow candidate: inside the 5 s response timeout, but its case's six
requests need 21 s of a 12 s case budget."""
WORKERS = 3
"""Attacks evaluated side by side (each is mostly waiting on timeouts and Docker)."""
SCORE_WITH_ONE_BASIC_FAILURE = 0.125
"""Both cases are ``basic`` (weight 0.25): one of two passing scores 0.25 x 0.5."""


def _cases(seed: int) -> list[Any]:
    return [case for case in PACK.grader.generate_cases(seed)
            if case.case_id in (HOSTILE_CASE, NEXT_CASE)]


TWO_CASES: Pack = replace(PACK, grader=type("TwoCases", (), {
    "generate_cases": staticmethod(_cases),
    "cases_sha256": staticmethod(PACK.grader.cases_sha256),
    "run_case": staticmethod(PACK.grader.run_case),
    "unassessed_case": staticmethod(PACK.grader.unassessed_case),
    "summarize": staticmethod(PACK.grader.summarize),
})())
TRIGGER = _cases(SEED)[0].sessions[0].requests[0]


@dataclass(frozen=True)
class Attack:
    module: str
    status: str
    error: str
    """The case's exact error, or its start when it ends with ``...``."""
    limits: Limits = LIMITS
    params: dict[str, Any] = field(default_factory=dict)


ATTACKS = {
    attack.module: attack for attack in [
        Attack("fork_bomb", "agent_error", RESPONSE_TIMEOUT),
        # Filling 256 MiB takes a few seconds on a loaded machine: a longer timeout, so that
        # the OOM killer (not the response timeout) ends it.
        Attack("memory_hog", "agent_error", NO_COMPLETE_RESPONSE,
               limits=replace(LIMITS, response_timeout=20.0, case_timeout=40.0)),
        Attack("cpu_spin", "agent_error", RESPONSE_TIMEOUT),
        Attack("endless_output", "agent_error", OUTPUT_LIMIT_EXCEEDED),
        Attack("write_outside_state", "failed", "response mismatch at request 1; ..."),
        Attack("read_host_paths", "failed", "response mismatch at request 1; ..."),
        Attack("network", "failed", "response mismatch at request 1; ..."),
        Attack("ignore_eof", "agent_error", NO_EXIT_AFTER_EOF),
        # Docker keeps the exec's stream open while the process lives, closed fds or not.
        Attack("close_stdout", "agent_error", RESPONSE_TIMEOUT),
        Attack("sleep_past_deadline", "agent_error", RESPONSE_TIMEOUT),
        Attack("slow_past_case_budget", "agent_error", CASE_BUDGET_EXHAUSTED,
               limits=BUDGET_LIMITS, params={"delay_seconds": SLOW_DELAY}),
        # Writing 64 MiB into memory and 4,096 files takes a moment on a loaded machine.
        Attack("fill_state", "failed", "response mismatch at request 1; ...",
               limits=replace(LIMITS, response_timeout=20.0, case_timeout=40.0)),
    ]
}


# -- the engine and what the host looks like ---------------------------------------------------


def _bridge_gateway(engine: Any) -> str:
    """Where a bridged container would reach the host (Docker's default bridge gateway)."""
    try:
        config = engine.networks.get("bridge").attrs["IPAM"]["Config"][0]
    except (docker.errors.NotFound, KeyError, IndexError):
        return "172.17.0.1"
    if config.get("Gateway"):
        return str(config["Gateway"])
    return str(next(ipaddress.ip_network(config["Subnet"]).hosts()))


def _host_default_gateway() -> str | None:
    """The host's own default gateway, read from the routing table (no traffic)."""
    for line in Path("/proc/net/route").read_text().splitlines()[1:]:
        fields = line.split()
        if len(fields) > 2 and fields[1] == "00000000" and fields[2] != "00000000":
            return socket.inet_ntoa(struct.pack("<L", int(fields[2], 16)))
    return None


def _tree_digest(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode())
        if path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def _file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- running one attack --------------------------------------------------------------------------


@dataclass
class HostileRun:
    report: dict[str, Any]
    transcripts: dict[str, list[dict[str, Any]]]
    """Case id -> the transcript events of that case."""
    leftover_containers: list[str]
    leftover_temp: list[str]
    workspace_unchanged: bool
    secret: str
    """A token written on the host only; it must appear nowhere in what the run produced."""
    host_paths: list[str]
    """Host paths the candidate was told to try: a secret file, its own source, its folder."""
    link_targets: list[str]
    produced: str
    """The report and every transcript as text (to look for leaks)."""


def _workspace(dest: Path, attack: Attack, params: dict[str, Any]) -> None:
    dest.mkdir(parents=True)
    shutil.copyfile(HOSTILE / "harness.py", dest / "main.py")
    shutil.copyfile(HOSTILE / f"{attack.module}.py", dest / "attack.py")
    shutil.copyfile(PACK.languages["python"].reference / "main.py", dest / "service.py")
    (dest / "hostile.json").write_text(json.dumps({"trigger": TRIGGER, **params}))


def _run(attack: Attack, root: Path, host: dict[str, Any]) -> HostileRun:
    secret = secrets.token_hex(16)
    secret_file = root / "host-secret.txt"
    root.mkdir(parents=True)
    secret_file.write_text(secret)
    workspace = root / "candidate"
    params = {
        **attack.params,
        # Host paths the candidate tries to read, write and link to: none exists in the sandbox.
        "host_paths": [str(secret_file), str(workspace / "main.py"), str(root)],
        "link_targets": [str(secret_file), str(workspace)],
        "gateways": host["gateways"],
    }
    _workspace(workspace, attack, params)
    before = _tree_digest(workspace)
    temp = root / "tmp"
    temp.mkdir()
    snapshot = snapshot_candidate(workspace, temp / "snapshot", list(PACK.default_command))
    backend = DockerBackend(snapshot.path, snapshot.command, attack.limits, temp / "cases",
                            image=IMAGE)
    try:
        run = evaluate(TWO_CASES, snapshot, backend, [SEED], attack.limits)
    finally:
        leftovers = [container.name for container in backend.client.containers.list(
            all=True, filters={"label": f"{BACKEND_LABEL}={backend.backend_id}"})]
        backend.client.close()
    shutil.rmtree(temp / "snapshot")
    transcripts = {recording.case_id: recording.transcript.events
                   for recording in run.recordings}
    produced = json.dumps(run.report) + "".join(
        recording.transcript.jsonl() for recording in run.recordings)
    return HostileRun(
        report=run.report,
        transcripts=transcripts,
        leftover_containers=leftovers,
        leftover_temp=sorted(str(path.relative_to(temp)) for path in temp.rglob("*")),
        workspace_unchanged=_tree_digest(workspace) == before and secret_file.read_text() == secret,
        secret=secret,
        host_paths=params["host_paths"],
        link_targets=params["link_targets"],
        produced=produced,
    )


@pytest.fixture(scope="module")
def runs(engine: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, HostileRun | str]:
    """Every attack evaluated once, side by side; an attack whose run raised maps to the error."""
    base = tmp_path_factory.mktemp("hostile")
    host = {"gateways": [address for address in (_bridge_gateway(engine),
                                                 _host_default_gateway()) if address]}
    volumes_before = {volume.name for volume in engine.volumes.list()}
    shadow_before = _file_digest(Path("/etc/shadow"))

    def run(attack: Attack) -> HostileRun | str:
        try:
            return _run(attack, base / attack.module, host)
        except Exception as error:  # reported by that attack's test, not by every test
            return f"{type(error).__name__}: {error}"

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = dict(zip(ATTACKS, pool.map(run, ATTACKS.values()), strict=True))
    new_volumes = {volume.name for volume in engine.volumes.list()} - volumes_before
    results["volumes"] = ", ".join(sorted(new_volumes))
    results["/etc/shadow"] = "unchanged" if _file_digest(Path("/etc/shadow")) == shadow_before \
        else "changed"
    return results


def _get(runs: dict[str, HostileRun | str], module: str) -> HostileRun:
    result = runs[module]
    if isinstance(result, str):
        pytest.fail(f"evaluating {module} raised {result}")
    return result


def _case(run: HostileRun, case_id: str) -> dict[str, Any]:
    return next(case for case in run.report["cases"] if case["case_id"] == case_id)


def _answer(run: HostileRun) -> dict[str, Any]:
    """The hostile process's answer to the trigger (a probe's findings)."""
    received = [event for event in run.transcripts[HOSTILE_CASE] if event["event"] == "recv"]
    assert len(received) == 1
    answer: dict[str, Any] = json.loads(received[0]["line"])
    return answer


# -- what every attack must leave true ---------------------------------------------------------


def test_cases_are_what_the_attacks_expect() -> None:
    cases = _cases(SEED)
    assert [case.case_id for case in cases] == [HOSTILE_CASE, NEXT_CASE]
    assert [len(case.sessions) for case in cases] == [1, 1]
    assert cases[0].sessions[0].stop == "eof"  # ignore_eof needs an EOF stop
    assert len(cases[0].sessions[0].requests) * SLOW_DELAY > BUDGET_LIMITS.case_timeout
    assert BUDGET_LIMITS.response_timeout > SLOW_DELAY
    # Only the hostile case's process turns hostile.
    assert all(session.requests[0] != TRIGGER for session in cases[1].sessions)


@pytest.mark.parametrize("module", list(ATTACKS))
def test_attack_gets_its_status_and_the_next_case_passes(
        runs: dict[str, HostileRun | str], module: str) -> None:
    attack = ATTACKS[module]
    run = _get(runs, module)
    hostile, following = _case(run, HOSTILE_CASE), _case(run, NEXT_CASE)
    assert hostile["status"] == attack.status, hostile["error"]
    if attack.error.endswith("..."):
        assert hostile["error"].startswith(attack.error[:-3])
    else:
        assert hostile["error"] == attack.error
    assert hostile["checks"] == {"basic": False}
    # The attack ended the case, inside the limits, with the process gone.
    assert hostile["duration_seconds"] < attack.limits.case_timeout + 15
    assert [process["exit_code"] is not None for process in hostile["processes"]] == [True]
    assert len(hostile["processes"][0]["stderr_tail"].encode()) <= 4 * 2048
    # The same program, in the next case, is the reference again and passes in full.
    assert (following["status"], following["error"]) == ("passed", None), following["error"]
    assert following["checks_completed"] == 16
    # A hostile candidate is data, never an infrastructure failure.
    assert (run.report["valid"], run.report["status"]) == (True, "failed")
    assert run.report["score"] == SCORE_WITH_ONE_BASIC_FAILURE
    # Nothing is left: no container of this backend, no state folder, no change on the host.
    assert run.leftover_containers == []
    assert run.leftover_temp in ([], ["cases"])
    assert run.workspace_unchanged
    assert run.secret not in run.produced


def test_no_volume_appeared_and_host_secrets_are_untouched(
        runs: dict[str, HostileRun | str]) -> None:
    assert runs["volumes"] == ""
    assert runs["/etc/shadow"] == "unchanged"


# -- what the individual attacks show ----------------------------------------------------------


def test_fork_bomb_is_stopped_by_the_pids_limit(runs: dict[str, HostileRun | str]) -> None:
    hostile = _case(_get(runs, "fork_bomb"), HOSTILE_CASE)
    process = hostile["processes"][0]
    assert process["exit_code"] == -9  # killed by the host after the response timeout
    refusals = re.findall(r"fork refused after (\d+) forks: (\w+)", process["stderr_tail"])
    assert len(refusals) == 1, process["stderr_tail"]
    forks, reason = int(refusals[0][0]), refusals[0][1]
    assert (reason, forks < PIDS_LIMIT) == ("EAGAIN", True)
    # The reaper cannot run in a container whose pids are all taken: it is removed instead,
    # within the cleanup bound.
    assert hostile["duration_seconds"] < LIMITS.response_timeout + CLEANUP_TIMEOUT


def test_memory_hog_dies_alone_in_its_cgroup(runs: dict[str, HostileRun | str]) -> None:
    hostile = _case(_get(runs, "memory_hog"), HOSTILE_CASE)
    process = hostile["processes"][0]
    assert process["exit_code"] == 137  # the OOM killer's SIGKILL
    held = [int(mib) for mib in re.findall(r"holding (\d+) MiB", process["stderr_tail"])]
    assert held and max(held) < MEMORY_LIMIT_BYTES // (1024 * 1024), process["stderr_tail"]


def test_endless_output_is_cut_at_the_session_limit(runs: dict[str, HostileRun | str]) -> None:
    run = _get(runs, "endless_output")
    process = _case(run, HOSTILE_CASE)["processes"][0]
    limit = LIMITS.session_output_limit_bytes
    assert process["output_bytes"] > limit  # counted on, while draining the kill
    assert 0 < len(process["stderr_tail"].encode()) <= LIMITS.stderr_tail_bytes
    assert len(run.produced) < 64 * 1024  # the flood is not in the report or the transcripts


def test_writes_outside_the_state_directory_are_refused(
        runs: dict[str, HostileRun | str]) -> None:
    run = _get(runs, "write_outside_state")
    found = _answer(run)
    assert found["/hostile"] == "EROFS"
    assert found["/etc/passwd"] in ("EROFS", "EACCES")
    assert found["/candidate/main.py"] in ("EROFS", "EACCES")
    assert found["/candidate/new.py"] == "EROFS"
    assert found["/state/../escape"] == "EROFS"
    assert found["/tmp exec"] == "EACCES"  # /tmp is noexec
    assert found["chmod /dev/shm"] == "EPERM"
    assert found["mknod"] == "EPERM"
    assert found["chown"] == "EPERM"
    assert found["hardlink"] in ("EXDEV", "EACCES", "EPERM")
    assert all(found[path] == "ENOENT" for path in run.host_paths)  # not in the sandbox
    # Links planted in /state (a host folder) are only names: the host removed them without
    # following them, so the secret file and the candidate's folder are as they were.
    assert [found[f"symlink {target}"] for target in run.link_targets] == ["ok", "ok"]
    assert run.workspace_unchanged


def test_state_cannot_grow_past_its_bound(runs: dict[str, HostileRun | str]) -> None:
    # 3 GiB and 100,000 files asked for: /state is the case container's tmpfs, so the candidate
    # meets ENOSPC at the bound (its own failure) and the host disk is never written.
    run = _get(runs, "fill_state")
    answer = _answer(run)
    assert answer["errors"] == {"bytes": "ENOSPC", "files": "ENOSPC"}
    assert STATE_SIZE_BYTES - (1 << 20) <= answer["written"] <= STATE_SIZE_BYTES
    assert STATE_INODES - 16 <= answer["made"] <= STATE_INODES
    assert [(mount[0], mount[2]) for mount in answer["mount"]] == [("tmpfs", "tmpfs")]
    assert run.report["valid"] is True
    assert run.leftover_temp == []


def test_host_paths_and_the_docker_socket_cannot_be_read(
        runs: dict[str, HostileRun | str]) -> None:
    run = _get(runs, "read_host_paths")
    found = _answer(run)
    assert found["/etc/shadow"] == "EACCES"  # the image's own shadow, and not even that
    assert found["/proc/1/environ"] == "EACCES"
    assert found["/proc/1/root/etc/shadow"] == "EACCES"
    assert found["socket /var/run/docker.sock"] == "ENOENT"
    assert found["socket /run/docker.sock"] == "ENOENT"
    assert all(found[path] == "ENOENT" for path in run.host_paths)
    # The sandbox's root is the image's, not the host's.
    host_root = {path.name for path in Path("/").iterdir()}
    assert set(found["listdir /"]) != host_root
    assert {"candidate", "state"} <= set(found["listdir /"])
    assert run.secret not in run.produced


def test_network_attempts_fail_inside_the_sandbox(runs: dict[str, HostileRun | str]) -> None:
    found = _answer(_get(runs, "network"))
    assert found.pop("interfaces") == ["lo"]
    assert found.pop("dns deb.debian.org").startswith("gaierror")
    assert len(found) >= 5  # 1.1.1.1 by TCP twice and UDP, and each gateway twice
    assert set(found.values()) == {"ENETUNREACH"}, found


def test_slow_candidate_exhausts_the_case_budget(runs: dict[str, HostileRun | str]) -> None:
    hostile = _case(_get(runs, "slow_past_case_budget"), HOSTILE_CASE)
    assert 1 <= hostile["checks_completed"] < 6
    assert BUDGET_LIMITS.case_timeout <= hostile["duration_seconds"] < \
        BUDGET_LIMITS.case_timeout + 10


@pytest.mark.parametrize("module", ["cpu_spin", "sleep_past_deadline", "close_stdout"])
def test_stalled_candidates_are_cut_at_the_response_timeout(
        runs: dict[str, HostileRun | str], module: str) -> None:
    hostile = _case(_get(runs, module), HOSTILE_CASE)
    assert LIMITS.response_timeout <= hostile["duration_seconds"] < \
        LIMITS.response_timeout + CLEANUP_TIMEOUT


"""Failing infrastructure under ``evalarc audit`` and ``evalarc evaluate``, with the real engine.

* The Docker engine stops in the middle of an audit, and an audit's image is removed while it
  runs: the affected cases are ``environment_error``, every run and the audit are invalid with
  null scores, the CLI exits 2, and the report that is still written says what happened and
  verifies. These run against a *private* engine (its own socket, data and state folders),
  started and stopped the way ``scripts/docker_setup.sh`` starts the shared one (``dockerd`` in
  the background, then wait until it answers; stop = SIGTERM to that process), so stopping it
  cannot disturb anything else using the shared engine.
* A read-only output folder, and a full disk under the output folder (a 64 KiB tmpfs): exit 2 and
  nothing half-written (no output, no staging folder, no parent folder the run created).
* Ctrl-C (SIGINT to the CLI's process group, repeated while it cleans up): exit 130, no
  container, no partial output.
* Three audits at once, two into the same folder: the two into different folders succeed, of the
  two into one folder exactly one is refused (exit 2) and the other's folder is intact.

The audits use ``robot-evidence-review`` (4 cases a seed, 7 controls): the cheapest live audit.
Needs root (dockerd, mount), a running engine and ``EVALARC_TEST_IMAGE`` (default
``evalarc-python:local``); ``bash scripts/docker_setup.sh`` provides them. Without them these
tests fail, never skip.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import pytest

from evalarc.packs import materialize_workspace
from evalarc.runtime.docker_backend import BACKEND_LABEL

pytestmark = pytest.mark.docker

IMAGE = os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local")
SETUP_HINT = "run `sudo bash scripts/docker_setup.sh` (starts the engine, builds the local images)"
TASK = "robot-evidence-review"
CONTROLS = 7
CASES = 4
STOP_AFTER = 3
"""Completed cases before the engine is stopped: fewer than one control's cases, so every
control still has cases to run."""
ENGINE_WAIT = 60.0
CLI_TIMEOUT = 600


# -- engines ---------------------------------------------------------------------------------


@dataclass
class PrivateEngine:
    """A second ``dockerd`` of our own (no bridge, no iptables): stopping it stops nobody else."""

    root: Path
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"unix://{self.root / 'docker.sock'}"

    def start(self) -> None:
        """Start dockerd in the background (as scripts/docker_setup.sh does) and wait for it."""
        dockerd = shutil.which("dockerd")
        if dockerd is None:
            pytest.fail(f"dockerd is not installed; {SETUP_HINT}", pytrace=False)
        with (self.root / "dockerd.log").open("ab") as log:
            self.process = subprocess.Popen(
                [dockerd, "--host", self.url, "--data-root", str(self.root / "data"),
                 "--exec-root", str(self.root / "exec"), "--pidfile",
                 str(self.root / "dockerd.pid"), "--bridge", "none", "--iptables=false",
                 "--ip6tables=false"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + ENGINE_WAIT
        while True:
            try:
                with closing(self.client()) as client:
                    client.ping()
                return
            except Exception:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    tail = (self.root / "dockerd.log").read_text(errors="replace")[-2000:]
                    pytest.fail(f"the private dockerd did not answer:\n{tail}", pytrace=False)
                time.sleep(0.2)

    def stop(self) -> None:
        """Stop the engine the way a service manager does: SIGTERM, then wait until it is gone."""
        if self.process is None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=ENGINE_WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def client(self) -> Any:
        return docker.DockerClient(base_url=self.url, timeout=30)


def _mounts_under(root: Path) -> list[str]:
    mounts = [line.split()[1] for line in Path("/proc/mounts").read_text().splitlines()]
    return [mount for mount in mounts if mount == str(root) or mount.startswith(f"{root}/")]


@pytest.fixture(scope="module")
def private_engine(engine: Any, tmp_path_factory: pytest.TempPathFactory,
                   ) -> Iterator[PrivateEngine]:
    """A private engine holding a copy of the test image (docker save | docker load)."""
    root = tmp_path_factory.mktemp("engine")
    private = PrivateEngine(root)
    try:
        private.start()
        save = subprocess.Popen(["docker", "save", IMAGE], stdout=subprocess.PIPE)
        load = subprocess.run(["docker", "-H", private.url, "load", "-q"], stdin=save.stdout,
                              capture_output=True, timeout=300)
        assert save.stdout is not None
        save.stdout.close()
        assert (save.wait(timeout=60), load.returncode) == (0, 0), load.stderr
        yield private
    finally:
        private.stop()
        for mount in reversed(_mounts_under(root)):
            subprocess.run(["umount", "-l", mount], check=False)
        shutil.rmtree(root)


# -- helpers ---------------------------------------------------------------------------------


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "evalarc.cli", *args]


def _env(temp: Path, docker_host: str | None = None) -> dict[str, str]:
    temp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(temp)}
    if docker_host is not None:
        env["DOCKER_HOST"] = docker_host
    return env


def _audit_args(output: str, *extra: str, image: str = IMAGE) -> list[str]:
    return _cli("audit", "--task", TASK, "--image", image, "--seeds", "17", "--output", output,
                *extra)


def _containers_under(engine: Any, root: Path) -> list[str]:
    """EvalArc containers (any backend) that bind-mount something below ``root``."""
    names: list[str] = []
    for container in engine.api.containers(all=True, filters={"label": BACKEND_LABEL}):
        mounts = container.get("Mounts") or []
        if any(str(mount.get("Source", "")).startswith(str(root)) for mount in mounts):
            names.extend(container.get("Names") or [container["Id"]])
    return names


def _nothing_left(engine: Any, tmp_path: Path, expected: list[str]) -> None:
    """Only ``expected`` (and the emptied temporary folder) remain, and no container."""
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([*expected, "tmp"])
    assert list((tmp_path / "tmp").iterdir()) == []
    assert _containers_under(engine, tmp_path) == []


@contextmanager
def _tmpfs(target: Path, options: str) -> Iterator[Path]:
    target.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs (run as root): {mounted.stderr}", pytrace=False)
    try:
        yield target
    finally:
        subprocess.run(["umount", str(target)], check=True)
        target.rmdir()


def _verify(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_cli("verify", str(folder)), capture_output=True, text=True,
                          timeout=CLI_TIMEOUT)


def _evaluations(audit: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {"reference": audit["reference"],
            **{row["name"]: row["evaluation"] for row in audit["mutants"]}}


def _check_invalid_audit(
    folder: Path, stdout: str, cause: str | tuple[str, ...]
) -> dict[str, Any]:
    """An audit the infrastructure broke: invalid throughout, and saying why."""
    lines = stdout.splitlines()
    assert lines[0].startswith("Audit: INVALID | Reference: UNASSESSED"), stdout
    assert lines[-1] == folder.name
    audit: dict[str, Any] = json.loads((folder / "audit.json").read_text())
    assert (audit["valid"], audit["passed"], audit["mutation_score"]) == (False, False, None)
    assert audit["detection"]["weakest_margin"] is None
    for row in audit["mutants"]:
        assert (row["valid"], row["killed"], row["detection_margin"], row["score"]) == (
            False, False, None, None)
    evaluations = _evaluations(audit)
    assert len(evaluations) == CONTROLS
    for name, evaluation in evaluations.items():
        assert (evaluation["valid"], evaluation["status"], evaluation["score"],
                evaluation["resolved"]) == (False, "environment_error", None, False), name
        statuses = [case["status"] for case in evaluation["cases"]]
        assert len(statuses) == CASES
        # Once the infrastructure failed, nothing later in the run was assessed, and none of it
        # was blamed on the candidate.
        first = statuses.index("environment_error")
        assert set(statuses[first:]) == {"environment_error"}, (name, statuses)
        assert "agent_error" not in statuses
        for case in evaluation["cases"][first:]:
            assert set(case["checks"].values()) == {None}
            causes = (cause,) if isinstance(cause, str) else cause
            assert any(text in case["error"] for text in causes), case["error"]
        saved = json.loads((folder / "evaluations" / f"{name}.json").read_text())
        assert saved == evaluation
    assert set(_statuses(audit["reference"])) <= {"passed", "environment_error"}
    completed = [json.loads(line) for line in (folder / "events.jsonl").read_text().splitlines()
                 if '"evaluation_completed"' in line]
    assert sorted(event["control"] for event in completed) == sorted(evaluations)
    assert all((event["valid"], event["score"]) == (False, None) for event in completed)
    assert "environmental reasons" in (folder / "index.html").read_text()
    # The partial report is complete and consistent: verify recomputes it from its recordings.
    verified = _verify(folder)
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("Verified audit: ")
    assert "Verdict: the report's gate is failing (its decision is no)." in verified.stdout
    return audit


def _statuses(evaluation: dict[str, Any]) -> list[str]:
    return [case["status"] for case in evaluation["cases"]]


# -- the engine goes away --------------------------------------------------------------------


def test_engine_stopped_mid_audit(private_engine: PrivateEngine, tmp_path: Path) -> None:
    process = subprocess.Popen(
        _audit_args("out", "--progress"), cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_env(tmp_path / "tmp", private_engine.url))
    completed = 0
    stopped = False
    try:
        assert process.stderr is not None
        for line in process.stderr:
            completed += json.loads(line)["event"] == "case_completed"
            if completed == STOP_AFTER:
                private_engine.stop()
                stopped = True
                break
        stdout, stderr = process.communicate(timeout=CLI_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        private_engine.start()
    assert stopped, "the audit finished before the engine could be stopped"
    assert process.returncode == 2, stderr
    audit = _check_invalid_audit(tmp_path / "out", stdout, "Docker could not")
    cases = [case for evaluation in _evaluations(audit).values() for case in evaluation["cases"]]
    assessed = [case for case in cases if case["status"] != "environment_error"]
    assert STOP_AFTER <= len(assessed) < CONTROLS * CASES
    # The engine removes the case containers it could not be asked to remove once it is back.
    with closing(private_engine.client()) as client:
        assert client.containers.list(all=True) == []
        assert client.volumes.list() == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []


def test_image_removed_mid_audit(private_engine: PrivateEngine, tmp_path: Path) -> None:
    # A copy of the test image under a new id (one more empty layer), so removing it leaves the
    # test image in place.
    token = secrets.token_hex(6)
    with closing(private_engine.client()) as client:
        base = client.containers.create(IMAGE, ["true"])
        image = base.commit(repository="evalarc-vanishing", tag=token)
        base.remove()
        process = subprocess.Popen(
            _audit_args("out", "--progress", "--jobs", "1",
                        image=f"evalarc-vanishing:{token}"),
            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env=_env(tmp_path / "tmp", private_engine.url))
        removed = False
        try:
            assert process.stderr is not None
            for line in process.stderr:
                if json.loads(line)["event"] != "case_completed":
                    continue
                # Between two cases no container holds the image: remove it then (a running
                # container refuses the removal, so retry until one case has ended).
                deadline = time.monotonic() + 60
                while process.poll() is None and time.monotonic() < deadline:
                    try:
                        client.images.remove(image.id, force=True)
                        removed = True
                        break
                    except docker.errors.APIError:
                        time.sleep(0.005)
                break
            stdout, stderr = process.communicate(timeout=CLI_TIMEOUT)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
            with suppress(docker.errors.ImageNotFound):
                client.images.remove(image.id, force=True)
        assert removed, "the audit ended before its image could be removed"
        assert process.returncode == 2, stderr
        # The engine words a vanished image by where it noticed: at lookup or reading its layers.
        _check_invalid_audit(tmp_path / "out", stdout, ("No such image", "failed to get digest"))
        assert client.containers.list(all=True) == []
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out", "tmp"]
    assert list((tmp_path / "tmp").iterdir()) == []


# -- the output folder cannot be written -----------------------------------------------------


def _robot_reference(dest: Path) -> Path:
    materialize_workspace(TASK, "python", reference=True, fault=None, dest=dest, contract=False)
    return dest


def test_read_only_output_folder_is_refused_before_anything_runs(
        engine: Any, tmp_path: Path) -> None:
    workspace = _robot_reference(tmp_path / "ws")
    with _tmpfs(tmp_path / "ro", "ro,size=64k") as read_only:
        runs = {
            "audit into ro/out": (_audit_args("ro/out"), "cannot write ro/out"),
            "audit into ro/runs/out": (_audit_args("ro/runs/out"), "cannot create ro/runs"),
            "evaluate into ro/out": (
                _cli("evaluate", str(workspace), "--task", TASK, "--image", IMAGE, "--seeds",
                     "17", "--output", "ro/out"), "cannot write ro/out"),
        }
        for name, (args, message) in runs.items():
            done = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True,
                                  timeout=CLI_TIMEOUT, env=_env(tmp_path / "tmp"))
            assert done.returncode == 2, (name, done.stderr)
            assert done.stdout == ""
            assert done.stderr.splitlines()[-1] == \
                f"evalarc: {message}: Read-only file system", name
            assert list(read_only.iterdir()) == []
    _nothing_left(engine, tmp_path, ["ws"])


def test_disk_full_on_the_output_folder_leaves_nothing(engine: Any, tmp_path: Path) -> None:
    workspace = _robot_reference(tmp_path / "ws")
    # 64 KiB holds the candidate copy and some recordings, not the report (about 300 KiB).
    with _tmpfs(tmp_path / "full", "size=64k,mode=0755") as full:
        done = subprocess.run(
            _cli("evaluate", str(workspace), "--task", TASK, "--image", IMAGE, "--seeds", "17",
                 "--output", "full/runs/out"),
            cwd=tmp_path, capture_output=True, text=True, timeout=CLI_TIMEOUT,
            env=_env(tmp_path / "tmp"))
        assert done.returncode == 2, done.stderr
        assert done.stdout == ""
        lines = done.stderr.splitlines()
        # Every case ran (and passed); only then did the disk fill up.
        assert len([line for line in lines if re.fullmatch(
            r"\[\d/4\] seed 17 [a-z-]+: passed \([0-9.]+ s\)", line)]) == CASES, done.stderr
        assert re.fullmatch(r"evalarc: cannot write \S+: No space left on device", lines[-1])
        # No output, no staging folder, not even the runs/ folder the run created.
        assert list(full.iterdir()) == []
        assert shutil.disk_usage(full).used == 0
    _nothing_left(engine, tmp_path, ["ws"])


# -- Ctrl-C ----------------------------------------------------------------------------------


def test_ctrl_c_to_the_process_group_repeated_during_cleanup(engine: Any, tmp_path: Path) -> None:
    process = subprocess.Popen(
        _audit_args("out", "--progress"), cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=_env(tmp_path / "tmp"), start_new_session=True)
    seen: list[str] = []
    try:
        assert process.stderr is not None
        for line in process.stderr:
            seen.append(line)
            if '"case_completed"' in line and _containers_under(engine, tmp_path / "tmp"):
                break
        # A terminal sends Ctrl-C to the whole foreground process group; an impatient user
        # keeps pressing it while EvalArc cleans up.
        interrupts = 0
        while process.poll() is None and interrupts < 40:
            with suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
            interrupts += 1
            time.sleep(0.1)
        stdout, stderr = process.communicate(timeout=CLI_TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert any('"case_completed"' in line for line in seen), "".join(seen)
    assert interrupts >= 2
    assert process.returncode == 130, stderr
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[-1] == "evalarc: cancelled", stderr
    assert json.loads(lines[-2])["event"] == "run_cancelled"
    assert "Traceback" not in stderr
    _nothing_left(engine, tmp_path, [])


# -- audits side by side ---------------------------------------------------------------------


def test_concurrent_audits_share_nothing_and_one_folder_has_one_winner(
        engine: Any, tmp_path: Path) -> None:
    targets = {"first": "one", "second": "two", "rival": "one"}
    processes = {
        name: subprocess.Popen(_audit_args(folder, "--quiet"), cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=_env(tmp_path / "tmp"))
        for name, folder in targets.items()
    }
    try:
        outputs = {name: process.communicate(timeout=CLI_TIMEOUT)
                   for name, process in processes.items()}
    finally:
        for process in processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()
    codes = {name: process.returncode for name, process in processes.items()}
    assert codes["second"] == 0, outputs["second"][1]
    assert sorted([codes["first"], codes["rival"]]) == [0, 2], outputs
    winner, loser = ("first", "rival") if codes["first"] == 0 else ("rival", "first")
    # The refused run says so in one line and publishes nothing.
    assert outputs[loser][0] == ""
    assert re.fullmatch(r"evalarc: (output folder one already exists; choose a new one|"
                        r"cannot publish one: .+)\n", outputs[loser][1]), outputs[loser][1]
    for name, folder in ((winner, "one"), ("second", "two")):
        stdout = outputs[name][0].splitlines()
        assert stdout[0].startswith("Audit: PASS | Reference: PASS | Negative controls "
                                    "detected: 6/6"), outputs[name]
        assert stdout[-1] == folder
        verified = _verify(tmp_path / folder)
        assert verified.returncode == 0, verified.stderr
        assert "Verdict: the report's gate passes." in verified.stdout
    # No staging folder of the loser, no temporary folder, no container.
    _nothing_left(engine, tmp_path, ["one", "two"])

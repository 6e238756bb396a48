"""Building the backend a run asks for (docker, local, replay; threads or Ray) and the checks of
the options that choose it; shared by ``evaluate`` and ``audit``.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalarc.canonical import JSONValue
from evalarc.errors import UsageError, VerificationError
from evalarc.packs import Pack
from evalarc.runtime.protocol import Backend, Limits
from evalarc.runtime.snapshot import Snapshot
from evalarc.schedule import (
    MAX_JOBS,
    MAX_RETRIES,
    Executor,
    check_retries,
    default_jobs,
)

DEFAULT_IMAGE = "python:3.12-slim"

DEFAULT_TASK = "durable-kv"
LANGUAGES = ("python", "javascript")


BACKENDS = ("docker", "local", "replay")


EXECUTORS = ("threads", "ray")


MAX_SECONDS = 86_400.0
"""Longest accepted time limit (one day); longer values are almost certainly typos."""


def check_seconds(name: str, value: object) -> float:
    """A time limit must be a finite, positive number of at most :data:`MAX_SECONDS`."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{name} must be a number of seconds, not {value!r}")
    try:
        seconds = float(value)
    except OverflowError:  # an integer beyond any float (a params.json written by hand)
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"{name} must be a finite number of seconds above 0, not {value!r}")
    if seconds > MAX_SECONDS:
        raise UsageError(f"{name} must be at most {MAX_SECONDS:g} seconds, not {value!r}")
    return seconds


def check_executor(
    executor: str, backend: str, jobs: int | None = None, ray_address: str | None = None
) -> None:
    """The executor options fit together; an option that would be silently ignored is refused."""
    if executor not in EXECUTORS:
        raise UsageError(f"unknown executor {executor!r} (choose threads or ray)")
    if executor == "ray" and backend != "docker":
        raise UsageError(
            "--executor ray runs cases in Docker on the cluster's nodes: use it "
            "with --backend docker"
        )
    if executor == "ray" and jobs is not None:
        from evalarc.ray_executor import SLOT_RESOURCE

        raise UsageError(
            f"--jobs sets the cases run at once on this machine; with --executor ray each "
            f"node's {SLOT_RESOURCE} resource does (ray start --resources "
            f"'{{\"{SLOT_RESOURCE}\": N}}')"
        )
    if executor != "ray" and ray_address is not None:
        raise UsageError("--ray-address is only for --executor ray")


def jobs_for(options_jobs: int | None, backend: str) -> int:
    """Cases run at once on this machine: replay is pure computation (threads would only
    contend for the interpreter), everything else waits on processes."""
    if backend == "replay":
        return 1
    return options_jobs if options_jobs is not None else default_jobs()


def check_ray_sample(executor: str, sample: int | None) -> None:
    """``--ray-verify-sample`` is for ``--executor ray`` only, a whole number from 0."""
    if sample is None:
        return
    if executor != "ray":
        raise UsageError("--ray-verify-sample is only for --executor ray")
    from evalarc.ray_executor import check_verify_sample

    check_verify_sample(sample)


def executor_notes(executor: Executor) -> tuple[str, ...]:
    """What a remote executor must tell its user beyond the report (rejected transcripts,
    lost workers)."""
    notes = getattr(executor, "notes", None)
    return tuple(notes()) if callable(notes) else ()


@dataclass(frozen=True, slots=True)
class BackendChoice:
    """Which backend runs a candidate's cases and what it needs to be built."""

    backend: str
    """``docker``, ``local`` or ``replay``."""
    image: str | None = None
    """Docker: the image tag (None: :data:`DEFAULT_IMAGE`); replay: the image the recordings must
    have been made with (None: any)."""
    recordings: Path | None = None
    """Replay: the recordings folder (None: the bundled ``recordings/``)."""
    pack: Pack | None = None
    """Replay: the pack whose cases are answered (with ``seeds``)."""
    seeds: tuple[int, ...] = ()


def make_backend(
    options: BackendChoice,
    snapshot: Snapshot,
    limits: Limits,
    work_root: Path,
    owner: str | None = None,
) -> Backend:
    if options.backend == "local":
        from evalarc.runtime.local import LocalBackend

        return LocalBackend(snapshot.path, snapshot.command, limits, work_root)
    if options.backend == "replay":
        return _replay_backend(options, snapshot, limits)
    from evalarc.runtime.docker_backend import DockerBackend, DockerCaseRun

    class TrackedDockerBackend(DockerBackend):
        """Remembers containers whose creation was interrupted (Ctrl-C while the engine was
        still creating them): the engine may finish creating one after we stopped waiting."""

        unfinished: list[str]

        def create_container(self, case: DockerCaseRun) -> Any:
            name = f"evalarc-{case.case_id}-{case.containers_made}"
            try:
                return super().create_container(case)
            except KeyboardInterrupt:
                self.unfinished.append(name)
                raise

    backend = TrackedDockerBackend(
        snapshot.path,
        snapshot.command,
        limits,
        work_root,
        image=options.image or DEFAULT_IMAGE,
        owner=owner,
    )
    backend.unfinished = []
    return backend


def _replay_backend(options: BackendChoice, snapshot: Snapshot, limits: Limits) -> Backend:
    """Answer every case from recordings of this exact candidate (MissingRecordings, exit 2,
    lists the cases that have none)."""
    from evalarc.packs import grader_sha256
    from evalarc.resources import bundled_dir
    from evalarc.runtime.replay import RuntimeRequest, make_replay_backend, open_store

    pack, seeds = options.pack, options.seeds
    if pack is None:
        raise ValueError("a replay backend needs its pack")
    store = open_store(options.recordings or bundled_dir("recordings"))
    labels = [
        f"{case.seed}/{case.case_id}" for seed in seeds for case in pack.grader.generate_cases(seed)
    ]
    return make_replay_backend(
        store,
        candidate_sha256=snapshot.sha256,
        pack=f"{pack.id}@{pack.version}",
        grader_sha256=grader_sha256(pack),
        request=RuntimeRequest(command=snapshot.command, limits=limits, image=options.image),
        labels=labels,
    )


def replay_notes(backend: Backend) -> tuple[str, ...]:
    """What a replay must tell its user beyond the report (nothing for live backends)."""
    from evalarc.runtime.replay import ReplayBackend

    if not isinstance(backend, ReplayBackend):
        return ()
    notes = [divergence.describe() for divergence in backend.divergences]
    notes.extend(
        f"replayed recordings made under grader {grader[:12]} through today's grader "
        f"{backend.grader_sha256[:12]}"
        for grader in sorted(backend.foreign_graders)
    )
    return tuple(notes)


UNFINISHED_CREATE_WAIT = 5.0
"""Seconds to wait for the engine to finish a container creation we interrupted."""


def close_backend(backend: Backend) -> None:
    """Remove every container a Docker backend made (a safety net behind each case's own
    cleanup, e.g. after Ctrl-C in the middle of a Docker call) and close its engine connection."""
    if backend.name != "docker":
        return  # nothing to remove, and no reason to import the Docker SDK
    from docker.errors import NotFound

    from evalarc.runtime.docker_backend import BACKEND_LABEL, DockerBackend

    if not isinstance(backend, DockerBackend):
        return
    client = backend.client
    for name in getattr(backend, "unfinished", []):
        deadline = time.monotonic() + UNFINISHED_CREATE_WAIT
        while time.monotonic() < deadline:
            try:
                client.containers.get(name).remove(force=True)
                break
            except NotFound:
                time.sleep(0.1)
            except Exception:  # the engine is failing; the label sweep below tries once more
                break
    with suppress(Exception):
        for container in client.containers.list(
            all=True, sparse=True, filters={"label": f"{BACKEND_LABEL}={backend.backend_id}"}
        ):
            with suppress(Exception):
                container.remove(force=True)
    with suppress(Exception):
        client.close()


def executor_params(executor: Executor, retry_infrastructure: int) -> dict[str, JSONValue]:
    """How the cases ran, for params.json: the executor's own account (``jobs`` on this
    machine; ``executor``, ``ray_nodes`` and ``ray_slots`` on Ray) and ``retry_infrastructure``
    when asked for. The report itself never depends on them, and no address, node id or host
    name is among them."""
    params = dict(executor.params())
    if retry_infrastructure:
        params["retry_infrastructure"] = retry_infrastructure
    return params


def recorded_retries(params: Mapping[str, Any]) -> int:
    """Check how params.json says the cases ran (``verify``): each of those options is optional
    (older folders lack some) but must be well-formed; return ``retry_infrastructure``, which
    bounds the failed attempts ``events.jsonl`` may show."""
    executor = params.get("executor", "threads")
    if executor not in EXECUTORS:
        raise VerificationError(f"params.json names an unknown executor {executor!r}")
    counts: dict[str, int] = {}
    for key, most in (("jobs", MAX_JOBS), ("ray_nodes", None), ("ray_slots", None)):
        if key not in params:
            continue
        value = params.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise VerificationError(f"params.json: {key} must be a whole number above 0")
        if most is not None and value > most:
            raise VerificationError(f"params.json: {key} must be at most {most}")
        counts[key] = value
    ray_keys = sorted(key for key in ("ray_nodes", "ray_slots") if key in counts)
    if ray_keys and executor != "ray":
        raise VerificationError(f"params.json has {ray_keys[0]} but the cases did not run on Ray")
    if counts.get("ray_slots", 1) < counts.get("ray_nodes", 1):
        raise VerificationError("params.json: ray_slots must be at least ray_nodes")
    retries = params.get("retry_infrastructure", 0)
    try:
        return check_retries(retries)
    except UsageError:
        raise VerificationError(
            f"params.json: retry_infrastructure must be a whole number from 0 to "
            f"{MAX_RETRIES}, not {retries!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class RayRun:
    """How params.json says a Ray run spread and checked its cases (``verify``): its slot
    nodes, and the sample re-run on a second node with the seed that chose it."""

    nodes: int
    sample: int
    seed: str


def recorded_ray(params: Mapping[str, Any]) -> RayRun | None:
    """A Ray run's nodes and sample (None for any other executor); a Ray folder must name
    them, since every case's events name the node that ran it."""
    if params.get("executor", "threads") != "ray":
        if "ray_verify_sample" in params or "ray_sample_seed" in params:
            raise VerificationError("params.json has a Ray sample but the cases did not run on Ray")
        return None
    nodes, sample, seed = (
        params.get("ray_nodes"),
        params.get("ray_verify_sample"),
        params.get("ray_sample_seed"),
    )
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise VerificationError("params.json: a Ray run must record ray_nodes")
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample <= 100_000:
        raise VerificationError(
            "params.json: a Ray run must record ray_verify_sample, a whole number from 0"
        )
    if not isinstance(seed, str) or re.fullmatch(r"[0-9a-f]{32}", seed) is None:
        raise VerificationError("params.json: ray_sample_seed must be 32 lowercase hex digits")
    return RayRun(nodes, sample, seed)


def check_image(image: str | None) -> None:
    """An image name is one token (``--image`` as given)."""
    if image is not None and (not image.strip() or any(ch.isspace() for ch in image)):
        raise UsageError(f"--image {image!r} is not an image name")


def case_limits(
    pack: Pack, timeout: object, case_timeout: object, startup_timeout: object
) -> Limits:
    """The limits every case runs under: the three time limits as given (checked), the output
    bounds from the pack."""
    return Limits(
        response_timeout=check_seconds("--timeout", timeout),
        case_timeout=check_seconds("--case-timeout", case_timeout),
        startup_timeout=check_seconds("--startup-timeout", startup_timeout),
        session_output_limit_bytes=pack.limits.session_output_limit_bytes,
        request_limit_bytes=pack.limits.request_limit_bytes,
        stderr_tail_bytes=pack.limits.stderr_tail_bytes,
    )

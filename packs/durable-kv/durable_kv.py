"""Grader of the durable-kv task pack: seeded cases, the host-side oracle, the case runner, scoring.

Loaded by file path (``evalarc.packs.load_pack``); it never runs inside the candidate's sandbox,
so the oracle and the expected responses stay on the host.

- Cases are a deterministic function of an integer seed: ``random.Random(seed)`` draws the key,
  the second key, the stored value and a 48-step random walk, in that order. The manifest of the
  generated cases is fingerprinted as ``cases_sha256``.
- Expected responses are never stored: each is computed by feeding the request to an in-memory
  oracle whose state starts empty per case and survives the case's restarts and kills.
- Two JSON values are equal iff their canonical texts are identical (``true`` != ``1``,
  ``1`` != ``1.0``), both for the oracle's compare-and-swap and for response checking.
"""

from __future__ import annotations

import copy
import hashlib
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from evalarc.canonical import JSONValue, canonical_json, sha256_json
from evalarc.errors import EnvironmentFailure
from evalarc.runtime.protocol import AgentFault, CaseRun, Session
from evalarc.scoring import summarize as summarize  # the pack interface re-exports it

StopMode = Literal["eof", "kill"]
Status = Literal["passed", "failed", "agent_error", "environment_error"]

MESSAGE_LIMIT = 180
"""Characters of each canonical value kept in a mismatch message."""
STATE_MACHINE_STEPS = 48
NOT_FINITE_JSON = "response is not finite JSON"

INVALID: dict[str, JSONValue] = {"ok": False, "error": "invalid_request"}
OK: dict[str, JSONValue] = {"ok": True}
NOT_FOUND: dict[str, JSONValue] = {"ok": True, "found": False}

_SINGLE_OPS = ("put", "get", "delete", "cas")
_BATCH_OPS = ("put", "delete")


# -- the oracle ------------------------------------------------------------------------------


def _found(value: JSONValue) -> dict[str, JSONValue]:
    return {"ok": True, "found": True, "value": copy.deepcopy(value)}


def _swapped(swapped: bool) -> dict[str, JSONValue]:
    return {"ok": True, "swapped": swapped}


def _valid_batch_element(element: JSONValue) -> bool:
    if not isinstance(element, dict):
        return False
    if element.get("op") not in _BATCH_OPS or not isinstance(element.get("key"), str):
        return False
    return element["op"] != "put" or "value" in element


def expected_response(state: dict[str, JSONValue], request: JSONValue) -> dict[str, JSONValue]:
    """The contract's answer to ``request``; applies the request's effect to ``state``.

    Validation order: not an object; batch (every element checked before any is applied);
    unknown op or non-string key; then the fields put and cas need. Invalid requests leave
    ``state`` untouched.
    """
    if not isinstance(request, dict):
        return dict(INVALID)
    op = request.get("op")
    if op == "batch":
        operations = request.get("operations")
        if not isinstance(operations, list):
            return dict(INVALID)
        if not all(_valid_batch_element(element) for element in operations):
            return dict(INVALID)
        for element in operations:
            expected_response(state, element)
        return dict(OK)
    key = request.get("key")
    if op not in _SINGLE_OPS or not isinstance(key, str):
        return dict(INVALID)
    if op == "get":
        return _found(state[key]) if key in state else dict(NOT_FOUND)
    if op == "delete":
        state.pop(key, None)
        return dict(OK)
    if "value" not in request:
        return dict(INVALID)
    if op == "put":
        state[key] = copy.deepcopy(request["value"])
        return dict(OK)
    if "expected" not in request:
        return dict(INVALID)
    if key in state and canonical_json(state[key]) == canonical_json(request["expected"]):
        state[key] = copy.deepcopy(request["value"])
        return _swapped(True)
    return _swapped(False)


# -- case generation -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """One candidate process lifetime: its requests, then how it is stopped."""

    requests: tuple[JSONValue, ...]
    stop: StopMode = "eof"

    def manifest(self) -> dict[str, Any]:
        return {"requests": list(self.requests), "stop": self.stop}


@dataclass(frozen=True, slots=True)
class Case:
    """One generated case of one seed; it contributes one check to one dimension."""

    seed: int
    case_id: str
    dimension: str
    sessions: tuple[SessionPlan, ...]

    @property
    def request_count(self) -> int:
        return sum(len(plan.requests) for plan in self.sessions)

    def manifest(self) -> dict[str, Any]:
        """The entry fingerprinted by ``cases_sha256``."""
        return {
            "seed": self.seed,
            "id": self.case_id,
            "dimension": self.dimension,
            "sessions": [plan.manifest() for plan in self.sessions],
        }


@dataclass(frozen=True, slots=True)
class SeedInputs:
    """The values the first draws of a seed produce."""

    key: str
    second: str
    value: dict[str, JSONValue]


def draw_inputs(rng: random.Random) -> SeedInputs:
    """Draw the key, the second key and the stored value (in this order; order is the spec)."""
    key = "客户/" + format(rng.getrandbits(64), "016x")
    second = "second-" + format(rng.getrandbits(64), "016x")
    value: dict[str, JSONValue] = {
        "version": rng.randrange(1, 10000),
        "items": [True, None, "λ\n世界"],
    }
    return SeedInputs(key, second, value)


def _get(key: str) -> dict[str, JSONValue]:
    return {"op": "get", "key": key}


def _put(key: str, value: JSONValue) -> dict[str, JSONValue]:
    return {"op": "put", "key": key, "value": value}


def _delete(key: str) -> dict[str, JSONValue]:
    return {"op": "delete", "key": key}


def _cas(key: str, expected: JSONValue, value: JSONValue) -> dict[str, JSONValue]:
    return {"op": "cas", "key": key, "expected": expected, "value": value}


def _batch(operations: JSONValue) -> dict[str, JSONValue]:
    return {"op": "batch", "operations": operations}


def _state_machine(rng: random.Random, inputs: SeedInputs) -> tuple[JSONValue, ...]:
    """48 random put/get/delete steps over four keys, then a read of every key.

    A put draws its number before choosing the value, on every put, so the draw sequence does not
    depend on which value wins.
    """
    keys = [inputs.key, inputs.second, "", "雪"]
    requests: list[JSONValue] = []
    for _ in range(STATE_MACHINE_STEPS):
        key = rng.choice(keys)
        op = rng.choice(["put", "get", "delete"])
        if op == "put":
            number = rng.randrange(1000)
            choices: list[JSONValue] = [None, True, number, inputs.value]
            requests.append(_put(key, rng.choice(choices)))
        else:
            requests.append({"op": op, "key": key})
    requests.extend(_get(key) for key in keys)
    return tuple(requests)


def _one(*requests: JSONValue) -> tuple[SessionPlan, ...]:
    return (SessionPlan(tuple(requests)),)


def generate_cases(seed: int) -> list[Case]:
    """The 15 cases of ``seed`` in their fixed order."""
    rng = random.Random(seed)
    inputs = draw_inputs(rng)
    key, second, value = inputs.key, inputs.second, inputs.value
    get, put, delete = _get(key), _put(key, value), _delete(key)
    both = _batch([put, _put(second, value)])
    stored_values: list[JSONValue] = [None, False, 0, "", [], {}, "a" * 4096, value]
    overwrite: list[JSONValue] = []
    for stored in stored_values:
        overwrite.extend([_put(key, stored), get])
    rejected: list[JSONValue] = [
        None,
        [],
        {"op": "wat"},
        {"op": "put", "key": 5, "value": "bad"},
        {"op": "put", "key": key},
        {"op": "cas", "key": key, "value": "bad"},
        {"op": "get", "key": []},
        {"op": "delete", "key": {}},
    ]
    plans: list[tuple[str, str, tuple[SessionPlan, ...]]] = [
        ("read-write-delete", "basic", _one(get, put, get, delete, get, delete)),
        ("json-types-and-overwrite", "basic", _one(*overwrite)),
        ("reject-and-continue", "validation", _one(put, *rejected, get)),
        ("empty-and-unicode-keys", "validation",
         _one(_put("", value), _get(""), put, get)),
        ("commit-batch", "transactions",
         _one(_batch([put, _put(second, 17), delete]), get, _get(second), _batch([]))),
        ("rollback-batch", "transactions", _one(
            put,
            _batch([_put(key, "must roll back"), {"op": "put", "key": second}]),
            get,
            _get(second),
            _batch([delete, _batch([])]),
            get,
            _batch("invalid"),
        )),
        ("cas-match-and-mismatch", "compare_swap", _one(
            put, _cas(key, "wrong", 12), get, _cas(key, value, 13), get,
            _cas(second, None, 10), _get(second),
        )),
        ("cas-type-sensitivity", "compare_swap", _one(
            _put(key, True), _cas(key, 1, "incorrect"), get, _cas(key, True, None), get,
        )),
        ("restart-preserves-acknowledged-write", "persistence", (
            SessionPlan((put,)), SessionPlan((get, delete)), SessionPlan((get,)),
        )),
        ("restart-preserves-transaction", "persistence", (
            SessionPlan((both,)), SessionPlan((get, _get(second))),
        )),
        ("sigkill-after-acknowledgement", "crash_recovery", (
            SessionPlan((put,), "kill"), SessionPlan((get,)),
        )),
        ("sigkill-after-atomic-batch", "crash_recovery", (
            SessionPlan((both,), "kill"), SessionPlan((get, _get(second))),
        )),
        ("restart-preserves-cas", "persistence", (
            SessionPlan((put, _cas(key, value, 321))), SessionPlan((get,)),
        )),
        ("sigkill-after-delete", "crash_recovery", (
            SessionPlan((put,)), SessionPlan((delete,), "kill"), SessionPlan((get,)),
        )),
        ("seeded-state-machine", "basic", _one(*_state_machine(rng, inputs))),
    ]
    return [Case(seed, case_id, dimension, sessions) for case_id, dimension, sessions in plans]


def cases_sha256(cases: Sequence[Case]) -> str:
    """SHA-256 of the canonical JSON of the manifests of ``cases`` in execution order."""
    return sha256_json([case.manifest() for case in cases])


# -- running one case ------------------------------------------------------------------------


@runtime_checkable
class _ProcessDiagnostics(Protocol):
    """What a backend's session may expose beyond :class:`Session` for the ``processes`` list."""

    @property
    def exit_code(self) -> int | None: ...

    @property
    def output_bytes(self) -> int: ...


def _truncate(text: str) -> str:
    return text[:MESSAGE_LIMIT]


def mismatch_message(number: int, expected: JSONValue, actual: JSONValue) -> str:
    return (f"response mismatch at request {number}; "
            f"expected {_truncate(canonical_json(expected))}, "
            f"got {_truncate(canonical_json(actual))}")


@dataclass(slots=True)
class CaseOutcome:
    """What running one case established; becomes one entry of ``cases`` in evaluation.json."""

    case: Case
    status: Status = "passed"
    checks_completed: int = 0
    transcript_sha256: str = hashlib.sha256().hexdigest()
    error: str | None = None
    sessions: list[Session] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def check(self) -> bool | None:
        """The case's one check: null when unassessed, true only when everything held."""
        if self.status == "environment_error":
            return None
        return self.passed

    def record(self, duration_seconds: float, recording_sha256: str | None,
               stderr_tail_limit_bytes: int) -> dict[str, Any]:
        return {
            "seed": self.case.seed,
            "case_id": self.case.case_id,
            "dimension": self.case.dimension,
            "checks": {self.case.dimension: self.check()},
            "passed": self.passed,
            "status": self.status,
            "checks_completed": self.checks_completed,
            "duration_seconds": round(duration_seconds, 6),
            "transcript_sha256": self.transcript_sha256,
            "error": self.error,
            "processes": [_process_record(session, stderr_tail_limit_bytes)
                          for session in self.sessions],
            "recording_sha256": recording_sha256,
        }


def _process_record(session: Session, stderr_tail_limit_bytes: int) -> dict[str, Any]:
    exit_code: int | None = None
    output_bytes: int | None = None
    if isinstance(session, _ProcessDiagnostics):
        exit_code = session.exit_code
        output_bytes = session.output_bytes
    return {
        "exit_code": exit_code,
        "output_bytes": output_bytes,
        "stderr_tail": session.stderr_tail(),
        "stderr_tail_limit_bytes": stderr_tail_limit_bytes,
    }


def unassessed_case(case: Case, message: str) -> CaseOutcome:
    """The outcome of a case the infrastructure could not run at all."""
    return CaseOutcome(case, status="environment_error", error=message)


def run_case(case: Case, case_run: CaseRun) -> CaseOutcome:
    """Drive ``case`` through ``case_run``: sessions in order, each request checked against the
    oracle, stopped by EOF or SIGKILL; the first mismatch or fault ends the case."""
    outcome = CaseOutcome(case)
    digest = hashlib.sha256()
    state: dict[str, JSONValue] = {}
    number = 0
    current: Session | None = None
    try:
        for plan in case.sessions:
            current = case_run.start_session()
            outcome.sessions.append(current)
            for request in plan.requests:
                number += 1
                expected = expected_response(state, request)
                actual = current.exchange(request)
                try:
                    pair_text = canonical_json([request, actual])
                    matched = canonical_json(actual) == canonical_json(expected)
                except (ValueError, TypeError, RecursionError) as error:
                    raise AgentFault(NOT_FINITE_JSON) from error
                digest.update(pair_text.encode("ascii"))
                outcome.transcript_sha256 = digest.hexdigest()
                if not matched:
                    outcome.status = "failed"
                    outcome.error = mismatch_message(number, expected, actual)
                    current.kill()
                    return outcome
                outcome.checks_completed += 1
            if plan.stop == "eof":
                current.stop_eof()
            else:
                current.kill()
            current = None
    except AgentFault as fault:
        outcome.status = "agent_error"
        outcome.error = fault.message
        _kill_quietly(current, outcome)
    except EnvironmentFailure as failure:
        outcome.status = "environment_error"
        outcome.error = failure.message
        _kill_quietly(current, outcome)
    return outcome


def _kill_quietly(session: Session | None, outcome: CaseOutcome) -> None:
    """Kill the session a fault interrupted; a failed kill makes the case unassessed."""
    if session is None:
        return
    try:
        session.kill()
    except EnvironmentFailure as failure:
        outcome.status = "environment_error"
        outcome.error = failure.message


# -- scoring ---------------------------------------------------------------------------------

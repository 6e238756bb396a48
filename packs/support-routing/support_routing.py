"""Grader of the support-routing task pack: seeded episodes, the ticket simulator, the episode
runner, the independent verifier and scoring.

Loaded by file path (``evalarc.packs.load_pack``) and never run inside the sandbox: the ticket
state belongs to the host, and the candidate (a *policy* process) sees only observations.

- Each seed yields four episodes in a fixed order. One ``random.Random(seed)`` stream is drawn per
  episode in this order: 32 bits for the target id, 32 bits for the unrelated id, a shuffle of the
  episode's three queue names, the target's category, the unrelated ticket's category.
- :class:`SupportEnvironment` is the in-process step interface (reset, observe, step); it only
  executes tool calls. Budget, finish, trace and statuses belong to :func:`run_episode`.
- :func:`verify` reads the case's initial data and the final state only; it never calls the tool
  handlers, so a bug in a handler cannot vouch for itself.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from evalarc.canonical import JSONValue, json_equal, sha256_json
from evalarc.errors import EnvironmentFailure
from evalarc.runtime.protocol import AgentFault, CaseRun, Session
from evalarc.scoring import summarize as summarize  # the pack interface re-exports it

Status = Literal["passed", "failed", "agent_error", "environment_error"]
FaultTool = Literal["assign_queue", "add_note"]
ErrorSource = Literal["injected", "tool_validation"] | None

CATEGORIES = ("billing", "technical", "account")
"""Fixed category order; routing rules pair it with the shuffled queue names."""
TOOL_ARGUMENTS: Mapping[str, frozenset[str]] = {
    "get_ticket": frozenset({"ticket_id"}),
    "assign_queue": frozenset({"ticket_id", "queue"}),
    "add_note": frozenset({"ticket_id", "body", "request_id"}),
    "close_ticket": frozenset({"ticket_id"}),
}
TOOLS = tuple(TOOL_ARGUMENTS)
MAX_ACTIONS = 12
"""Policy responses per episode, the finish included."""
MAX_ARGUMENT_CHARS = 512
TARGET_NOTE = "Customer contacted support."
UNRELATED_NOTE = "Unrelated request; preserve this ticket."
DIMENSIONS = ("routing", "notes", "closure", "scope", "protocol")

ACTION_NOT_OBJECT = "action must be an object"
FINISH_MESSAGE_ONLY = "finish accepts only a string message"
EXPECTED_TOOL_OR_FINISH = "expected tool/arguments or finish"
BUDGET_EXHAUSTED = "action budget exhausted without finish"
OBSERVATION_TOO_LONG = "observation exceeds the request line limit"


# -- seeded episodes ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EpisodePlan:
    """The fixed part of one episode: its id, whether the target is resolved, its injected
    fault."""

    case_id: str
    resolved: bool
    fault: FaultTool | None


EPISODES = (
    EpisodePlan("route-open-ticket", False, None),
    EpisodePlan("close-resolved-ticket", True, None),
    EpisodePlan("retry-before-commit", False, "assign_queue"),
    EpisodePlan("retry-after-commit", True, "add_note"),
)


@dataclass(frozen=True, slots=True)
class Case:
    """One episode of one seed. ``initial`` is never mutated; environments deep-copy it."""

    seed: int
    case_id: str
    target: str
    initial: Mapping[str, Mapping[str, Any]]
    """Ticket id to ticket, the target first."""
    routing_rules: Mapping[str, str]
    """Category to queue name."""
    note: str
    fault: FaultTool | None

    @property
    def unrelated(self) -> str:
        return next(ticket_id for ticket_id in self.initial if ticket_id != self.target)

    def manifest(self) -> dict[str, Any]:
        """The entry fingerprinted by ``cases_sha256``: the seed and every case field."""
        return {
            "seed": self.seed,
            "id": self.case_id,
            "target": self.target,
            "initial": copy.deepcopy(dict(self.initial)),
            "routing_rules": dict(self.routing_rules),
            "note": self.note,
            "fault": self.fault,
        }


def _ticket(category: str, resolved: bool, note: str) -> dict[str, Any]:
    return {"category": category, "queue": "inbox", "resolved": resolved, "status": "open",
            "notes": [note]}


def generate_cases(seed: int) -> list[Case]:
    """The four episodes of ``seed`` in their fixed order."""
    rng = random.Random(seed)
    cases: list[Case] = []
    for number, plan in enumerate(EPISODES):
        target = "T-" + format(rng.getrandbits(32), "08x")
        unrelated = "U-" + format(rng.getrandbits(32), "08x")
        queues = [f"queue-{number}-{index}" for index in range(len(CATEGORIES))]
        rng.shuffle(queues)
        target_category = rng.choice(CATEGORIES)
        unrelated_category = rng.choice(CATEGORIES)
        initial = {
            target: _ticket(target_category, plan.resolved, TARGET_NOTE),
            unrelated: _ticket(unrelated_category, False, UNRELATED_NOTE),
        }
        cases.append(Case(seed, plan.case_id, target, initial,
                          dict(zip(CATEGORIES, queues, strict=True)),
                          f"Reviewed request {target}.", plan.fault))
    return cases


def cases_sha256(cases: Sequence[Case]) -> str:
    """SHA-256 of the canonical JSON of the manifests of ``cases`` in execution order."""
    return sha256_json([case.manifest() for case in cases])


def find_case(seed: int, episode: int | str) -> Case:
    """Episode ``episode`` (index 0-3 or case id) of ``seed``."""
    cases = generate_cases(seed)
    if isinstance(episode, int) and not isinstance(episode, bool) and \
            0 <= episode < len(cases):
        return cases[episode]
    for case in cases:
        if case.case_id == episode:
            return case
    known = ", ".join(plan.case_id for plan in EPISODES)
    raise ValueError(f"no episode {episode!r}; use 0-{len(cases) - 1} or one of: {known}")


# -- the ticket simulator (the local step interface) ------------------------------------------


class StepResult(NamedTuple):
    """What one tool call returned and, for an error, who raised it."""

    result: dict[str, Any]
    """The object the policy is shown: ``{"ok": true, ...}`` or ``{"ok": false, "error": ...}``."""
    error_source: ErrorSource

    @property
    def status(self) -> Literal["ok", "tool_error"]:
        return "ok" if self.result.get("ok") is True else "tool_error"


@dataclass(frozen=True, slots=True)
class _Receipt:
    body: str
    result: Mapping[str, Any]


def _error(code: str, source: ErrorSource) -> StepResult:
    retryable = source == "injected"
    return StepResult({"ok": False, "error": {"code": code, "retryable": retryable}}, source)


def _well_formed(tool: JSONValue, arguments: JSONValue) -> bool:
    if not isinstance(tool, str) or tool not in TOOL_ARGUMENTS or not isinstance(arguments, dict):
        return False
    if set(arguments) != TOOL_ARGUMENTS[tool]:
        return False
    return all(isinstance(value, str) and len(value) <= MAX_ARGUMENT_CHARS
               for value in arguments.values())


def _ok() -> StepResult:
    return StepResult({"ok": True}, None)


class SupportEnvironment:
    """The host-owned tickets of one episode and the four tools that act on them.

    Constructing one is a reset: a deep copy of the initial state, no idempotency receipts, the
    episode's injected fault not yet used. Every observation, result and state it returns is a
    detached copy, so callers cannot reach the host state through them.
    """

    def __init__(self, case: Case) -> None:
        self.case = case
        self._state: dict[str, dict[str, Any]] = copy.deepcopy(
            {ticket_id: dict(ticket) for ticket_id, ticket in case.initial.items()})
        self._receipts: dict[tuple[str, str], _Receipt] = {}
        self._fault_used = False

    @classmethod
    def reset(cls, seed: int, episode: int | str) -> SupportEnvironment:
        """A fresh environment for episode ``episode`` (index or case id) of ``seed``."""
        return cls(find_case(seed, episode))

    @property
    def fault_used(self) -> bool:
        return self._fault_used

    def observe(self) -> dict[str, Any]:
        """The start observation sent to the policy before its first action."""
        case = self.case
        return {
            "type": "start",
            "task": {
                "ticket_id": case.target,
                "ticket_ids": list(self._state),
                "routing_rules": dict(case.routing_rules),
                "note": case.note,
                "instruction": (
                    f"Route ticket {case.target} to the queue its category maps to in "
                    "routing_rules, add the given note to it exactly once, close it only if it "
                    "is resolved, and leave every other field and ticket as it is."
                ),
            },
            "tools": list(TOOLS),
            "remaining_actions": MAX_ACTIONS,
        }

    def state(self) -> dict[str, dict[str, Any]]:
        """A deep copy of every ticket, in the initial order."""
        return copy.deepcopy(self._state)

    def step(self, action: Mapping[str, JSONValue]) -> StepResult:
        """Execute one tool request ``{"tool": ..., "arguments": {...}}``.

        Checks run in the contract's order: the request's shape and argument strings, the ticket
        id, then the tool's own rules; a failed check changes nothing and leaves the injected
        fault unused. Finishing is not a tool: passing anything but a tool request raises
        ValueError.
        """
        if set(action) != {"tool", "arguments"}:
            raise ValueError("step takes a tool request with exactly the keys tool and arguments")
        tool, arguments = action["tool"], action["arguments"]
        if not _well_formed(tool, arguments):
            return _error("invalid_arguments", "tool_validation")
        ticket_id: str = arguments["ticket_id"]
        ticket = self._state.get(ticket_id)
        if ticket is None:
            return _error("ticket_not_found", "tool_validation")
        if tool == "get_ticket":
            return StepResult({"ok": True, "ticket": copy.deepcopy(ticket)}, None)
        if tool == "assign_queue":
            return self._assign_queue(ticket, arguments["queue"])
        if tool == "add_note":
            return self._add_note(ticket_id, ticket, arguments["body"], arguments["request_id"])
        ticket["status"] = "closed"
        return _ok()

    def _fault_fires(self, tool: FaultTool) -> bool:
        """True once per episode: on the first valid call of the episode's faulted tool."""
        if self.case.fault != tool or self._fault_used:
            return False
        self._fault_used = True
        return True

    def _assign_queue(self, ticket: dict[str, Any], queue: str) -> StepResult:
        if queue not in self.case.routing_rules.values():
            return _error("unknown_queue", "tool_validation")
        if self._fault_fires("assign_queue"):
            return _error("temporarily_unavailable", "injected")  # before any write
        ticket["queue"] = queue
        return _ok()

    def _add_note(self, ticket_id: str, ticket: dict[str, Any], body: str,
                  request_id: str) -> StepResult:
        if not request_id:
            return _error("invalid_request_id", "tool_validation")
        key = (ticket_id, request_id)
        receipt = self._receipts.get(key)
        if receipt is not None:
            if receipt.body != body:
                return _error("idempotency_conflict", "tool_validation")
            return StepResult({**copy.deepcopy(dict(receipt.result)), "replayed": True}, None)
        ticket["notes"].append(body)
        self._receipts[key] = _Receipt(body, {"ok": True})
        if self._fault_fires("add_note"):
            # The note is already committed and receipted: a same-key retry replays it.
            return _error("temporarily_unavailable", "injected")
        return _ok()

    def verify(self, protocol_ok: bool) -> dict[str, bool]:
        """The five checks on the current state (see :func:`verify`)."""
        return verify(self.case, self.state(), protocol_ok)


# -- the independent verifier ------------------------------------------------------------------


def verify(case: Case, final_state: Mapping[str, Any], protocol_ok: bool) -> dict[str, bool]:
    """One check per dimension, from the case's initial data and ``final_state`` alone.

    - routing: the target's queue is the rule for its *initial* category;
    - notes: the target's notes are exactly its initial notes plus the requested note;
    - closure: the target is closed if it was initially resolved, otherwise open;
    - scope: same ticket ids, every other ticket unchanged, the target's category and resolved
      flag unchanged;
    - protocol: ``protocol_ok`` (a valid finish and no protocol error).
    Values are compared by canonical JSON, so ``true`` never passes for ``1``.
    """
    start = case.initial[case.target]
    final = final_state.get(case.target)
    if not isinstance(final, Mapping):
        final = {}
    expected_status = "closed" if start["resolved"] is True else "open"
    others_kept = all(
        ticket_id in final_state and json_equal(final_state[ticket_id], ticket)
        for ticket_id, ticket in case.initial.items() if ticket_id != case.target
    )
    scope = (set(final_state) == set(case.initial) and others_kept
             and all(key in final and json_equal(final[key], start[key])
                     for key in ("category", "resolved")))
    return {
        "routing": json_equal(final.get("queue"), case.routing_rules[start["category"]]),
        "notes": json_equal(final.get("notes"), [*start["notes"], case.note]),
        "closure": json_equal(final.get("status"), expected_status),
        "scope": scope,
        "protocol": protocol_ok,
    }


# -- the policy's side of the protocol --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Finish:
    message: str | None


@dataclass(frozen=True, slots=True)
class ToolRequest:
    action: dict[str, JSONValue]
    """The verbatim request; its tool and arguments are validated by the simulator."""


def parse_action(action: JSONValue) -> Finish | ToolRequest:
    """Classify one policy response; anything but a finish or a tool request is a protocol
    error (AgentFault with the contract's message)."""
    if not isinstance(action, dict):
        raise AgentFault(ACTION_NOT_OBJECT)
    if action.get("finish") is True:
        message = action.get("message")
        if set(action) - {"finish", "message"} or ("message" in action and
                                                   not isinstance(message, str)):
            raise AgentFault(FINISH_MESSAGE_ONLY)
        return Finish(message)
    if set(action) == {"tool", "arguments"}:
        return ToolRequest(action)
    raise AgentFault(EXPECTED_TOOL_OR_FINISH)


def state_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
    """Per ticket whose value differs, its full ``before`` and ``after`` snapshots (None where
    the ticket is absent)."""
    changes: dict[str, Any] = {}
    for ticket_id in [*before, *(t for t in after if t not in before)]:
        old, new = before.get(ticket_id), after.get(ticket_id)
        if not json_equal(old, new):
            changes[ticket_id] = {"before": copy.deepcopy(old), "after": copy.deepcopy(new)}
    return changes


# -- running one episode -----------------------------------------------------------------------


@dataclass(slots=True)
class EpisodeOutcome:
    """What one episode established; becomes one entry of ``cases`` in evaluation.json."""

    case: Case
    final_state: dict[str, dict[str, Any]]
    trace: list[dict[str, Any]] = field(default_factory=list)
    status: Status = "passed"
    error: str | None = None
    protocol_ok: bool = False
    sessions: list[Session] = field(default_factory=list)

    @property
    def checks(self) -> dict[str, bool | None]:
        """Null everywhere when unassessed; otherwise the verifier's five booleans."""
        if self.status == "environment_error":
            return dict.fromkeys(DIMENSIONS)
        return dict(verify(self.case, self.final_state, self.protocol_ok))

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def tool_calls(self) -> int:
        return sum(1 for entry in self.trace if entry.get("type") == "tool_call")

    @property
    def transcript_sha256(self) -> str:
        return sha256_json(self.trace)

    def settle(self) -> None:
        """After a completed protocol, the status follows the checks."""
        if self.status == "passed" and not all(self.checks.values()):
            self.status = "failed"

    def record(self, duration_seconds: float, recording_sha256: str | None,
               stderr_tail_limit_bytes: int) -> dict[str, Any]:
        return {
            "seed": self.case.seed,
            "case_id": self.case.case_id,
            "checks": self.checks,
            "passed": self.passed,
            "status": self.status,
            "error": self.error,
            "duration_seconds": round(duration_seconds, 6),
            "transcript_sha256": self.transcript_sha256,
            "tool_calls": self.tool_calls,
            "initial_state": copy.deepcopy(dict(self.case.initial)),
            "final_state": copy.deepcopy(self.final_state),
            "trace": copy.deepcopy(self.trace),
            "processes": [
                {"exit_code": session.exit_code, "output_bytes": session.output_bytes,
                 "stderr_tail": session.stderr_tail(),
                 "stderr_tail_limit_bytes": stderr_tail_limit_bytes}
                for session in self.sessions
            ],
            "recording_sha256": recording_sha256,
        }


def unassessed_case(case: Case, message: str) -> EpisodeOutcome:
    """The outcome of an episode the infrastructure could not run at all."""
    return EpisodeOutcome(case, copy.deepcopy({k: dict(v) for k, v in case.initial.items()}),
                          [{"type": "environment_error", "error": message}],
                          status="environment_error", error=message)


def run_case(case: Case, case_run: CaseRun) -> EpisodeOutcome:
    """Run ``case`` against a fresh simulator (what ``evalarc.packs.evaluate`` calls)."""
    return run_episode(case, case_run, SupportEnvironment(case))


def run_episode(case: Case, case_run: CaseRun, environment: SupportEnvironment) -> EpisodeOutcome:
    """Drive one policy process through one episode.

    Sends the start observation, then for each of at most :data:`MAX_ACTIONS` responses either
    executes the tool request and answers with its result, or accepts the finish, closes stdin
    and requires a clean exit. Every response is traced. A protocol error (including a missing
    finish) is ``agent_error`` with the state checks still computed; a failure of the process
    infrastructure or of the simulated service is ``environment_error`` with null checks.
    """
    outcome = EpisodeOutcome(case, environment.state())
    session: Session | None = None
    try:
        session = case_run.start_session()
        outcome.sessions.append(session)
        observation = environment.observe()
        for step in range(MAX_ACTIONS):
            response = _exchange(session, observation)
            action = parse_action(response)
            if isinstance(action, Finish):
                outcome.trace.append({"step": step, "type": "finish",
                                      "action": copy.deepcopy(response)})
                session.stop_eof()
                outcome.protocol_ok = True
                break
            before = environment.state()
            result = environment.step(action.action)
            after = environment.state()
            outcome.trace.append({
                "step": step,
                "type": "tool_call",
                "action": copy.deepcopy(response),
                "result": copy.deepcopy(result.result),
                "status": result.status,
                "error_source": result.error_source,
                "changes": state_changes(before, after),
            })
            observation = {"type": "tool_result", "result": result.result,
                           "remaining_actions": MAX_ACTIONS - step - 1}
        else:
            raise AgentFault(BUDGET_EXHAUSTED)
    except AgentFault as fault:
        outcome.status, outcome.error = "agent_error", fault.message
        outcome.trace.append({"type": "agent_error", "error": fault.message})
        _kill_quietly(session, outcome)
    except EnvironmentFailure as failure:
        outcome.status, outcome.error = "environment_error", failure.message
        outcome.trace.append({"type": "environment_error", "error": failure.message})
        _kill_quietly(session, outcome)
    outcome.final_state = environment.state()
    outcome.settle()
    return outcome


def _exchange(session: Session, observation: dict[str, Any]) -> JSONValue:
    try:
        return session.exchange(observation)
    except ValueError:
        # Only an over-long request line raises ValueError, and only the policy's own notes can
        # grow an observation that far: its choice, so its protocol error.
        raise AgentFault(OBSERVATION_TOO_LONG) from None


def _kill_quietly(session: Session | None, outcome: EpisodeOutcome) -> None:
    """Kill the session a fault interrupted; a failed kill makes the episode unassessed."""
    if session is None:
        return
    try:
        session.kill()
    except EnvironmentFailure as failure:
        outcome.status, outcome.error = "environment_error", failure.message
        outcome.trace.append({"type": "environment_error", "error": failure.message})


# -- scoring -----------------------------------------------------------------------------------

"""Support-routing policy (reference solution): routes, notes and, when resolved, closes one ticket.

Usage: python main.py

The host sends one observation per stdin line (a "start" observation, then one "tool_result"
after each tool request) and reads exactly one action per stdout line. The policy reads the
target ticket, then assigns the queue its category maps to, adds the requested note under the
fixed idempotency key "review", closes the ticket only if it is resolved, and finishes. A
retryable error is answered by sending the identical request again (same idempotency key, so a
note that was already committed is replayed, not duplicated); any other error ends the episode.
Standard library only.

The switches below all default to the correct behaviour. Each one, flipped, reproduces one of the
pack's declared faults; graders flip exactly one line to build a negative control.
"""

import json
import sys

ACK_ONLY = False  # claim-without-actions: finish at once, claiming success
WRONG_TICKET = False  # wrong-ticket: work on the other ticket id instead of the target
WRONG_QUEUE = False  # wrong-queue: assign a real queue that is not the category's
DUPLICATE_NOTE = False  # duplicate-note: add the note a second time under another key
CLOSE_OPEN = False  # close-unresolved: close the ticket whether or not it is resolved
SKIP_RETRY = False  # skip-retry: give up at the first retryable error
NEW_RETRY_KEY = False  # new-key-on-retry: retry add_note under a fresh idempotency key

REQUEST_ID = "review"


def tool(name, **arguments):
    return {"tool": name, "arguments": arguments}


def finish(message=None):
    return {"finish": True} if message is None else {"finish": True, "message": message}


class Policy:
    """Turns each observation into the next action."""

    def __init__(self):
        self.ticket_id = None
        self.task = None
        self.pending = []
        self.last = None

    def act(self, observation):
        if observation.get("type") == "start":
            action = self.start(observation["task"])
        else:
            action = self.after(observation["result"])
        self.last = action
        return action

    def start(self, task):
        if ACK_ONLY:
            return finish("Routed, noted and closed as requested; all checks pass.")
        self.task = task
        self.ticket_id = task["ticket_id"]
        if WRONG_TICKET:
            self.ticket_id = next(t for t in task["ticket_ids"] if t != task["ticket_id"])
        return tool("get_ticket", ticket_id=self.ticket_id)

    def after(self, result):
        if result.get("ok") is not True:
            return self.recover(result.get("error") or {})
        if self.last["tool"] == "get_ticket" and not self.pending and "ticket" in result:
            self.plan(result["ticket"])
        if not self.pending:
            return finish()
        return self.pending.pop(0)

    def plan(self, ticket):
        rules = self.task["routing_rules"]
        queue = rules[ticket["category"]]
        if WRONG_QUEUE:
            queue = next(q for q in sorted(rules.values()) if q != queue)
        self.pending.append(tool("assign_queue", ticket_id=self.ticket_id, queue=queue))
        self.pending.append(tool("add_note", ticket_id=self.ticket_id, body=self.task["note"],
                                 request_id=REQUEST_ID))
        if DUPLICATE_NOTE:
            self.pending.append(tool("add_note", ticket_id=self.ticket_id,
                                     body=self.task["note"], request_id=REQUEST_ID + "-again"))
        if ticket["resolved"] is True or CLOSE_OPEN:
            self.pending.append(tool("close_ticket", ticket_id=self.ticket_id))

    def recover(self, error):
        if error.get("retryable") is not True:
            return finish("Stopped: the ticket service rejected a request.")
        if SKIP_RETRY:
            return finish("Could not complete the operation.")
        retry = json.loads(json.dumps(self.last))
        if NEW_RETRY_KEY and retry["tool"] == "add_note":
            retry["arguments"]["request_id"] = REQUEST_ID + "-retry"
        return retry


def main():
    policy = Policy()
    for line in sys.stdin:
        action = policy.act(json.loads(line))
        sys.stdout.write(json.dumps(action) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Starting point for the support-routing task: a ticket-handling policy over JSON lines.

Usage: python main.py

Read TASK.md for the full contract. This skeleton already speaks the protocol (one observation
per stdin line, one action per stdout line, flushed at once) but does no work: it finishes at
the first observation, so every episode leaves the tickets untouched. Replace `act` with a real
policy. Standard library only.
"""

import json
import sys


def act(observation):
    """Return the next action for one observation.

    TODO: read the target ticket, assign the queue its category maps to, add the note exactly
    once, close the ticket only if it is resolved, retry retryable errors safely, then finish.
    """
    del observation
    return {"finish": True, "message": "Not implemented."}


def main():
    for line in sys.stdin:
        sys.stdout.write(json.dumps(act(json.loads(line))) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

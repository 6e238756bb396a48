"""Starting point for the robot-evidence-review task: a JSON-lines review service.

Usage: python main.py

Read TASK.md for the full contract. This skeleton already speaks the protocol (one JSON request
per stdin line, one JSON response per stdout line, flushed at once, exit 0 when stdin ends) and
wraps each report as {"ok": true, "report": ...}. `review` is not written yet, so every request
is answered with {"ok": false, ...}. Standard library only.
"""

import json
import sys


def review(request):
    """Return the report object for one review request.

    TODO: convert every observation into world meters and seconds with the request's
    metadata (world_from_sensor, clock), then compute the report fields TASK.md lists.
    """
    del request
    raise NotImplementedError("not implemented")


def respond(line):
    try:
        return {"ok": True, "report": review(json.loads(line))}
    except Exception as error:  # the service keeps answering whatever one request does
        return {"ok": False, "error": f"{type(error).__name__}: {error}"}


def main():
    for line in sys.stdin:
        sys.stdout.write(json.dumps(respond(line)) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Starting point for the durable-kv task: a key-value service over JSON lines.

Usage: python main.py DATABASE_PATH

Read TASK.md for the full contract. This skeleton already speaks the protocol (one JSON request
per stdin line, one JSON response per stdout line, flushed at once) but implements no operation:
it answers every request with invalid_request. Replace `handle` with a real, durable store.
Standard library only; sqlite3 is allowed.
"""

import json
import sys

INVALID = {"ok": False, "error": "invalid_request"}


def handle(database_path, request):
    """Return the response object for one request.

    TODO: implement put / get / delete / cas / batch as TASK.md describes, keeping acknowledged
    changes in DATABASE_PATH so they survive a restart and a SIGKILL after the response.
    """
    del database_path, request
    return INVALID


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: main.py DATABASE_PATH\n")
        return 2
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            response = INVALID
        else:
            response = handle(argv[1], request)
        sys.stdout.write(json.dumps(response) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

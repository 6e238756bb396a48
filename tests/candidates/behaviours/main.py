"""A test candidate whose (mis)behaviour is chosen by its first argument.

Usage: main.py BEHAVIOUR STATE_DIR. Every behaviour answers requests with one JSON line unless
its name says otherwise; ``serve`` is the well-behaved service the others deviate from.
"""

import json
import os
import subprocess
import sys
import time

BEHAVIOUR = sys.argv[1]
STATE = sys.argv[2]
COUNTER = os.path.join(STATE, "count")


def reply(value, *, extra=""):
    sys.stdout.write(json.dumps(value) + "\n" + extra)
    sys.stdout.flush()


def count_request():
    """Persist how many requests this case has seen, across sessions."""
    seen = 0
    if os.path.exists(COUNTER):
        with open(COUNTER) as handle:
            seen = int(handle.read())
    seen += 1
    with open(COUNTER, "w") as handle:
        handle.write(str(seen))
    return seen


def answer(request):
    return {"echo": request, "seen": count_request()}


def main():
    if BEHAVIOUR == "close-stdin":
        os.close(0)
        time.sleep(30)
        return 0
    if BEHAVIOUR == "deaf":
        time.sleep(30)
        return 0
    if BEHAVIOUR == "close-stdout":
        sys.stdin.readline()
        os.close(1)
        time.sleep(30)
        return 0
    if BEHAVIOUR == "partial-exit":
        sys.stdin.readline()
        sys.stdout.write('{"ok":')
        sys.stdout.flush()
        return 0
    for line in sys.stdin:
        request = json.loads(line)
        sys.stderr.write(f"handling {line.strip()}\n")
        sys.stderr.flush()
        if BEHAVIOUR in ("serve", "exit-3", "ignore-eof", "trailing", "trailing-space"):
            reply(answer(request))
        elif BEHAVIOUR == "env":
            reply({"cwd": os.getcwd(), "env": dict(os.environ), "argv": sys.argv})
        elif BEHAVIOUR == "slow":
            time.sleep(0.3)
            reply(answer(request))
        elif BEHAVIOUR == "sleep":
            time.sleep(30)
        elif BEHAVIOUR == "nan":
            sys.stdout.write('{"ok": NaN}\n')
            sys.stdout.flush()
        elif BEHAVIOUR == "overflow":
            sys.stdout.write('{"ok": 1e999}\n')
            sys.stdout.flush()
        elif BEHAVIOUR == "flood":
            chunk = "x" * 65536
            while True:
                sys.stdout.write(chunk)
        elif BEHAVIOUR == "flood-stderr":
            chunk = "e" * 65536
            while True:
                sys.stderr.write(chunk)
        elif BEHAVIOUR == "extra-lines":
            reply(answer(request), extra='{"extra":true}\n')
        elif BEHAVIOUR == "grandchild":
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
            reply({"parent": os.getpid(), "child": child.pid})
        else:
            raise SystemExit(f"unknown behaviour {BEHAVIOUR}")
    if BEHAVIOUR == "exit-3":
        return 3
    if BEHAVIOUR == "ignore-eof":
        time.sleep(30)
    if BEHAVIOUR == "trailing":
        sys.stdout.write("bye\n")
    if BEHAVIOUR == "trailing-space":
        sys.stdout.write(" \n\t")
    return 0


if __name__ == "__main__":
    sys.exit(main())

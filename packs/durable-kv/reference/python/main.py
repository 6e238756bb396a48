"""Durable key-value service speaking the durable-kv JSON-lines protocol (reference solution).

Usage: python main.py DATABASE_PATH

One JSON request per stdin line, one JSON response per stdout line. State lives in a SQLite file;
every request's transaction is committed (synchronous=FULL) before its response is printed, so
an acknowledged change survives a clean exit and a SIGKILL right after the acknowledgement.
Standard library only.

The switches below all default to the correct behaviour. Each one, flipped, reproduces one of the
pack's declared faults; graders flip exactly one line to build a negative control.
"""

import json
import sqlite3
import sys

ACK_ONLY = False  # ack-without-work: answer {"ok": true} to everything and do nothing
DURABLE = True  # memory-only when False: keep the table in memory
ATOMIC_BATCH = True  # partial-batch when False: apply children until the first invalid one
ENFORCE_CAS = True  # cas-always-wins when False: every compare-and-swap writes
TYPE_SENSITIVE = True  # boolean-equals-one when False: compare with Python's loose ==
DELETE_ENABLED = True  # delete-noop when False: deletes are acknowledged and ignored
VALIDATE_KEYS = True  # accept-nonstring-keys when False: scalar keys (5, true, null) are used
COMMIT_BEFORE_ACK = True  # commit-on-exit when False: one commit at clean end of input

INVALID = {"ok": False, "error": "invalid_request"}
OK = {"ok": True}


class InvalidRequest(Exception):
    """The request breaks the contract; nothing it asked for may stay applied."""


class PartialBatch(InvalidRequest):
    """A non-atomic batch stopped at an invalid child; the children before it stay applied."""


def encode(value):
    """Stored form of a value: canonical JSON text, so equal values have equal text."""
    return json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=False)


def reject_constant(name):
    raise ValueError("non-finite number " + name)


def decode(text):
    return json.loads(text, parse_constant=reject_constant)


class Store:
    """The SQLite table plus explicit transactions: one savepoint per request inside a
    transaction that is committed before the acknowledgement."""

    def __init__(self, path):
        self.db = sqlite3.connect(path if DURABLE else ":memory:", isolation_level=None)
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.execute("CREATE TABLE IF NOT EXISTS kv (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def begin_request(self):
        if not self.db.in_transaction:
            self.db.execute("BEGIN")
        self.db.execute("SAVEPOINT request")

    def end_request(self, keep):
        if not keep:
            self.db.execute("ROLLBACK TO request")
        self.db.execute("RELEASE request")
        if COMMIT_BEFORE_ACK:
            self.db.execute("COMMIT")

    # Keys are stored as their escaped JSON text: every string, even one holding a lone
    # surrogate, then has an exact, bindable form.
    def read(self, key):
        row = self.db.execute("SELECT value FROM kv WHERE key = ?", (encode(key),)).fetchone()
        return None if row is None else row[0]

    def write(self, key, value):
        self.db.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)",
                        (encode(key), encode(value)))

    def remove(self, key):
        if DELETE_ENABLED:
            self.db.execute("DELETE FROM kv WHERE key = ?", (encode(key),))

    def close(self):
        if self.db.in_transaction:
            self.db.execute("COMMIT")
        self.db.close()


def key_of(request):
    key = request.get("key")
    if isinstance(key, str):
        return key
    if not VALIDATE_KEYS and not isinstance(key, (list, dict)):
        return encode(key)
    raise InvalidRequest()


def check_batch_element(element):
    if not isinstance(element, dict) or element.get("op") not in ("put", "delete"):
        raise InvalidRequest()
    key_of(element)
    if element["op"] == "put" and "value" not in element:
        raise InvalidRequest()


def apply_batch_element(store, element):
    if element["op"] == "put":
        store.write(key_of(element), element["value"])
    else:
        store.remove(key_of(element))


def run_batch(store, request):
    operations = request.get("operations")
    if not isinstance(operations, list):
        raise InvalidRequest()
    if not ATOMIC_BATCH:
        for element in operations:
            try:
                check_batch_element(element)
            except InvalidRequest:
                raise PartialBatch() from None
            apply_batch_element(store, element)
        return OK
    for element in operations:
        check_batch_element(element)
    for element in operations:
        apply_batch_element(store, element)
    return OK


def values_equal(stored_text, expected):
    if TYPE_SENSITIVE:
        return stored_text == encode(expected)
    return decode(stored_text) == expected


def handle(store, request):
    if not isinstance(request, dict):
        raise InvalidRequest()
    op = request.get("op")
    if op == "batch":
        return run_batch(store, request)
    if op not in ("put", "get", "delete", "cas"):
        raise InvalidRequest()
    key = key_of(request)
    if op == "get":
        text = store.read(key)
        if text is None:
            return {"ok": True, "found": False}
        return {"ok": True, "found": True, "value": decode(text)}
    if op == "delete":
        store.remove(key)
        return OK
    if "value" not in request:
        raise InvalidRequest()
    if op == "put":
        store.write(key, request["value"])
        return OK
    if "expected" not in request:
        raise InvalidRequest()
    text = store.read(key)
    if not ENFORCE_CAS or (text is not None and values_equal(text, request["expected"])):
        store.write(key, request["value"])
        return {"ok": True, "swapped": True}
    return {"ok": True, "swapped": False}


def respond(response):
    sys.stdout.write(json.dumps(response) + "\n")
    sys.stdout.flush()


def serve(path):
    store = Store(path)
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            break
        if ACK_ONLY:
            respond(OK)
            continue
        store.begin_request()
        keep = True
        try:
            response = handle(store, decode(line.decode("utf-8")))
        except PartialBatch:
            response = INVALID
        except (InvalidRequest, ValueError, TypeError, KeyError, RecursionError, sqlite3.Error):
            keep = False
            response = INVALID
        store.end_request(keep)
        respond(response)
    store.close()


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: main.py DATABASE_PATH\n")
        return 2
    serve(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Try to fill the host disk through /state: 3 GiB of data, then 100,000 empty files.

Answers the trigger with how far each got and the error that stopped it, and the /state mount
line, instead of the reference's response (so the case fails on a mismatch, and the transcript
shows the bound).
"""

import contextlib
import errno
import os

CHUNK = b"x" * (1 << 20)


def respond(request, response, params):
    state = params["state"]
    written, made, errors = 0, 0, {}
    try:
        with open(os.path.join(state, "fill"), "wb") as handle:
            while written < params.get("bytes", 3 << 30):
                handle.write(CHUNK)
                handle.flush()
                written += len(CHUNK)
    except OSError as error:
        errors["bytes"] = errno.errorcode.get(error.errno, str(error.errno))
    with contextlib.suppress(OSError):
        os.unlink(os.path.join(state, "fill"))
    try:
        while made < params.get("files", 100_000):
            open(os.path.join(state, f"f{made}"), "wb").close()
            made += 1
    except OSError as error:
        errors["files"] = errno.errorcode.get(error.errno, str(error.errno))
    with open("/proc/self/mounts", encoding="utf-8") as mounts:
        mount = [line.split() for line in mounts if line.split()[1] == state]
    return {"written": written, "made": made, "errors": errors, "mount": mount}

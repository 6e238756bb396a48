"""Allocate (and touch) memory until something stops it; never answer.

Reports on stderr each time another 32 MiB is held, so the transcript shows where it was stopped.
"""

import sys

CHUNK = 8 * 1024 * 1024


def respond(request, response, params):
    hoard = []
    while True:
        hoard.append(b"m" * CHUNK)
        if len(hoard) % 4 == 0:
            sys.stderr.write(f"holding {len(hoard) * CHUNK // (1024 * 1024)} MiB\n")
            sys.stderr.flush()

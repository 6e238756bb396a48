"""Fork without end, in every child too, and never answer.

The first refused fork is reported on stderr (how many forks the parent got, and the errno), so
the transcript shows which limit stopped the bomb.
"""

import contextlib
import errno
import os
import sys


def bomb():
    while True:
        with contextlib.suppress(OSError):
            os.fork()


def respond(request, response, params):
    forks = 0
    while True:
        try:
            child = os.fork()
        except OSError as error:
            sys.stderr.write(f"fork refused after {forks} forks: "
                             f"{errno.errorcode.get(error.errno, error.errno)}\n")
            sys.stderr.flush()
            break
        if child == 0:
            bomb()
        forks += 1
    bomb()

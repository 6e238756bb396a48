"""Flood stderr with lines (the diagnostics channel) and stdout without a newline, forever."""

import sys


def respond(request, response, params):
    line = "noise " * 1000 + "\n"
    while True:
        sys.stderr.write(line)
        sys.stdout.write("x" * 4096)

"""Answer correctly, then refuse to exit when stdin ends: ignore the polite signals and sleep."""

import signal
import time


def at_eof(params):
    for name in ("SIGTERM", "SIGHUP", "SIGINT", "SIGPIPE"):
        signal.signal(getattr(signal, name), signal.SIG_IGN)
    while True:
        time.sleep(3600)

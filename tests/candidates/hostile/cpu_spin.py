"""Spin on the CPU in as many threads as there are processors; never answer."""

import os
import threading


def spin():
    while True:
        pass


def respond(request, response, params):
    for _ in range(os.cpu_count() or 1):
        threading.Thread(target=spin, daemon=True).start()
    spin()

"""Go to sleep instead of answering, for far longer than any deadline."""

import time


def respond(request, response, params):
    time.sleep(3600)
    return response

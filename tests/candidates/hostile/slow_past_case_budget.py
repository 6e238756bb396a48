"""Answer every request correctly, each inside the response timeout, but so slowly that the
case's shared time budget runs out (``params["delay_seconds"]`` per request)."""

import time


def respond(request, response, params):
    time.sleep(params["delay_seconds"])
    return response

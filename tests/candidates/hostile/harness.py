"""The durable-kv reference with one attack switched in: the ``main.py`` of a hostile candidate.

A hostile workspace holds this file as ``main.py``, the pack's Python reference as
``service.py``, one attack module (a sibling of this file) as ``attack.py`` and ``hostile.json``:
``{"trigger": <request>, ...attack parameters}``. A process whose *first* request equals the
trigger turns hostile; every other process is the reference, so the other cases of the same run
must pass. An attack module may define ``respond(request, response, params)`` (returns what to
send instead of the reference's response, or never returns), ``after_response(params)`` and
``at_eof(params)``.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # `python -I` leaves the script's folder off sys.path

import attack  # noqa: E402
import service  # noqa: E402

with open(os.path.join(HERE, "hostile.json"), encoding="utf-8") as handle:
    PARAMS = json.load(handle)
PARAMS["state"] = os.path.dirname(os.path.abspath(sys.argv[1]))

first_request = True
hostile = False
reference_handle = service.handle
reference_respond = service.respond


def handle(store, request):
    global first_request, hostile
    if first_request:
        first_request = False
        hostile = request == PARAMS["trigger"]
    response = reference_handle(store, request)
    if hostile and hasattr(attack, "respond"):
        return attack.respond(request, response, PARAMS)
    return response


def respond(response):
    reference_respond(response)
    if hostile and hasattr(attack, "after_response"):
        attack.after_response(PARAMS)


service.handle = handle
service.respond = respond
service.serve(sys.argv[1])
if hostile and hasattr(attack, "at_eof"):
    attack.at_eof(PARAMS)

"""Try to reach the network: DNS, TCP to a public address and to the host's gateways, UDP.

Answers the trigger with ``{attempt: "connected" | errno or resolver error name}``. Run inside
the sandbox (no network), every attempt must fail.
"""

import errno
import socket


def outcome(action):
    try:
        action()
        return "connected"
    except socket.gaierror as error:
        return f"gaierror {error.args[0]}"
    except TimeoutError:
        return "timeout"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def tcp(address, port):
    def action():
        with socket.create_connection((address, port), timeout=2):
            pass

    return action


def udp(address, port):
    def action():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as client:
            client.sendto(b"\x00", (address, port))

    return action


def respond(request, response, params):
    results = {
        "dns deb.debian.org": outcome(lambda: socket.getaddrinfo("deb.debian.org", 443)),
        "tcp 1.1.1.1:443": outcome(tcp("1.1.1.1", 443)),
        "tcp 1.1.1.1:53": outcome(tcp("1.1.1.1", 53)),
        "udp 1.1.1.1:53": outcome(udp("1.1.1.1", 53)),
    }
    for gateway in params.get("gateways", []):
        results[f"tcp {gateway}:2375"] = outcome(tcp(gateway, 2375))
        results[f"tcp {gateway}:22"] = outcome(tcp(gateway, 22))
    results["interfaces"] = sorted(name for _, name in socket.if_nameindex())
    return results

"""Try to read host secrets and reach the Docker socket; answer with what was found.

Answers the trigger with ``{path: "read N bytes: <start>" | errno name}``: the case fails on a
mismatch and the transcript shows that nothing leaked.
"""

import errno
import os
import socket


def read(path):
    try:
        with open(path, "rb") as handle:
            data = handle.read(4096)
        return f"read {len(data)} bytes: " + data[:200].decode("utf-8", "replace")
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def docker_socket(path):
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
            client.settimeout(2)
            client.connect(path)
            client.sendall(b"GET /containers/json HTTP/1.0\r\n\r\n")
            return "answered: " + client.recv(200).decode("utf-8", "replace")
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))


def respond(request, response, params):
    results = {}
    for path in ["/etc/shadow", "/proc/1/environ", "/proc/1/root/etc/shadow",
                 "/proc/1/cmdline", *params.get("host_paths", [])]:
        results[path] = read(path)
    for path in ["/var/run/docker.sock", "/run/docker.sock"]:
        results["socket " + path] = docker_socket(path)
    results["listdir /"] = sorted(os.listdir("/"))
    return results

"""Try to write everywhere but the state directory, and to plant links in it that point out.

Answers the trigger with ``{path or action: "ok" | errno name}`` instead of the reference's
response (so the case fails on a mismatch, and the transcript shows every outcome).
"""

import errno
import os
import subprocess


def attempt(action):
    try:
        action()
        return "ok"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
    except subprocess.CalledProcessError as error:
        return f"exit {error.returncode}"


def write(path):
    def action():
        with open(path, "a") as handle:
            handle.write("hostile\n")

    return action


def exec_from_tmp():
    with open("/tmp/payload.sh", "w") as handle:
        handle.write("#!/bin/sh\necho escaped\n")
    os.chmod("/tmp/payload.sh", 0o755)
    subprocess.run(["/tmp/payload.sh"], check=True, capture_output=True)


def respond(request, response, params):
    state = params["state"]
    results = {
        "/hostile": attempt(write("/hostile")),
        "/etc/passwd": attempt(write("/etc/passwd")),
        "/candidate/main.py": attempt(write("/candidate/main.py")),
        "/candidate/new.py": attempt(write("/candidate/new.py")),
        "/state/../escape": attempt(write(os.path.join(state, "..", "escape"))),
        "/tmp exec": attempt(exec_from_tmp),
        "chmod /dev/shm": attempt(lambda: os.chmod("/dev/shm", 0o777)),
        "mknod": attempt(lambda: os.mknod(os.path.join(state, "null"), 0o600 | 0o020000,
                                          os.makedev(1, 3))),
        "chown": attempt(lambda: os.chown(state, 0, 0)),
        "hardlink": attempt(lambda: os.link("/etc/shadow", os.path.join(state, "hard"))),
    }
    # Links to host paths (a file and a folder) left in /state, which lives on the host: they
    # are only names, and the host must remove them without following them.
    for number, target in enumerate(params.get("link_targets", [])):
        link = os.path.join(state, f"link-{number}")
        results[f"symlink {target}"] = attempt(lambda t=target, name=link: os.symlink(t, name))
    for host_path in params.get("host_paths", []):
        results[host_path] = attempt(write(host_path))
    return results

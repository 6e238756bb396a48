"""Who made a case container or a temporary folder, and whether that process still lives.

An EvalArc process killed without warning (SIGKILL, a crashed node) cannot clean up after
itself, so everything it makes carries its *owner id*: the boot id of the kernel, the pid
namespace, the pid and that process's start time (so a recycled pid is not mistaken for it).
A later EvalArc on the same machine sweeps what belongs to owners that are gone: containers by
their :data:`OWNER_LABEL` (:func:`evalarc.runtime.docker_backend.sweep_containers`), work
folders by their ``.evalarc-owner`` file (:func:`sweep_work_folders`). Where the owner cannot
be judged (another machine or pid namespace), a container is removed only once the case
deadline written on it (:data:`EXPIRES_LABEL`) has passed, and its idle process ends by itself
at that deadline anyway. A container past that deadline is a leftover whoever owns it: one that
was created but never started (its owner was killed between the two calls) has no idle process
to end, so only the sweep can remove it.

A killed owner that its parent has not reaped yet is a zombie: its /proc entry (and start time)
stays until the parent waits for it, but it runs nothing and will clean up nothing, so it counts
as gone. Counting it alive kept its "Created" containers forever.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from functools import cache
from pathlib import Path

OWNER_LABEL = "evalarc.owner"
"""Container label: the owner id of the EvalArc process that made it."""
EXPIRES_LABEL = "evalarc.expires"
"""Container label: Unix time after which the container is a leftover whoever owns it."""
OWNER_FILE = ".evalarc-owner"
WORK_PREFIXES = ("evalarc-evaluate-", "evalarc-audit-", "evalarc-worker-")
"""Temporary folders EvalArc makes for a run (snapshots, per-case state of local runs)."""


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii", errors="replace") as stream:
            return stream.read().strip()
    except OSError:
        return ""


_GONE_STATES = frozenset("ZXx")
"""/proc/<pid>/stat states of a process that has ended: zombie (not reaped yet) and dead."""


def _start_time(pid: int) -> str:
    """Field 22 of /proc/<pid>/stat (clock ticks since boot), or "" when there is no such
    process or it has ended (a zombie waiting for its parent counts as ended)."""
    text = _read(f"/proc/{pid}/stat")
    _, _, after = text.rpartition(")")
    fields = after.split()
    if len(fields) <= 19 or fields[0] in _GONE_STATES:
        return ""
    return fields[19]


def _namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return "pid:unknown"


@cache
def _machine() -> tuple[str, str]:
    return _read("/proc/sys/kernel/random/boot_id") or "unknown-boot", _namespace()


def owner_id() -> str:
    """This process's owner id (``boot/namespace/pid/start``)."""
    boot, namespace = _machine()
    pid = os.getpid()
    return f"{boot}/{namespace}/{pid}/{_start_time(pid)}"


def owner_alive(owner: str) -> bool | None:
    """True while the owner process runs, False once it is gone, None when this process
    cannot tell (another machine or pid namespace, or an id it does not understand)."""
    parts = owner.split("/")
    if len(parts) != 4 or not parts[2].isdigit():
        return None
    boot, namespace = _machine()
    if parts[0] != boot or parts[1] != namespace:
        return None
    start = _start_time(int(parts[2]))
    return bool(start) and start == parts[3]


def claim_work_folder(folder: Path) -> str:
    """Mark a new work folder as this process's; return the owner id."""
    owner = owner_id()
    (folder / OWNER_FILE).write_text(owner + "\n", encoding="ascii")
    return owner


def sweep_work_folders(root: Path | None = None) -> list[Path]:
    """Remove EvalArc work folders under ``root`` (default: the system temporary folder) whose
    owner process is gone; return the folders removed. Folders of live owners, of owners this
    process cannot judge and of anything without an owner file are left alone."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(base))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(WORK_PREFIXES):
            continue
        try:
            if not entry.is_dir(follow_symlinks=False):
                continue
        except OSError:
            continue
        owner = _read(os.path.join(entry.path, OWNER_FILE))
        if owner and owner_alive(owner) is False:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed

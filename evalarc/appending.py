"""Appending a Markdown summary (``--markdown FILE``, e.g. ``$GITHUB_STEP_SUMMARY``) whole or
not at all: a signal is held back while the text is written, and a failed write (a full disk, a
file size limit) cuts the file back to the length it had, so a summary is never left half
appended to a file other steps write to as well."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from evalarc.cancel import signals_held
from evalarc.errors import OutputError


class SummaryFile:
    """A file opened for appending before anything is published (so an unwritable path fails
    first), written once with :meth:`append`."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        except OSError as error:
            raise self._error(error) from None

    def _error(self, error: OSError) -> OutputError:
        return OutputError(f"cannot append to {self.path}: {error.strerror or error}")

    def append(self, text: str) -> None:
        """Append ``text`` (newline-terminated), all of it or none of it."""
        if self._fd is None:
            raise ValueError("summary file is closed")
        data = (text if text.endswith("\n") else text + "\n").encode(
            "utf-8", errors="backslashreplace"
        )
        fd = self._fd
        with signals_held():
            try:
                start = os.lseek(fd, 0, os.SEEK_END)
            except OSError:
                start = None  # a pipe or terminal: nothing to cut back
            try:
                view = memoryview(data)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
            except OSError as error:
                if start is not None:
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, start)
                raise self._error(error) from None

    def close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def __enter__(self) -> SummaryFile:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def append_summary(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` whole or not at all (see :class:`SummaryFile`)."""
    with SummaryFile(path) as summary:
        summary.append(text)

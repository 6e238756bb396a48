"""How every ``evalarc`` command ends: its lines, its ``--json`` document, its Markdown summary
and its exit code (0 accepted, 1 rejected, 2 invalid, 130 cancelled) go through :func:`emit` and
:class:`Group`, so no command prints or exits its own way.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import click

from evalarc.errors import EvalArcError, ExitCode, UsageError
from evalarc.terminal import terminal_text

_PUBLISHED = "evalarc.published"
_DEBUG = "evalarc.debug"
_STARTED = "evalarc.started"


def echo(message: str, err: bool = False) -> None:
    """Print one line (or a JSON document): every line EvalArc prints goes through here, so
    control and bidi characters from strangers' text are escaped (see :mod:`evalarc.terminal`)."""
    click.echo(terminal_text(str(message)), err=err)


def _escaped_stdout(text: str) -> None:
    """Write a piece of a document to stdout as :func:`echo` would (unsafe characters escaped;
    the document's own final newline ends it)."""
    click.echo(terminal_text(text), nl=False)


def note(message: str) -> None:
    """One ``evalarc: ...`` line on stderr (a warning or a problem beside the result)."""
    echo(f"evalarc: {message}", err=True)


_CANCELLED_SAID: list[bool] = []


def fail(message: str, code: ExitCode = ExitCode.INVALID) -> NoReturn:
    note(message)
    if code == ExitCode.CANCELLED:
        _CANCELLED_SAID.append(True)
    sys.exit(int(code))


def cancelled_at_exit() -> NoReturn:
    """Exit 130 for a KeyboardInterrupt that escaped the command group (one that arrived while
    the program was already exiting): ignore further cancelling signals, say "cancelled" once."""
    from evalarc.cancel import ignore

    ignore()
    if not _CANCELLED_SAID:
        note("cancelled")
    sys.exit(int(ExitCode.CANCELLED))


@dataclass(frozen=True)
class Outcome:
    """What a finished command shows and how it exits."""

    code: ExitCode
    lines: Iterable[str] = ()
    """The human lines on stdout (replaced by ``document`` with ``--json``)."""
    document: Any = None
    """The ``--json`` document: a JSON value, or a typed report model with ``to_json()`` (None:
    the command prints ``lines`` even with ``--json``)."""
    notes: Iterable[str] = ()
    """Lines on stderr, each printed as ``evalarc: <note>``."""
    markdown: str | None = None
    """The Markdown summary appended to ``--markdown`` (when the command has that option)."""
    published: bool = False
    """The command's output folder is complete and published: a Ctrl-C from here on cancels
    nothing, so the command still exits ``code``."""


@dataclass(frozen=True)
class Emission:
    """Where a command's outcome goes: ``--json`` instead of lines, ``--markdown FILE``."""

    as_json: bool = False
    markdown: Path | None = None


TEXT = Emission()


def emit(outcome: Outcome, to: Emission = TEXT) -> NoReturn:
    """Show ``outcome`` (Markdown appended first, then stderr notes, then stdout) and exit with
    its code."""
    if outcome.published:
        published(outcome.code)
    else:
        from evalarc.cancel import check

        check()  # a cancel swallowed where Python could not raise it still cancels
    if to.markdown is not None and outcome.markdown is not None:
        append_text(to.markdown, outcome.markdown)
    for message in outcome.notes:
        note(message)
    if to.as_json and outcome.document is not None:
        document = outcome.document
        write_json = getattr(document, "write_json", None)
        to_json = getattr(document, "to_json", None)
        if callable(write_json):
            # A large report is written piece by piece (the same text as below).
            write_json(_escaped_stdout)
        else:
            echo(
                json.dumps(
                    to_json() if callable(to_json) else document, indent=2, ensure_ascii=False
                )
            )
    else:
        for line in outcome.lines:
            echo(line)
    sys.exit(int(outcome.code))


def append_text(path: Path, text: str) -> None:
    """Append ``text`` (newline-terminated) to ``path``, e.g. ``$GITHUB_STEP_SUMMARY``, whole
    or not at all."""
    from evalarc.appending import append_summary

    append_summary(path, text)


def published(code: int) -> None:
    """Note that the command's output folder is complete and published with exit code ``code``:
    a Ctrl-C after this point cancels nothing, so the command still exits ``code``."""
    click.get_current_context().meta[_PUBLISHED] = int(code)


class Group(click.Group):
    """Maps EvalArc errors, click usage errors and Ctrl-C onto the shared exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EvalArcError as error:
            if ctx.meta.get(_DEBUG):
                raise
            _cancelled_anyway(ctx)
            fail(error.message, error.exit_code)
        except click.UsageError as error:
            # A bad argument (a folder where a file goes, a missing file name) is refused like
            # any other input: one line naming it, not click's multi-line usage block.
            where = error.ctx.command_path if error.ctx is not None else "evalarc"
            fail(UsageError(f"{error.format_message()} (see '{where} --help')").message)
        except KeyboardInterrupt:
            # Cancelled and cleaned up: another Ctrl-C (users press it again) must not turn the
            # exit code 130 into a death by signal while the interpreter shuts down.
            from evalarc.cancel import ignore

            ignore()
            done = ctx.meta.get(_PUBLISHED)
            if isinstance(done, int):
                # Too late to cancel: the output is complete and published, its result stands.
                sys.exit(done)
            fail("cancelled", ExitCode.CANCELLED)
        except Exception:
            _cancelled_anyway(ctx)
            raise
        finally:
            if ctx.parent is None and _STARTED in ctx.meta:
                from evalarc.cancel import end

                if end():
                    note("a cancel arrived after the output was published: its result stands")


def _cancelled_anyway(ctx: click.Context) -> None:
    """After a cancel, another error is its consequence (Python turns a KeyboardInterrupt raised
    while a class is being created into a RuntimeError; a cleanup fails half-way): the command
    ends as cancelled, exit 130, unless ``--debug`` asks for the traceback."""
    from evalarc.cancel import ignore, requested

    if requested() and not ctx.meta.get(_DEBUG):
        ignore()
        fail("cancelled", ExitCode.CANCELLED)


PROGRAM_EXITS = False
"""Set by the ``evalarc`` program (:func:`evalarc.cli.run`), which exits when its command ends;
a command run in-process (``main``, click's test runner) leaves the signal dispositions of the
process as it found them."""


def start(ctx: click.Context, *, debug: bool) -> None:
    """What the ``evalarc`` group does before any command: remember ``--debug``, let Ctrl-C,
    SIGTERM and SIGHUP cancel it (:mod:`evalarc.cancel`), and make the output streams escape
    what they cannot encode."""
    ctx.meta[_DEBUG] = debug
    from evalarc.cancel import install  # not imported for --help (startup time)

    install(program_exits=PROGRAM_EXITS)
    ctx.meta[_STARTED] = True
    # Text from strangers may hold lone surrogates (legal in JSON): print them escaped rather than
    # dying on UnicodeEncodeError; in JSON output the escape is the value's own JSON spelling.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")

"""The ``evalarc`` command line: parse options, call one library function, map the result to an
exit code. Nothing else lives here (the library is tested directly; CLI tests check the mapping).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from evalarc import __version__
from evalarc.errors import EvalArcError, ExitCode

F = TypeVar("F", bound=Callable[..., Any])


def _fail(message: str, code: ExitCode = ExitCode.INVALID) -> None:
    click.echo(f"evalarc: {message}", err=True)
    sys.exit(int(code))


class _Group(click.Group):
    """Maps EvalArc errors, click usage errors and Ctrl-C onto the shared exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except EvalArcError as error:
            if ctx.meta.get("evalarc.debug"):
                raise
            _fail(error.message, error.exit_code)
        except KeyboardInterrupt:
            click.echo("evalarc: cancelled", err=True)
            sys.exit(int(ExitCode.CANCELLED))
        return None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="EvalArc", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, hidden=True, help="Show tracebacks instead of one line.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """Review agent evaluations check by check instead of trusting a headline score."""
    ctx.meta["evalarc.debug"] = debug


if __name__ == "__main__":  # pragma: no cover
    main()

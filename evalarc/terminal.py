"""Text from strangers, made safe to print: one helper for every line EvalArc writes to a terminal.

A name or message read from an input file may hold control characters (an ANSI escape that
recolours the terminal, a carriage return that overwrites the line) or bidi controls (U+202E
turns ``x‮LMTH.exe: diff, fail`` around). :func:`escape_controls` spells every such character as
a ``\\uXXXX`` escape, which is also its JSON spelling, so a JSON document passed through it stays
the same JSON value. Line breaks and tabs are kept only where the caller allows them.

The same text is also read by a CI runner: in a GitHub Actions log every line whose text, after
leading whitespace, starts with ``::`` is a workflow command (``::error::...`` raises an
annotation, ``::stop-commands::`` silences the rest of the step), and so is ``##[command]...``
anywhere in a line (the legacy form, still parsed). An Inspect metric name, a check or case id or
a file name can be that text. :func:`neutralize_workflow_commands` therefore spells the first
``:`` of such a line as ``\u003a`` and the first ``#`` of every ``##[`` as ``\u0023`` (again the
JSON spelling: JSON text never starts a line inside a string, and an escape inside a string is
the same value), so no line EvalArc prints can start a workflow command with input text. The
GitHub Action's own annotations (:mod:`evalarc.action`) are printed apart from this helper.
"""

from __future__ import annotations

import re
import unicodedata

_KEPT = frozenset({"\n", "\t"})
_CANDIDATES = re.compile(r"[^\x20-\x7e]")


def _unsafe(char: str) -> bool:
    if char == " ":
        return False
    category = unicodedata.category(char)
    # Cc control, Cf format (bidi, zero-width), Cs lone surrogate, Co private use, Cn unassigned,
    # Zl/Zp line and paragraph separators; Zs other spaces are shown as they are.
    return category[0] == "C" or category in ("Zl", "Zp")


def _escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    # Beyond the BMP as a surrogate pair: the JSON spelling, so JSON output stays valid.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def escape_controls(text: str, *, keep: frozenset[str] = frozenset()) -> str:
    """``text`` with every control, format (bidi), surrogate, private-use or unassigned
    character and line/paragraph separator written as ``\\uXXXX``; characters in ``keep``
    (e.g. ``"\\n"``) stay as they are."""

    def replace(match: re.Match[str]) -> str:
        char = match.group()
        return char if char in keep or not _unsafe(char) else _escape(char)

    # Only characters outside printable ASCII are looked at (a large JSON document is mostly
    # ASCII, so this stays fast).
    return _CANDIDATES.sub(replace, text)


def terminal_text(text: str) -> str:
    """What EvalArc prints for ``text``: line breaks and tabs kept, everything else unsafe
    escaped (see :func:`escape_controls`), and no line able to start a CI workflow command
    (:func:`neutralize_workflow_commands`)."""
    return neutralize_workflow_commands(escape_controls(text, keep=_KEPT))


_LEGACY_COMMAND = "##["
_COMMAND_KEY = "::"


def neutralize_workflow_commands(text: str, *, colon: str = "\\u003a") -> str:
    """``text`` with no line that a GitHub Actions runner reads as a workflow command: a line
    starting with ``::`` after any whitespace (the runner trims Unicode whitespace first) gets
    its first ``:`` written as ``colon``, and every ``##[`` becomes ``\\u0023#[``. Markdown
    passes ``colon="\\\\:"`` (a backslash escape Markdown renders as ``:``)."""
    if _COMMAND_KEY not in text and _LEGACY_COMMAND not in text:
        return text  # the common case, and a large JSON document, untouched at once
    text = text.replace(_LEGACY_COMMAND, "\\u0023#[")
    lines = text.split("\n")
    for number, line in enumerate(lines):
        rest = line.lstrip()
        if rest.startswith(_COMMAND_KEY):
            lines[number] = line[: len(line) - len(rest)] + colon + rest[1:]
    return "\n".join(lines)


def has_unsafe_characters(name: str) -> bool:
    """Whether ``name`` holds a character :func:`escape_controls` would escape."""
    return any(_unsafe(char) for char in name)

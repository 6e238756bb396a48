"""Print the blocks of 6 or more lines that are written more than once, and count the pairs.

    python scripts/duplicates.py                 # evalarc/
    python scripts/duplicates.py evalarc/pages evalarc/site site_templates

Lines are compared stripped of indentation, with blank lines, comments and docstring fences
left out; a window of WINDOW such lines that is at least MIN_CHARS long and occurs in more than
one place is a duplicate. Overlapping windows of the same places are reported once, as one
block. A block written in n places counts n·(n-1)/2 pairs.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

WINDOW = 6
MIN_CHARS = 80
SUFFIXES = (".py", ".j2", ".css", ".js")
ROOT = Path(__file__).resolve().parents[1]

Place = tuple[str, int]


def _lines(path: Path) -> list[tuple[int, str]]:
    kept = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        text = line.strip()
        if text and not text.startswith("#") and text not in ('"""', "'''"):
            kept.append((number, text))
    return kept


def _files(arguments: list[str]) -> list[Path]:
    files: list[Path] = []
    for argument in arguments or ["evalarc"]:
        path = (ROOT / argument) if not Path(argument).is_absolute() else Path(argument)
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        files.extend(item for item in candidates if item.suffix in SUFFIXES and item.is_file())
    return files


def duplicate_blocks(files: list[Path]) -> list[tuple[list[Place], tuple[str, ...]]]:
    """Each repeated block: its places (file, first line) and its first window."""
    windows: dict[tuple[str, ...], list[Place]] = defaultdict(list)
    for path in files:
        lines = _lines(path)
        name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
        for start in range(len(lines) - WINDOW + 1):
            chunk = tuple(text for _, text in lines[start : start + WINDOW])
            if sum(len(text) for text in chunk) >= MIN_CHARS:
                windows[chunk].append((name, lines[start][0]))
    repeated = sorted((places, chunk) for chunk, places in windows.items() if len(places) > 1)
    blocks: list[tuple[list[Place], tuple[str, ...]]] = []
    previous: list[Place] | None = None
    for places, chunk in repeated:
        continues = (
            previous is not None
            and len(previous) == len(places)
            and all(
                a[0] == b[0] and 0 < b[1] - a[1] <= WINDOW
                for a, b in zip(previous, places, strict=True)
            )
        )
        if not continues:
            blocks.append((places, chunk))
        previous = places
    return blocks


def main(arguments: list[str]) -> int:
    blocks = duplicate_blocks(_files(arguments))
    for places, chunk in blocks:
        print(", ".join(f"{name}:{line}" for name, line in places))
        for text in chunk:
            print(f"    {text}")
    pairs = sum(len(places) * (len(places) - 1) // 2 for places, _ in blocks)
    print(f"duplicated blocks of {WINDOW}+ lines: {len(blocks)} ({pairs} pairs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""Every command in the docs' fenced ```bash blocks runs, so the docs cannot rot.

One test per page: the page's commands run in order, in one bash process (so `cd`, variables and
an activated venv carry over, as for a reader typing them), in a fresh temporary copy of the
files a reader has after cloning. `evalarc` on PATH is the one this test session runs with,
unless a page installs its own.

Conventions a page's commands follow:

* A command exits 0 unless its last line says otherwise in a comment: `# exits 1`.
* A command that needs the Docker engine says so in a comment: `# needs Docker`. The test runs it
  against the local image instead of the public one (`python:3.12-slim` -> the image named by
  EVALARC_TEST_IMAGE, default `evalarc-python:local`; `node:22-slim` likewise with
  EVALARC_TEST_NODE_IMAGE), and `docker pull IMAGE` becomes `docker image inspect IMAGE`, because
  the test machine builds its images locally and pulls nothing. Pages with such commands carry
  the `docker` mark.
* Lines ending in a backslash continue the command; a here-document runs to its end marker.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
COPIED = (
    "README.md",
    "CHANGELOG.md",
    "pyproject.toml",
    "action.yml",
    "docs",
    "evalarc",
    "packs",
    "recordings",
    "site_templates",
    "assets",
    "scripts",
)
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache")
PUBLIC_IMAGES = {
    "python:3.12-slim": os.environ.get("EVALARC_TEST_IMAGE", "evalarc-python:local"),
    "node:22-slim": os.environ.get("EVALARC_TEST_NODE_IMAGE", "evalarc-node:local"),
}
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```bash[ \t]*\n(?P<body>.*?)^(?P=indent)```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
EXPECTED_EXIT = re.compile(r"#.*\bexits (\d+)\b")
NEEDS_DOCKER = re.compile(r"#.*\bneeds Docker\b")
HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\1")
LINK = re.compile(r"\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class DocCommand:
    text: str
    expected_exit: int
    needs_docker: bool
    line: int


def doc_commands(markdown: str) -> list[DocCommand]:
    """The commands of every ```bash block, in order."""
    commands: list[DocCommand] = []
    for block in FENCE.finditer(markdown):
        first_line = markdown.count("\n", 0, block.start("body")) + 1
        indent = len(block.group("indent"))
        lines = [line[indent:] for line in block.group("body").splitlines()]
        index = 0
        while index < len(lines):
            start = index
            line = lines[index]
            index += 1
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            parts = [line]
            while parts[-1].endswith("\\") and index < len(lines):
                parts.append(lines[index])
                index += 1
            heredoc = HEREDOC.search(" ".join(parts))
            if heredoc is not None:
                while index < len(lines) and lines[index].strip() != heredoc.group(2):
                    parts.append(lines[index])
                    index += 1
                parts.append(lines[index])
                index += 1
            text = "\n".join(parts)
            last = parts[-1] if heredoc is None else parts[0]
            expected = EXPECTED_EXIT.search(last)
            commands.append(
                DocCommand(
                    text=text,
                    expected_exit=int(expected.group(1)) if expected else 0,
                    needs_docker=NEEDS_DOCKER.search(text) is not None,
                    line=first_line + start,
                )
            )
    return commands


def for_this_machine(command: DocCommand) -> str:
    """The command as the test runs it (local images instead of public ones)."""
    if not command.needs_docker:
        return command.text
    text = command.text
    for public, local in PUBLIC_IMAGES.items():
        text = text.replace(public, local)
    return re.sub(r"\bdocker pull\b", "docker image inspect", text)


def script_for(commands: list[DocCommand]) -> str:
    """One bash script that runs each command and stops at the first unexpected exit code."""
    lines = ["set -o pipefail"]
    for number, command in enumerate(commands, 1):
        lines.append(f"echo '>>> docs command {number} (line {command.line})'")
        lines.append(for_this_machine(command))
        lines.append(
            f"status=$?; if [ $status -ne {command.expected_exit} ]; then "
            f"echo 'docs command {number} (line {command.line}) exited '$status', "
            f"expected {command.expected_exit}' >&2; exit 97; fi"
        )
    return "\n".join(lines) + "\n"


def pages() -> list[Path]:
    return sorted(DOCS.glob("*.md"))


def _param(page: Path) -> object:
    needs_docker = any(c.needs_docker for c in doc_commands(page.read_text(encoding="utf-8")))
    marks = [pytest.mark.docker] if needs_docker else []
    return pytest.param(page, id=page.name, marks=marks)


def _reader_copy(destination: Path) -> Path:
    root = destination / "evalarc"
    root.mkdir()
    for name in COPIED:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=IGNORED, symlinks=True)
        elif source.is_file():
            shutil.copy2(source, root / name)
    return root


def test_the_docs_exist_and_each_page_runs_commands() -> None:
    names = {page.name for page in pages()}
    assert {
        "README.md",
        "first-review.md",
        "ci-gate.md",
        "task-packs.md",
        "audits-and-margins.md",
        "verification.md",
        "trajectory.md",
        "security.md",
        "writing-a-pack.md",
    } <= names
    for page in pages():
        if page.name == "README.md":
            continue
        assert doc_commands(page.read_text(encoding="utf-8")), f"{page.name} has no bash commands"


@pytest.mark.parametrize("page", [_param(page) for page in pages()])
def test_every_link_between_pages_resolves(page: Path) -> None:
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"^[a-z]+:", target) or target.startswith("#"):
            continue
        path = (page.parent / target.split("#", 1)[0]).resolve()
        assert path.exists(), f"{page.name} links to missing {target}"


@pytest.mark.parametrize("page", [_param(page) for page in pages()])
def test_page_commands_run_as_written(page: Path, tmp_path: Path) -> None:
    commands = doc_commands(page.read_text(encoding="utf-8"))
    root = _reader_copy(tmp_path)
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "LANG": "C.UTF-8",
        "TMPDIR": str(tmp_path),
    }
    for key in ("DOCKER_HOST", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS"):
        if key in os.environ:
            env[key] = os.environ[key]
    completed = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", script_for(commands)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    assert completed.returncode == 0, (
        f"{page.name}:\n{completed.stderr[-4000:]}\n--- stdout ---\n{completed.stdout[-4000:]}"
    )


def test_command_extraction_follows_the_conventions() -> None:
    markdown = (
        "text\n```bash\n# a comment\nevalarc diff a \\\n  b  # exits 1\n"
        "docker pull python:3.12-slim  # needs Docker\n"
        "cat > f.txt <<'EOF'\nline # exits 5\nEOF\n```\n"
        "```yaml\nnot: run\n```\n"
        "- a list item:\n\n  ```bash\n  evalarc verify out  # exits 2\n  ```\n"
    )
    commands = doc_commands(markdown)
    assert [(c.expected_exit, c.needs_docker) for c in commands] == [
        (1, False),
        (0, True),
        (0, False),
        (2, False),
    ]
    assert commands[3].text == "evalarc verify out  # exits 2"
    assert commands[0].text == "evalarc diff a \\\n  b  # exits 1"
    assert commands[0].line == 4
    assert commands[2].text == "cat > f.txt <<'EOF'\nline # exits 5\nEOF"
    assert for_this_machine(commands[1]).startswith(
        f"docker image inspect {PUBLIC_IMAGES['python:3.12-slim']}"
    )
    script = script_for(commands[:3])
    assert "-ne 1 ]" in script and "exit 97" in script

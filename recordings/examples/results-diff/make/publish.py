"""Copy natively produced result files into the example folder, redacting host details.

    python publish.py NATIVE_DIR

NATIVE_DIR holds what the tools wrote (inspect/, promptfoo/, junit/ with baseline and current
files). Text files (JSON, XML) get two redactions: the machine's hostname (pytest writes it into
`<testsuite hostname=...>`) and absolute paths of the generator folders (pytest writes the test
file's path into skip messages), which become relative. `.eval` archives are never rewritten:
their decompressed members are checked, and publishing stops if any of those values occur.
What was redacted, per file, goes to redactions.json with both SHA-256 sums, and the file table
in README.md (between the `files:` markers) is regenerated. Runs with the tools' Python (it
needs `zstandard`, which inspect-ai installs, to read `.eval` members).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import socket
import sys
import zipfile
from importlib.metadata import version
from pathlib import Path

import zipfile_zstd  # noqa: F401  (registers ZIP method 93, Zstandard, with zipfile)

MAKE_DIR = Path(__file__).resolve().parent
EXAMPLE_DIR = MAKE_DIR.parent
RESULT_FILES = [
    "inspect/baseline.json",
    "inspect/current.json",
    "inspect/baseline.eval",
    "inspect/current.eval",
    "promptfoo/baseline.json",
    "promptfoo/current.json",
    "junit/baseline.xml",
    "junit/current.xml",
]
HAND_WRITTEN = [
    "inspect/split.json",
    "inspect/cases.json",
    "inspect/harness/system-prompt.md",
]
HOSTNAME_ATTRIBUTE = re.compile(rb'hostname="[^"]*"')
START_MARK = "<!-- files:start -->"
END_MARK = "<!-- files:end -->"


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def path_prefixes(native_dir: Path) -> list[tuple[str, str]]:
    """Absolute folder prefixes to strip, most specific first, each with a description."""
    folders = [path for path in MAKE_DIR.iterdir() if path.is_dir()] + [MAKE_DIR, native_dir]
    folders.sort(key=lambda path: len(str(path)), reverse=True)
    return [(str(path) + os.sep, f"absolute path of the folder {path.name}/") for path in folders]


def host_names() -> list[str]:
    names = {socket.gethostname(), socket.getfqdn(), platform.node()}
    return sorted(name for name in names if name and name != "localhost")


def redact(data: bytes, native_dir: Path) -> tuple[bytes, list[dict[str, object]]]:
    notes: list[dict[str, object]] = []
    data, count = HOSTNAME_ATTRIBUTE.subn(b'hostname="redacted"', data)
    if count:
        notes.append({"what": "hostname attribute of <testsuite>", "count": count})
    for prefix, what in path_prefixes(native_dir):
        count = data.count(prefix.encode())
        if count:
            data = data.replace(prefix.encode(), b"")
            notes.append({"what": what, "count": count})
    return data, notes


def leftovers(text: str, native_dir: Path) -> list[str]:
    """Host-specific values still present in ``text``."""
    found = [prefix for prefix, _ in path_prefixes(native_dir) if prefix in text]
    found += [str(Path.home()) + os.sep] if str(Path.home()) + os.sep in text else []
    found += [name for name in host_names() if re.search(rf"\b{re.escape(name)}\b", text)]
    return found


def eval_members_text(path: Path) -> str:
    with zipfile.ZipFile(path) as archive:
        return "\n".join(archive.read(info).decode("utf-8") for info in archive.infolist())


def producers(published: dict[str, bytes]) -> dict[str, str]:
    inspect_log = json.loads(published["inspect/baseline.json"])
    promptfoo_meta = json.loads(published["promptfoo/baseline.json"])["metadata"]
    python = platform.python_version()
    return {
        "inspect": f"Inspect AI {inspect_log['eval']['packages']['inspect_ai']} "
        f"(Python {python}, mockllm/model)",
        "promptfoo": f"promptfoo {promptfoo_meta['promptfooVersion']} "
        f"(node {promptfoo_meta['nodeVersion']}, echo provider)",
        "junit": f"pytest {version('pytest')} (Python {python}, --junitxml, xunit2)",
    }


def readme_table(published: dict[str, bytes], made_by: dict[str, str]) -> str:
    rows = ["| file | made by | bytes | SHA-256 |", "| --- | --- | ---: | --- |"]
    for name in RESULT_FILES:
        data = published[name]
        tool = made_by[name.split("/")[0]]
        rows.append(f"| `{name}` | {tool} | {len(data):,} | `{sha256(data)}` |")
    for name in HAND_WRITTEN:
        data = (EXAMPLE_DIR / name).read_bytes()
        rows.append(
            f"| `{name}` | written by hand (an input, not a result) | {len(data):,} | "
            f"`{sha256(data)}` |"
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    native_dir = Path(argv[0]).resolve()
    published: dict[str, bytes] = {}
    report: dict[str, object] = {}
    problems: list[str] = []
    for name in RESULT_FILES:
        native = (native_dir / name).read_bytes()
        if name.endswith(".eval"):
            data, notes = native, []
            found = leftovers(eval_members_text(native_dir / name), native_dir)
        else:
            data, notes = redact(native, native_dir)
            found = leftovers(data.decode("utf-8"), native_dir)
        if found:
            problems.append(f"{name} still contains {len(found)} host-specific value(s)")
        published[name] = data
        report[name] = {
            "native_sha256": sha256(native),
            "published_sha256": sha256(data),
            "redacted": notes,
        }
    if problems:
        for problem in problems:
            print(f"publish: {problem}", file=sys.stderr)
        return 1

    for name, data in published.items():
        target = EXAMPLE_DIR / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    made_by = producers(published)
    redactions = {
        "description": "What make/publish.py changed in each tool output before publishing.",
        "producers": made_by,
        "files": report,
    }
    (EXAMPLE_DIR / "redactions.json").write_text(json.dumps(redactions, indent=2) + "\n")

    readme = EXAMPLE_DIR / "README.md"
    text = readme.read_text()
    head, rest = text.split(START_MARK, 1)
    _, tail = rest.split(END_MARK, 1)
    table = readme_table(published, made_by)
    readme.write_text(f"{head}{START_MARK}\n{table}\n{END_MARK}{tail}")
    print(f"published {len(published)} files into {EXAMPLE_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

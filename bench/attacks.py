"""Every attack of issue 16, run against one EvalArc, as a table: attack, exit, time, peak RSS,
files left.

    python bench/attacks.py                      # this checkout
    python bench/attacks.py --before 7301013     # also the same attacks against that commit
    python bench/attacks.py --scale 0.1          # hostile-input rows at a tenth of their size

Forged sites: a site (and its report folders) is built by the EvalArc under test from the
in-repo examples; each attack edits a fresh copy the way a hostile publisher would, rewriting
the SHA-256 manifests to match, then runs ``evalarc verify``. The floor for every row: exit 2
(refused) within 60 s and 512 MB, and no file left behind by a writing command.

Hostile inputs: files made here (empty promptfoo rows, empty JUnit elements, an ``.eval`` whose
sample inflates to 63 MiB, valid 300 MB pairs) are diffed with ``evalarc diff``. Every run is
capped at ``--timeout`` seconds and ``--memory`` MB of address space so a reader that does not
bound itself is stopped (shown as ``killed``) instead of exhausting the machine.

"files left" counts what a command left in its scratch folder beyond its inputs (a partial or
temporary folder, a site built from a refused input).

Each column's site is built, attacked and verified by that column's EvalArc only: its children
run with ``PYTHONPATH`` set to it and ``PYTHONSAFEPATH=1`` (run from a checkout, ``python -m``
would otherwise import the checkout's evalarc first), and the first row, the untouched site,
must verify (exit 0) before the attack rows mean anything.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "recordings" / "examples"
BUNDLE_MANIFEST = "evalarc-bundle.json"
SITE_MANIFEST = "manifest.json"
FLOOR = "exit 2, <= 60 s, <= 512 MB, 0 files left"
CONTROL = "control: the site as built, untouched (must exit 0)"


# --------------------------------------------------------------------------- manifests


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def _pretty(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def reseal_site_manifest(site: Path, bundle: str) -> None:
    """Make ``manifest.json`` record the current hash of ``bundle``'s manifest."""
    manifest = json.loads((site / SITE_MANIFEST).read_text(encoding="utf-8"))
    data = (site / "reports" / bundle / BUNDLE_MANIFEST).read_bytes()
    for entry in manifest["reports"]:
        if entry["path"] == f"reports/{bundle}":
            entry["manifest_sha256"] = _sha256(data)
    (site / SITE_MANIFEST).write_text(_pretty(manifest), encoding="utf-8")


def reseal(site: Path, bundle: str, *names: str) -> None:
    """Rewrite ``bundle``'s manifest (and the site's) so ``names`` hash as listed: what an
    attacker who edits files and their manifests consistently does."""
    path = site / "reports" / bundle / BUNDLE_MANIFEST
    manifest = json.loads(path.read_text(encoding="utf-8"))
    for name in names:
        data = (site / "reports" / bundle / name).read_bytes()
        manifest["files"][name] = {"sha256": _sha256(data), "bytes": len(data)}
    path.write_text(_pretty(manifest), encoding="utf-8")
    reseal_site_manifest(site, bundle)


# --------------------------------------------------------------------------- running


@dataclass(frozen=True)
class Row:
    attack: str
    exit: str
    seconds: float
    peak_mb: float
    files_left: int


def _limit(memory_mb: int) -> Callable[[], None]:
    def apply() -> None:
        import resource

        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run(
    argv: list[str], *, env: dict[str, str], timeout: float, memory_mb: int, cwd: Path
) -> tuple[str, float, float]:
    """Run ``argv``; return (exit or ``killed``, seconds, peak RSS in MB) from wait4."""
    started = time.monotonic()
    process = subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_limit(memory_mb),
    )
    killed = threading.Event()

    def stop() -> None:
        killed.set()
        process.kill()

    timer = threading.Timer(timeout, stop)
    timer.start()
    try:
        assert process.stderr is not None
        stderr = process.stderr.read()
        _, status, usage = os.wait4(process.pid, 0)
    finally:
        timer.cancel()
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.monotonic() - started
    code = process.returncode
    if killed.is_set():
        shown = "killed (time)"
    elif code < 0 or b"MemoryError" in stderr or b"Cannot allocate" in stderr:
        shown = "killed (memory)" if code != 2 else "2"
    else:
        shown = str(code)
    return shown, seconds, usage.ru_maxrss / 1024


def count_left(folder: Path, expected: set[str]) -> int:
    return sum(1 for path in folder.iterdir() if path.name not in expected)


# --------------------------------------------------------------------------- forged sites


def _edit(path: Path, change: Callable[[str], str]) -> None:
    path.write_text(change(path.read_text(encoding="utf-8")), encoding="utf-8")


def _inject(path: Path, key: str) -> None:
    value = json.loads(path.read_text(encoding="utf-8"))
    value["changes"][0][key] = "injected"
    path.write_text(_pretty(value), encoding="utf-8")


def _sparse(site: Path) -> None:
    bundle = site / "reports/junit-diff"
    manifest = json.loads((bundle / BUNDLE_MANIFEST).read_text(encoding="utf-8"))
    size = 511 * 1024 * 1024
    for index in range(12):
        name = f"blob-{index:02d}.bin"
        with (bundle / name).open("wb") as handle:
            handle.truncate(size)
        # An attacker lists each with its true hash (that of 511 MiB of zeros).
        manifest["files"][name] = {"sha256": ZERO_511_MIB, "bytes": size}
    (bundle / BUNDLE_MANIFEST).write_text(_pretty(manifest), encoding="utf-8")
    reseal_site_manifest(site, "junit-diff")


ZERO_511_MIB = "0" * 64  # replaced at start-up by the real digest (computed once, streamed)


def active_page(body: str, script: str | None = None) -> str:
    """An HTML page as a hostile publisher writes it to pass a page check: one CSP meta with
    ``default-src 'none'`` whose ``script-src`` allows its one inline script by hash (so the
    script runs when the page is opened)."""
    import base64
    import hashlib

    sources = "'none'"
    if script is not None:
        digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
        sources = f"'sha256-{digest}'"
    policy = f"default-src 'none'; script-src {sources}"
    code = f"<script>{script}</script>" if script is not None else ""
    return (
        f'<!doctype html><html><head><meta http-equiv="Content-Security-Policy" '
        f'content="{policy}"><title>t</title></head><body>{body}{code}</body></html>\n'
    )


def _links(site: Path) -> None:
    bundle = site / "reports/junit-diff"
    targets = "".join(f'<p id="x{index}">{"x" * 5000}</p>' for index in range(200))
    (bundle / "big.html").write_text(active_page(targets), encoding="utf-8")
    links = "".join(f'<a href="big.html#x{index}">{index}</a>' for index in range(200))
    (bundle / "links.html").write_text(active_page(links), encoding="utf-8")
    reseal(site, "junit-diff", "big.html", "links.html")


def deep_chain(base: Path, depth: int) -> None:
    """``depth`` nested empty folders ``d/d/...`` under ``base``, made without recursion."""
    folder = os.open(base, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir("d", dir_fd=folder)
            inner = os.open("d", os.O_RDONLY, dir_fd=folder)
            os.close(folder)
            folder = inner
    finally:
        os.close(folder)


def remove(path: Path) -> None:
    """Remove a tree of any depth (shutil.rmtree recurses)."""
    subprocess.run(["rm", "-rf", str(path)], check=True)


def _deep(site: Path) -> None:
    deep_chain(site / "reports/junit-diff", 1500)
    _edit(site / "reports/junit-diff/index.html", lambda text: text.replace("Gate", "Gat3"))


def _extra(name: str) -> Callable[[Path], None]:
    def attack(site: Path) -> None:
        # A page with its own CSP allowing its script by hash: it passes a check of pages.
        page = active_page("<p>details</p>", "alert(document.domain)")
        (site / "reports/junit-diff" / name).write_text(page, encoding="utf-8")
        reseal(site, "junit-diff", name)

    return attack


def _edited(bundle: str, name: str, change: Callable[[str], str]) -> Callable[[Path], None]:
    def attack(site: Path) -> None:
        _edit(site / "reports" / bundle / name, change)
        reseal(site, bundle, name)

    return attack


def _injected(key: str) -> Callable[[Path], None]:
    def attack(site: Path) -> None:
        _inject(site / "reports/junit-diff/diff.json", key)
        reseal(site, "junit-diff", "diff.json")

    return attack


def _named(name: str) -> Callable[[Path], None]:
    def attack(site: Path) -> None:
        (site / "reports/junit-diff" / name).write_text("# Gate passed\n", encoding="utf-8")
        reseal(site, "junit-diff", name)

    return attack


SITE_ATTACKS: list[tuple[str, Callable[[Path], None]]] = [
    ("edited summary.md, resealed", _edited("junit-diff", "summary.md", lambda t: t + "ok\n")),
    (
        "edited tuning-failures.json, resealed",
        _edited("hillclimb", "tuning-failures.json", lambda t: t.replace('"', '"x', 1)),
    ),
    (
        "edited cases.jsonl, resealed",
        _edited("health", "cases.jsonl", lambda t: t[: t.index("\n") + 1]),
    ),
    (
        "edited events.jsonl, resealed",
        _edited(
            "evaluation",
            "events.jsonl",
            lambda t: t.replace('"case_number":1,', '"case_number":7,', 1),
        ),
    ),
    *[
        (f"extra {name} in a bundle", _extra(name))
        for name in ("details.html", "EVIL.HTML", "page.htm", "page.xhtml", "image.svg", "app.js")
    ],
    ("created_at injected deeper", _injected("created_at")),
    ("evalarc_version injected deeper", _injected("evalarc_version")),
    ("12 sparse 511 MiB files listed", _sparse),
    ("links.html: 200 links into 1 MB big.html", _links),
    ("1,500-deep folder chain + forged page", _deep),
    ("file name with a newline", _named("evil\nname.md")),
    ("confusable summary\u2024md", _named("summary\u2024md")),
]


def site_rows(site: Path, work: Path, env: dict[str, str], python: str) -> list[Row]:
    rows = []
    for label, attack in SITE_ATTACKS:
        copy = work / "attacked"
        if copy.exists():
            remove(copy)
        shutil.copytree(site, copy, symlinks=True)
        attack(copy)
        before = {path.name for path in work.iterdir()}
        code, seconds, peak = run(
            [python, "-m", "evalarc.cli", "verify", str(copy)],
            env=env,
            timeout=ARGS.timeout,
            memory_mb=ARGS.memory,
            cwd=work,
        )
        rows.append(Row(label, code, seconds, peak, count_left(work, before)))
        remove(copy)
    return rows


def hard_link_row(reports: Path, work: Path, env: dict[str, str], python: str) -> Row:
    scratch = work / "hard-link"
    scratch.mkdir()
    secret = scratch / "host-secret"
    secret.write_text("root:x:0:0:root:/root:/bin/sh\n", encoding="utf-8")
    folder = scratch / "junit-diff"
    shutil.copytree(reports / "junit-diff", folder)
    os.link(secret, folder / "passwd")
    code, seconds, peak = run(
        [
            python,
            "-m",
            "evalarc.cli",
            "site",
            "build",
            str(folder),
            "--output",
            str(scratch / "site"),
        ],
        env=env,
        timeout=ARGS.timeout,
        memory_mb=ARGS.memory,
        cwd=scratch,
    )
    left = count_left(scratch, {"host-secret", "junit-diff"})
    shutil.rmtree(scratch)
    return Row("hard link to a host file, site build", code, seconds, peak, left)


# --------------------------------------------------------------------------- hostile inputs


def _promptfoo_empty(path: Path, rows: int) -> None:
    with path.open("w", encoding="ascii") as handle:
        handle.write('{"evalId":"x","results":{"version":3,"results":[')
        chunk = ",".join(["{}"] * 100_000)
        written = 0
        while written < rows:
            step = min(100_000, rows - written)
            handle.write(
                ("," if written else "") + (chunk if step == 100_000 else ",".join(["{}"] * step))
            )
            written += step
        handle.write("]}}")


def _junit_empty(path: Path, elements: int) -> None:
    with path.open("w", encoding="ascii") as handle:
        handle.write('<?xml version="1.0"?><testsuites><testsuite name="s">')
        chunk = "<a/>" * 100_000
        for _ in range(max(1, elements // 100_000)):
            handle.write(chunk)
        handle.write("</testsuite></testsuites>")


def _member(archive: Path, info: zipfile.ZipInfo) -> bytes:
    """A member's bytes, also for Zstandard (method 93, which zipfile cannot read)."""
    if info.compress_type != 93:
        with zipfile.ZipFile(archive) as opened:
            return opened.read(info)
    import struct

    import zstandard

    with archive.open("rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(30)
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        raw = handle.read(info.compress_size)
    data: bytes = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    return data


def _inflating_eval(path: Path, inflated_mib: int) -> None:
    source = EXAMPLES / "results-diff/inspect/baseline.eval"
    with (
        zipfile.ZipFile(source) as original,
        zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as out,
    ):
        names = original.namelist()
        sample = next(name for name in names if name.startswith("samples/"))
        for name in names:
            data = _member(source, original.getinfo(name))
            if name == sample:
                value = json.loads(data)
                count = inflated_mib * 1024 * 1024 // 3
                filler = "[" + ",".join(["{}"] * count) + "]"
                data = (json.dumps(value)[:-1] + ', "padding": ' + filler + "}").encode()
            out.writestr(name, data)


def _promptfoo_valid(path: Path, rows: int, flip: int) -> None:
    with path.open("w", encoding="utf-8") as handle:
        handle.write(
            '{"evalId":"bench","results":{"version":3,"timestamp":"2026-01-01T00:00:00Z",'
            '"results":['
        )
        pad = "y" * 3000
        for index in range(rows):
            passed = (index + flip) % 3 != 0
            row = {
                "testIdx": index,
                "promptIdx": 0,
                "success": passed,
                "score": 1 if passed else 0,
                "vars": {"question": f"q{index}"},
                "prompt": {"raw": f"q{index}", "label": "p"},
                "response": {"output": f"answer {index} {pad}"},
                "gradingResult": {
                    "pass": passed,
                    "score": 1 if passed else 0,
                    "reason": "r",
                    "componentResults": [
                        {
                            "pass": passed,
                            "score": 1 if passed else 0,
                            "reason": "r",
                            "assertion": {"type": "equals"},
                        }
                    ],
                },
            }
            handle.write(("," if index else "") + json.dumps(row))
        handle.write("]}}")


def _junit_valid(path: Path, cases: int, flip: int) -> None:
    pad = "z" * 3000
    with path.open("w", encoding="utf-8") as handle:
        handle.write('<?xml version="1.0"?><testsuites><testsuite name="s">')
        for index in range(cases):
            if (index + flip) % 3 == 0:
                handle.write(
                    f'<testcase classname="c" name="t{index}"><failure message="m">'
                    f"{pad}</failure></testcase>"
                )
            else:
                handle.write(
                    f'<testcase classname="c" name="t{index}"><system-out>{pad}'
                    "</system-out></testcase>"
                )
        handle.write("</testsuite></testsuites>")


def input_rows(work: Path, env: dict[str, str], python: str, scale: float) -> list[Row]:
    inputs = work / "inputs"
    inputs.mkdir(exist_ok=True)
    made: list[tuple[str, Path, Path]] = []

    def made_once(name: str, maker: Callable[[Path], None]) -> Path:
        path = inputs / name
        if not path.exists():
            maker(path)
        return path

    rows_14m = int(14_000_000 * scale)
    pf = made_once(f"promptfoo-empty-{rows_14m}.json", lambda p: _promptfoo_empty(p, rows_14m))
    made.append((f"promptfoo {pf.stat().st_size >> 20} MiB of {rows_14m:,} empty rows", pf, pf))
    elements = int(10_000_000 * scale)
    ju = made_once(f"junit-empty-{elements}.xml", lambda p: _junit_empty(p, elements))
    made.append((f"JUnit {ju.stat().st_size >> 20} MiB of {elements:,} empty elements", ju, ju))
    mib = max(1, int(63 * scale))
    ev = made_once(f"inflating-{mib}.eval", lambda p: _inflating_eval(p, mib))
    made.append((f".eval of {ev.stat().st_size >> 10} KB inflating to {mib} MiB", ev, ev))
    rows = int(92_000 * scale)
    pa = made_once(f"pf-valid-a-{rows}.json", lambda p: _promptfoo_valid(p, rows, 0))
    pb = made_once(f"pf-valid-b-{rows}.json", lambda p: _promptfoo_valid(p, rows, 1))
    made.append((f"valid promptfoo pair, {pa.stat().st_size >> 20} MB each", pa, pb))
    ja = made_once(f"junit-valid-a-{rows}.xml", lambda p: _junit_valid(p, rows, 0))
    jb = made_once(f"junit-valid-b-{rows}.xml", lambda p: _junit_valid(p, rows, 1))
    made.append((f"valid JUnit pair, {ja.stat().st_size >> 20} MB each", ja, jb))
    result = []
    for label, baseline, current in made:
        scratch = work / "diff-run"
        scratch.mkdir()
        code, seconds, peak = run(
            [
                python,
                "-m",
                "evalarc.cli",
                "diff",
                str(baseline),
                str(current),
                "--output",
                str(scratch / "out"),
            ],
            env=env,
            timeout=ARGS.timeout,
            memory_mb=ARGS.memory,
            cwd=scratch,
        )
        # A finished diff leaves its report folder (that is its output, not a leftover).
        left = count_left(scratch, {"out"} if code in ("0", "1") else set())
        shutil.rmtree(scratch)
        result.append(Row(label, code, seconds, peak, left))
    return result


# --------------------------------------------------------------------------- main


def _load_site_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("evalarc_bench_site", ROOT / "bench/site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["evalarc_bench_site"] = module
    spec.loader.exec_module(module)
    return module


def imported_from(env: dict[str, str], cwd: Path) -> Path:
    """The folder holding the ``evalarc`` package a child process with ``env`` imports."""
    done = subprocess.run(
        [sys.executable, "-c", "import evalarc; print(evalarc.__file__)"],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(done.stdout.strip()).parent.parent


def measure(label: str, source: Path, work: Path) -> list[Row]:
    # PYTHONSAFEPATH: `python -m evalarc.cli` must import the EvalArc under test, never one in
    # its working folder (run from a checkout, a child would otherwise import that checkout's
    # evalarc ahead of PYTHONPATH, and the "before" column's site would be built by this one).
    env = dict(
        os.environ, PYTHONPATH=str(source), PYTHONSAFEPATH="1", SOURCE_DATE_EPOCH="1767225600"
    )
    python = sys.executable
    work.mkdir(parents=True, exist_ok=True)
    found = imported_from(env, work)
    if found.resolve() != source.resolve():
        raise SystemExit(f"{label}: child processes import evalarc from {found}, not {source}")
    reports = work / "reports"
    if not (reports / ".done").exists():
        shutil.rmtree(reports, ignore_errors=True)
        reports.mkdir()
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            _load_site_bench().make_reports(reports)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        (reports / ".done").write_text("", encoding="utf-8")
    site = work / "site"
    if not site.exists():
        subprocess.run(
            [
                python,
                "-m",
                "evalarc.cli",
                "site",
                "build",
                *(str(p) for p in sorted(path for path in reports.iterdir() if path.is_dir())),
                "--output",
                str(site),
                "--quiet",
            ],
            env=env,
            cwd=work,
            check=True,
            capture_output=True,
        )
    print(f"# {label}: {source}", file=sys.stderr)
    # The control: the site as built must verify (exit 0), or the attack rows below measure
    # something other than the attacks.
    code, seconds, peak = run(
        [python, "-m", "evalarc.cli", "verify", str(site)],
        env=env,
        timeout=ARGS.timeout,
        memory_mb=ARGS.memory,
        cwd=work,
    )
    rows = [Row(CONTROL, code, seconds, peak, 0)]
    rows += site_rows(site, work, env, python)
    rows.append(hard_link_row(reports, work, env, python))
    if not ARGS.sites_only:
        rows += input_rows(work, env, python, ARGS.scale)
    return rows


def table(columns: list[tuple[str, list[Row]]]) -> list[str]:
    header = "| attack |" + "".join(
        f" {name}: exit | time s | peak MB | files left |" for name, _ in columns
    )
    lines = [header, "|---|" + "---|---:|---:|---:|" * len(columns)]
    for index, row in enumerate(columns[0][1]):
        cells = "".join(
            f" {rows[index].exit} | {rows[index].seconds:.1f} | {rows[index].peak_mb:.0f} | "
            f"{rows[index].files_left} |"
            for _, rows in columns
        )
        attack = row.attack.replace("\n", "\\n")
        lines.append(f"| {attack} |{cells}")
    lines.append(f"floor per attack row: {FLOOR}; the control row must exit 0 in every column")
    return lines


def _zero_digest() -> str:
    import hashlib

    digest = hashlib.sha256()
    block = bytes(1 << 20)
    for _ in range(511):
        digest.update(block)
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> int:
    global ARGS, ZERO_511_MIB
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", help="a git revision to measure as well (before the fix)")
    parser.add_argument(
        "--scale",
        type=float,
        default=1.0,
        help="size factor of the hostile-input files (default 1 = issue sizes)",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per run")
    parser.add_argument("--memory", type=int, default=3072, help="MB of address space per run")
    parser.add_argument("--sites-only", action="store_true", help="skip the hostile inputs")
    parser.add_argument("--work", type=Path, help="scratch folder (default: a temporary one)")
    ARGS = parser.parse_args(argv)
    ZERO_511_MIB = _zero_digest()
    work = ARGS.work or Path(tempfile.mkdtemp(prefix="evalarc-attacks-"))
    columns: list[tuple[str, list[Row]]] = []
    try:
        if ARGS.before:
            before = work / "before-src"
            if not before.exists():
                before.mkdir(parents=True)
                archive = subprocess.run(
                    ["git", "-C", str(ROOT), "archive", ARGS.before],
                    check=True,
                    capture_output=True,
                ).stdout
                subprocess.run(["tar", "-x", "-C", str(before)], input=archive, check=True)
            columns.append((f"before ({ARGS.before})", measure("before", before, work / "b")))
        columns.append(("after", measure("after", ROOT, work / "a")))
    finally:
        if ARGS.work is None:
            shutil.rmtree(work, ignore_errors=True)
    for line in table(columns):
        print(line)
    # A child's peak RSS is at least this process's size when it was started (Linux charges
    # a child the address space it was spawned from), so this bounds what the rows can inflate.
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(this script itself: {own:.0f} MiB peak)")
    return 0


ARGS = argparse.Namespace()

if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.default_int_handler)
    raise SystemExit(main())

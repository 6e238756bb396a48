"""The memory budget behind every reader (issue 24, item 5): whatever a file's shape, reading it
holds at most twice what was read plus a fixed headroom, or it is refused with exit 2 naming the
file and the budget. The hostile files are corpus files reshaped the way ``bench/amplification.py``
reshapes them, at a smaller scale; each runs in its own process, as a user's command would."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from evalarc.errors import InputError
from evalarc.formats import budget

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONSAFEPATH="1")
    return subprocess.run(
        [sys.executable, "-m", "evalarc.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
        check=False,
    )


def _keys(count: int) -> str:
    return "{" + ",".join(f'"k{index}":0' for index in range(count)) + "}"


PLACEHOLDER = {"__placeholder__": 0}


def _inspect_with_keys(corpus: Path, target: Path, count: int) -> Path:
    log = json.loads((corpus / "inspect" / "capitals.baseline.json").read_text())
    log["samples"][0]["metadata"] = PLACEHOLDER
    target.write_text(json.dumps(log).replace(json.dumps(PLACEHOLDER), _keys(count)))
    return target


def _promptfoo_with_keys(corpus: Path, target: Path, count: int) -> Path:
    document = json.loads((corpus / "promptfoo" / "generated" / "qa.baseline.json").read_text())
    document["results"]["results"][0]["response"]["metadata"] = PLACEHOLDER
    target.write_text(json.dumps(document).replace(json.dumps(PLACEHOLDER), _keys(count)))
    return target


@pytest.mark.parametrize(
    ("fmt", "maker", "baseline"),
    [
        ("inspect", _inspect_with_keys, "inspect/capitals.baseline.json"),
        ("promptfoo", _promptfoo_with_keys, "promptfoo/generated/qa.baseline.json"),
    ],
)
def test_a_file_that_amplifies_past_its_budget_is_refused_naming_it(
    corpus: Path, tmp_path: Path, fmt: str, maker: object, baseline: str
) -> None:
    # About 15 MB of short keys in one value: parsed, each key costs some 100 bytes, so the read
    # would hold several times the file (the unbounded readers took 550 MB for 49 MB).
    hostile = maker(corpus, tmp_path / f"hostile-{fmt}.json", 1_200_000)  # type: ignore[operator]
    given = f"hostile-{fmt}.json"
    result = _run("diff", str(corpus / baseline), given, "--json", cwd=tmp_path)
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr[-2000:]
    assert given in lines[0] and "budget" in lines[0] and "MiB" in lines[0]
    assert "Traceback" not in result.stderr
    assert hostile.exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == [given]


def test_the_same_shape_within_its_budget_is_read(corpus: Path, tmp_path: Path) -> None:
    # A few thousand extra keys cost far less than the headroom: the file is read and diffed.
    hostile = _inspect_with_keys(corpus, tmp_path / "fine.json", 5_000)
    base = corpus / "inspect" / "capitals.baseline.json"
    result = _run("diff", str(base), str(hostile), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]


def test_the_limit_is_put_back_after_a_read_and_after_a_refusal() -> None:
    before = resource.getrlimit(resource.RLIMIT_DATA)
    with budget.reading_budget("small.json", 1024):
        inside = resource.getrlimit(resource.RLIMIT_DATA)
        assert inside[0] != resource.RLIM_INFINITY
        assert inside[1] == before[1]
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    with (
        pytest.raises(InputError, match=r"^big\.json: reading it needs more memory"),
        budget.reading_budget("big.json", 1024),
    ):
        hoard = [bytearray(MIB) for _ in range(10_000)]  # 10 GB, far past the budget
        del hoard
    assert resource.getrlimit(resource.RLIMIT_DATA) == before
    # Memory can be had again at once.
    assert len(bytearray(200 * MIB)) == 200 * MIB


def test_decompressed_bytes_widen_the_budget() -> None:
    with budget.reading_budget("log.eval", 0):
        start = resource.getrlimit(resource.RLIMIT_DATA)[0]
        budget.note_read(10 * MIB)
        assert resource.getrlimit(resource.RLIMIT_DATA)[0] == start + 20 * MIB


def test_an_inner_read_never_widens_the_outer_budget() -> None:
    with budget.reading_budget("outer.json", 0):
        outer = resource.getrlimit(resource.RLIMIT_DATA)[0]
        with budget.reading_budget("inner.json", 10 * 1024 * MIB):
            assert resource.getrlimit(resource.RLIMIT_DATA)[0] <= outer
        assert resource.getrlimit(resource.RLIMIT_DATA)[0] == outer


def test_no_limit_is_set_from_another_thread() -> None:
    before = resource.getrlimit(resource.RLIMIT_DATA)
    seen: list[tuple[int, int]] = []

    def read() -> None:
        with budget.reading_budget("threaded.json", 0):
            seen.append(resource.getrlimit(resource.RLIMIT_DATA))

    worker = threading.Thread(target=read)
    worker.start()
    worker.join()
    assert seen == [before]

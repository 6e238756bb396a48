"""The CLI over executed runs, replayed from the bundled recordings (no Docker): `verify
--require-resolved`, and `evalarc diff` over evaluation folders, refusing incomparable pairs."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from evalarc.cli import main
from evalarc.packs import materialize_workspace


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def replayed(tmp_path: Path, fault: str | None, seeds: str, name: str) -> Path:
    workspace = tmp_path / f"ws-{name}"
    materialize_workspace(
        "support-routing", "python", reference=True, fault=fault, dest=workspace, contract=False
    )
    out = tmp_path / name
    result = run(
        "evaluate",
        workspace,
        "--task",
        "support-routing",
        "--backend",
        "replay",
        "--seeds",
        seeds,
        "--output",
        out,
        "--quiet",
    )
    assert result.exit_code in (0, 1), result.output
    return out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("executed")
    return {
        "reference": replayed(tmp, None, "17", "reference"),
        "close": replayed(tmp, "close-unresolved", "17", "close"),
        "retry": replayed(tmp, "new-key-on-retry", "17", "retry"),
        "retry-41": replayed(tmp, "new-key-on-retry", "41", "retry-41"),
    }


def test_verify_require_resolved(folders: dict[str, Path]) -> None:
    assert run("verify", folders["reference"], "--require-resolved").exit_code == 0
    assert run("verify", folders["retry"]).exit_code == 0
    assert run("verify", folders["retry"], "--require-resolved").exit_code == 1


def test_diff_of_two_evaluation_folders_is_the_support_regression(
    folders: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "diff"
    result = run("diff", folders["close"], folders["retry"], "--output", out)
    assert result.exit_code == 1, result.output
    assert "regressed: 17/retry-after-commit / notes" in result.stdout
    assert run("verify", out).exit_code == 0


def test_incomparable_evaluations_name_the_field(folders: dict[str, Path]) -> None:
    result = run("diff", folders["retry"], folders["retry-41"])
    assert result.exit_code == 2
    # Other seeds generate other cases: the first differing field is named.
    assert "not comparable: their cases_sha256 differs" in result.stderr

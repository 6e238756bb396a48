"""The CLI over executed runs, replayed from the bundled recordings (no Docker): `verify
--require-resolved`, and `evalarc diff` over evaluation folders, refusing incomparable pairs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from evalarc.packs import materialize_workspace

if TYPE_CHECKING:
    from conftest import Cli


def replayed(cli: Cli, tmp_path: Path, fault: str | None, seeds: str, name: str) -> Path:
    workspace = tmp_path / f"ws-{name}"
    materialize_workspace(
        "support-routing", "python", reference=True, fault=fault, dest=workspace, contract=False
    )
    out = tmp_path / name
    result = cli(
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
def folders(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("executed")
    return {
        "reference": replayed(cli, tmp, None, "17", "reference"),
        "close": replayed(cli, tmp, "close-unresolved", "17", "close"),
        "retry": replayed(cli, tmp, "new-key-on-retry", "17", "retry"),
        "retry-41": replayed(cli, tmp, "new-key-on-retry", "41", "retry-41"),
    }


def test_verify_require_resolved(cli: Cli, folders: dict[str, Path]) -> None:
    assert cli("verify", folders["reference"], "--require-resolved").exit_code == 0
    assert cli("verify", folders["retry"]).exit_code == 0
    assert cli("verify", folders["retry"], "--require-resolved").exit_code == 1


def test_diff_of_two_evaluation_folders_is_the_support_regression(
    cli: Cli, folders: dict[str, Path], tmp_path: Path
) -> None:
    out = tmp_path / "diff"
    result = cli("diff", folders["close"], folders["retry"], "--output", out)
    assert result.exit_code == 1, result.output
    assert "regressed: 17/retry-after-commit / notes" in result.stdout
    assert cli("verify", out).exit_code == 0


def test_incomparable_evaluations_name_the_field(cli: Cli, folders: dict[str, Path]) -> None:
    result = cli("diff", folders["retry"], folders["retry-41"])
    assert result.exit_code == 2
    # Other seeds generate other cases: the first differing field is named.
    assert "not comparable: their cases_sha256 differs" in result.stderr

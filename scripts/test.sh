#!/usr/bin/env bash
# Install EvalArc with its test tools into .venv, bring up what the tests need (the Docker engine
# and local images), and run what CI runs: ruff, mypy, pytest. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/docker_setup.sh
bash scripts/browser_setup.sh
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev,ray]'
.venv/bin/ruff check evalarc tests bench
.venv/bin/ruff format --check evalarc
.venv/bin/mypy
.venv/bin/python -m pytest -q "$@"

#!/usr/bin/env bash
# Install EvalArc with its test tools into .venv, bring up what the tests need (the Docker engine
# and local images, Chromium), and run what CI runs: ruff, mypy, pytest (in parallel with
# pytest-xdist; tests/README.md has the faster loops). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# The extras the suite needs; an optional backend whose tests run in CI is added here
# (ray: --executor ray's tests start a local multi-node Ray cluster).
EXTRAS="${EVALARC_TEST_EXTRAS:-dev,ray}"
bash scripts/docker_setup.sh
bash scripts/browser_setup.sh
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e ".[$EXTRAS]"
.venv/bin/ruff check evalarc tests bench
.venv/bin/ruff format --check evalarc
.venv/bin/mypy
# Every module is one xdist group, all Docker modules share one and all browser modules another
# (tests/conftest.py), so module fixtures are built once and heavy tests do not starve each other.
status=0
.venv/bin/python -m pytest -q -n "${EVALARC_TEST_WORKERS:-auto}" --dist loadgroup \
    --no-loadscope-reorder --durations=25 "$@" || status=$?
if [ "$status" -eq 5 ]; then
    echo "test.sh: pytest collected no tests; that is a failure" >&2
    exit 1
fi
exit "$status"

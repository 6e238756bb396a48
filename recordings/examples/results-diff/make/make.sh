#!/usr/bin/env bash
# Regenerate every result file in recordings/examples/results-diff/ with the real tools.
#
#   TOOLS_PYTHON=/path/to/venv/bin/python PROMPTFOO=/path/to/promptfoo ./make.sh
#
# TOOLS_PYTHON: a Python with inspect-ai and pytest installed (kept apart from EvalArc's own
#   environment: `python3 -m venv tools && tools/bin/pip install inspect-ai pytest`).
# PROMPTFOO: the promptfoo CLI (`npm install promptfoo` in a scratch folder, then
#   node_modules/.bin/promptfoo).
# Nothing here calls a model or the network: Inspect uses mockllm/model with scripted replies,
# promptfoo the built-in echo provider, pytest a scripted refund desk.
set -euo pipefail

TOOLS_PYTHON=${TOOLS_PYTHON:-python3}
PROMPTFOO=${PROMPTFOO:-promptfoo}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NATIVE=$(mktemp -d)
trap 'rm -rf "$NATIVE"' EXIT
mkdir -p "$NATIVE/inspect" "$NATIVE/promptfoo" "$NATIVE/junit"

export PROMPTFOO_DISABLE_TELEMETRY=1 PROMPTFOO_DISABLE_UPDATE=1
export PROMPTFOO_CONFIG_DIR="$NATIVE/promptfoo-home"
# The suites below fail on purpose; nothing from the caller's pytest setup may leak in.
unset PYTEST_ADDOPTS
# No __pycache__ folders inside the example (it ships in the wheel).
export PYTHONDONTWRITEBYTECODE=1

for revision in baseline current; do
  # Inspect AI: one run per log format (the .json and the .eval hold the same outcomes).
  for log_format in json eval; do
    log_dir="$NATIVE/inspect-logs-$revision-$log_format"
    (cd "$HERE" && "$TOOLS_PYTHON" -m inspect_ai eval refund_task.py@refund_policy \
      -T "revision=$revision" --log-format "$log_format" --log-dir "$log_dir" --display none)
    logs=("$log_dir"/*."$log_format")
    if [ "${#logs[@]}" -ne 1 ]; then
      echo "make.sh: expected one Inspect log in $log_dir, found ${#logs[@]}" >&2
      exit 1
    fi
    cp "${logs[0]}" "$NATIVE/inspect/$revision.$log_format"
  done

  # promptfoo exits 100 when a test fails, which these suites do on purpose. The output path is
  # relative so promptfoo records no absolute path in config.outputPath.
  status=0
  (cd "$HERE/promptfoo" && "$PROMPTFOO" eval -c promptfooconfig.yaml \
    --prompts "prompts/$revision.txt" --no-cache -j 1 --no-write --no-table --no-progress-bar \
    --output "$revision.json") || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 100 ]; then
    echo "make.sh: promptfoo failed with exit status $status" >&2
    exit 1
  fi
  mv "$HERE/promptfoo/$revision.json" "$NATIVE/promptfoo/$revision.json"

  # pytest exits 1 when a test fails (expected here); anything else is a broken run.
  status=0
  (cd "$HERE/junit" && REFUND_DESK_REVISION=$revision "$TOOLS_PYTHON" -m pytest \
    refund_checks.py -q --junitxml="$NATIVE/junit/$revision.xml") || status=$?
  if [ "$status" -ne 0 ] && [ "$status" -ne 1 ]; then
    echo "make.sh: pytest failed with exit status $status" >&2
    exit 1
  fi
done

"$TOOLS_PYTHON" "$HERE/publish.py" "$NATIVE"

#!/usr/bin/env bash
# Install EvalArc into .venv and run the main job on the bundled example: diff two real Inspect AI
# logs (the headline rose, three checks lost passes), write a report folder, then recompute it
# offline with `evalarc verify`.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
out=${1:-out/demo}
rm -rf "$out"
mkdir -p "$(dirname "$out")"
ex=examples/results-diff/inspect
set +e
.venv/bin/evalarc diff "$ex/baseline.eval" "$ex/current.eval" \
  --held-out "$ex/split.json" --harness "$ex/harness" --output "$out/diff"
status=$?
set -e
if [ "$status" -ne 1 ]; then
  echo "demo: expected exit 1 (checks lost passes) from evalarc diff, got $status" >&2
  exit 2
fi
echo
echo "evalarc diff exited 1: the gate rejects the change although the headline rose."
.venv/bin/evalarc verify "$out/diff"
echo
echo "Open $out/diff/index.html in a browser to read the review."

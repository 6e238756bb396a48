#!/usr/bin/env bash
# Install EvalArc into .venv and run the main job: build the demo site from the bundled Docker
# recordings and example results (no Docker, no model), then recompute every number in it with
# `evalarc verify`. Usage: bash scripts/demo.sh [SITE_DIR]   (default: site in the clone)
# SITE_DIR must not exist: like `evalarc demo`, the script refuses an existing folder and never
# deletes anything it did not create.
set -euo pipefail
here=$(pwd)
cd "$(dirname "$0")/.."
site=${1:-site}
if [ $# -gt 0 ] && [ "${site#/}" = "$site" ]; then
  site="$here/$site"  # a relative SITE_DIR is taken from where the script was started
fi
if [ -e "$site" ] || [ -L "$site" ]; then
  echo "demo.sh: $site already exists; choose a new folder (bash scripts/demo.sh NEW_DIR)" >&2
  exit 2
fi
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
.venv/bin/evalarc demo --output "$site"
.venv/bin/evalarc verify "$site"
echo
echo "The support regression: the weighted score rose from 0.9 to 0.9375, yet the gate fails"
echo "because one check lost its pass. Read it in $site/index.html (opens from disk)."
echo "To run evalarc yourself, put it on PATH: . .venv/bin/activate"

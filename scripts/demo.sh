#!/usr/bin/env bash
# Install EvalArc into .venv and run the main job: build the demo site from the bundled Docker
# recordings and example results (no Docker, no model), then recompute every number in it with
# `evalarc verify`. Usage: bash scripts/demo.sh [SITE_DIR]   (default: site)
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e .
site=${1:-site}
rm -rf "$site"
.venv/bin/evalarc demo --output "$site"
.venv/bin/evalarc verify "$site"
echo
echo "The support regression: the weighted score rose from 0.9 to 0.9375, yet the gate fails"
echo "because one check lost its pass. Read it in $site/index.html (opens from disk)."

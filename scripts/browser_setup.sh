#!/usr/bin/env bash
# Make Debian's Chromium available for the browser tests (idempotent; run as root).
# Playwright drives it through executable_path=/usr/bin/chromium; its own browser download is
# never used.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "browser_setup: chromium is missing; run as root or install Debian's chromium" >&2
    exit 1
fi
log="$(mktemp /tmp/evalarc-apt.XXXXXX.log)"
trap 'rm -f "$log"' EXIT
if ! { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } \
    >"$log" 2>&1; then
    echo "browser_setup: apt-get could not install chromium:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi

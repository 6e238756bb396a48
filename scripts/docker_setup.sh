#!/usr/bin/env bash
# Make a Docker engine and EvalArc's two local images available (idempotent; run as root).
#
#   bash scripts/docker_setup.sh
#
# 1. installs docker.io and debootstrap with apt-get when dockerd or debootstrap is missing;
# 2. starts dockerd in the background (log: $EVALARC_DOCKERD_LOG, default /tmp/evalarc-dockerd.log)
#    when `docker info` does not answer, and waits for it (at most $EVALARC_DOCKERD_WAIT seconds);
# 3. builds evalarc-python:local and evalarc-node:local when missing (scripts/build_images.sh).
#
# Quiet unless something fails; a failure prints what went wrong and the tail of the log.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dockerd_log="${EVALARC_DOCKERD_LOG:-/tmp/evalarc-dockerd.log}"
wait_seconds="${EVALARC_DOCKERD_WAIT:-60}"
apt_log="$(mktemp /tmp/evalarc-apt.XXXXXX.log)"
trap 'rm -f "$apt_log"' EXIT

fail() {
    echo "docker_setup: $*" >&2
    exit 1
}

engine_answers() {
    docker info >/dev/null 2>&1
}

if [ "$(id -u)" -ne 0 ] && ! engine_answers; then
    fail "run as root (needs apt-get and dockerd), or start a Docker engine yourself first"
fi

missing=()
if ! command -v docker >/dev/null 2>&1 || { ! engine_answers && ! command -v dockerd >/dev/null 2>&1; }; then
    missing+=(docker.io)
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    missing+=(debootstrap)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"; } \
        >"$apt_log" 2>&1; then
        tail -n 30 "$apt_log" >&2
        fail "apt-get could not install: ${missing[*]}"
    fi
fi

if ! engine_answers; then
    command -v dockerd >/dev/null 2>&1 || fail "dockerd is not installed"
    # containerd ships beside dockerd; dockerd starts its own instance when none is running.
    nohup dockerd >"$dockerd_log" 2>&1 </dev/null &
    deadline=$((SECONDS + wait_seconds))
    until engine_answers; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            tail -n 30 "$dockerd_log" >&2 || true
            fail "dockerd did not answer within ${wait_seconds}s (log: $dockerd_log)"
        fi
        sleep 1
    done
fi

bash "$here/build_images.sh"

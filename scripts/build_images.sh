#!/usr/bin/env bash
# Build EvalArc's local sandbox images when they are missing (needs root, debootstrap, docker):
#
#   evalarc-python:local   Debian/Ubuntu minbase + python3
#   evalarc-node:local     Debian/Ubuntu minbase + nodejs
#
# Each is `debootstrap --variant=minbase --include=PKG` into a temporary folder, then
# `tar -C dir -c . | docker import - TAG`. The mirror, suite, components and keyring come from
# this machine's apt sources (deb822 *.sources or one-line *.list), so no host is hard-coded.
# EVALARC_REBUILD=1 rebuilds images that already exist. Quiet unless something fails.
#
#   bash scripts/build_images.sh --print-apt-source   # show the source it would use, build nothing
#
# EVALARC_APT_ROOT (default /) is where etc/apt and etc/os-release are read from (for tests).
set -euo pipefail

fail() {
    echo "build_images: $*" >&2
    exit 1
}

# Prints "URI SUITE COMPONENTS KEYRING" (components comma-separated, keyring may be "-") for the
# first enabled binary source carrying the release this machine runs.
apt_source() {
    EVALARC_APT_ROOT="${EVALARC_APT_ROOT:-/}" python3 - <<'PY'
import glob
import os
import re
import shlex
import sys

ROOT = os.environ["EVALARC_APT_ROOT"]


def codename():
    try:
        with open(os.path.join(ROOT, "etc/os-release"), encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.strip().partition("=")
                if key == "VERSION_CODENAME" and value:
                    return shlex.split(value)[0]
    except OSError:
        pass
    return None

def deb822(path):
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    for block in re.split(r"\n\s*\n", text):
        fields, last = {}, None
        for line in block.splitlines():
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if line[0] in " \t" and last:
                fields[last] += " " + line.strip()
                continue
            key, sep, value = line.partition(":")
            if sep:
                last = key.strip().lower()
                fields[last] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() == "no":
            continue
        for uri in fields.get("uris", "").split():
            yield uri, fields.get("suites", "").split(), fields.get("components", "").split(), \
                fields.get("signed-by", "").split()[:1]

def one_line(path):
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = raw.split("#", 1)[0].strip()
            options = {}
            match = re.match(r"^deb\s+\[([^\]]*)\]\s+(.*)$", line)
            if match:
                for option in match.group(1).split():
                    key, _, value = option.partition("=")
                    options[key] = value
                rest = match.group(2).split()
            elif line.startswith("deb "):
                rest = line.split()[1:]
            else:
                continue
            if len(rest) >= 2:
                keyring = [options["signed-by"]] if "signed-by" in options else []
                yield rest[0], [rest[1]], rest[2:], keyring

entries = []
apt = os.path.join(ROOT, "etc/apt")
for path in [os.path.join(apt, "sources.list"), *sorted(glob.glob(apt + "/sources.list.d/*.list"))]:
    try:
        entries.extend(one_line(path))
    except OSError:
        pass
for path in sorted(glob.glob(apt + "/sources.list.d/*.sources")):
    try:
        entries.extend(deb822(path))
    except OSError:
        pass

release = codename()
for uri, suites, components, keyring in entries:
    for suite in suites:
        if (release is None and "-" not in suite and "/" not in suite) or suite == release:
            keyring_path = keyring[0] if keyring and keyring[0].startswith("/") else "-"
            print(uri, suite, ",".join(components) or "main", keyring_path)
            sys.exit(0)
sys.exit("no enabled apt source for release %r in %s" % (release, apt))
PY
}

build_image() {
    local tag="$1" package="$2" probe="$3"
    if [ "${EVALARC_REBUILD:-0}" != 1 ] && docker image inspect "$tag" >/dev/null 2>&1; then
        return 0
    fi
    [ "$(id -u)" -eq 0 ] || fail "building $tag needs root (debootstrap): sudo bash scripts/docker_setup.sh"
    command -v debootstrap >/dev/null 2>&1 || fail "debootstrap is missing (run scripts/docker_setup.sh)"
    local mirror suite components keyring
    read -r mirror suite components keyring < <(apt_source) || fail "cannot read the apt sources"
    local root log
    root="$(mktemp -d /tmp/evalarc-rootfs.XXXXXX)"
    log="$(mktemp /tmp/evalarc-debootstrap.XXXXXX.log)"
    local keyring_option=()
    if [ "$keyring" != "-" ] && [ -r "$keyring" ]; then
        keyring_option=(--keyring="$keyring")
    fi
    if ! debootstrap --variant=minbase --include="$package" --components="$components" \
        "${keyring_option[@]}" "$suite" "$root" "$mirror" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        cat "$root/debootstrap/debootstrap.log" 2>/dev/null | tail -n 30 >&2 || true
        rm -rf "$root"
        fail "debootstrap of $suite from $mirror failed for $tag"
    fi
    # Package caches and apt lists are dead weight in a read-only sandbox image.
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/debootstrap
    [ -x "$root/bin/sh" ] || { rm -rf "$root"; fail "$tag has no /bin/sh"; }
    if ! tar -C "$root" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/bin/sh"]' \
        --message "debootstrap --variant=minbase --include=$package $suite $mirror" \
        - "$tag" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        rm -rf "$root"
        fail "docker import of $tag failed"
    fi
    rm -rf "$root" "$log"
    if ! docker run --rm --network=none "$tag" /bin/sh -c "$probe" >/dev/null 2>&1; then
        fail "$tag was built but '$probe' fails inside it"
    fi
}

if [ "${1:-}" = --print-apt-source ]; then
    apt_source
    exit 0
fi
command -v docker >/dev/null 2>&1 || fail "the docker CLI is missing (run scripts/docker_setup.sh)"
docker info >/dev/null 2>&1 || fail "the Docker engine does not answer (run scripts/docker_setup.sh)"

build_image evalarc-python:local python3 'command -v python3 && python3 -c "import sqlite3"'
build_image evalarc-node:local nodejs 'command -v node && node --version'

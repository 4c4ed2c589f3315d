#!/usr/bin/env bash
# Set up splitdesk on Debian or Ubuntu: the system libraries Qt needs (and fonts for
# CJK text and emoji, which real answers contain), then a virtual environment in .venv
# with splitdesk installed in it. Safe to run again: it only installs what is missing.
#
#   scripts/install.sh          the app
#   scripts/install.sh --test   the app and its test tools (pytest, ruff, mypy, …)
#
# The packages are what Qt's offscreen and X11 (xcb) platforms load on a bare Debian 12,
# Xvfb for screenless machines, and fonts (Latin, CJK, emoji).
set -euo pipefail
cd "$(dirname "$0")/.."

extra=""
if [[ "${1:-}" == "--test" ]]; then
    extra="[test]"
fi

packages=(
    python3 python3-venv python3-pip ca-certificates
    libgl1 libegl1 libfontconfig1 fonts-dejavu-core libglib2.0-0 libdbus-1-3 libxkbcommon0
    xvfb xauth libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
    libxcb-render-util0 libxcb-shape0 libxkbcommon-x11-0
    fonts-wqy-microhei fonts-noto-color-emoji
)
if [[ -n "$extra" ]]; then
    # tests/packaging and the desktop-entry tests: PyInstaller's binutils, the freedesktop
    # validators (desktop-file-validate, appstreamcli), and the libraries Qt's wayland
    # plugin loads (the bundle test checks every plugin's libraries resolve)
    packages+=(binutils desktop-file-utils appstream libwayland-cursor0 libwayland-egl1)
fi
missing=()
for pkg in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done
if (( ${#missing[@]} )); then
    sudo=""
    if [[ $(id -u) -ne 0 ]]; then
        sudo="sudo"
    fi
    echo "Installing system packages: ${missing[*]}"
    log=$(mktemp)
    if ! { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
           $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
        cat "$log" >&2
        echo "scripts/install.sh: installing the system packages failed (see above)" >&2
        exit 1
    fi
    rm -f "$log"
fi

if [[ ! -x .venv/bin/python ]]; then
    python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".${extra}"
echo "splitdesk is installed in .venv (run: .venv/bin/splitdesk)"

#!/usr/bin/env bash
# Add splitdesk to this user's desktop menu: the desktop entry, its icons (16…512 px and
# SVG) and the AppStream metainfo, under ${XDG_DATA_HOME:-~/.local/share}.
#
#   scripts/install-desktop-entry.sh             the checkout's .venv/bin/splitdesk
#   scripts/install-desktop-entry.sh PROGRAM     another splitdesk (a pipx/uv tool, the bundle)
#   scripts/install-desktop-entry.sh --remove    take it out again
#
# The work is done by `splitdesk --install-desktop-entry`, which points the entry at the
# program that runs it; installed copies (pipx, uv tool, the bundle) can call that directly.
set -euo pipefail
cd "$(dirname "$0")/.."

action="--install-desktop-entry"
program=".venv/bin/splitdesk"
for arg in "$@"; do
    case "$arg" in
        --remove) action="--uninstall-desktop-entry" ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) program="$arg" ;;
    esac
done
if [[ ! -x "$program" ]]; then
    echo "install-desktop-entry.sh: $program is not an executable splitdesk (run scripts/install.sh first, or name one)" >&2
    exit 1
fi
exec "$program" "$action"

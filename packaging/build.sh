#!/usr/bin/env bash
# Build the one-folder Linux bundle: dist/splitdesk/splitdesk (run it from anywhere).
#
#   packaging/build.sh            uses .venv (scripts/install.sh --test installs PyInstaller)
#   PYTHON=/path/python packaging/build.sh
#
# Writes dist/splitdesk/ (the bundle) and build/pyinstaller/ (PyInstaller's work folder);
# both are git-ignored. Prints the bundle's size at the end.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
python="${PYTHON:-$root/.venv/bin/python}"
if ! "$python" -c "import PyInstaller" 2>/dev/null; then
    echo "packaging/build.sh: PyInstaller is missing for $python (run scripts/install.sh --test)" >&2
    exit 1
fi
start=$(date +%s)
"$python" -m PyInstaller --noconfirm --clean --log-level WARN \
    --distpath "$root/dist" --workpath "$root/build/pyinstaller" \
    "$root/packaging/splitdesk.spec"
echo "packaging/build.sh: built dist/splitdesk/splitdesk in $(( $(date +%s) - start )) s," \
    "$(du -sm "$root/dist/splitdesk" | cut -f1) MB"

#!/usr/bin/env bash
# Makes .build/test-venv, a Python virtual environment holding the tools the tests
# run (scripts/test-requirements.txt, every version pinned), and installs Debian's
# chromium and chromium-driver for the dashboard's browser test. Quiet and quick when
# it is already up to date; installs python3-venv first when Python cannot make one.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=.build/test-venv
requirements=scripts/test-requirements.txt
stamp="$venv/installed-requirements.txt"

# The browser the dashboard's test drives, and its WebDriver (only those missing).
./scripts/install-deps.sh chromium chromium-driver

if [[ -x "$venv/bin/schemathesis" && -x "$venv/bin/python" ]] && cmp -s "$requirements" "$stamp"; then
  exit 0
fi
if ! command -v python3 >/dev/null || ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
  ./scripts/install-deps.sh python3 python3-venv
fi
echo "test-tools: installing $requirements into $venv" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-input -r "$requirements"
cp "$requirements" "$stamp"

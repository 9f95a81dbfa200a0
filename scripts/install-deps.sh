#!/usr/bin/env bash
# Installs the Debian packages Islet builds and runs against, only those missing.
# Quiet when everything is present; safe to run again and again.
set -euo pipefail

packages=(
  pkg-config
  openssl libssl-dev
  libnghttp2-dev
  libmicrohttpd-dev
  libsqlite3-dev
  libpq-dev
  libcurl4-openssl-dev
  "$@"
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

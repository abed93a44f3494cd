#!/usr/bin/env bash
# Installs the servers the tests and the demo run (Debian packages
# redis-server, clickhouse-server, clickhouse-client) and the checker of the
# alert rules (promtool, from Debian's prometheus) when one is missing.
# With an argument list, installs those packages instead (e.g. protobuf-compiler).
set -euo pipefail

have() { command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] || [ -x "/usr/bin/$1" ]; }

if [ "$#" -gt 0 ]; then
  packages=("$@")
  missing=("$@")
else
  packages=(redis-server clickhouse-server clickhouse-client prometheus)
  missing=()
  for bin in redis-server clickhouse-server clickhouse-client promtool; do
    have "$bin" || missing+=("$bin")
  done
fi
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "missing: ${missing[*]}" >&2
  echo "install them as root: apt-get update && apt-get install -y ${packages[*]}" >&2
  exit 1
fi

echo "installing ${packages[*]} (missing: ${missing[*]})" >&2
# Package scripts would start clickhouse-server and prometheus as system
# services; our test and demo servers use their own ports and folders, and
# need no service.
guard=""
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 755 /usr/sbin/policy-rc.d
  guard=/usr/sbin/policy-rc.d
fi
trap 'if [ -n "$guard" ]; then rm -f "$guard"; fi' EXIT
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${packages[@]}" >/dev/null

#!/usr/bin/env bash
# Starts or stops the redis-server and clickhouse-server one test run shares.
#
#   scripts/test-servers.sh start STATE_DIR [OWNER_PID]
#       builds internal/testservers, runs it in the background with its data
#       in STATE_DIR, waits until both servers answer, and leaves
#       STATE_DIR/env with OFFLINEBOX_TEST_REDIS and OFFLINEBOX_TEST_CLICKHOUSE.
#       The servers stop by themselves when OWNER_PID (default: the caller)
#       is gone.
#   scripts/test-servers.sh stop STATE_DIR
#       stops them and removes STATE_DIR.
set -euo pipefail

cmd="${1:-}"
state="${2:-}"
if [ -z "$cmd" ] || [ -z "$state" ]; then
  echo "usage: $0 start|stop STATE_DIR [OWNER_PID]" >&2
  exit 2
fi
root="$(cd "$(dirname "$0")/.." && pwd)"

start() {
  local owner="${1:-$PPID}"
  mkdir -p "$state"
  (cd "$root" && go build -o "$state/testservers" ./internal/testservers)
  "$state/testservers" -dir "$state/data" -env-file "$state/env" -owner-pid "$owner" \
    >"$state/testservers.log" 2>&1 </dev/null &
  echo $! >"$state/pid"
  local waited=0
  until [ -s "$state/env" ]; do
    if ! kill -0 "$(cat "$state/pid")" 2>/dev/null; then
      echo "test servers failed to start:" >&2
      cat "$state/testservers.log" >&2
      return 1
    fi
    if [ "$waited" -ge 1200 ]; then
      echo "test servers not ready after 120s:" >&2
      cat "$state/testservers.log" >&2
      return 1
    fi
    sleep 0.1
    waited=$((waited + 1))
  done
  cat "$state/env"
}

stop() {
  [ -d "$state" ] || return 0
  if [ -f "$state/pid" ]; then
    local pid
    pid="$(cat "$state/pid")"
    if kill -TERM "$pid" 2>/dev/null; then
      # testservers stops its servers within 40s; then it is killed.
      for _ in $(seq 1 450); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -rf "$state"
}

case "$cmd" in
  start) start "${3:-}" ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop STATE_DIR [OWNER_PID]" >&2; exit 2 ;;
esac

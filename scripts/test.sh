#!/usr/bin/env bash
# The whole check `make test` and CI run: packages, shared servers, format,
# vet, tests. The servers are stopped however the run ends.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/ensure-packages.sh
# The web client's browser test drives Debian's headless Chromium.
command -v chromium >/dev/null 2>&1 || scripts/ensure-packages.sh chromium
export OFFLINEBOX_REQUIRE_BROWSER=1
# The JavaScript client's tests (clients/js) run under node against the pipeline.
command -v node >/dev/null 2>&1 || scripts/ensure-packages.sh nodejs
# The cluster bench's short run puts its API nodes behind Debian's haproxy.
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || scripts/ensure-packages.sh haproxy

state="$(mktemp -d "${TMPDIR:-/tmp}/offlinebox-test.XXXXXX")"
trap 'scripts/test-servers.sh stop "$state"' EXIT
scripts/test-servers.sh start "$state" "$$" >/dev/null
set -a
# shellcheck disable=SC1091
. "$state/env"
set +a
export OFFLINEBOX_REQUIRE_SERVERS=1
echo "test servers: redis $OFFLINEBOX_TEST_REDIS, clickhouse $OFFLINEBOX_TEST_CLICKHOUSE"

unformatted="$(gofmt -l .)"
if [ -n "$unformatted" ]; then
  echo "gofmt: these files need formatting (make fmt):" >&2
  echo "$unformatted" >&2
  exit 1
fi

go vet ./...

# The linter's version is pinned by the tool directive in go.mod.
go tool staticcheck ./...

# The alert rules and the Prometheus config compose ships: syntax, then the
# rules' own unit tests (each alert fires on the series it is for). The
# metrics they and the dashboard query are checked against what the code
# exports by TestDashboardAndAlertsUseOnlyExportedMetrics.
promtool check config deploy/prometheus/prometheus.yml >/dev/null
promtool test rules deploy/prometheus/alerts_test.yml

# The live channel's AsyncAPI document under Spectral's AsyncAPI ruleset
# (openapi.yaml is checked by api's Go tests).
scripts/lint-asyncapi.sh

# Two test binaries at a time: the machine has two cores and the servers
# share them.
status=0
go test ./... -count=1 -timeout 12m -p 2 || status=$?
exit "$status"

#!/usr/bin/env bash
# Runs every benchmark program under bench/ with the embedded stack (each
# program starts redis-server, kfake and, when it needs it, clickhouse-server
# on 127.0.0.1 in a temporary folder and stops them), writes
# bench/results/<name>.json (the JSON line) and <name>.txt (progress and
# table), then renders bench/results/README.md.
#
#   scripts/bench.sh                 # full scale: the founding numbers
#   SCALE=small scripts/bench.sh     # a quick run
#   BENCHES="vip fanout" scripts/bench.sh
#   WRITE_BASELINE=8ac8aeb scripts/bench.sh   # the commit bench/write runs beside today's
#   LIVE_RATES=50,200,1000 scripts/bench.sh    # the steps of bench/live's ramp (publications/s)
set -euo pipefail
cd "$(dirname "$0")/.."

scale="${SCALE:-full}"
benches="${BENCHES:-vip fanout write storm history live chaos}"
write_baseline="${WRITE_BASELINE:-8ac8aeb}"
live_rates="${LIVE_RATES:-50,200,500,750,1000}"
out=bench/results
mkdir -p "$out"

# redis-server and clickhouse-server come from Debian packages.
scripts/ensure-packages.sh

status=0
for b in $benches; do
	echo "== bench/$b (scale $scale)" >&2
	tmp="$(mktemp)"
	args=()
	if [ "$b" = write ] && [ -n "$write_baseline" ]; then
		args=(-baseline-commit "$write_baseline")
	fi
	if [ "$b" = live ] && [ -n "$live_rates" ]; then
		args=(-rates "$live_rates")
	fi
	if go run "./bench/$b" --scale "$scale" --json "${args[@]}" >"$tmp" 2> >(tee "$out/$b.txt" >&2); then
		tail -n 1 "$tmp" >"$out/$b.json"
	else
		echo "bench/$b failed" >&2
		status=1
	fi
	rm -f "$tmp"
done
go run ./bench/report --dir "$out"
echo "wrote $out/README.md" >&2
exit "$status"

#!/usr/bin/env bash
# Runs every Fuzz target of the module for a few seconds, one target per
# `go test -fuzz` run (the flag takes a single target). Plain `go test`
# already replays each target's seed corpus (f.Add and testdata/fuzz); this
# adds new inputs. Targets are found by grep, so a new one needs no edit
# here. The time per target is FUZZTIME (default 5s), shrunk so that all
# targets together fuzz for at most FUZZBUDGET seconds (default 80).
#
# Go 1.26's fuzz coordinator can end a run at the -fuzztime deadline with
# a bare "context deadline exceeded" and no failing input (a race in its
# shutdown, go.dev/issue/75804, fixed in Go 1.27); it shows up on a busy
# machine. Such a run, and only such a run, is tried once more: a real
# finding always writes its input and says "Failing input written".
set -euo pipefail
cd "$(dirname "$0")/.."

budget="${FUZZBUDGET:-80}"
targets=()
while IFS= read -r file; do
	dir="./$(dirname "${file#./}")"
	while IFS= read -r name; do
		targets+=("$dir $name")
	done < <(grep -oE '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/^func //')
done < <(grep -rlE --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*\(' . | sort)

n=${#targets[@]}
if [ "$n" -eq 0 ]; then
	echo "fuzz: no targets found"
	exit 0
fi
per=$((budget / n))
per=$((per > 5 ? 5 : per))
per=$((per < 1 ? 1 : per))
fuzztime="${FUZZTIME:-${per}s}"
echo "fuzz: $n targets, $fuzztime each"
for t in "${targets[@]}"; do
	pkg="${t% *}"
	name="${t#* }"
	echo "fuzz: $name ($pkg)"
	for attempt in 1 2; do
		log="$(mktemp)"
		if go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$log"; then
			rm -f "$log"
			break
		fi
		if [ "$attempt" -eq 1 ] && grep -q 'context deadline exceeded' "$log" &&
			! grep -qE 'Failing input written|panic:' "$log"; then
			echo "fuzz: $name ended at its deadline with no failing input (go.dev/issue/75804); once more"
			rm -f "$log"
			continue
		fi
		rm -f "$log"
		exit 1
	done
done

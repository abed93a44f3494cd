#!/usr/bin/env bash
# Lints api/asyncapi.yaml with Spectral's AsyncAPI ruleset (api/.spectral.yaml):
# an error fails. Spectral comes from the npm registry through npx, pinned.
set -euo pipefail
cd "$(dirname "$0")/.."
exec npx --yes @stoplight/spectral-cli@6.16.3 lint --fail-severity error \
  -r api/.spectral.yaml api/asyncapi.yaml

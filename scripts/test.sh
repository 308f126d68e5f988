#!/usr/bin/env bash
# Runs the whole test suite, including the SIGKILL crash rounds (more with -Dsluice.crash.rounds=N).
# Two modules at a time where the modules' dependencies allow (-T 2): the test modules (sluice-cluster-tests,
# sluice-broker-tests, sluice-store-tests, sluice-sim-tests, on which nothing depends) run beside one another and the
# modules built on the store, the broker and the cluster.
# When a test fails, the failed cases and their first lines are printed again at the end: with two modules at a time,
# a module's own summary can scroll far above the build's last lines.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
cd "$here"
status=0
./mvnw -B -T 2 verify "$@" || status=$?
if [ "$status" -ne 0 ]; then
  echo "== the failed tests (from each module's target/surefire-reports):" >&2
  for report in */target/surefire-reports/TEST-*.xml; do
    [ -f "$report" ] || continue
    if grep -qE '<(failure|error)[ >]' "$report"; then
      echo "-- $report" >&2
      grep -E -A4 '<testcase |<(failure|error)[ >]' "$report" | grep -E -B1 -A4 '<(failure|error)[ >]' \
        | cut -c1-400 | head -40 >&2
    fi
  done
fi
exit "$status"

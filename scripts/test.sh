#!/usr/bin/env bash
# Runs the whole test suite, including the SIGKILL crash rounds (more with -Dsluice.crash.rounds=N).
# Two modules at a time where the modules' dependencies allow (-T 2): the simulation's suites (sluice-sim-tests, on
# which nothing depends) run beside the broker's and the cluster's tests.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
cd "$here"
exec ./mvnw -B -T 2 verify "$@"

#!/usr/bin/env bash
# Runs the whole test suite, including the SIGKILL crash rounds (more with -Dsluice.crash.rounds=N).
# Two modules at a time where the modules' dependencies allow (-T 2): the test modules (sluice-cluster-tests,
# sluice-broker-tests, sluice-store-tests, sluice-sim-tests, on which nothing depends) run beside one another and the
# modules built on the store, the broker and the cluster.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
cd "$here"
exec ./mvnw -B -T 2 verify "$@"

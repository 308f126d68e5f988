#!/usr/bin/env bash
# Runs the whole test suite, including the SIGKILL crash rounds (more with -Dsluice.crash.rounds=N).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
cd "$here"
exec ./mvnw -B verify "$@"

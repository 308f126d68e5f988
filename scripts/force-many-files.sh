#!/usr/bin/env bash
# One force of many files, three ways (scripts/tools/ForceManyFiles.java): N fdatasync calls in turn, over 4 threads,
# or one syncfs(2), each round after a 1 KiB write to each of N files, 3 interleaved rounds
# each (SECONDS_EACH, default 5), in a directory on the file system under test (default: a new one under /tmp). Needs no build.
# usage: [SECONDS_EACH=s] scripts/force-many-files.sh [dir] (N: 1, 8, 100 and 1000 files)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
work="$(mktemp -d "${1:-/tmp}/force-many-files.XXXXXX")"
trap 'rm -rf "$work"' EXIT
"$JAVA_HOME/bin/java" --enable-native-access=ALL-UNNAMED "$here/scripts/tools/ForceManyFiles.java" "$work" \
  "${SECONDS_EACH:-5}" 1 8 100 1000

#!/usr/bin/env bash
# The JDK's SSLEngine over heap and direct buffers (scripts/tools/SslEngineBuffers.java): a throwaway EC key store,
# then three rounds of 3 s each way. Needs no build.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$here/scripts/java-env.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$JAVA_HOME/bin/keytool" -genkeypair -alias broker -keyalg EC -groupname secp256r1 -dname CN=localhost -validity 2 \
  -storetype PKCS12 -keystore "$work/broker.p12" -storepass engine-bench -keypass engine-bench > /dev/null 2>&1
"$JAVA_HOME/bin/java" "$here/scripts/tools/SslEngineBuffers.java" "$work/broker.p12" engine-bench

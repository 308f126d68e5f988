# Sourced by Sluice's scripts: finds a JDK 25 or newer and exports JAVA_HOME and PATH.
# Order: $JAVA_HOME if it is 25+, then the newest JDK 25+ in /usr/lib/jvm (or $SLUICE_JVM_DIR).

sluice_java_major() {
  # Prints the feature version of the java binary given as $1 (e.g. 25), or nothing.
  "$1" -XshowSettings:properties -version 2>&1 \
    | sed -n 's/^ *java\.specification\.version = \([0-9]*\).*/\1/p' | head -n 1
}

sluice_find_jdk() {
  local candidate major
  if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ]; then
    major=$(sluice_java_major "$JAVA_HOME/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 25 ]; then
      echo "$JAVA_HOME"
      return 0
    fi
    echo "sluice: JAVA_HOME=$JAVA_HOME is Java ${major:-unknown}; looking for a JDK 25 elsewhere" >&2
  fi
  for candidate in $(ls -d "${SLUICE_JVM_DIR:-/usr/lib/jvm}"/*/ 2>/dev/null | sort -rV); do
    candidate=${candidate%/}
    [ -x "$candidate/bin/javac" ] || continue
    major=$(sluice_java_major "$candidate/bin/java")
    if [ -n "$major" ] && [ "$major" -ge 25 ]; then
      echo "$candidate"
      return 0
    fi
  done
  return 1
}

if ! SLUICE_JDK=$(sluice_find_jdk); then
  cat >&2 <<MSG
sluice: no JDK 25 found.
  Sluice needs Java 25 or newer (it uses the java.lang.foreign API and --release 25).
  Looked at: \$JAVA_HOME (${JAVA_HOME:-unset}) and ${SLUICE_JVM_DIR:-/usr/lib/jvm}/*.
  Install one (for example Temurin 25) and/or set JAVA_HOME to it.
MSG
  exit 1
fi
export JAVA_HOME="$SLUICE_JDK"
export PATH="$JAVA_HOME/bin:$PATH"

#!/usr/bin/env bash
# A secured three-broker cluster from the README's configuration, with Kafka's own tools: each broker has its own
# certificate (signed by one authority made here with keytool), its Raft port on mutual TLS, clients on SASL_SSL
# only, ACLs enforced. An administrator (PLAIN, a super user) creates a topic, a SCRAM user (kafka-configs
# --entity-type users) and ACLs (kafka-acls); that user produces and consumes in a group with the console tools, then
# its credential is deleted (kafka-configs --delete-config) and each broker refuses it; another user with no ACL is
# refused, a wrong password is refused, a client that does not trust the authority is refused. Each step's output is
# checked; the script stops at the first that fails.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/broker-env.sh"
tool() { java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$tools_cp" "$@"; }
keytool() { "$JAVA_HOME/bin/keytool" -J-XX:TieredStopAtLevel=1 -J-XX:+UseSerialGC "$@"; }
step() { echo "== $*"; }
fail() { echo "secure cluster smoke: $*" >&2; for n in 1 2 3; do tail -20 "$scratch/n$n.out" >&2 || true; done; exit 1; }
pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  cleanup
}
trap stop_all EXIT

pw=smoke-secret
tls="$scratch/tls"
mkdir -p "$tls"
step "an authority and a certificate for each broker (keytool)"
keytool -genkeypair -alias ca -keyalg EC -groupname secp256r1 -dname CN=smoke-ca -ext bc:c -validity 2 \
  -keystore "$tls/ca.p12" -storetype PKCS12 -storepass "$pw" 2>/dev/null
keytool -exportcert -rfc -alias ca -keystore "$tls/ca.p12" -storepass "$pw" -file "$tls/ca.pem" 2>/dev/null
keytool -importcert -noprompt -alias ca -file "$tls/ca.pem" -keystore "$tls/trust.p12" -storetype PKCS12 \
  -storepass "$pw" 2>/dev/null
for n in 1 2 3; do
  keytool -genkeypair -alias broker -keyalg EC -groupname secp256r1 -dname "CN=broker-$n" -validity 2 \
    -keystore "$tls/broker-$n.p12" -storetype PKCS12 -storepass "$pw" 2>/dev/null
  keytool -certreq -alias broker -keystore "$tls/broker-$n.p12" -storepass "$pw" -file "$tls/broker-$n.csr" 2>/dev/null
  keytool -gencert -rfc -alias ca -keystore "$tls/ca.p12" -storepass "$pw" -infile "$tls/broker-$n.csr" \
    -outfile "$tls/broker-$n.crt" -validity 2 -ext san=ip:127.0.0.1,dns:localhost \
    -ext ku:c=digitalSignature,keyAgreement -ext eku=serverAuth,clientAuth 2>/dev/null
  cat "$tls/broker-$n.crt" "$tls/ca.pem" > "$tls/broker-$n-chain.pem"
  keytool -importcert -noprompt -alias broker -file "$tls/broker-$n-chain.pem" -keystore "$tls/broker-$n.p12" \
    -storepass "$pw" 2>/dev/null
done

cluster="1@127.0.0.1:$port/$((port + 100)),2@127.0.0.1:$((port + 1))/$((port + 101)),3@127.0.0.1:$((port + 2))/$((port + 102))"
bootstrap="127.0.0.1:$port,127.0.0.1:$((port + 1)),127.0.0.1:$((port + 2))"
for n in 1 2 3; do
  # The README's broker.properties for a secured cluster, but for the paths.
  cat > "$scratch/n$n.properties" <<EOF
cluster=$cluster
node.id=$n
listeners=SASL_SSL://:0
sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN
listener.name.sasl_ssl.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" user_admin="admin-secret";
sasl.mechanism.inter.broker.protocol=PLAIN
ssl.keystore.type=PKCS12
ssl.keystore.location=$tls/broker-$n.p12
ssl.keystore.password=$pw
ssl.truststore.type=PKCS12
ssl.truststore.location=$tls/trust.p12
ssl.truststore.password=$pw
raft.security.protocol=SSL
authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer
super.users=User:admin
EOF
done
"$here/sluice" broker --help > /dev/null # builds once, before three launches
step "three brokers: $bootstrap"
for n in 1 2 3; do
  "$here/sluice" broker --dir "$scratch/n$n" --config "$scratch/n$n.properties" > "$scratch/n$n.out" 2>&1 &
  pids+=($!)
done
for n in 1 2 3; do
  for _ in $(seq 1 300); do
    grep -q "started in" "$scratch/n$n.out" 2>/dev/null && break
    sleep 0.2
  done
  grep "started in" "$scratch/n$n.out" || fail "broker $n did not start"
done

client() { # user mechanism password file
  local module=org.apache.kafka.common.security.scram.ScramLoginModule
  [ "$2" = PLAIN ] && module=org.apache.kafka.common.security.plain.PlainLoginModule
  cat > "$4" <<EOF
security.protocol=SASL_SSL
sasl.mechanism=$2
sasl.jaas.config=$module required username="$1" password="$3";
ssl.truststore.type=PKCS12
ssl.truststore.location=$tls/trust.p12
ssl.truststore.password=$pw
EOF
}
client admin PLAIN admin-secret "$scratch/admin.properties"
client alice SCRAM-SHA-512 alice-secret "$scratch/alice.properties"
client bob SCRAM-SHA-512 bob-secret "$scratch/bob.properties"
client alice SCRAM-SHA-512 wrong "$scratch/wrong.properties"

step "the administrator: a topic, SCRAM users (kafka-configs --entity-type users), ACLs (kafka-acls)"
tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --create --topic orders --partitions 3 --replication-factor 3
for user in alice bob; do
  tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
    --alter --add-config "SCRAM-SHA-512=[iterations=8192,password=$user-secret]" --entity-type users --entity-name "$user"
done
tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --describe --entity-type users | tee "$scratch/users"
grep -q "SCRAM-SHA-512=iterations=8192" "$scratch/users" || fail "kafka-configs --describe does not show the SCRAM users"
tool org.apache.kafka.tools.AclCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --add --allow-principal User:alice --operation Write --operation Read --topic orders
tool org.apache.kafka.tools.AclCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --add --allow-principal User:alice --operation Read --group alice- --resource-pattern-type prefixed
tool org.apache.kafka.tools.AclCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --list | tee "$scratch/acls"
grep -q "principal=User:alice, host=\*, operation=WRITE, permissionType=ALLOW" "$scratch/acls" \
  || fail "kafka-acls --list does not show alice's ACL"

step "alice (SCRAM-SHA-512, her ACLs) produces and consumes in a group"
seq 1 300 | sed 's/^/order-/' > "$scratch/sent"
# Each broker applies users and ACLs from the metadata log in its own time: wait until alice sees the topic on each.
for n in 0 1 2; do
  one="127.0.0.1:$((port + n))"
  for attempt in $(seq 1 60); do
    tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$one" --command-config "$scratch/alice.properties" \
      --list > "$scratch/alice-topics" 2>/dev/null || true
    grep -qx orders "$scratch/alice-topics" && break
    [ "$attempt" = 60 ] && fail "alice does not see topic orders on $one"
    sleep 1
  done
done
tool org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" \
  --command-config "$scratch/alice.properties" --topic orders < "$scratch/sent"
tool org.apache.kafka.tools.consumer.ConsoleConsumer --bootstrap-server "$bootstrap" \
  --command-config "$scratch/alice.properties" --topic orders --group alice-readers --from-beginning \
  --max-messages 300 --timeout-ms 60000 > "$scratch/received"
sort "$scratch/sent" > "$scratch/sent.sorted"
sort "$scratch/received" > "$scratch/received.sorted"
if ! cmp -s "$scratch/sent.sorted" "$scratch/received.sorted"; then
  echo "sent but not read: $(comm -23 "$scratch/sent.sorted" "$scratch/received.sorted" | head -5 | tr '\n' ' ')" >&2
  echo "read but not sent: $(comm -13 "$scratch/sent.sorted" "$scratch/received.sorted" | head -5 | tr '\n' ' ')" >&2
  fail "alice did not read the 300 records she wrote"
fi
echo "300 records written and read by alice"

step "kafka-configs --delete-config SCRAM-SHA-512: alice is refused once each broker has the deletion"
tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --alter --delete-config SCRAM-SHA-512 --entity-type users --entity-name alice
tool kafka.admin.ConfigCommand --bootstrap-server "$bootstrap" --command-config "$scratch/admin.properties" \
  --describe --entity-type users | tee "$scratch/users"
grep -q "user-principal 'alice'" "$scratch/users" && fail "kafka-configs --describe still shows alice's credential"
grep -q "user-principal 'bob' are SCRAM-SHA-512=iterations=8192" "$scratch/users" \
  || fail "kafka-configs --delete-config of alice's credential took bob's with it"
for n in 0 1 2; do
  one="127.0.0.1:$((port + n))"
  for attempt in $(seq 1 60); do
    if ! tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$one" \
        --command-config "$scratch/alice.properties" --list > "$scratch/alice-deleted" 2>&1; then
      grep -q "invalid credentials with SASL mechanism SCRAM-SHA-512" "$scratch/alice-deleted" && break
    fi
    [ "$attempt" = 60 ] && { cat "$scratch/alice-deleted" >&2; fail "alice is still let in on $one"; }
    sleep 1
  done
done
echo "alice's credential deleted; each broker refuses her"

step "bob (no ACL) is refused; a wrong password is refused; a client without the authority is refused"
if echo nope | tool org.apache.kafka.tools.ConsoleProducer --bootstrap-server "$bootstrap" \
    --command-config "$scratch/bob.properties" --topic orders --producer-property max.block.ms=10000 \
    > "$scratch/bob.out" 2>&1 && ! grep -q "TOPIC_AUTHORIZATION_FAILED\|TopicAuthorizationException" "$scratch/bob.out"; then
  fail "bob produced to a topic he has no ACL for"
fi
grep -q "TOPIC_AUTHORIZATION_FAILED\|TopicAuthorizationException\|Not authorized" "$scratch/bob.out" \
  || { cat "$scratch/bob.out" >&2; fail "bob's refusal does not say why"; }
if tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" --command-config "$scratch/wrong.properties" \
    --list > "$scratch/wrong.out" 2>&1; then
  fail "a wrong password was let in"
fi
grep -q "SaslAuthenticationException\|Authentication failed" "$scratch/wrong.out" \
  || { cat "$scratch/wrong.out" >&2; fail "the wrong password's refusal does not say why"; }
printf 'security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret";\n' \
  > "$scratch/untrusting.properties"
if tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$bootstrap" \
    --command-config "$scratch/untrusting.properties" --list > "$scratch/untrusting.out" 2>&1; then
  fail "a client that does not trust the brokers' authority connected"
fi
grep -q "SslAuthenticationException\|SSL handshake failed" "$scratch/untrusting.out" \
  || { cat "$scratch/untrusting.out" >&2; fail "the TLS refusal does not say why"; }
echo "secure cluster smoke: all steps passed"

package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import javax.security.sasl.SaslException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.auth.SaslExtensions;
import org.apache.kafka.common.security.authenticator.SaslInternalConfigs;
import org.apache.kafka.common.security.oauthbearer.internals.OAuthBearerClientInitialResponse;
import org.junit.jupiter.api.Test;

/**
 * The SASL/OAUTHBEARER exchange on the server side: the client's message as Kafka's client writes it, the error
 * challenge and the %x01 that ends it, the authorization id rule, the credential's lifetime; and the session lifetime
 * the authenticator derives from it.
 */
class OAuthBearerServerTest {

    private static final long NOW = 1_800_000_000L;
    private static final TokenValidator UNSECURED = new UnsecuredTokenValidator(
            UnsecuredTokenValidator.Options.of(Map.of(UnsecuredTokenValidator.REQUIRED_SCOPE_OPTION, "produce")),
            Clock.fixed(Instant.ofEpochSecond(NOW), ZoneOffset.UTC));

    private static String token(String subject, long seconds, List<String> scope) {
        Map<String, Object> claims = TestTokens.claims(subject, NOW, seconds);
        claims.put("scope", scope);
        return TestTokens.unsecured(claims);
    }

    /** @return the client's first message, written by Kafka's own client class */
    private static byte[] message(String token, String authorizationId, Map<String, String> extensions)
            throws SaslException {
        return new OAuthBearerClientInitialResponse(token, authorizationId, new SaslExtensions(extensions)).toBytes();
    }

    @Test
    void completesWithAValidTokenAndTellsItsExpiry() throws Exception {
        OAuthBearerServer server = new OAuthBearerServer(UNSECURED);
        assertThat(server.getMechanismName()).isEqualTo("OAUTHBEARER");
        assertThat(server.isComplete()).isFalse();
        assertThatThrownBy(server::getAuthorizationID).isInstanceOf(IllegalStateException.class);
        byte[] answer = server.evaluateResponse(message(token("alice", 60, List.of("produce")), "alice",
                Map.of("traceId", "abc=1 2")));
        assertThat(answer).isEmpty();
        assertThat(server.isComplete()).isTrue();
        assertThat(server.getAuthorizationID()).isEqualTo("alice");
        assertThat(server.getNegotiatedProperty(SaslInternalConfigs.CREDENTIAL_LIFETIME_MS_SASL_NEGOTIATED_PROPERTY_KEY))
                .isEqualTo((NOW + 60) * 1000);
        assertThat(server.getNegotiatedProperty("traceId")).isEqualTo("abc=1 2");
        assertThat(server.getNegotiatedProperty("other")).isNull();
    }

    @Test
    void answersARefusedTokenWithKafkasChallengeThenFailsOnTheClientsReply() throws Exception {
        OAuthBearerServer server = new OAuthBearerServer(UNSECURED);
        byte[] challenge = server.evaluateResponse(message(token("alice", -5, List.of("produce")), "", Map.of()));
        assertThat(new String(challenge, StandardCharsets.UTF_8)).isEqualTo("{\"status\":\"invalid_token\"}");
        assertThat(server.isComplete()).isFalse();
        assertThatThrownBy(() -> server.evaluateResponse(new byte[] {1}))
                .isInstanceOf(SaslAuthenticationException.class).hasMessage("{\"status\":\"invalid_token\"}");

        OAuthBearerServer scoped = new OAuthBearerServer(UNSECURED);
        challenge = scoped.evaluateResponse(message(token("alice", 60, List.of("consume")), "", Map.of()));
        assertThat(new String(challenge, StandardCharsets.UTF_8))
                .isEqualTo("{\"status\":\"insufficient_scope\", \"scope\":\"[produce]\"}");
        assertThatThrownBy(() -> scoped.evaluateResponse(new byte[] {1}))
                .hasMessage("{\"status\":\"insufficient_scope\", \"scope\":\"[produce]\"}");
        // %x01 with no challenge outstanding is a malformed message.
        assertThatThrownBy(() -> new OAuthBearerServer(UNSECURED).evaluateResponse(new byte[] {1}))
                .isInstanceOf(SaslException.class).isNotInstanceOf(SaslAuthenticationException.class);
    }

    @Test
    void refusesAnAuthorizationIdOtherThanThePrincipal() {
        assertThatThrownBy(() -> new OAuthBearerServer(UNSECURED).evaluateResponse(
                message(token("alice", 60, List.of("produce")), "bob", Map.of())))
                .isInstanceOf(SaslAuthenticationException.class)
                .hasMessage("Authentication failed: Client requested an authorization id (bob) that is different from"
                        + " the token's principal name (alice)");
    }

    @Test
    void readsTheClientsMessageAsKafkasGrammarSays() throws Exception {
        OAuthBearerServer.InitialResponse read = OAuthBearerServer.InitialResponse.parse(
                "n,a=us=2Cer,\u0001auth=bearer a.b-_~+/c==\u0001k=v1\u0001k=v2\u0001\u0001".getBytes(
                        StandardCharsets.UTF_8));
        assertThat(read.authorizationId()).isEqualTo("us=2Cer");
        assertThat(read.token()).isEqualTo("a.b-_~+/c==");
        assertThat(read.extensions()).isEqualTo(Map.of("k", "v2"));
        for (String malformed : List.of("", "n", "n,", "n,,", "n,,\u0001", "y,,\u0001auth=Bearer x\u0001\u0001",
                "n,a=,\u0001auth=Bearer x\u0001\u0001", "n,a=x=41,\u0001auth=Bearer x\u0001\u0001",
                "n,b=x,\u0001auth=Bearer x\u0001\u0001", "n,,auth=Bearer x\u0001\u0001",
                "n,,\u0001auth=Bearer x\u0001", "n,,\u0001auth=Bearer x\u0001\u0001\u0001",
                "n,,\u0001\u0001", "n,,\u0001k=v\u0001\u0001", "n,,\u0001auth=Bearer\u0001\u0001",
                "n,,\u0001auth=Bearer a b\u0001\u0001", "n,,\u0001auth=Basic x\u0001\u0001",
                "n,,\u0001auth=Bearer x\u0001k1=v\u0001\u0001", "n,,\u0001auth=Bearer x\u0001=v\u0001\u0001",
                "n,,\u0001auth=Bearer x\u0001k=\u0001\u0001", "n,,\u0001auth=Bearer x\u0001k=\u0000\u0001\u0001",
                "n,,\u0001auth=Bearer x\u0001kv\u0001\u0001")) {
            assertThatThrownBy(() -> OAuthBearerServer.InitialResponse.parse(malformed.getBytes(StandardCharsets.UTF_8)))
                    .as(malformed).isInstanceOf(SaslException.class)
                    .isNotInstanceOf(SaslAuthenticationException.class);
        }
    }

    @Test
    void takesLongMessagesWithoutOverflowingTheStack() throws Exception {
        StringBuilder message = new StringBuilder("n,a=" + "u".repeat(200_000) + ",\u0001auth=Bearer x\u0001");
        for (int i = 0; i < 50_000; i++) {
            message.append("k=v\u0001");
        }
        message.append('\u0001');
        assertThat(OAuthBearerServer.InitialResponse.parse(message.toString().getBytes(StandardCharsets.UTF_8))
                .extensions()).containsOnlyKeys("k");
    }

    @Test
    void theSessionEndsWithTheCredentialOrSoonerAsKafkaComputesIt() {
        long now = 1_000_000;
        assertThat(Authenticator.sessionLifetimeMillis(now + 5_000, 60_000, now)).isEqualTo(5_000);
        assertThat(Authenticator.sessionLifetimeMillis(now + 90_000, 60_000, now)).isEqualTo(60_000);
        assertThat(Authenticator.sessionLifetimeMillis(now + 90_000, 0, now)).isEqualTo(90_000);
        assertThat(Authenticator.sessionLifetimeMillis(now - 1, 60_000, now)).isZero();
        assertThat(Authenticator.sessionLifetimeMillis(now - 1, 0, now)).isZero();
    }
}

package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka's secured OAUTHBEARER validation (BrokerJwtValidator on jose4j) as this broker does it with the JDK alone:
 * signatures of RSA and EC keys from a key set file, the time, audience, issuer, subject and scope rules, malformed
 * tokens and key sets, and the file read again when it changes. The expected outcomes are those Kafka 4.3.1 gives.
 */
class SignedTokenValidatorTest {

    private static final long NOW = 1_800_000_000L;
    private static final Clock CLOCK = Clock.fixed(Instant.ofEpochSecond(NOW), ZoneOffset.UTC);
    private static final String ISSUER = "https://issuer.test";

    private static TestTokens.SigningKey rsa;
    private static TestTokens.SigningKey ec;
    private static TestTokens.SigningKey ec384;
    private static TestTokens.SigningKey stranger;

    @TempDir
    Path dir;

    @BeforeAll
    static void keys() {
        rsa = TestTokens.rsa("rsa1", 2048);
        ec = TestTokens.ec("ec1", "P-256");
        ec384 = TestTokens.ec("ec384", "P-384");
        stranger = TestTokens.rsa("rsa1", 2048); // the same kid, another key
    }

    private SignedTokenValidator validator(Set<String> audience, String issuer) throws Exception {
        Path file = dir.resolve("jwks.json");
        if (!Files.exists(file)) {
            Files.writeString(file, TestTokens.jwks(rsa, ec, ec384));
        }
        return new SignedTokenValidator(new SignedTokenValidator.Options(file, audience, issuer, "sub", "scope", 30),
                CLOCK);
    }

    private SignedTokenValidator validator() throws Exception {
        return validator(Set.of("sluice"), ISSUER);
    }

    private static Map<String, Object> good() {
        Map<String, Object> claims = new LinkedHashMap<>(TestTokens.claims("alice", NOW, 3600));
        claims.put("aud", "sluice");
        claims.put("iss", ISSUER);
        return claims;
    }

    private static Map<String, Object> good(Object... changes) {
        Map<String, Object> claims = good();
        for (int i = 0; i < changes.length; i += 2) {
            if (changes[i + 1] == null) {
                claims.remove((String) changes[i]);
            } else {
                claims.put((String) changes[i], changes[i + 1]);
            }
        }
        return claims;
    }

    private static void assertRefused(SignedTokenValidator validator, String token, String message) {
        assertThatThrownBy(() -> validator.validate(token)).isInstanceOf(TokenValidator.Refused.class)
                .hasMessageContaining(message)
                .extracting(e -> ((TokenValidator.Refused) e).status()).isEqualTo("invalid_token");
    }

    @Test
    void takesTokensSignedByEachAlgorithmServed() throws Exception {
        SignedTokenValidator validator = validator();
        for (String algorithm : List.of("RS256", "RS384", "RS512", "PS256", "PS384", "PS512")) {
            TokenValidator.Token token = validator.validate(TestTokens.sign(algorithm, rsa, good("scope", "read")));
            assertThat(token.principal()).as(algorithm).isEqualTo("alice");
            assertThat(token.expiresAtMillis()).isEqualTo((NOW + 3600) * 1000);
            assertThat(token.issuedAtMillis()).isEqualTo(NOW * 1000);
            assertThat(token.scope()).containsExactly("read");
        }
        assertThat(validator.validate(TestTokens.sign("ES256", ec, good())).principal()).isEqualTo("alice");
        assertThat(validator.validate(TestTokens.sign("ES384", ec384, good())).principal()).isEqualTo("alice");
        // Without a kid, the first key of the algorithm's type.
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, "{\"alg\":\"RS256\"}", TestTokens.json(good())))
                .principal()).isEqualTo("alice");
    }

    @Test
    void refusesSignaturesThatDoNotVerify() throws Exception {
        SignedTokenValidator validator = validator();
        assertRefused(validator, TestTokens.sign("RS256", stranger, good()), "Invalid JWS Signature");
        String token = TestTokens.sign("RS256", rsa, good());
        String[] sections = token.split("\\.");
        String forged = sections[0] + "." + TestTokens.encode(TestTokens.json(good("sub", "admin"))) + "."
                + sections[2];
        assertRefused(validator, forged, "Invalid JWS Signature");
        assertRefused(validator, TestTokens.sign("RS256", rsa, "{\"alg\":\"RS256\",\"kid\":\"nokey\"}",
                TestTokens.json(good())), "Unable to find a suitable verification key");
        // An ES256 token naming the P-384 key; an RSA key's signature presented as ES256.
        assertRefused(validator, TestTokens.sign("ES256", ec, "{\"alg\":\"ES256\",\"kid\":\"ec384\"}",
                TestTokens.json(good())), "Unable to find a suitable verification key");
        assertRefused(validator, TestTokens.sign("RS256", rsa, "{\"alg\":\"ES256\",\"kid\":\"rsa1\"}",
                TestTokens.json(good())), "Unable to find a suitable verification key");
        assertRefused(validator, TestTokens.unsecured(good()), "Malformed JWT provided; expected three sections");
        assertRefused(validator, TestTokens.encode("{\"alg\":\"none\"}") + "." + TestTokens.encode(
                TestTokens.json(good())) + ".c2ln", "JWS algorithm none is not served");
        assertRefused(validator, TestTokens.encode("{\"alg\":\"HS256\"}") + "." + TestTokens.encode(
                TestTokens.json(good())) + ".c2ln", "JWS algorithm HS256 is not served");
        assertRefused(validator, TestTokens.sign("RS256", rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa1\","
                + "\"crit\":[\"exp\"],\"exp\":1}", TestTokens.json(good())), "as critical");
    }

    @Test
    void checksTimesWithTheClockSkewAllowed() throws Exception {
        SignedTokenValidator validator = validator();
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("iat", NOW - 100, "exp", NOW - 30)),
                "The JWT is no longer valid - the evaluation time 1800000000 is on or after the Expiration Time"
                        + " (exp=1799999970) claim value (even when providing 30 seconds of leeway");
        // Expired less than the skew ago: taken (the session it opens ends at once).
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("iat", NOW - 100, "exp", NOW - 29)))
                .expiresAtMillis()).isEqualTo((NOW - 29) * 1000);
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("exp", null)),
                "No Expiration Time (exp) claim present.");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("iat", null)),
                "No Issued At (iat) claim present.");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("iat", NOW + 10, "exp", NOW + 5)),
                "cannot be before the Issued At");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("nbf", NOW + 31)), "The JWT is not yet valid");
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("nbf", NOW + 30))).principal())
                .isEqualTo("alice");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("exp", "tomorrow")),
                "The value of the 'exp' claim is not the expected type");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("iat", -5)), "iat value must be null or"
                + " non-negative");
        // jose4j takes an iat in the future, and a fractional exp (dropping the fraction).
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("iat", NOW + 600, "exp", NOW + 3600.9)))
                .expiresAtMillis()).isEqualTo((NOW + 3600) * 1000);
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("exp", new java.math.BigDecimal("1e300"),
                "iat", new java.math.BigDecimal("-1e300"))), "iat value must be null or non-negative");
    }

    @Test
    void checksAudienceAndIssuer() throws Exception {
        SignedTokenValidator validator = validator(Set.of("sluice", "kafka"), ISSUER);
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("aud", List.of("x", "kafka"))))
                .principal()).isEqualTo("alice");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("aud", "other")),
                "Audience (aud) claim [other] doesn't contain an acceptable identifier");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("aud", null)), "No Audience (aud) claim present.");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("aud", List.of(1))), "where a String was expected");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("iss", "https://evil")),
                "Issuer (iss) claim value (https://evil) doesn't match expected value of https://issuer.test");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("iss", null)), "No Issuer (iss) claim present.");
        // Without an expected audience a token naming one is refused (jose4j); without an issuer, any is taken.
        SignedTokenValidator open = validator(Set.of(), null);
        assertRefused(open, TestTokens.sign("RS256", rsa, good()), "present in the JWT but no expected audience");
        assertThat(open.validate(TestTokens.sign("RS256", rsa, good("aud", null, "iss", "anyone"))).principal())
                .isEqualTo("alice");
    }

    @Test
    void readsSubjectAndScopeAsKafkaDoes() throws Exception {
        SignedTokenValidator validator = validator();
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("sub", " alice ", "scope",
                List.of(" a ", "b")))).scope()).containsExactlyInAnyOrder("a", "b");
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("scope", 5))).scope()).isEmpty();
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, good("sub", " alice "))).principal())
                .isEqualTo("alice");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("sub", null)), "sub value must be non-null");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("sub", "")), "sub value must be non-empty");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("sub", "  ")),
                "sub value must not contain only whitespace");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("sub", 7)),
                "The 'sub' claim was not of type String: Number");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("scope", List.of("a", "a"))),
                "scope value must not contain duplicates - a already present");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good("scope", List.of("a", ""))),
                "scope value must be non-empty");
    }

    @Test
    void refusesMalformedTokensWithoutCrashing() throws Exception {
        SignedTokenValidator validator = validator();
        String header = TestTokens.encode("{\"alg\":\"RS256\",\"kid\":\"rsa1\"}");
        for (String token : List.of("", ".", "..", "a.b.c", "a.b", "a.b.c.d.e", header + ".e30.", header + "..c2ln",
                "!!!.e30.c2ln", header + ".e30.!!!", TestTokens.encode("{\"alg\":") + ".e30.c2ln",
                TestTokens.encode("{\"alg\":5}") + ".e30.c2ln", TestTokens.encode("\"RS256\"") + ".e30.c2ln",
                TestTokens.encode("{\"alg\":\"RS256\",\"kid\":7}") + ".e30.c2ln",
                TestTokens.sign("RS256", rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa1\"}", "{\"sub\":"),
                TestTokens.sign("RS256", rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa1\"}", "[1e999999999]"))) {
            assertThatThrownBy(() -> validator.validate(token)).as(token).isInstanceOf(TokenValidator.Refused.class)
                    .message().isNotBlank();
        }
        // A far expiry is taken, its milliseconds capped to what a long holds.
        assertThat(validator.validate(TestTokens.sign("RS256", rsa, "{\"alg\":\"RS256\",\"kid\":\"rsa1\"}",
                "{\"exp\":1e400,\"iat\":0,\"sub\":\"a\",\"aud\":\"sluice\",\"iss\":\"" + ISSUER + "\"}"))
                .expiresAtMillis()).isEqualTo(Long.MAX_VALUE / 1000 * 1000);
    }

    @Test
    void readsTheKeySetAgainWhenItChanges() throws Exception {
        SignedTokenValidator validator = validator();
        Path file = dir.resolve("jwks.json");
        String token = TestTokens.sign("RS256", stranger, good());
        assertRefused(validator, token, "Invalid JWS Signature");
        // The provider rotates its key; the file changes.
        Files.writeString(file, TestTokens.jwks(stranger, ec));
        Files.setLastModifiedTime(file, FileTime.fromMillis(Files.getLastModifiedTime(file).toMillis() + 2000));
        assertThat(validator.validate(token).principal()).isEqualTo("alice");
        assertRefused(validator, TestTokens.sign("RS256", rsa, good()), "Invalid JWS Signature");
        // A broken file refuses every token until it is mended.
        Files.writeString(file, "{\"keys\":[");
        Files.setLastModifiedTime(file, FileTime.fromMillis(Files.getLastModifiedTime(file).toMillis() + 4000));
        assertRefused(validator, token, "is not valid: not a JSON Web Key Set");
        Files.delete(file);
        assertRefused(validator, token, "cannot be read");
        Files.writeString(file, TestTokens.jwks(stranger));
        assertThat(validator.validate(token).principal()).isEqualTo("alice");
    }

    @Test
    void refusesToStartOnABrokenKeySet() throws Exception {
        Path file = dir.resolve("jwks.json");
        Files.writeString(file, "{\"nokeys\":[]}");
        assertThatThrownBy(() -> validator()).isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value " + file + " for configuration sasl.oauthbearer.jwks.endpoint.url: The JSON"
                        + " JWKS content does not include the keys member.");
    }
}

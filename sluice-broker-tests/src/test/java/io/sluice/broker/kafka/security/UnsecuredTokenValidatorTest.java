package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Kafka's unsecured OAUTHBEARER validation, rule by rule, with Kafka's messages (those of
 * {@code OAuthBearerUnsecuredJws} and {@code OAuthBearerValidationUtils} in Kafka 4.3.1), on a fixed clock.
 */
class UnsecuredTokenValidatorTest {

    private static final long NOW = 1_800_000_000L;
    private static final Clock CLOCK = Clock.fixed(Instant.ofEpochSecond(NOW), ZoneOffset.UTC);

    private static UnsecuredTokenValidator validator(Map<String, String> options) {
        return new UnsecuredTokenValidator(UnsecuredTokenValidator.Options.of(options), CLOCK);
    }

    private static Map<String, Object> claims(Object... pairs) {
        Map<String, Object> claims = new LinkedHashMap<>();
        for (int i = 0; i < pairs.length; i += 2) {
            claims.put((String) pairs[i], pairs[i + 1]);
        }
        return claims;
    }

    private static void assertRefused(UnsecuredTokenValidator validator, String token, String message) {
        assertThatThrownBy(() -> validator.validate(token)).isInstanceOf(TokenValidator.Refused.class)
                .hasMessageContaining(message)
                .extracting(e -> ((TokenValidator.Refused) e).status()).isEqualTo("invalid_token");
    }

    @Test
    void takesAnUnsignedTokenNamingItsPrincipalAndExpiry() throws Exception {
        TokenValidator.Token token = validator(Map.of()).validate(TestTokens.unsecured(
                claims("sub", "alice", "iat", NOW - 10, "exp", NOW + 60.5, "scope", List.of(" read ", "", "write"))));
        assertThat(token.principal()).isEqualTo("alice");
        assertThat(token.expiresAtMillis()).isEqualTo((NOW + 60) * 1000 + 500);
        assertThat(token.issuedAtMillis()).isEqualTo((NOW - 10) * 1000);
        assertThat(token.scope()).containsExactlyInAnyOrder("read", "write");
        // A string scope is one item, as Kafka reads it; iat is optional.
        assertThat(validator(Map.of()).validate(TestTokens.unsecured(claims("sub", "alice", "exp", NOW + 1,
                "scope", "read write"))).scope()).containsExactly("read write");
    }

    @Test
    void refusesExpiredAndInconsistentTimes() {
        UnsecuredTokenValidator validator = validator(Map.of());
        assertRefused(validator, TestTokens.unsecured(claims("sub", "alice", "exp", NOW)),
                "The indicated time (1800000000000 ms) minus allowable clock skew (0 ms) was on or after the"
                        + " Expiration Time value (1800000000.000000 seconds)");
        assertRefused(validator, TestTokens.unsecured(claims("sub", "alice", "iat", NOW + 1, "exp", NOW + 60)),
                "The Issued At value (1800000001.000000 seconds) was after the indicated time (1800000000000 ms)"
                        + " plus allowable clock skew (0 ms)");
        assertRefused(validator(Map.of(UnsecuredTokenValidator.ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION, "5000")),
                TestTokens.unsecured(claims("sub", "alice", "iat", NOW + 2, "exp", NOW + 2)),
                "The Expiration Time time (1800000002.000000 seconds) was not after the Issued At time");
        assertRefused(validator, TestTokens.unsecured(claims("sub", "alice")), "No expiration time in JWT");
        assertRefused(validator, TestTokens.unsecured(claims("sub", "alice", "exp", "soon")),
                "The 'exp' claim was not of type Number: String");
        assertRefused(validator, TestTokens.unsecured(claims("sub", "alice", "exp", NOW + 9, "iat", "x")),
                "The 'iat' claim was not of type Number: String");
    }

    @Test
    void allowsTheClockSkewGiven() throws Exception {
        UnsecuredTokenValidator validator = validator(
                Map.of(UnsecuredTokenValidator.ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION, " 2000 "));
        assertThat(validator.validate(TestTokens.unsecured(claims("sub", "a", "iat", NOW + 2, "exp", NOW + 3)))
                .principal()).isEqualTo("a");
        assertRefused(validator, TestTokens.unsecured(claims("sub", "a", "exp", NOW - 2)), "minus allowable clock"
                + " skew (2000 ms)");
    }

    @Test
    void refusesTokensWithoutAPrincipal() throws Exception {
        UnsecuredTokenValidator validator = validator(Map.of());
        assertRefused(validator, TestTokens.unsecured(claims("exp", NOW + 9)), "No principal name in JWT claim: sub");
        assertRefused(validator, TestTokens.unsecured(claims("sub", " ", "exp", NOW + 9)),
                "No principal name in JWT claim: sub");
        assertRefused(validator, TestTokens.unsecured(claims("sub", 42, "exp", NOW + 9)),
                "The 'sub' claim was not of type String: Number");
        UnsecuredTokenValidator byEmail = validator(Map.of(UnsecuredTokenValidator.PRINCIPAL_CLAIM_NAME_OPTION,
                "email"));
        assertThat(byEmail.validate(TestTokens.unsecured(claims("sub", "x", "email", "a@b", "exp", NOW + 9)))
                .principal()).isEqualTo("a@b");
        assertRefused(byEmail, TestTokens.unsecured(claims("sub", "x", "exp", NOW + 9)),
                "No principal name in JWT claim: email");
    }

    @Test
    void refusesAMissingScopeAsInsufficientScope() throws Exception {
        UnsecuredTokenValidator validator = validator(Map.of(UnsecuredTokenValidator.REQUIRED_SCOPE_OPTION,
                " produce  consume ", UnsecuredTokenValidator.SCOPE_CLAIM_NAME_OPTION, "scp"));
        assertThat(validator.validate(TestTokens.unsecured(claims("sub", "a", "exp", NOW + 9, "scp",
                List.of("consume", "produce", "admin")))).scope()).contains("produce", "consume");
        assertThatThrownBy(() -> validator.validate(TestTokens.unsecured(claims("sub", "a", "exp", NOW + 9, "scp",
                List.of("produce"), "scope", List.of("consume"))))).isInstanceOf(TokenValidator.Refused.class)
                .hasMessage("The provided scope ([produce]) was missing a required scope (consume).  All required"
                        + " scope elements: [produce, consume]")
                .satisfies(e -> {
                    assertThat(((TokenValidator.Refused) e).status()).isEqualTo("insufficient_scope");
                    assertThat(((TokenValidator.Refused) e).scope()).isEqualTo("[produce, consume]");
                });
        assertRefused(validator, TestTokens.unsecured(claims("sub", "a", "exp", NOW + 9, "scp", 5)),
                "The 'scp' claim was not of type List: Number");
        assertRefused(validator, TestTokens.unsecured(claims("sub", "a", "exp", NOW + 9, "scp", List.of(1))),
                "holds a Number where a String was expected");
    }

    @Test
    void refusesWhatIsNotAnUnsecuredJws() {
        UnsecuredTokenValidator validator = validator(Map.of());
        String body = TestTokens.encode(TestTokens.json(claims("sub", "alice", "exp", NOW + 9)));
        assertRefused(validator, TestTokens.encode("{\"alg\":\"RS256\"}") + "." + body + ".",
                "Unsecured JWS must have 'none' for an algorithm");
        assertRefused(validator, TestTokens.encode("{\"typ\":\"JWT\"}") + "." + body + ".",
                "JWS header must have an Algorithm value");
        assertRefused(validator, TestTokens.encode("{\"alg\":\"none\"}") + "." + body + ".c2ln",
                "Unsecured JWS must not contain a digital signature");
        assertRefused(validator, TestTokens.encode("{\"alg\":\"none\"}") + ".." + body,
                "Malformed compact serialization contains '..'");
        assertRefused(validator, body, "must have 3 dot-separated Base64URL-encoded values");
        assertRefused(validator, "a.b.c.d", "must have 3 dot-separated Base64URL-encoded values");
        assertRefused(validator, "!!!." + body + ".", "malformed Base64 URL encoded value");
        assertRefused(validator, TestTokens.encode("{\"alg\":\"none\"") + "." + body + ".", "malformed JSON");
        assertRefused(validator, TestTokens.encode("{\"alg\":\"none\"}") + "." + TestTokens.encode(
                "{\"sub\":\"alice\",\"sub\":\"mallory\",\"exp\":" + (NOW + 9) + "}") + ".", "duplicate member name");
        assertRefused(validator, TestTokens.encode("[]") + "." + body + ".", "not a JSON object");
        assertRefused(validator, "." + body + ".", "malformed JSON");
    }

    @Test
    void refusesBadOptionsWithTheirNames() {
        assertThatThrownBy(() -> UnsecuredTokenValidator.Options.of(Map.of(
                UnsecuredTokenValidator.ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION, "-1")))
                .hasMessage("Allowable clock skew millis must not be negative: -1");
        assertThatThrownBy(() -> UnsecuredTokenValidator.Options.of(Map.of(
                UnsecuredTokenValidator.ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION, "soon")))
                .hasMessageContaining("unsecuredValidatorAllowableClockSkewMs must be a whole number");
        assertThatThrownBy(() -> UnsecuredTokenValidator.Options.of(Map.of(
                UnsecuredTokenValidator.REQUIRED_SCOPE_OPTION, "ok bad\"scope")))
                .hasMessageContaining("Invalid scope value: bad\"scope");
        UnsecuredTokenValidator.Options defaults = UnsecuredTokenValidator.Options.of(Map.of(
                UnsecuredTokenValidator.PRINCIPAL_CLAIM_NAME_OPTION, " "));
        assertThat(defaults).isEqualTo(new UnsecuredTokenValidator.Options("sub", "scope", List.of(), 0));
    }
}

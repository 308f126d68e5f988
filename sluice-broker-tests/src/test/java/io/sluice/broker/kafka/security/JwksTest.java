package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * JSON Web Key Sets: the keys taken, those left out (and why), sets refused, which key a token's header selects, and
 * the signatures of every algorithm served checked against the JDK's own signer.
 */
class JwksTest {

    private static TestTokens.SigningKey rsa;
    private static TestTokens.SigningKey ec256;
    private static TestTokens.SigningKey ec384;
    private static TestTokens.SigningKey ec521;

    @BeforeAll
    static void keys() {
        rsa = TestTokens.rsa("rsa", 2048);
        ec256 = TestTokens.ec("ec256", "P-256");
        ec384 = TestTokens.ec("ec384", "P-384");
        ec521 = TestTokens.ec("ec521", "P-521");
    }

    @Test
    void takesRsaAndEcKeysAndLeavesOutWhatCannotBeUsed() {
        String small = TestTokens.rsa("small", 1024).jwk();
        String offCurve = ec256.jwk().replaceFirst("\"y\":\"[^\"]*\"", "\"y\":\"" + TestTokens.encode("0".repeat(32))
                + "\"");
        String shortX = ec256.jwk().replaceFirst("\"x\":\"[^\"]*\"", "\"x\":\"AAEC\"");
        Jwks set = Jwks.parse("{\"keys\":[" + rsa.jwk() + "," + ec256.jwk() + ","
                + "{\"kty\":\"oct\",\"kid\":\"hmac\",\"k\":\"c2VjcmV0\"}," + small + "," + offCurve + "," + shortX + ","
                + "{\"kty\":\"RSA\",\"kid\":\"bad\",\"n\":\"!!!\",\"e\":\"AQAB\"},{\"kid\":\"untyped\"},42,"
                + "{\"kty\":\"EC\",\"crv\":\"secp256k1\",\"x\":\"AA\",\"y\":\"AA\"},"
                + "{\"kty\":\"RSA\",\"n\":\"AQAB\"}]}");
        assertThat(set.keys()).extracting(Jwks.Key::id).containsExactly("rsa", "ec256");
        assertThat(set.skipped()).hasSize(9).anySatisfy(s -> assertThat(s).contains("key type oct is not served"))
                .anySatisfy(s -> assertThat(s).contains("1024 bits; at least 2048"))
                .anySatisfy(s -> assertThat(s).contains("not on P-256"))
                .anySatisfy(s -> assertThat(s).contains("must be 32 bytes"))
                .anySatisfy(s -> assertThat(s).contains("n is not base64url").contains("(kid bad)"))
                .anySatisfy(s -> assertThat(s).contains("no kty"))
                .anySatisfy(s -> assertThat(s).contains("not a JSON object"))
                .anySatisfy(s -> assertThat(s).contains("curve secp256k1 is not served"))
                .anySatisfy(s -> assertThat(s).contains("no e"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "[]", "{\"keys\":[", "{\"nokeys\":[]}", "{\"keys\":{}}", "{\"keys\":null}", "\"x\""})
    void refusesWhatIsNotAKeySet(String text) {
        assertThatThrownBy(() -> Jwks.parse(text)).isInstanceOf(IllegalArgumentException.class)
                .message().isNotBlank();
    }

    @Test
    void namesTheMissingKeysMemberAsKafkaDoes() {
        assertThatThrownBy(() -> Jwks.parse("{\"nokeys\":[]}"))
                .hasMessage("The JSON JWKS content does not include the keys member.");
    }

    @Test
    void selectsByKidTypeUseOperationsAlgorithmAndCurve() {
        String encryption = rsa.jwk().replace("\"use\":\"sig\"", "\"use\":\"enc\"").replace("\"kid\":\"rsa\"",
                "\"kid\":\"enc\"");
        String wrapOnly = rsa.jwk().replace("\"use\":\"sig\"", "\"key_ops\":[\"wrapKey\"]").replace("\"kid\":\"rsa\"",
                "\"kid\":\"wrap\"");
        String rs512Only = rsa.jwk().replace("\"use\":\"sig\"", "\"alg\":\"RS512\"").replace("\"kid\":\"rsa\"",
                "\"kid\":\"rs512\"");
        Jwks set = Jwks.parse("{\"keys\":[" + encryption + "," + wrapOnly + "," + rs512Only + "," + ec384.jwk() + ","
                + ec256.jwk() + "," + rsa.jwk() + "]}");
        assertThat(set.select(Jwks.Algorithm.RS256, "rsa").id()).isEqualTo("rsa");
        assertThat(set.select(Jwks.Algorithm.RS256, "enc")).isNull();
        assertThat(set.select(Jwks.Algorithm.RS256, "wrap")).isNull();
        assertThat(set.select(Jwks.Algorithm.RS256, "rs512")).isNull();
        assertThat(set.select(Jwks.Algorithm.RS512, "rs512").id()).isEqualTo("rs512");
        assertThat(set.select(Jwks.Algorithm.ES256, "ec384")).isNull();
        assertThat(set.select(Jwks.Algorithm.ES256, null).id()).isEqualTo("ec256");
        assertThat(set.select(Jwks.Algorithm.PS256, null).id()).isEqualTo("rsa");
        assertThat(set.select(Jwks.Algorithm.RS256, "unknown")).isNull();
        assertThat(Jwks.Algorithm.named("HS256")).isNull();
        assertThat(Jwks.Algorithm.named("none")).isNull();
    }

    @Test
    void verifiesEveryAlgorithmAndNothingElse() {
        Jwks set = Jwks.parse(TestTokens.jwks(rsa, ec256, ec384, ec521));
        for (Jwks.Algorithm algorithm : Jwks.Algorithm.values()) {
            TestTokens.SigningKey key = switch (algorithm) {
                case ES256 -> ec256;
                case ES384 -> ec384;
                case ES512 -> ec521;
                default -> rsa;
            };
            String token = TestTokens.sign(algorithm.name(), key, TestTokens.claims("alice", 1, 2));
            String[] sections = token.split("\\.");
            byte[] input = (sections[0] + "." + sections[1]).getBytes(StandardCharsets.US_ASCII);
            byte[] signature = java.util.Base64.getUrlDecoder().decode(sections[2]);
            Jwks.Key selected = set.select(algorithm, key.id());
            assertThat(algorithm.verifies(selected.publicKey(), input, signature)).as(algorithm.name()).isTrue();
            byte[] other = input.clone();
            other[other.length - 1] ^= 1;
            assertThat(algorithm.verifies(selected.publicKey(), other, signature)).as(algorithm.name()).isFalse();
            assertThat(algorithm.verifies(selected.publicKey(), input, new byte[0])).isFalse();
            assertThat(algorithm.verifies(selected.publicKey(), input, new byte[signature.length + 1])).isFalse();
        }
        // RS256 and PS256 do not stand in for each other.
        String rs256 = TestTokens.sign("RS256", rsa, TestTokens.claims("alice", 1, 2));
        String[] sections = rs256.split("\\.");
        assertThat(Jwks.Algorithm.PS256.verifies(set.select(Jwks.Algorithm.PS256, "rsa").publicKey(),
                (sections[0] + "." + sections[1]).getBytes(StandardCharsets.US_ASCII),
                java.util.Base64.getUrlDecoder().decode(sections[2]))).isFalse();
    }
}

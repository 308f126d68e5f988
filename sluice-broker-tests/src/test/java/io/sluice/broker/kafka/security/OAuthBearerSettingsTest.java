package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A listener's SASL/OAUTHBEARER settings as the broker reads them at start: Kafka's keys and their precedence, the
 * two modes, and every wrong setting refused with a message naming it.
 */
class OAuthBearerSettingsTest {

    private static final String LISTENER = "listener.name.sasl_plaintext.oauthbearer.";
    private static final String JAAS = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
            + " unsecuredValidatorRequiredScope=\"produce\";";

    @TempDir
    Path dir;
    private Path jwks;
    private String url;
    private String allowedBefore;

    @BeforeEach
    void keySet() throws Exception {
        jwks = dir.resolve("jwks.json");
        Files.writeString(jwks, TestTokens.jwks(TestTokens.ec("ec1", "P-256")));
        url = jwks.toUri().toString();
        allowedBefore = System.getProperty(OAuthBearerSettings.ALLOWED_URLS_PROPERTY);
        System.setProperty(OAuthBearerSettings.ALLOWED_URLS_PROPERTY, "file:///elsewhere.json, " + url);
    }

    @AfterEach
    void restore() {
        if (allowedBefore == null) {
            System.clearProperty(OAuthBearerSettings.ALLOWED_URLS_PROPERTY);
        } else {
            System.setProperty(OAuthBearerSettings.ALLOWED_URLS_PROPERTY, allowedBefore);
        }
    }

    private static SecuritySettings parse(Map<String, String> more) {
        Map<String, String> settings = new HashMap<>();
        settings.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0");
        settings.put("sasl.enabled.mechanisms", "OAUTHBEARER");
        settings.put(LISTENER + "sasl.jaas.config", JAAS);
        settings.putAll(more);
        settings.values().removeIf(value -> value == null);
        return SecuritySettings.parse(settings, "127.0.0.1", 0);
    }

    private Map<String, String> signed() {
        Map<String, String> settings = new HashMap<>();
        settings.put(LISTENER + "sasl.server.callback.handler.class", OAuthBearerSettings.VALIDATOR_HANDLER);
        settings.put(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", url);
        settings.put("sasl.oauthbearer.expected.audience", "sluice, kafka ,");
        settings.put("listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer", "https://issuer.test");
        return settings;
    }

    private static OAuthBearerSettings oauth(SecuritySettings settings) {
        return settings.listeners().getFirst().oauthBearer();
    }

    @Test
    void unsecuredIsKafkasDefaultAndSaysSo() throws Exception {
        OAuthBearerSettings settings = oauth(parse(Map.of()));
        assertThat(settings.unsecured()).isTrue();
        assertThat(settings.warnings()).singleElement().asString().contains("takes unsecured OAUTHBEARER tokens");
        assertThat(settings.validator(Clock.systemUTC())).isInstanceOf(UnsecuredTokenValidator.class);
        assertThat(oauth(parse(Map.of(LISTENER + "sasl.server.callback.handler.class",
                OAuthBearerSettings.UNSECURED_HANDLER))).unsecured()).isTrue();
        // A key set named but not used is pointed out.
        assertThat(oauth(parse(Map.of("sasl.oauthbearer.jwks.endpoint.url", url))).warnings()).singleElement()
                .asString().contains("is set, but unused");
    }

    @Test
    void signedTokensNeedTheValidatorHandlerAndAKeySetFile() {
        OAuthBearerSettings settings = oauth(parse(signed()));
        assertThat(settings.unsecured()).isFalse();
        assertThat(settings.warnings()).isEmpty();
        assertThat(settings.validator(Clock.systemUTC())).isInstanceOf(SignedTokenValidator.class);
        Map<String, String> open = signed();
        open.remove("sasl.oauthbearer.expected.audience");
        open.remove("listener.name.sasl_plaintext.sasl.oauthbearer.expected.issuer");
        assertThat(oauth(parse(open)).warnings()).hasSize(2);
    }

    @Test
    void refusesWhatKafkaRefusesWithItsMessages() throws Exception {
        assertRefused(Map.of(LISTENER + "sasl.jaas.config", ""), "must name");
        Map<String, String> noJaas = new HashMap<>();
        noJaas.put(LISTENER + "sasl.jaas.config", null);
        assertRefused(noJaas, "set listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config");
        assertRefused(Map.of(LISTENER + "sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule"
                + " required;"), "must name org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule");
        assertRefused(Map.of(LISTENER + "sasl.server.callback.handler.class", "com.example.Mine"),
                "only org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler");
        assertRefused(Map.of(LISTENER + "sasl.jaas.config", JAAS.replace(";", " unsecuredValidatorAllowableClockSkewMs"
                + "=\"-5\";")), "Allowable clock skew millis must not be negative: -5");
        Map<String, String> settings = signed();
        settings.remove(LISTENER + "sasl.oauthbearer.jwks.endpoint.url");
        assertRefused(settings, "The OAuth validator for the broker requires \"sasl.oauthbearer.jwks.endpoint.url\"");
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/jwks"),
                "The URL cannot be accessed due to restrictions. Update the system property"
                        + " 'org.apache.kafka.sasl.oauthbearer.allowed.urls' to allow the URL to be accessed.");
        System.setProperty(OAuthBearerSettings.ALLOWED_URLS_PROPERTY, "https://idp.example/jwks");
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", "https://idp.example/jwks"),
                "reads the JSON Web Key Set from a file: URL only");
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", url),
                "The URL cannot be accessed due to restrictions");
        System.setProperty(OAuthBearerSettings.ALLOWED_URLS_PROPERTY, url + ",ftp://x/y,file:///missing.json,"
                + dir.toUri());
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", "ftp://x/y"),
                "contains an invalid protocol (ftp)");
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", "/no/protocol"),
                "that is missing the protocol");
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", "file:///missing.json"),
                "contains a file (/missing.json) that doesn't exist");
        assertRefused(with(LISTENER + "sasl.oauthbearer.jwks.endpoint.url", dir.toUri().toString()),
                "references a directory");
        Files.writeString(jwks, "{\"keys\":");
        assertRefused(signed(), "Invalid value " + jwks + " for configuration sasl.oauthbearer.jwks.endpoint.url:"
                + " not a JSON Web Key Set");
        Files.writeString(jwks, TestTokens.jwks());
        assertRefused(with("sasl.oauthbearer.clock.skew.seconds", "-1"), "must not be negative");
        assertRefused(with("sasl.oauthbearer.clock.skew.seconds", "soon"), "must be a whole number of seconds");
        assertRefused(with(LISTENER + "sasl.oauthbearer.sub.claim.name", " "),
                "The OAuth configuration option sasl.oauthbearer.sub.claim.name value is required");
    }

    private Map<String, String> with(String key, String value) {
        Map<String, String> settings = signed();
        settings.put(key, value);
        return settings;
    }

    private static void assertRefused(Map<String, String> settings, String message) {
        assertThatThrownBy(() -> parse(settings)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message);
    }

    @Test
    void takesKafkasKeysWithTheirPrefixes() {
        for (String key : new String[] {"sasl.oauthbearer.jwks.endpoint.url", "sasl.oauthbearer.expected.audience",
            "sasl.oauthbearer.expected.issuer", "sasl.oauthbearer.sub.claim.name", "sasl.oauthbearer.scope.claim.name",
            "sasl.oauthbearer.clock.skew.seconds"}) {
            assertThat(SecuritySettings.isKey(key)).as(key).isTrue();
            assertThat(SecuritySettings.isKey("listener.name.client." + key)).as(key).isTrue();
            assertThat(SecuritySettings.isKey("listener.name.client.oauthbearer." + key)).as(key).isTrue();
            assertThat(SecuritySettings.isKey("listener.name.client.plain." + key)).as(key).isFalse();
        }
        assertThat(SecuritySettings.KEYS).containsAll(OAuthBearerSettings.KEYS);
        assertThat(SecuritySettings.isKey("listener.name.client.oauthbearer.sasl.server.callback.handler.class"))
                .isTrue();
        assertThat(SecuritySettings.isKey("listener.name.client.oauthbearer.sasl.jaas.config")).isTrue();
        assertThat(SecuritySettings.isKey("listener.name.client.plain.sasl.server.callback.handler.class")).isFalse();
        assertThat(SecuritySettings.isKey("sasl.server.callback.handler.class")).isFalse();
        assertThat(SecuritySettings.isKey("sasl.oauthbearer.jwks.endpoint.refresh.ms")).isFalse();
    }

    @Test
    void theMechanismsKeyWinsOverTheListenersWhichWinsOverTheBrokers() throws Exception {
        Map<String, String> settings = signed();
        settings.put("sasl.oauthbearer.sub.claim.name", "broker");
        settings.put("listener.name.sasl_plaintext.sasl.oauthbearer.sub.claim.name", "listener");
        assertThat(oauth(parse(settings))).extracting("signed").extracting("subClaimName").isEqualTo("listener");
        settings.put(LISTENER + "sasl.oauthbearer.sub.claim.name", "mechanism");
        assertThat(oauth(parse(settings))).extracting("signed").extracting("subClaimName").isEqualTo("mechanism");
        settings.remove(LISTENER + "sasl.oauthbearer.sub.claim.name");
        settings.remove("listener.name.sasl_plaintext.sasl.oauthbearer.sub.claim.name");
        assertThat(oauth(parse(settings))).extracting("signed").extracting("subClaimName").isEqualTo("broker");
        assertThat(oauth(parse(settings))).extracting("signed").extracting("expectedAudience")
                .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.COLLECTION)
                .containsExactlyInAnyOrder("sluice", "kafka");
    }
}

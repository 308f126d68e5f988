package io.sluice.broker.kafka.security;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * A listener's SASL/OAUTHBEARER settings, with Kafka's names. The listener's JAAS configuration
 * ({@code listener.name.<listener>.oauthbearer.sasl.jaas.config}) names Kafka's {@code OAuthBearerLoginModule}; then:
 * <ul>
 *   <li>without {@code listener.name.<listener>.oauthbearer.sasl.server.callback.handler.class}, tokens are checked
 *       as Kafka's default does, unsecured ({@link UnsecuredTokenValidator}), with the module's
 *       {@code unsecuredValidator*} options;</li>
 *   <li>with it set to {@value #VALIDATOR_HANDLER}, tokens must be signed by a key of the JSON Web Key Set at
 *       {@code sasl.oauthbearer.jwks.endpoint.url} ({@link SignedTokenValidator}), and are checked against
 *       {@code sasl.oauthbearer.expected.audience}, {@code sasl.oauthbearer.expected.issuer},
 *       {@code sasl.oauthbearer.sub.claim.name} ({@code sub}), {@code sasl.oauthbearer.scope.claim.name}
 *       ({@code scope}) and {@code sasl.oauthbearer.clock.skew.seconds} (30).</li>
 * </ul>
 * Each {@code sasl.oauthbearer.*} key is read as Kafka reads it: {@code listener.name.<listener>.oauthbearer.<key>},
 * else {@code listener.name.<listener>.<key>}, else {@code <key>}.
 *
 * <p>The key set is read from a {@code file:} URL only: this broker fetches nothing over the network, so an
 * {@code http(s):} URL is refused at start (keep a copy of the provider's key set in a file, refreshed out of band;
 * the file is read again when it changes). As Kafka 4.3.1 requires, the URL must also be listed in the JVM's system
 * property {@value #ALLOWED_URLS_PROPERTY} (comma-separated). Immutable.
 */
final class OAuthBearerSettings {

    /** Kafka's login module, which the listener's JAAS configuration must name. */
    static final String LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
    /** Kafka's callback handler for signed tokens. */
    static final String VALIDATOR_HANDLER =
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
    /** Kafka's default callback handler, for unsigned tokens. */
    static final String UNSECURED_HANDLER = "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
            + "OAuthBearerUnsecuredValidatorCallbackHandler";
    /** Kafka's system property listing the URLs its OAuth code may read. */
    static final String ALLOWED_URLS_PROPERTY = "org.apache.kafka.sasl.oauthbearer.allowed.urls";

    /** The listener's and the mechanism's callback handler setting (after {@code listener.name.<listener>.}). */
    static final String HANDLER_KEY = "oauthbearer.sasl.server.callback.handler.class";
    static final String JWKS_URL = "sasl.oauthbearer.jwks.endpoint.url";
    static final String EXPECTED_AUDIENCE = "sasl.oauthbearer.expected.audience";
    static final String EXPECTED_ISSUER = "sasl.oauthbearer.expected.issuer";
    static final String SUB_CLAIM_NAME = "sasl.oauthbearer.sub.claim.name";
    static final String SCOPE_CLAIM_NAME = "sasl.oauthbearer.scope.claim.name";
    static final String CLOCK_SKEW_SECONDS = "sasl.oauthbearer.clock.skew.seconds";

    /** The {@code sasl.oauthbearer.*} keys taken. */
    static final Set<String> KEYS = Set.of(JWKS_URL, EXPECTED_AUDIENCE, EXPECTED_ISSUER, SUB_CLAIM_NAME,
            SCOPE_CLAIM_NAME, CLOCK_SKEW_SECONDS);

    private final UnsecuredTokenValidator.Options unsecured;
    private final SignedTokenValidator.Options signed;
    private final List<String> warnings;

    private OAuthBearerSettings(UnsecuredTokenValidator.Options unsecured, SignedTokenValidator.Options signed,
                                List<String> warnings) {
        this.unsecured = unsecured;
        this.signed = signed;
        this.warnings = List.copyOf(warnings);
    }

    /**
     * Reads and checks a listener's settings, and its key set if it has one.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static OAuthBearerSettings of(SecuritySettings.Listener listener) {
        SecuritySettings.Settings settings = listener.settings();
        String prefix = "listener.name." + listener.name().toLowerCase(Locale.ROOT) + ".";
        String jaas = settings.own("oauthbearer.sasl.jaas.config");
        if (jaas == null) {
            throw new IllegalArgumentException("listener " + listener.name() + " enables OAUTHBEARER: set " + prefix
                    + "oauthbearer.sasl.jaas.config (" + LOGIN_MODULE + " required;)");
        }
        if (!jaas.contains(LOGIN_MODULE)) {
            throw new IllegalArgumentException("the OAUTHBEARER JAAS configuration of listener " + listener.name()
                    + " must name " + LOGIN_MODULE);
        }
        String handler = settings.own(HANDLER_KEY);
        String jwks = value(settings, JWKS_URL);
        List<String> warnings = new ArrayList<>();
        if (handler == null || handler.trim().equals(UNSECURED_HANDLER)) {
            warnings.add("listener " + listener.name() + " takes unsecured OAUTHBEARER tokens: anyone who reaches it"
                    + " can authenticate as any principal. Use it for tests only; to verify signed tokens set "
                    + prefix + HANDLER_KEY + "=" + VALIDATOR_HANDLER
                    + (jwks == null ? "" : " (" + JWKS_URL + " is set, but unused without it)"));
            return new OAuthBearerSettings(UnsecuredTokenValidator.Options.of(SecuritySettings.jaasOptions(jaas)),
                    null, warnings);
        }
        if (!handler.trim().equals(VALIDATOR_HANDLER)) {
            throw new IllegalArgumentException(prefix + HANDLER_KEY + ": only " + VALIDATOR_HANDLER + " (signed"
                    + " tokens) and " + UNSECURED_HANDLER + " (Kafka's default) are served, was '" + handler + "'");
        }
        if (jwks == null || jwks.isBlank()) {
            throw new IllegalArgumentException("The OAuth validator for the broker requires \"" + JWKS_URL + "\" to"
                    + " be configured so that JWT signatures can be verified, but it was not set. Set \"" + JWKS_URL
                    + "\" to the file: URL of the OAuth/OIDC provider's JSON Web Key Set for listener "
                    + listener.name() + ".");
        }
        Path file = jwksFile(jwks.trim());
        Set<String> audience = Arrays.stream(value(settings, EXPECTED_AUDIENCE, "").split(",")).map(String::trim)
                .filter(s -> !s.isEmpty()).collect(Collectors.toCollection(LinkedHashSet::new));
        String issuer = value(settings, EXPECTED_ISSUER, "").trim();
        if (audience.isEmpty()) {
            warnings.add("listener " + listener.name() + " verifies OAUTHBEARER tokens without " + EXPECTED_AUDIENCE
                    + ", so it refuses any token that names an audience (aud); set it to the audience(s) the"
                    + " broker's tokens name");
        }
        if (issuer.isEmpty()) {
            warnings.add("listener " + listener.name() + " verifies OAUTHBEARER tokens without " + EXPECTED_ISSUER
                    + ", so it takes a token of any issuer the key set's keys sign for; set it to the issuer URL of"
                    + " the OAuth/OIDC provider");
        }
        SignedTokenValidator.Options options = new SignedTokenValidator.Options(file, Set.copyOf(audience),
                issuer.isEmpty() ? null : issuer, claimName(settings, SUB_CLAIM_NAME, "sub"),
                claimName(settings, SCOPE_CLAIM_NAME, "scope"), clockSkewSeconds(settings));
        checkKeySet(file);
        return new OAuthBearerSettings(null, options, warnings);
    }

    /** @return a new validator of the listener's tokens */
    TokenValidator validator(Clock clock) {
        return unsecured != null ? new UnsecuredTokenValidator(unsecured, clock)
                : new SignedTokenValidator(signed, clock);
    }

    /** @return true if tokens are taken unsigned */
    boolean unsecured() {
        return unsecured != null;
    }

    /** @return what an operator should be told at start: settings that are legal but weak */
    List<String> warnings() {
        return warnings;
    }

    private static String value(SecuritySettings.Settings settings, String key) {
        String own = settings.own("oauthbearer." + key);
        return own != null ? own : settings.get(key);
    }

    private static String value(SecuritySettings.Settings settings, String key, String otherwise) {
        String value = value(settings, key);
        return value != null ? value : otherwise;
    }

    private static String claimName(SecuritySettings.Settings settings, String key, String otherwise) {
        String name = value(settings, key, otherwise).trim();
        if (name.isEmpty()) {
            throw new IllegalArgumentException("The OAuth configuration option " + key + " value is required");
        }
        return name;
    }

    private static int clockSkewSeconds(SecuritySettings.Settings settings) {
        String value = value(settings, CLOCK_SKEW_SECONDS, "30");
        int seconds;
        try {
            seconds = Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(CLOCK_SKEW_SECONDS + " must be a whole number of seconds, was '"
                    + value + "'");
        }
        if (seconds < 0) {
            throw new IllegalArgumentException(CLOCK_SKEW_SECONDS + " must not be negative, was " + seconds);
        }
        return seconds;
    }

    /** Checks the URL as Kafka 4.3.1 does (its messages), then takes only a file: URL. */
    private static Path jwksFile(String url) {
        URI uri;
        try {
            uri = new URI(url);
        } catch (URISyntaxException e) {
            throw invalid(url, "The OAuth configuration option " + JWKS_URL + " contains a URL (" + url + ") that is"
                    + " malformed: " + e.getMessage());
        }
        String scheme = uri.getScheme();
        if (scheme == null || scheme.isBlank()) {
            throw invalid(url, "The OAuth configuration option " + JWKS_URL + " contains a URL (" + url + ") that is"
                    + " missing the protocol");
        }
        scheme = scheme.toLowerCase(Locale.ROOT);
        if (!Set.of("http", "https", "file").contains(scheme)) {
            throw invalid(url, "The OAuth configuration option " + JWKS_URL + " contains a URL (" + url + ") that"
                    + " contains an invalid protocol (" + scheme + "); only \"http\", \"https\", and \"file\" protocol"
                    + " are supported");
        }
        Set<String> allowed = Arrays.stream(System.getProperty(ALLOWED_URLS_PROPERTY, "").split(","))
                .map(String::trim).collect(Collectors.toSet());
        if (!allowed.contains(url)) {
            throw invalid(url, "The URL cannot be accessed due to restrictions. Update the system property '"
                    + ALLOWED_URLS_PROPERTY + "' to allow the URL to be accessed.");
        }
        if (!scheme.equals("file")) {
            throw invalid(url, "this broker reads the JSON Web Key Set from a file: URL only and fetches nothing over"
                    + " the network; keep a copy of the provider's key set in a file (it is read again when it"
                    + " changes) and name it with a file: URL");
        }
        Path file;
        try {
            file = Path.of(uri).toAbsolutePath();
        } catch (IllegalArgumentException e) {
            throw invalid(url, "not a local file: " + e.getMessage());
        }
        if (!Files.exists(file)) {
            throw invalid(url, "The OAuth configuration option " + JWKS_URL + " contains a file (" + file + ") that"
                    + " doesn't exist");
        }
        if (!Files.isReadable(file)) {
            throw invalid(url, "The OAuth configuration option " + JWKS_URL + " contains a file (" + file + ") that"
                    + " doesn't have read permission");
        }
        if (Files.isDirectory(file)) {
            throw invalid(url, "The OAuth configuration option " + JWKS_URL + " references a directory (" + file
                    + "), not a file");
        }
        return file;
    }

    private static void checkKeySet(Path file) {
        try {
            Jwks.parse(Files.readString(file, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IllegalArgumentException("Invalid value " + file + " for configuration " + JWKS_URL + ": " + e);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("Invalid value " + file + " for configuration " + JWKS_URL + ": "
                    + e.getMessage());
        }
    }

    private static IllegalArgumentException invalid(String url, String message) {
        return new IllegalArgumentException("Invalid value " + url + " for configuration " + JWKS_URL + ": "
                + message);
    }
}

package io.sluice.broker.kafka.security;

import java.io.IOException;
import java.math.BigDecimal;
import java.math.RoundingMode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.time.Clock;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Kafka's secured SASL/OAUTHBEARER validation ({@code OAuthBearerValidatorCallbackHandler} with its
 * {@code BrokerJwtValidator}, which uses jose4j), for a JSON Web Key Set kept in a local file
 * ({@code sasl.oauthbearer.jwks.endpoint.url=file:...}). A token is taken if, in this order:
 * <ol>
 *   <li>it is a JWS in compact form, its {@code alg} one of {@link Jwks.Algorithm} ({@code none} is refused), with no
 *       {@code crit} header (no extension is understood);</li>
 *   <li>a key of the set verifies its signature ({@link Jwks#select});</li>
 *   <li>it has an expiry ({@code exp}) not passed and an issued-at time ({@code iat}) not after it; a not-before time
 *       ({@code nbf}), if any, has come; each with {@code sasl.oauthbearer.clock.skew.seconds} of slack;</li>
 *   <li>its audience ({@code aud}) includes one of {@code sasl.oauthbearer.expected.audience}: required when that is
 *       set, refused when it is not (jose4j's rule);</li>
 *   <li>its issuer ({@code iss}) is {@code sasl.oauthbearer.expected.issuer}, when that is set;</li>
 *   <li>its subject (claim {@code sasl.oauthbearer.sub.claim.name}) is a non-blank string, the principal (trimmed);
 *       its scope (claim {@code sasl.oauthbearer.scope.claim.name}), a string or a list of distinct non-blank strings.
 *   </li>
 * </ol>
 * The file is read again when its modification time or size changes (key rotation), as Kafka's
 * {@code JwksFileVerificationKeyResolver} does; while it cannot be read or parsed, tokens are refused. Thread-safe.
 */
final class SignedTokenValidator implements TokenValidator {

    private static final Logger LOG = LoggerFactory.getLogger(SignedTokenValidator.class);

    /** The largest time in seconds whose milliseconds fit a long. */
    private static final BigDecimal MAX_SECONDS = BigDecimal.valueOf(Long.MAX_VALUE / 1000);

    /**
     * The validator's settings.
     *
     * @param jwksFile the JSON Web Key Set's file
     * @param expectedAudience the audiences of which a token must name one (empty: a token must name none)
     * @param expectedIssuer the issuer a token must name, or null for any
     * @param subClaimName the claim naming the principal
     * @param scopeClaimName the claim holding the scope
     * @param clockSkewSeconds the slack allowed when comparing times
     */
    record Options(Path jwksFile, Set<String> expectedAudience, String expectedIssuer, String subClaimName,
                   String scopeClaimName, int clockSkewSeconds) {
    }

    private record Snapshot(long modifiedMillis, long size, Jwks keys, String fault) {
    }

    private final Options options;
    private final Clock clock;
    private volatile Snapshot snapshot;

    /**
     * Reads the key set.
     *
     * @throws IllegalArgumentException if the file cannot be read or is not a JSON Web Key Set
     */
    SignedTokenValidator(Options options, Clock clock) {
        this.options = options;
        this.clock = clock;
        Snapshot first = read();
        if (first.fault() != null) {
            throw new IllegalArgumentException("Invalid value " + options.jwksFile() + " for configuration"
                    + " sasl.oauthbearer.jwks.endpoint.url: " + first.fault());
        }
        snapshot = first;
    }

    /** @return the keys as the file holds them now */
    Jwks keys() throws Refused {
        Snapshot now = snapshot;
        BasicFileAttributes attributes;
        try {
            attributes = Files.readAttributes(options.jwksFile(), BasicFileAttributes.class);
        } catch (IOException e) {
            throw new Refused("the JSON Web Key Set " + options.jwksFile() + " cannot be read: " + e);
        }
        if (attributes.lastModifiedTime().toMillis() != now.modifiedMillis() || attributes.size() != now.size()) {
            synchronized (this) {
                now = snapshot;
                if (attributes.lastModifiedTime().toMillis() != now.modifiedMillis() || attributes.size() != now.size()) {
                    now = read();
                    snapshot = now;
                    if (now.fault() != null) {
                        LOG.warn("OAUTHBEARER tokens are refused until {} is a valid JSON Web Key Set: {}",
                                options.jwksFile(), now.fault());
                    }
                }
            }
        }
        if (now.fault() != null) {
            throw new Refused("the JSON Web Key Set " + options.jwksFile() + " is not valid: " + now.fault());
        }
        return now.keys();
    }

    private Snapshot read() {
        Path file = options.jwksFile();
        try {
            BasicFileAttributes attributes = Files.readAttributes(file, BasicFileAttributes.class);
            String json = Files.readString(file, StandardCharsets.UTF_8);
            long modified = attributes.lastModifiedTime().toMillis();
            try {
                Jwks keys = Jwks.parse(json);
                for (String skipped : keys.skipped()) {
                    LOG.warn("the JSON Web Key Set {} holds a key that is not used: {}", file, skipped);
                }
                return new Snapshot(modified, attributes.size(), keys, null);
            } catch (IllegalArgumentException e) {
                return new Snapshot(modified, attributes.size(), null, e.getMessage());
            }
        } catch (IOException e) {
            return new Snapshot(-1, -1, null, "cannot be read: " + e);
        }
    }

    @Override
    public Token validate(String token) throws Refused {
        List<String> sections = Jws.sections(token);
        if (sections.size() != 3 || sections.stream().anyMatch(String::isBlank)) {
            throw new Refused("Malformed JWT provided; expected three sections (header, payload, and signature)");
        }
        Map<String, Object> header = Jws.object(sections.get(0));
        String name = Jws.stringClaim(header, "alg");
        if (name == null) {
            throw new Refused("the JWS header has no algorithm (alg)");
        }
        Jwks.Algorithm algorithm = Jwks.Algorithm.named(name);
        if (algorithm == null) {
            throw new Refused("JWS algorithm " + name + " is not served; served are "
                    + List.of(Jwks.Algorithm.values()));
        }
        if (Jws.claim(header, "crit") != null) {
            throw new Refused("the JWS header marks " + Jws.claim(header, "crit") + " as critical, which is not"
                    + " understood");
        }
        String keyId = Jws.stringClaim(header, "kid");
        Jwks.Key key = keys().select(algorithm, keyId);
        if (key == null) {
            throw new Refused("Unable to find a suitable verification key for JWS w/ header {alg=" + name
                    + (keyId == null ? "" : ", kid=" + keyId) + "} in " + options.jwksFile());
        }
        byte[] input = (sections.get(0) + "." + sections.get(1)).getBytes(StandardCharsets.US_ASCII);
        if (!algorithm.verifies(key.publicKey(), input, Jws.bytes(sections.get(2)))) {
            throw new Refused("Invalid JWS Signature (alg=" + name + ", kid=" + key.id() + ")");
        }
        return claims(Jws.object(sections.get(1)));
    }

    private Token claims(Map<String, Object> claims) throws Refused {
        Long expiration = seconds(claims, "exp");
        Long issuedAt = seconds(claims, "iat");
        Long notBefore = seconds(claims, "nbf");
        if (expiration == null) {
            throw new Refused("No Expiration Time (exp) claim present.");
        }
        if (issuedAt == null) {
            throw new Refused("No Issued At (iat) claim present.");
        }
        long now = clock.millis() / 1000;
        int skew = options.clockSkewSeconds();
        String leeway = " (even when providing " + skew + " seconds of leeway to account for clock skew).";
        if (now - skew >= expiration) {
            throw new Refused("The JWT is no longer valid - the evaluation time " + now + " is on or after the"
                    + " Expiration Time (exp=" + expiration + ") claim value" + leeway);
        }
        if (expiration < issuedAt) {
            throw new Refused("The Expiration Time (exp=" + expiration + ") claim value cannot be before the Issued"
                    + " At (iat=" + issuedAt + ") claim value.");
        }
        if (notBefore != null && now + skew < notBefore) {
            throw new Refused("The JWT is not yet valid as the evaluation time " + now + " is before the Not Before"
                    + " (nbf=" + notBefore + ") claim time" + leeway);
        }
        audience(claims);
        String issuer = Jws.stringClaim(claims, "iss");
        if (options.expectedIssuer() != null && issuer == null) {
            throw new Refused("No Issuer (iss) claim present.");
        }
        if (options.expectedIssuer() != null && !options.expectedIssuer().equals(issuer)) {
            throw new Refused("Issuer (iss) claim value (" + issuer + ") doesn't match expected value of "
                    + options.expectedIssuer());
        }
        Jws.stringClaim(claims, "sub"); // jose4j checks its type whatever the principal's claim
        String subject = nonBlank(options.subClaimName(), Jws.stringClaim(claims, options.subClaimName()));
        if (issuedAt < 0) {
            throw new Refused("iat value must be null or non-negative; value given was \"" + issuedAt * 1000 + "\"");
        }
        return new Token(subject, scope(claims), expiration * 1000, issuedAt * 1000);
    }

    private void audience(Map<String, Object> claims) throws Refused {
        Object value = Jws.claim(claims, "aud");
        Set<String> expected = options.expectedAudience();
        if (value == null) {
            if (!expected.isEmpty()) {
                throw new Refused("No Audience (aud) claim present.");
            }
            return;
        }
        List<String> audiences = value instanceof String single ? List.of(single) : Jws.stringListClaim(claims, "aud");
        if (expected.isEmpty()) {
            throw new Refused("Audience (aud) claim " + audiences + " present in the JWT but no expected audience"
                    + " value(s) were provided (sasl.oauthbearer.expected.audience).");
        }
        if (audiences.stream().noneMatch(expected::contains)) {
            throw new Refused("Audience (aud) claim " + audiences + " doesn't contain an acceptable identifier."
                    + " Expected one of " + expected + " as an aud value.");
        }
    }

    /** Kafka's reading: a string is one scope, a list its items (each non-blank, no two alike), else none. */
    private Set<String> scope(Map<String, Object> claims) throws Refused {
        String name = options.scopeClaimName();
        Object value = Jws.claim(claims, name);
        List<String> items = value instanceof String single ? List.of(single)
                : value instanceof List<?> ? Jws.stringListClaim(claims, name) : List.of();
        Set<String> scope = new HashSet<>();
        for (String item : items) {
            String trimmed = nonBlank(name, item);
            if (!scope.add(trimmed)) {
                throw new Refused(name + " value must not contain duplicates - " + trimmed + " already present");
            }
        }
        return Set.copyOf(scope);
    }

    /** @return a time claim in whole seconds (jose4j's NumericDate drops fractions), or null if absent */
    private static Long seconds(Map<String, Object> claims, String name) throws Refused {
        BigDecimal value;
        try {
            value = Jws.numberClaim(claims, name);
        } catch (Refused e) {
            throw new Refused("The value of the '" + name + "' claim is not the expected type (" + e.getMessage()
                    + ")");
        }
        if (value == null) {
            return null;
        }
        BigDecimal whole = value.setScale(0, RoundingMode.DOWN);
        return whole.abs().compareTo(MAX_SECONDS) > 0 ? whole.signum() * MAX_SECONDS.longValue() : whole.longValue();
    }

    private static String nonBlank(String name, String value) throws Refused {
        if (value == null) {
            throw new Refused(name + " value must be non-null");
        }
        if (value.isEmpty()) {
            throw new Refused(name + " value must be non-empty");
        }
        String trimmed = value.trim();
        if (trimmed.isEmpty()) {
            throw new Refused(name + " value must not contain only whitespace");
        }
        return trimmed;
    }
}

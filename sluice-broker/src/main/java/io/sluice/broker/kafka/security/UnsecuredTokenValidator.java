package io.sluice.broker.kafka.security;

import java.math.BigDecimal;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Kafka's default SASL/OAUTHBEARER validation ({@code OAuthBearerUnsecuredValidatorCallbackHandler}): the token is
 * an unsecured JWS ({@code "alg":"none"}, no signature) and is believed as it is. It must name its principal
 * ({@code sub} unless {@code unsecuredValidatorPrincipalClaimName} says otherwise) and an expiry ({@code exp}) not
 * passed; an issued-at time ({@code iat}), if any, must not be in the future and must come before the expiry; and it
 * must grant every scope of {@code unsecuredValidatorRequiredScope}, read from the claim
 * {@code unsecuredValidatorScopeClaimName} ({@code scope}), else it is refused as {@code insufficient_scope}. Times
 * are compared with {@code unsecuredValidatorAllowableClockSkewMs} of slack. The messages are Kafka's.
 *
 * <p>Anyone can write such a token for any principal: this is for tests and development only, as Kafka's
 * documentation says. Thread-safe.
 */
final class UnsecuredTokenValidator implements TokenValidator {

    /** The JAAS option naming the principal's claim. */
    static final String PRINCIPAL_CLAIM_NAME_OPTION = "unsecuredValidatorPrincipalClaimName";
    /** The JAAS option naming the scope's claim. */
    static final String SCOPE_CLAIM_NAME_OPTION = "unsecuredValidatorScopeClaimName";
    /** The JAAS option listing the scope every token must grant, space-separated. */
    static final String REQUIRED_SCOPE_OPTION = "unsecuredValidatorRequiredScope";
    /** The JAAS option giving the clock skew allowed, in milliseconds. */
    static final String ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION = "unsecuredValidatorAllowableClockSkewMs";

    private static final Pattern SCOPE_ITEM = Pattern.compile("[\\x23-\\x5B\\x5D-\\x7E\\x21]+");

    /**
     * The validator's settings, from the options of the listener's OAuthBearerLoginModule.
     *
     * @param principalClaimName the claim naming the principal
     * @param scopeClaimName the claim holding the scope
     * @param requiredScope the scope every token must grant
     * @param allowableClockSkewMillis the slack allowed when comparing times
     */
    record Options(String principalClaimName, String scopeClaimName, List<String> requiredScope,
                   int allowableClockSkewMillis) {

        /**
         * @param jaasOptions the options of the listener's JAAS configuration
         * @throws IllegalArgumentException naming the option that is wrong
         */
        static Options of(Map<String, String> jaasOptions) {
            String principal = jaasOptions.get(PRINCIPAL_CLAIM_NAME_OPTION);
            String scope = jaasOptions.get(SCOPE_CLAIM_NAME_OPTION);
            String required = jaasOptions.get(REQUIRED_SCOPE_OPTION);
            String skew = jaasOptions.get(ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION);
            int skewMillis;
            try {
                skewMillis = blank(skew) ? 0 : Integer.parseInt(skew.trim());
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(ALLOWABLE_CLOCK_SKEW_MILLIS_OPTION + " must be a whole number of"
                        + " milliseconds, was '" + skew + "'");
            }
            if (skewMillis < 0) {
                throw new IllegalArgumentException("Allowable clock skew millis must not be negative: " + skew);
            }
            return new Options(blank(principal) ? "sub" : principal.trim(), blank(scope) ? "scope" : scope.trim(),
                    blank(required) ? List.of() : parseScope(required.trim()), skewMillis);
        }

        private static List<String> parseScope(String spaceDelimited) {
            List<String> items = new ArrayList<>();
            for (String item : spaceDelimited.split(" ")) {
                if (!item.isEmpty()) {
                    if (!SCOPE_ITEM.matcher(item).matches()) {
                        throw new IllegalArgumentException(REQUIRED_SCOPE_OPTION + ": Invalid scope value: " + item);
                    }
                    items.add(item);
                }
            }
            return List.copyOf(items);
        }
    }

    private final Options options;
    private final Clock clock;

    /**
     * @param options the settings
     * @param clock the clock tokens are checked against
     */
    UnsecuredTokenValidator(Options options, Clock clock) {
        this.options = options;
        this.clock = clock;
    }

    @Override
    public Token validate(String token) throws Refused {
        if (token.contains("..")) {
            throw new Refused("Malformed compact serialization contains '..'");
        }
        List<String> sections = Jws.sections(token);
        if (sections.size() != 3) {
            throw new Refused("Unsecured JWS compact serializations must have 3 dot-separated Base64URL-encoded"
                    + " values");
        }
        Map<String, Object> header = Jws.object(sections.get(0));
        Map<String, Object> claims = Jws.object(sections.get(1));
        Object algorithm = Jws.claim(header, "alg");
        if (algorithm == null) {
            throw new Refused("JWS header must have an Algorithm value");
        }
        if (!"none".equals(algorithm)) {
            throw new Refused("Unsecured JWS must have 'none' for an algorithm");
        }
        if (!sections.get(2).isEmpty()) {
            throw new Refused("Unsecured JWS must not contain a digital signature");
        }
        Set<String> scope = scope(claims);
        BigDecimal expiration = Jws.numberClaim(claims, "exp");
        if (expiration == null) {
            throw new Refused("No expiration time in JWT");
        }
        String principal = Jws.stringClaim(claims, options.principalClaimName());
        if (blank(principal)) {
            throw new Refused("No principal name in JWT claim: " + options.principalClaimName());
        }
        BigDecimal issuedAt = Jws.numberClaim(claims, "iat");
        checkTimes(expiration.doubleValue(), issuedAt == null ? null : issuedAt.doubleValue());
        for (String required : options.requiredScope()) {
            if (!scope.contains(required)) {
                throw new Refused(String.format("The provided scope (%s) was missing a required scope (%s).  All"
                        + " required scope elements: %s", scope, required, options.requiredScope()),
                        Refused.INSUFFICIENT_SCOPE, options.requiredScope().toString());
            }
        }
        return new Token(principal, scope, Math.round(expiration.doubleValue() * 1000),
                issuedAt == null ? null : Math.round(issuedAt.doubleValue() * 1000));
    }

    private void checkTimes(double expirationSeconds, Double issuedAtSeconds) throws Refused {
        long now = clock.millis();
        int skew = options.allowableClockSkewMillis();
        if (issuedAtSeconds != null && 1000 * issuedAtSeconds > now + skew) {
            throw new Refused(String.format(Locale.ROOT, "The Issued At value (%f seconds) was after the indicated"
                    + " time (%d ms) plus allowable clock skew (%d ms)", issuedAtSeconds, now, skew));
        }
        if (now - skew >= 1000 * expirationSeconds) {
            throw new Refused(String.format(Locale.ROOT, "The indicated time (%d ms) minus allowable clock skew"
                    + " (%d ms) was on or after the Expiration Time value (%f seconds)", now, skew, expirationSeconds));
        }
        if (issuedAtSeconds != null && expirationSeconds <= issuedAtSeconds) {
            throw new Refused(String.format(Locale.ROOT, "The Expiration Time time (%f seconds) was not after the"
                    + " Issued At time (%f seconds)", expirationSeconds, issuedAtSeconds));
        }
    }

    /** The scope as Kafka reads it: a string is one scope item (trimmed), a list its non-blank items (trimmed). */
    private Set<String> scope(Map<String, Object> claims) throws Refused {
        String name = options.scopeClaimName();
        Set<String> scope = new HashSet<>();
        if (Jws.claim(claims, name) instanceof String single) {
            if (!blank(single)) {
                scope.add(single.trim());
            }
            return Set.copyOf(scope);
        }
        List<String> items = Jws.stringListClaim(claims, name);
        if (items != null) {
            for (String item : items) {
                if (!blank(item)) {
                    scope.add(item.trim());
                }
            }
        }
        return Set.copyOf(scope);
    }

    /** Kafka's Utils.isBlank: null, or nothing but characters up to U+0020. */
    private static boolean blank(String value) {
        return value == null || value.trim().isEmpty();
    }
}

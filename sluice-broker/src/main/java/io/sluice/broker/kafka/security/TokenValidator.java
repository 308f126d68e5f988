package io.sluice.broker.kafka.security;

import java.util.Set;

/**
 * Checks the bearer token a SASL/OAUTHBEARER client presents, as Kafka's server callback handlers do: either
 * {@link UnsecuredTokenValidator} (Kafka's default, unsigned tokens) or {@link SignedTokenValidator} (Kafka's
 * {@code OAuthBearerValidatorCallbackHandler}, tokens signed by a key of a JSON Web Key Set). Implementations are
 * thread-safe: one serves every connection of a listener.
 */
interface TokenValidator {

    /**
     * @param token the token as the client sent it (a JWS compact serialization)
     * @return what the token says, once it is found valid
     * @throws Refused naming why it is not, and the OAuth status the client is answered with
     */
    Token validate(String token) throws Refused;

    /**
     * A valid token.
     *
     * @param principal the principal's name (the {@code sub} claim unless configured otherwise)
     * @param scope the scope it grants
     * @param expiresAtMillis when it expires (the {@code exp} claim), in milliseconds since the epoch: the session it
     *     opens ends then at the latest
     * @param issuedAtMillis when it was issued (the {@code iat} claim), or null if it does not say
     */
    record Token(String principal, Set<String> scope, long expiresAtMillis, Long issuedAtMillis) {
    }

    /**
     * A refused token. The reason is for the broker's log; the client is told only the status (and the scope it
     * lacks), in the JSON of RFC 7628 section 3.2.2, as Kafka's broker answers.
     */
    final class Refused extends Exception {
        private static final long serialVersionUID = 1L;

        /** RFC 6750's status for a token that is malformed, expired, or not signed by a trusted key. */
        static final String INVALID_TOKEN = "invalid_token";
        /** RFC 6750's status for a valid token without the scope required. */
        static final String INSUFFICIENT_SCOPE = "insufficient_scope";

        private final String status;
        private final String scope;

        /** A token refused as {@code invalid_token}. */
        Refused(String reason) {
            this(reason, INVALID_TOKEN, null);
        }

        Refused(String reason, String status, String scope) {
            super(reason);
            this.status = status;
            this.scope = scope;
        }

        /** @return the OAuth error status */
        String status() {
            return status;
        }

        /** @return the scope required, for {@code insufficient_scope}; else null */
        String scope() {
            return scope;
        }
    }
}

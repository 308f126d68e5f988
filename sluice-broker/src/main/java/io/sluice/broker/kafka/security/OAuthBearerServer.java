package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.authenticator.SaslInternalConfigs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server side of SASL/OAUTHBEARER (RFC 7628) as Kafka's {@code OAuthBearerSaslServer} serves it.
 *
 * <p>The client's one message is {@code n,[a=<authzid>],^Aauth=Bearer <token>^A[<key>=<value>^A...]^A} (a GS2
 * header, then key-value pairs: the token and any SASL extensions, separated by %x01). The token goes to the
 * listener's {@link TokenValidator}. A valid token completes the exchange: its principal is the session's, and its
 * expiry is the credential's lifetime ({@code CREDENTIAL.LIFETIME.MS}), which caps the session (KIP-368). A refused
 * token is answered, as RFC 7628 section 3.2.2 says, with a challenge {@code {"status":"invalid_token"}} (or
 * {@code {"status":"insufficient_scope", "scope":"[...]"}}); the client replies with a lone %x01, and the
 * authentication fails with that JSON as its message, which is what Kafka's clients show. A malformed message fails
 * as a {@link SaslException} (the client is told only that its credentials were invalid); an authorization id other
 * than the token's principal fails with Kafka's message. Extensions are all accepted, as both of Kafka's validators
 * accept them. One instance per authentication; not thread-safe.
 */
final class OAuthBearerServer implements SaslServer {

    /** The mechanism's name. */
    static final String MECHANISM = "OAUTHBEARER";

    private static final Logger LOG = LoggerFactory.getLogger(OAuthBearerServer.class);
    private static final char SEPARATOR = '\u0001';
    private static final Pattern AUTH = Pattern.compile("(?<scheme>[\\w]+)[ ]+(?<token>[-_~+/\\.a-zA-Z0-9]+([=]*))");
    private static final Pattern KEY = Pattern.compile("[A-Za-z]+");
    private static final Pattern VALUE = Pattern.compile("[\\x21-\\x7E \t\r\n]+");

    /**
     * The client's message.
     *
     * @param authorizationId the authorization id of the GS2 header ("" if none)
     * @param token the bearer token
     * @param extensions the other key-value pairs
     */
    record InitialResponse(String authorizationId, String token, Map<String, String> extensions) {

        /**
         * Reads the message with the grammar of Kafka's {@code OAuthBearerClientInitialResponse}, without its regular
         * expressions' recursion (a message of many pairs must not overflow the stack).
         */
        static InitialResponse parse(byte[] response) throws SaslException {
            String message = new String(response, StandardCharsets.UTF_8);
            if (!message.startsWith("n,")) {
                throw invalid("");
            }
            int comma = message.indexOf(',', 2);
            if (comma < 0) {
                throw invalid("");
            }
            String authorizationId = "";
            if (comma > 2) {
                if (!message.startsWith("a=", 2) || !saslName(message.substring(4, comma))) {
                    throw invalid("");
                }
                authorizationId = message.substring(4, comma);
            }
            // at least ^A^A after the comma: the separator before the pairs, and the one after them
            if (message.length() < comma + 3 || message.charAt(comma + 1) != SEPARATOR
                    || message.charAt(message.length() - 1) != SEPARATOR) {
                throw invalid("");
            }
            Map<String, String> pairs = pairs(message.substring(comma + 2, message.length() - 1));
            String auth = pairs.remove("auth");
            if (auth == null) {
                throw invalid(": 'auth' not specified");
            }
            Matcher matcher = AUTH.matcher(auth);
            if (!matcher.matches()) {
                throw invalid(": invalid 'auth' format");
            }
            if (!"bearer".equalsIgnoreCase(matcher.group("scheme"))) {
                throw new SaslException("Invalid scheme in OAUTHBEARER client first message: "
                        + matcher.group("scheme"));
            }
            return new InitialResponse(authorizationId, matcher.group("token"), Map.copyOf(pairs));
        }

        /** RFC 5801's saslname: characters 0x01-0x7F but ',' and '=', and the escapes =2C and =3D. */
        private static boolean saslName(String name) {
            if (name.isEmpty()) {
                return false;
            }
            for (int i = 0; i < name.length(); i++) {
                char c = name.charAt(i);
                if (c == '=') {
                    if (!name.startsWith("=2C", i) && !name.startsWith("=3D", i)) {
                        return false;
                    }
                    i += 2;
                } else if (c == ',' || c < 0x01 || c > 0x7F) {
                    return false;
                }
            }
            return true;
        }

        /** @return the pairs of {@code key=value^A...} (each pair ending with ^A), the last of a key winning */
        private static Map<String, String> pairs(String text) throws SaslException {
            Map<String, String> pairs = new HashMap<>();
            int start = 0;
            while (start < text.length()) {
                int end = text.indexOf(SEPARATOR, start);
                if (end < 0) {
                    throw invalid("");
                }
                String pair = text.substring(start, end);
                int equals = pair.indexOf('=');
                if (equals < 0 || !KEY.matcher(pair.substring(0, equals)).matches()
                        || !VALUE.matcher(pair.substring(equals + 1)).matches()) {
                    throw invalid("");
                }
                pairs.put(pair.substring(0, equals), pair.substring(equals + 1));
                start = end + 1;
            }
            return pairs;
        }

        private static SaslException invalid(String detail) {
            return new SaslException("Invalid OAUTHBEARER client first message" + detail);
        }
    }

    private final TokenValidator validator;
    private TokenValidator.Token token;
    private Map<String, String> extensions = Map.of();
    private String errorMessage;

    /** @param validator the listener's token validation */
    OAuthBearerServer(TokenValidator validator) {
        this.validator = validator;
    }

    @Override
    public String getMechanismName() {
        return MECHANISM;
    }

    @Override
    public byte[] evaluateResponse(byte[] response) throws SaslException {
        if (response.length == 1 && response[0] == SEPARATOR && errorMessage != null) {
            // The client's acknowledgement of our error challenge: the authentication fails with it.
            throw new SaslAuthenticationException(errorMessage);
        }
        errorMessage = null;
        InitialResponse message = InitialResponse.parse(response);
        TokenValidator.Token valid;
        try {
            valid = validator.validate(message.token());
        } catch (TokenValidator.Refused e) {
            LOG.info("an OAUTHBEARER token is refused: {}", e.getMessage());
            errorMessage = errorJson(e.status(), e.scope());
            return errorMessage.getBytes(StandardCharsets.UTF_8);
        }
        String authorizationId = message.authorizationId();
        if (!authorizationId.isEmpty() && !authorizationId.equals(valid.principal())) {
            throw new SaslAuthenticationException(String.format("Authentication failed: Client requested an"
                    + " authorization id (%s) that is different from the token's principal name (%s)",
                    authorizationId, valid.principal()));
        }
        token = valid;
        extensions = message.extensions();
        return new byte[0];
    }

    /** @return Kafka's error challenge (its exact spacing) */
    static String errorJson(String status, String scope) {
        return "{\"status\":\"" + status + "\"" + (scope == null ? "" : ", \"scope\":\"" + scope + "\"") + "}";
    }

    @Override
    public boolean isComplete() {
        return token != null;
    }

    @Override
    public String getAuthorizationID() {
        return completed().principal();
    }

    /**
     * @return for {@code CREDENTIAL.LIFETIME.MS}, when the token expires (milliseconds since the epoch, a Long); for
     *     an extension's name, its value; else null
     */
    @Override
    public Object getNegotiatedProperty(String name) {
        TokenValidator.Token valid = completed();
        if (SaslInternalConfigs.CREDENTIAL_LIFETIME_MS_SASL_NEGOTIATED_PROPERTY_KEY.equals(name)) {
            return valid.expiresAtMillis();
        }
        return extensions.get(name);
    }

    private TokenValidator.Token completed() {
        if (token == null) {
            throw new IllegalStateException("Authentication exchange has not completed");
        }
        return token;
    }

    @Override
    public byte[] unwrap(byte[] incoming, int offset, int len) {
        throw new IllegalStateException("OAUTHBEARER supports neither integrity nor privacy");
    }

    @Override
    public byte[] wrap(byte[] outgoing, int offset, int len) {
        throw new IllegalStateException("OAUTHBEARER supports neither integrity nor privacy");
    }

    @Override
    public void dispose() {
    }
}

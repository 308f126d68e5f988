package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import org.apache.kafka.common.errors.SaslAuthenticationException;

/**
 * The server side of SASL/PLAIN (RFC 4616) as Kafka serves it: the users and passwords of the listener's JAAS
 * configuration ({@code user_<name>="<password>"}), compared in constant time. Use it over TLS only: the password
 * crosses the connection as it is.
 */
final class PlainServer implements SaslServer {

    private final Map<String, String> passwords;
    private String user;

    PlainServer(Map<String, String> passwords) {
        this.passwords = passwords;
    }

    @Override
    public String getMechanismName() {
        return "PLAIN";
    }

    @Override
    public byte[] evaluateResponse(byte[] response) throws SaslException {
        // [authzid] NUL authcid NUL passwd
        String message = new String(response, StandardCharsets.UTF_8);
        int first = message.indexOf('\u0000');
        int second = first < 0 ? -1 : message.indexOf('\u0000', first + 1);
        if (first < 0 || second < 0 || message.indexOf('\u0000', second + 1) >= 0) {
            throw new SaslException("Invalid SASL/PLAIN response: expected 3 tokens, got "
                    + message.split("\u0000", -1).length);
        }
        String authzid = message.substring(0, first);
        String name = message.substring(first + 1, second);
        String password = message.substring(second + 1);
        if (name.isEmpty()) {
            throw new SaslAuthenticationException("Authentication failed: username not specified");
        }
        if (password.isEmpty()) {
            throw new SaslAuthenticationException("Authentication failed: password not specified");
        }
        String expected = passwords.get(name);
        if (expected == null || !MessageDigest.isEqual(expected.getBytes(StandardCharsets.UTF_8),
                password.getBytes(StandardCharsets.UTF_8))) {
            throw new SaslAuthenticationException("Authentication failed: Invalid username or password");
        }
        if (!authzid.isEmpty() && !authzid.equals(name)) {
            throw new SaslAuthenticationException("Authentication failed: Client requested an authorization id that"
                    + " is different from username");
        }
        user = name;
        return new byte[0];
    }

    @Override
    public boolean isComplete() {
        return user != null;
    }

    @Override
    public String getAuthorizationID() {
        if (user == null) {
            throw new IllegalStateException("Authentication exchange has not completed");
        }
        return user;
    }

    @Override
    public byte[] unwrap(byte[] incoming, int offset, int len) {
        throw new IllegalStateException("PLAIN has no security layer");
    }

    @Override
    public byte[] wrap(byte[] outgoing, int offset, int len) {
        throw new IllegalStateException("PLAIN has no security layer");
    }

    @Override
    public Object getNegotiatedProperty(String propName) {
        return null;
    }

    @Override
    public void dispose() {
    }
}

package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.function.BiFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import org.apache.kafka.common.errors.SaslAuthenticationException;

/**
 * The server side of SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka serves them: no channel binding,
 * no delegation tokens; a user's credential is looked up by name once its first message has come. Messages are
 * matched as Kafka's own server matches them.
 */
final class ScramServer implements SaslServer {

    private static final String VALUE_SAFE = "[\\x01-\\x7F&&[^=,]]+";
    private static final String VALUE = "[\\x01-\\x7F&&[^,]]+";
    private static final String PRINTABLE = "[\\x21-\\x7E&&[^,]]+";
    private static final String SASLNAME = "(?:[\\x01-\\x7F&&[^=,]]|=2C|=3D)+";
    private static final String BASE64_CHAR = "[a-zA-Z0-9/+]";
    private static final String BASE64 = String.format("(?:%s{4})*(?:%s{3}=|%s{2}==)?", BASE64_CHAR, BASE64_CHAR,
            BASE64_CHAR);
    private static final String EXTENSIONS = "(,[A-Za-z]+=" + VALUE + ")*";
    private static final Pattern CLIENT_FIRST = Pattern.compile("n,(a=(?<authzid>" + VALUE_SAFE + "))?,(m=" + VALUE
            + ",)?(?<bare>n=(?<saslname>" + SASLNAME + "),r=(?<nonce>" + PRINTABLE + ")(?<extensions>" + EXTENSIONS
            + "))");
    private static final Pattern CLIENT_FINAL = Pattern.compile("(?<withoutProof>c=(?<channel>" + BASE64 + "),r=(?<nonce>"
            + PRINTABLE + ")" + EXTENSIONS + "),p=(?<proof>" + BASE64 + ")");
    private static final Pattern TOKEN_AUTH = Pattern.compile("(^|,)tokenauth=true(,|$)", Pattern.CASE_INSENSITIVE);
    private static final SecureRandom RANDOM = new SecureRandom();

    private final String mechanism;
    /** The credential of a user for a mechanism, or null. */
    private final BiFunction<String, String, ScramCredentials.Credential> credentials;
    private ScramCredentials.Credential credential;
    private String user;
    private String clientFirstBare;
    private String serverFirst;
    private String nonce;
    private boolean complete;
    private boolean failed;

    ScramServer(String mechanism, BiFunction<String, String, ScramCredentials.Credential> credentials) {
        this.mechanism = mechanism;
        this.credentials = credentials;
    }

    @Override
    public String getMechanismName() {
        return mechanism;
    }

    @Override
    public byte[] evaluateResponse(byte[] response) throws SaslException {
        if (complete || failed) {
            throw new SaslException("Unexpected challenge in Sasl server state " + (complete ? "COMPLETE" : "FAILED"));
        }
        try {
            return serverFirst == null ? first(new String(response, StandardCharsets.UTF_8))
                    : last(new String(response, StandardCharsets.UTF_8));
        } catch (SaslException | RuntimeException e) {
            failed = true;
            throw e;
        }
    }

    private byte[] first(String message) throws SaslException {
        Matcher matcher = CLIENT_FIRST.matcher(message);
        if (!matcher.matches()) {
            throw new SaslException("Invalid SCRAM client first message format: " + message);
        }
        if (TOKEN_AUTH.matcher(matcher.group("extensions")).find()) {
            throw new SaslException("Token Authentication failed: delegation tokens are not served");
        }
        String saslName = matcher.group("saslname");
        String name = saslName.replace("=2C", ",");
        if (name.replace("=3D", "").indexOf('=') >= 0) {
            throw new SaslException("Invalid username: " + saslName);
        }
        user = name.replace("=3D", "=");
        credential = credentials.apply(mechanism, user);
        if (credential == null) {
            throw new SaslException("Authentication failed: Invalid user credentials");
        }
        String authzid = matcher.group("authzid");
        if (authzid != null && !authzid.isEmpty() && !authzid.equals(user)) {
            throw new SaslAuthenticationException("Authentication failed: Client requested an authorization id that"
                    + " is different from username");
        }
        byte[] random = new byte[24];
        RANDOM.nextBytes(random);
        nonce = matcher.group("nonce") + Base64.getUrlEncoder().withoutPadding().encodeToString(random)
                .replace('-', 'a').replace('_', 'b');
        clientFirstBare = matcher.group("bare");
        serverFirst = "r=" + nonce + ",s=" + Base64.getEncoder().encodeToString(credential.salt()) + ",i="
                + credential.iterations();
        return serverFirst.getBytes(StandardCharsets.UTF_8);
    }

    private byte[] last(String message) throws SaslException {
        Matcher matcher = CLIENT_FINAL.matcher(message);
        if (!matcher.matches()) {
            throw new SaslException("Invalid SCRAM client final message format: " + message);
        }
        if (!matcher.group("nonce").equals(nonce)) {
            throw new SaslException("Invalid client nonce in the final client message.");
        }
        byte[] authMessage = (clientFirstBare + "," + serverFirst + "," + matcher.group("withoutProof"))
                .getBytes(StandardCharsets.UTF_8);
        byte[] signature = ScramCredentials.hmac(mechanism, credential.storedKey(), authMessage);
        byte[] proof = Base64.getDecoder().decode(matcher.group("proof"));
        if (proof.length != signature.length) {
            throw new SaslException("Invalid client credentials");
        }
        byte[] clientKey = new byte[proof.length];
        for (int i = 0; i < proof.length; i++) {
            clientKey[i] = (byte) (proof[i] ^ signature[i]);
        }
        if (!MessageDigest.isEqual(ScramCredentials.hash(mechanism, clientKey), credential.storedKey())) {
            throw new SaslException("Invalid client credentials");
        }
        complete = true;
        byte[] serverSignature = ScramCredentials.hmac(mechanism, credential.serverKey(), authMessage);
        return ("v=" + Base64.getEncoder().encodeToString(serverSignature)).getBytes(StandardCharsets.UTF_8);
    }

    @Override
    public boolean isComplete() {
        return complete;
    }

    @Override
    public String getAuthorizationID() {
        if (!complete) {
            throw new IllegalStateException("Authentication exchange has not completed");
        }
        return user;
    }

    @Override
    public byte[] unwrap(byte[] incoming, int offset, int len) {
        throw new IllegalStateException("SCRAM has no security layer");
    }

    @Override
    public byte[] wrap(byte[] outgoing, int offset, int len) {
        throw new IllegalStateException("SCRAM has no security layer");
    }

    @Override
    public Object getNegotiatedProperty(String propName) {
        return null;
    }

    @Override
    public void dispose() {
        credential = null;
    }
}

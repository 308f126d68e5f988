package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.security.sasl.SaslException;

/**
 * How a broker connects to another broker's client listener (a transaction's markers to a partition's leader): over
 * TLS with the broker's own key and trust stores when the listener has TLS, authenticated with SASL when it has SASL,
 * as the mechanism {@code sasl.mechanism.inter.broker.protocol} names (PLAIN or SCRAM; the first of them enabled if
 * not set) with the {@code username} and {@code password} of the listener's JAAS configuration for that mechanism, as a
 * Kafka broker takes its own credentials. The principal it authenticates as must be allowed ClusterAction (a super
 * user, as Kafka's brokers are).
 */
public final class InterBrokerClient {

    /** A broker's plaintext connections. */
    public static final InterBrokerClient PLAINTEXT = new InterBrokerClient(null, null, null, null);

    private static final Pattern JAAS_OPTION = Pattern.compile("([A-Za-z_][A-Za-z0-9_.-]*)\\s*=\\s*\"((?:[^\"\\\\]"
            + "|\\\\.)*)\"");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final SSLContext tls;
    private final String mechanism;
    private final String username;
    private final String password;

    private InterBrokerClient(SSLContext tls, String mechanism, String username, String password) {
        this.tls = tls;
        this.mechanism = mechanism;
        this.username = username;
        this.password = password;
    }

    /**
     * @param listener the listener other brokers are reached on (a cluster's brokers have one)
     * @throws IllegalArgumentException when a SASL listener's JAAS configuration names no username and password
     */
    public static InterBrokerClient of(SecuritySettings.Listener listener) {
        SSLContext context = listener.tls() ? TlsContexts.build(listener.settings()::get) : null;
        if (!listener.sasl()) {
            return new InterBrokerClient(context, null, null, null);
        }
        List<String> enabled = listener.mechanisms();
        String mechanism = listener.settings().get("sasl.mechanism.inter.broker.protocol");
        if (mechanism == null) {
            mechanism = enabled.stream().filter(m -> !m.equals("OAUTHBEARER")).findFirst().orElse("OAUTHBEARER");
        }
        mechanism = mechanism.trim();
        if (mechanism.equals("OAUTHBEARER")) {
            throw new IllegalArgumentException("listener " + listener.name() + ": brokers authenticate to each other"
                    + " with PLAIN or SCRAM, not OAUTHBEARER: enable one of them and name it in"
                    + " sasl.mechanism.inter.broker.protocol");
        }
        if (!enabled.contains(mechanism)) {
            throw new IllegalArgumentException("sasl.mechanism.inter.broker.protocol " + mechanism + " is not enabled"
                    + " on listener " + listener.name() + " (" + enabled + ")");
        }
        String jaas = listener.settings().own(mechanism.toLowerCase(java.util.Locale.ROOT) + ".sasl.jaas.config");
        Map<String, String> options = new HashMap<>();
        if (jaas != null) {
            Matcher matcher = JAAS_OPTION.matcher(jaas);
            while (matcher.find()) {
                options.put(matcher.group(1), matcher.group(2).replaceAll("\\\\(.)", "$1"));
            }
        }
        if (options.get("username") == null || options.get("password") == null) {
            throw new IllegalArgumentException("listener " + listener.name() + ": brokers authenticate to each other"
                    + " with " + mechanism + ": set username and password in listener.name."
                    + listener.name().toLowerCase(java.util.Locale.ROOT) + "." + mechanism.toLowerCase(
                    java.util.Locale.ROOT) + ".sasl.jaas.config");
        }
        return new InterBrokerClient(context, mechanism, options.get("username"), options.get("password"));
    }

    /** @return the TLS socket over a connected one, its handshake done, or the socket itself without TLS */
    public java.net.Socket secure(java.net.Socket socket, String host, int port) throws java.io.IOException {
        if (tls == null) {
            return socket;
        }
        SSLSocket secured = (SSLSocket) tls.getSocketFactory().createSocket(socket, host, port, true);
        SSLParameters parameters = secured.getSSLParameters();
        parameters.setEndpointIdentificationAlgorithm("HTTPS");
        secured.setSSLParameters(parameters);
        secured.startHandshake();
        return secured;
    }

    /** @return the SASL mechanism to authenticate with, or null for none */
    public String mechanism() {
        return mechanism;
    }

    /** A client's side of one SASL exchange. */
    public interface Exchange {
        /**
         * @param challenge the server's last token (empty at first)
         * @return the next token to send, or null when the exchange is done
         */
        byte[] next(byte[] challenge) throws SaslException;
    }

    /** @return a new exchange of the mechanism with the broker's credentials */
    public Exchange exchange() {
        if (mechanism.equals("PLAIN")) {
            boolean[] sent = {false};
            return challenge -> {
                if (sent[0]) {
                    return null;
                }
                sent[0] = true;
                return ("\u0000" + username + "\u0000" + password).getBytes(StandardCharsets.UTF_8);
            };
        }
        return new ScramExchange();
    }

    /** The client's side of SCRAM (RFC 5802), to check what the server answers too. */
    private final class ScramExchange implements Exchange {
        private int step;
        private String clientFirstBare;
        private String nonce;
        private byte[] serverSignature;

        @Override
        public byte[] next(byte[] challenge) throws SaslException {
            switch (step++) {
                case 0 -> {
                    byte[] random = new byte[24];
                    RANDOM.nextBytes(random);
                    nonce = Base64.getEncoder().withoutPadding().encodeToString(random).replace('+', 'a')
                            .replace('/', 'b');
                    clientFirstBare = "n=" + username.replace("=", "=3D").replace(",", "=2C") + ",r=" + nonce;
                    return ("n,," + clientFirstBare).getBytes(StandardCharsets.UTF_8);
                }
                case 1 -> {
                    String serverFirst = new String(challenge, StandardCharsets.UTF_8);
                    Matcher matcher = Pattern.compile("r=([^,]+),s=([^,]+),i=(\\d+).*").matcher(serverFirst);
                    if (!matcher.matches() || !matcher.group(1).startsWith(nonce)) {
                        throw new SaslException("an invalid SCRAM server first message");
                    }
                    byte[] salted = ScramCredentials.saltedPassword(mechanism, password,
                            Base64.getDecoder().decode(matcher.group(2)), Integer.parseInt(matcher.group(3)));
                    String withoutProof = "c=biws,r=" + matcher.group(1);
                    byte[] authMessage = (clientFirstBare + "," + serverFirst + "," + withoutProof)
                            .getBytes(StandardCharsets.UTF_8);
                    ScramCredentials.Credential credential = ScramCredentials.fromSaltedPassword(mechanism,
                            new byte[0], salted, 0);
                    byte[] signature = ScramCredentials.hmac(mechanism, credential.storedKey(), authMessage);
                    byte[] clientKey = ScramCredentials.hmac(mechanism, salted,
                            "Client Key".getBytes(StandardCharsets.US_ASCII));
                    byte[] proof = new byte[clientKey.length];
                    for (int i = 0; i < proof.length; i++) {
                        proof[i] = (byte) (clientKey[i] ^ signature[i]);
                    }
                    serverSignature = ScramCredentials.hmac(mechanism, credential.serverKey(), authMessage);
                    return (withoutProof + ",p=" + Base64.getEncoder().encodeToString(proof))
                            .getBytes(StandardCharsets.UTF_8);
                }
                case 2 -> {
                    String expected = "v=" + Base64.getEncoder().encodeToString(serverSignature);
                    if (!expected.equals(new String(challenge, StandardCharsets.UTF_8))) {
                        throw new SaslException("the server's SCRAM signature is not the one expected");
                    }
                    return null;
                }
                default -> {
                    return null;
                }
            }
        }
    }
}

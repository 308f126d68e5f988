package io.sluice.broker.kafka.security;

import io.sluice.broker.net.FrameHandler;
import java.time.Clock;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.security.sasl.SaslException;
import javax.security.sasl.SaslServer;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.message.SaslAuthenticateRequestData;
import org.apache.kafka.common.message.SaslAuthenticateResponseData;
import org.apache.kafka.common.message.SaslHandshakeRequestData;
import org.apache.kafka.common.message.SaslHandshakeResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.authenticator.SaslInternalConfigs;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A connection's authentication, as Kafka's broker runs it: on a SASL listener a client may send ApiVersions, then
 * SaslHandshake naming an enabled mechanism, then its tokens in SaslAuthenticate requests (or, after a v0 handshake,
 * as bare frames); anything else before it has authenticated closes the connection. A refused authentication is
 * answered with SASL_AUTHENTICATION_FAILED after {@code connection.failed.authentication.delay.ms}, and the connection
 * closed; nothing the client sent after the refused token is taken. With {@code connections.max.reauth.ms}, a client
 * that can re-authenticate (SaslAuthenticate v1 and later) is told its session's lifetime and must re-authenticate, as
 * the same principal with the same mechanism, before it ends (KIP-368); a request after the end closes the
 * connection. A credential that expires (an OAUTHBEARER token) caps the session at its expiry, whatever the client's
 * version, as Kafka's {@code ReauthInfo} computes it ({@link #sessionLifetimeMillis}). On an SSL listener the
 * principal is the client certificate's distinguished name, User:ANONYMOUS without one; on PLAINTEXT, User:ANONYMOUS.
 */
public final class Authenticator {

    private static final Logger LOG = LoggerFactory.getLogger(Authenticator.class);

    /** What every connection's authentication shares. */
    public static final class Shared {
        private final Supplier<ScramCredentials> scram;
        private final long failedDelayMillis;
        private final Map<String, Map<String, String>> plainUsers = new HashMap<>();
        private final Map<String, TokenValidator> tokenValidators = new HashMap<>();

        /**
         * @param settings the listeners
         * @param scram the SCRAM credentials as the cluster has them now
         */
        public Shared(SecuritySettings settings, Supplier<ScramCredentials> scram) {
            this.scram = scram;
            this.failedDelayMillis = settings.failedAuthenticationDelayMillis();
            for (SecuritySettings.Listener listener : settings.listeners()) {
                if (listener.sasl() && listener.mechanisms().contains("PLAIN")) {
                    plainUsers.put(listener.name(), Map.copyOf(listener.plainUsers()));
                }
                if (listener.sasl() && listener.mechanisms().contains(OAuthBearerServer.MECHANISM)) {
                    OAuthBearerSettings oauth = listener.oauthBearer();
                    oauth.warnings().forEach(LOG::warn);
                    tokenValidators.put(listener.name(), oauth.validator(Clock.systemUTC()));
                }
            }
        }
    }

    /**
     * What a request in the authentication's hands comes to.
     *
     * @param response the answer, or null for none
     * @param close whether the connection closes (after the answer, if any)
     * @param delayMillis how long to hold the answer back
     */
    public record Step(ApiMessage response, boolean close, long delayMillis) {
    }

    /** FAILED: refused; whatever the client sent after the refused token closes the connection untaken. */
    private enum State { HANDSHAKE_OR_VERSIONS, HANDSHAKE, AUTHENTICATE, RAW_TOKENS, COMPLETE, FAILED }

    private final SecuritySettings.Listener listener;
    private final FrameHandler.Peer peer;
    private final Shared shared;
    private final int maxUnauthenticatedBytes;
    private State state;
    private SaslServer server;
    private String mechanism;
    private volatile Session session;
    /** Whether the session ends, and when (System.nanoTime). */
    private boolean sessionExpires;
    private long expiresAt;
    private boolean reauthenticating;
    private boolean clientReauthenticates;

    /**
     * @param listener the connection's listener
     * @param peer the connection
     * @param shared what all connections share
     */
    public Authenticator(SecuritySettings.Listener listener, FrameHandler.Peer peer, Shared shared) {
        this.listener = listener;
        this.peer = peer;
        this.shared = shared;
        this.maxUnauthenticatedBytes = listener.sasl() ? listener.maxUnauthenticatedBytes() : Integer.MAX_VALUE;
        if (listener.sasl()) {
            state = State.HANDSHAKE_OR_VERSIONS;
        } else {
            state = State.COMPLETE;
            session = new Session(tlsPrincipal(), peer.remote().getAddress(), listener);
        }
    }

    private KafkaPrincipal tlsPrincipal() {
        if (peer.tls() == null) {
            return KafkaPrincipal.ANONYMOUS;
        }
        try {
            return new KafkaPrincipal(KafkaPrincipal.USER_TYPE, peer.tls().getPeerPrincipal().getName());
        } catch (SSLPeerUnverifiedException e) {
            return KafkaPrincipal.ANONYMOUS;
        }
    }

    /** @return the session; before the client authenticated, User:ANONYMOUS's (only ApiVersions is answered then) */
    public Session session() {
        Session now = session;
        return now != null ? now : new Session(KafkaPrincipal.ANONYMOUS, peer.remote().getAddress(), listener);
    }

    /** @return the largest request taken now */
    public int maxFrameBytes() {
        // The listener's sasl.server.max.receive.size (Kafka's default 512 KiB) until the client has authenticated.
        return state == State.COMPLETE ? Integer.MAX_VALUE : maxUnauthenticatedBytes;
    }

    /** @return true if the next frame is a bare SASL token (after a v0 handshake) */
    public boolean rawTokens() {
        return state == State.RAW_TOKENS;
    }

    /**
     * @return null if a request of this API goes to its handler as usual; else what it comes to (the connection
     *     closed for a request not allowed now, its session expired, or the answer of a SASL request)
     */
    public Step onRequest(ApiKeys key, short version, ApiMessage request) {
        if (state == State.COMPLETE && !reauthenticating) {
            if (key == ApiKeys.SASL_HANDSHAKE && listener.sasl() && version >= 1) {
                return handshake((SaslHandshakeRequestData) request, version, true);
            }
            if (key == ApiKeys.SASL_HANDSHAKE) {
                return new Step(new SaslHandshakeResponseData().setErrorCode(Errors.ILLEGAL_SASL_STATE.code()),
                        false, 0);
            }
            if (key == ApiKeys.SASL_AUTHENTICATE) {
                return new Step(new SaslAuthenticateResponseData().setErrorCode(Errors.ILLEGAL_SASL_STATE.code())
                        .setErrorMessage("SaslAuthenticate request received after successful authentication"),
                        false, 0);
            }
            if (sessionExpires && System.nanoTime() - expiresAt > 0) {
                return new Step(null, true, 0);
            }
            return null;
        }
        switch (state) {
            case HANDSHAKE_OR_VERSIONS, HANDSHAKE -> {
                if (key == ApiKeys.API_VERSIONS && state == State.HANDSHAKE_OR_VERSIONS) {
                    state = State.HANDSHAKE;
                    return null;
                }
                if (key == ApiKeys.SASL_HANDSHAKE) {
                    return handshake((SaslHandshakeRequestData) request, version, false);
                }
                return new Step(null, true, 0);
            }
            case AUTHENTICATE, COMPLETE -> {
                if (key != ApiKeys.SASL_AUTHENTICATE) {
                    return new Step(null, true, 0);
                }
                if (version > 0) {
                    clientReauthenticates = true;
                }
                byte[] token = ((SaslAuthenticateRequestData) request).authBytes();
                try {
                    byte[] answer = evaluate(token);
                    return new Step(new SaslAuthenticateResponseData().setAuthBytes(answer)
                            .setSessionLifetimeMs(server.isComplete() ? completed() : 0), false, 0);
                } catch (SaslAuthenticationException e) {
                    return refused(e.getMessage());
                } catch (SaslException | RuntimeException e) {
                    return refused("Authentication failed during " + (reauthenticating ? "re-authentication"
                            : "authentication") + " due to invalid credentials with SASL mechanism " + mechanism);
                }
            }
            default -> {
                return new Step(null, true, 0);
            }
        }
    }

    /** Answers a bare token (after a v0 handshake): the server's token, or a close when refused. */
    public byte[] rawToken(byte[] token) {
        try {
            byte[] answer = evaluate(token);
            if (server.isComplete()) {
                completed();
            }
            return answer == null ? new byte[0] : answer;
        } catch (SaslException | RuntimeException e) {
            state = State.FAILED;
            return null;
        }
    }

    private byte[] evaluate(byte[] token) throws SaslException {
        byte[] answer = server.evaluateResponse(token);
        if (server.isComplete()) {
            KafkaPrincipal principal = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, server.getAuthorizationID());
            if (reauthenticating && !principal.equals(session.principal())) {
                throw new SaslAuthenticationException("Cannot change principals during re-authentication from "
                        + session.principal() + ": " + principal);
            }
        }
        return answer == null ? new byte[0] : answer;
    }

    /** @return the session's lifetime told to the client (0: none) */
    private long completed() {
        KafkaPrincipal principal = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, server.getAuthorizationID());
        session = new Session(principal, peer.remote().getAddress(), listener);
        state = State.COMPLETE;
        reauthenticating = false;
        // When the credential itself expires (an OAUTHBEARER token), as a Long of milliseconds since the epoch.
        Object credentialExpiry = server.getNegotiatedProperty(
                SaslInternalConfigs.CREDENTIAL_LIFETIME_MS_SASL_NEGOTIATED_PROPERTY_KEY);
        try {
            server.dispose();
        } catch (SaslException e) {
            // nothing held
        }
        long maxReauthMillis = listener.reauthMillis();
        if (credentialExpiry instanceof Long expiresAtMillis) {
            // An expiring credential ends the session whether or not the client can re-authenticate, as in Kafka.
            long lifetime = sessionLifetimeMillis(expiresAtMillis, maxReauthMillis, System.currentTimeMillis());
            expiresAt = System.nanoTime() + lifetime * 1_000_000;
            sessionExpires = true;
            return lifetime;
        }
        if (maxReauthMillis > 0 && clientReauthenticates) {
            expiresAt = System.nanoTime() + maxReauthMillis * 1_000_000;
            sessionExpires = true;
            return maxReauthMillis;
        }
        sessionExpires = false;
        return 0;
    }

    /**
     * Kafka's {@code ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs} for a credential that expires: the
     * credential's remaining life, capped by {@code connections.max.reauth.ms} when that is set; 0 if the credential
     * has already expired (taken within the clock skew allowed), which ends the session at once.
     *
     * @param credentialExpiresAtMillis when the credential expires, in milliseconds since the epoch
     * @param maxReauthMillis connections.max.reauth.ms (0: not set)
     * @param nowMillis the time now, in milliseconds since the epoch
     */
    static long sessionLifetimeMillis(long credentialExpiresAtMillis, long maxReauthMillis, long nowMillis) {
        long remaining = credentialExpiresAtMillis - nowMillis;
        return Math.max(0, maxReauthMillis > 0 ? Math.min(remaining, maxReauthMillis) : remaining);
    }

    private Step refused(String message) {
        // Not HANDSHAKE: the answer is held back (the delay that bounds guesses) while the connection's reader goes
        // on, and a client that pipelined another handshake and password behind the refused one would have them
        // taken, and its requests after them, before the close.
        state = State.FAILED;
        return new Step(new SaslAuthenticateResponseData().setErrorCode(Errors.SASL_AUTHENTICATION_FAILED.code())
                .setErrorMessage(message), true, shared.failedDelayMillis);
    }

    private Step handshake(SaslHandshakeRequestData request, short version, boolean again) {
        List<String> enabled = listener.mechanisms();
        String asked = request.mechanism();
        SaslHandshakeResponseData response = new SaslHandshakeResponseData().setMechanisms(enabled);
        if (!enabled.contains(asked) || again && !asked.equals(mechanism)) {
            return new Step(response.setErrorCode(Errors.UNSUPPORTED_SASL_MECHANISM.code()), true,
                    again ? 0 : shared.failedDelayMillis);
        }
        mechanism = asked;
        server = switch (asked) {
            case "PLAIN" -> new PlainServer(shared.plainUsers.getOrDefault(listener.name(), Map.of()));
            case OAuthBearerServer.MECHANISM -> new OAuthBearerServer(shared.tokenValidators.get(listener.name()));
            default -> new ScramServer(asked, (m, user) -> shared.scram.get().get(m, user));
        };
        reauthenticating = again;
        if (!again) {
            state = version >= 1 ? State.AUTHENTICATE : State.RAW_TOKENS;
        }
        return new Step(response, false, 0);
    }
}

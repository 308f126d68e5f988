package io.sluice.bench.broker;

import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.StringJoiner;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;

/**
 * The listeners of the TLS race, the same on both brokers and written with Kafka's own keys: PLAINTEXT, SSL and
 * SASL_SSL (SCRAM-SHA-512), each on a port of its own on 127.0.0.1, TLS 1.3 only with one cipher suite, the same
 * certificates; and the client settings that reach each. Immutable.
 *
 * @param certificates the broker's key store and the clients' trust store
 * @param user the SCRAM user the SASL_SSL clients log in as
 * @param userPassword that user's password
 */
record SecuredListeners(LabCertificates certificates, String user, String userPassword) {

    /** Every listener, in the order the brokers declare them (PLAINTEXT first: readiness is checked on it). */
    static final List<String> NAMES = List.of("PLAINTEXT", "SSL", "SASL_SSL");
    /** The only protocol either side enables. */
    static final String PROTOCOL = "TLSv1.3";
    /**
     * The only cipher suite either side enables: the JDK's first choice for TLS 1.3, so what both brokers and their
     * clients agree on when nothing is set.
     */
    static final String CIPHER_SUITE = "TLS_AES_256_GCM_SHA384";
    /** The SASL mechanism of the SASL_SSL listener. */
    static final String MECHANISM = "SCRAM-SHA-512";
    /** PBKDF2 iterations of the user's SCRAM credential: Kafka's minimum and kafka-configs' default. */
    static final int SCRAM_ITERATIONS = 4_096;

    /** @return listeners for a race on the given certificates, with a SCRAM user of its own */
    static SecuredListeners of(LabCertificates certificates) {
        return new SecuredListeners(certificates, "bench", "bench-" + Long.toHexString(System.nanoTime()));
    }

    /**
     * @param ports the port of each listener, by name ({@link #NAMES})
     * @return the settings both brokers take, Kafka's keys: the listeners, TLS and SASL (a Kafka broker also needs
     *     its controller's listener, which is not one of these)
     */
    Map<String, String> brokerSettings(Map<String, Integer> ports) {
        Map<String, String> settings = new LinkedHashMap<>();
        StringJoiner listeners = new StringJoiner(",");
        for (String name : NAMES) {
            listeners.add(name + "://127.0.0.1:" + ports.get(name));
        }
        settings.put("listeners", listeners.toString());
        settings.put("ssl.keystore.location", certificates.keyStore().toString());
        settings.put("ssl.keystore.password", certificates.password());
        settings.put("ssl.key.password", certificates.password());
        settings.put("ssl.keystore.type", "PKCS12");
        settings.put("ssl.truststore.location", certificates.trustStore().toString());
        settings.put("ssl.truststore.password", certificates.password());
        settings.put("ssl.truststore.type", "PKCS12");
        settings.put("ssl.protocol", PROTOCOL);
        settings.put("ssl.enabled.protocols", PROTOCOL);
        settings.put("ssl.cipher.suites", CIPHER_SUITE);
        settings.put("ssl.client.auth", "none");
        settings.put("sasl.enabled.mechanisms", MECHANISM);
        settings.put("listener.name.sasl_ssl." + MECHANISM.toLowerCase(Locale.ROOT) + ".sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required;");
        return settings;
    }

    /**
     * @param listener one of {@link #NAMES}
     * @return what a client sets beyond the bootstrap to reach that listener, the same against either broker
     */
    Map<String, Object> clientSettings(String listener) {
        return clientSettings(listener, userPassword);
    }

    /**
     * @param listener one of {@link #NAMES}
     * @param password the password the client logs in with over SASL_SSL (to check that a wrong one is refused)
     * @return what a client sets beyond the bootstrap to reach that listener
     */
    Map<String, Object> clientSettings(String listener, String password) {
        Map<String, Object> settings = new HashMap<>();
        settings.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, listener);
        if (listener.endsWith("SSL")) {
            settings.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, certificates.trustStore().toString());
            settings.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, certificates.password());
            settings.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
            settings.put(SslConfigs.SSL_PROTOCOL_CONFIG, PROTOCOL);
            settings.put(SslConfigs.SSL_ENABLED_PROTOCOLS_CONFIG, PROTOCOL);
            settings.put(SslConfigs.SSL_CIPHER_SUITES_CONFIG, CIPHER_SUITE);
        }
        if (listener.startsWith("SASL")) {
            settings.put(SaslConfigs.SASL_MECHANISM, MECHANISM);
            settings.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.scram.ScramLoginModule"
                    + " required username=\"" + user + "\" password=\"" + password + "\";");
        }
        return settings;
    }
}

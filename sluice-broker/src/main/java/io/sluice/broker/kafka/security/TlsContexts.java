package io.sluice.broker.kafka.security;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.crypto.Cipher;
import javax.crypto.EncryptedPrivateKeyInfo;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A listener's TLS context from Kafka's {@code ssl.*} settings: key stores of type PKCS12, JKS or PEM (a file, or the
 * key and chain given inline in {@code ssl.keystore.key} and {@code ssl.keystore.certificate.chain}), and trust stores
 * alike ({@code ssl.truststore.certificates} inline for PEM).
 */
public final class TlsContexts {

    private static final Pattern PEM = Pattern.compile(
            "-----BEGIN ([A-Z ]+)-----\\s*([A-Za-z0-9+/=\\s]+?)\\s*-----END \\1-----");

    private TlsContexts() {
    }

    /**
     * @param setting a listener's setting by its name without prefix ({@code "ssl.keystore.location"}), or null
     * @return the context, with its key managers (none if no key store is set) and trust managers (the JDK's default
     *     trust if no trust store is set)
     * @throws IllegalArgumentException naming the setting that is wrong
     */
    public static SSLContext build(Function<String, String> setting) {
        try {
            KeyManagerFactory keys = null;
            KeyStore keyStore = keyStore(setting);
            if (keyStore != null) {
                String keyPassword = setting.apply("ssl.key.password");
                if (keyPassword == null) {
                    keyPassword = setting.apply("ssl.keystore.password");
                }
                String type = type(setting, "ssl.keystore.type");
                char[] password = type.equals("PEM") ? PEM_STORE_PASSWORD
                        : keyPassword == null ? null : keyPassword.toCharArray();
                keys = KeyManagerFactory.getInstance(orDefault(setting.apply("ssl.keymanager.algorithm"),
                        KeyManagerFactory.getDefaultAlgorithm()));
                keys.init(keyStore, password);
            }
            TrustManagerFactory trust = null;
            KeyStore trustStore = trustStore(setting);
            if (trustStore != null) {
                trust = TrustManagerFactory.getInstance(orDefault(setting.apply("ssl.trustmanager.algorithm"),
                        TrustManagerFactory.getDefaultAlgorithm()));
                trust.init(trustStore);
            }
            SSLContext context = SSLContext.getInstance(orDefault(setting.apply("ssl.protocol"), "TLSv1.3"));
            context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(),
                    null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalArgumentException("the TLS settings cannot be used: " + e.getMessage(), e);
        }
    }

    private static final char[] PEM_STORE_PASSWORD = new char[0];

    /**
     * A node's key and what it trusts, as loaded key stores (the cluster's Raft ports take them).
     *
     * @param keys the key store, one key entry with its chain
     * @param keyPassword the key's password
     * @param trust the trust store
     */
    public record KeyMaterial(KeyStore keys, char[] keyPassword, KeyStore trust) {
    }

    /**
     * @param setting the settings by name without prefix
     * @return the key and trust stores they name
     * @throws IllegalArgumentException if either is missing or cannot be read
     */
    public static KeyMaterial keyMaterial(Function<String, String> setting) {
        try {
            KeyStore keys = keyStore(setting);
            KeyStore trust = trustStore(setting);
            if (keys == null || trust == null) {
                throw new IllegalArgumentException("mutual TLS needs a key store (ssl.keystore.*) and a trust store"
                        + " (ssl.truststore.*)");
            }
            String keyPassword = setting.apply("ssl.key.password");
            if (keyPassword == null) {
                keyPassword = setting.apply("ssl.keystore.password");
            }
            return new KeyMaterial(keys, type(setting, "ssl.keystore.type").equals("PEM") ? PEM_STORE_PASSWORD
                    : keyPassword == null ? new char[0] : keyPassword.toCharArray(), trust);
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalArgumentException("the TLS settings cannot be used: " + e.getMessage(), e);
        }
    }

    private static String orDefault(String value, String otherwise) {
        return value == null || value.isBlank() ? otherwise : value.trim();
    }

    private static String type(Function<String, String> setting, String key) {
        String type = orDefault(setting.apply(key), "JKS").toUpperCase(Locale.ROOT);
        if (!type.equals("JKS") && !type.equals("PKCS12") && !type.equals("PEM")) {
            throw new IllegalArgumentException(key + " must be JKS, PKCS12 or PEM, was '" + setting.apply(key) + "'");
        }
        return type;
    }

    private static KeyStore keyStore(Function<String, String> setting) throws GeneralSecurityException, IOException {
        String type = type(setting, "ssl.keystore.type");
        String location = setting.apply("ssl.keystore.location");
        String password = setting.apply("ssl.keystore.password");
        if (type.equals("PEM")) {
            String key = setting.apply("ssl.keystore.key");
            String chain = setting.apply("ssl.keystore.certificate.chain");
            String text;
            if (key != null || chain != null) {
                if (key == null || chain == null || location != null) {
                    throw new IllegalArgumentException("a PEM key store is ssl.keystore.key with"
                            + " ssl.keystore.certificate.chain, or ssl.keystore.location, not a mix");
                }
                text = key + "\n" + chain;
            } else if (location != null) {
                text = Files.readString(Path.of(location), StandardCharsets.US_ASCII);
            } else {
                return null;
            }
            if (password != null) {
                throw new IllegalArgumentException("ssl.keystore.password is not taken with a PEM key store"
                        + " (an encrypted key's password is ssl.key.password)");
            }
            return pemKeyStore(text, setting.apply("ssl.key.password"));
        }
        if (location == null) {
            return null;
        }
        KeyStore store = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(Path.of(location))) {
            store.load(in, password == null ? null : password.toCharArray());
        }
        return store;
    }

    private static KeyStore trustStore(Function<String, String> setting) throws GeneralSecurityException, IOException {
        String type = type(setting, "ssl.truststore.type");
        String location = setting.apply("ssl.truststore.location");
        if (type.equals("PEM")) {
            String certificates = setting.apply("ssl.truststore.certificates");
            String text;
            if (certificates != null) {
                if (location != null) {
                    throw new IllegalArgumentException("a PEM trust store is ssl.truststore.certificates or"
                            + " ssl.truststore.location, not both");
                }
                text = certificates;
            } else if (location != null) {
                text = Files.readString(Path.of(location), StandardCharsets.US_ASCII);
            } else {
                return null;
            }
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            int i = 0;
            for (Certificate certificate : certificates(text)) {
                store.setCertificateEntry("ca-" + i++, certificate);
            }
            if (i == 0) {
                throw new IllegalArgumentException("the PEM trust store holds no certificate");
            }
            return store;
        }
        if (location == null) {
            return null;
        }
        String password = setting.apply("ssl.truststore.password");
        KeyStore store = KeyStore.getInstance(type);
        try (InputStream in = Files.newInputStream(Path.of(location))) {
            store.load(in, password == null ? null : password.toCharArray());
        }
        return store;
    }

    private static KeyStore pemKeyStore(String text, String keyPassword) throws GeneralSecurityException,
            IOException {
        PrivateKey key = null;
        Matcher matcher = PEM.matcher(text);
        while (matcher.find()) {
            String kind = matcher.group(1);
            byte[] der = Base64.getMimeDecoder().decode(matcher.group(2));
            if (kind.equals("PRIVATE KEY")) {
                key = privateKey(der);
            } else if (kind.equals("ENCRYPTED PRIVATE KEY")) {
                if (keyPassword == null) {
                    throw new IllegalArgumentException("the PEM key is encrypted and ssl.key.password is not set");
                }
                EncryptedPrivateKeyInfo info = new EncryptedPrivateKeyInfo(der);
                SecretKeyFactory factory = SecretKeyFactory.getInstance(info.getAlgName());
                Cipher cipher = Cipher.getInstance(info.getAlgName());
                cipher.init(Cipher.DECRYPT_MODE, factory.generateSecret(new PBEKeySpec(keyPassword.toCharArray())),
                        info.getAlgParameters());
                key = privateKey(info.getKeySpec(cipher).getEncoded());
            } else if (kind.endsWith("PRIVATE KEY")) {
                throw new IllegalArgumentException("a PEM key must be PKCS#8 (BEGIN PRIVATE KEY or BEGIN ENCRYPTED"
                        + " PRIVATE KEY), was " + kind);
            }
        }
        if (key == null) {
            throw new IllegalArgumentException("the PEM key store holds no private key");
        }
        List<Certificate> chain = certificates(text);
        if (chain.isEmpty()) {
            throw new IllegalArgumentException("the PEM key store holds no certificate");
        }
        KeyStore store = KeyStore.getInstance("PKCS12");
        store.load(null, null);
        store.setKeyEntry("key", key, PEM_STORE_PASSWORD, chain.toArray(new Certificate[0]));
        return store;
    }

    private static PrivateKey privateKey(byte[] pkcs8) throws GeneralSecurityException {
        for (String algorithm : List.of("RSA", "EC", "Ed25519", "Ed448", "DSA")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(pkcs8));
            } catch (GeneralSecurityException e) {
                // try the next algorithm
            }
        }
        throw new GeneralSecurityException("the PEM private key is of no known algorithm");
    }

    private static List<Certificate> certificates(String text) throws GeneralSecurityException {
        CertificateFactory factory = CertificateFactory.getInstance("X.509");
        List<Certificate> certificates = new ArrayList<>();
        Matcher matcher = PEM.matcher(text);
        while (matcher.find()) {
            if (matcher.group(1).equals("CERTIFICATE")) {
                certificates.add(factory.generateCertificate(new ByteArrayInputStream(
                        Base64.getMimeDecoder().decode(matcher.group(2)))));
            }
        }
        return certificates;
    }
}

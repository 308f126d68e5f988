package io.sluice.cluster;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.Key;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.security.TlsConf;

/**
 * What a node needs to speak Raft over mutual TLS: its private key, the certificate chain that goes with it (its own
 * certificate first, then the certificates that signed it up to, at most, the authority the others trust), and the
 * certificates it trusts (the cluster's certificate authority, or each member's own certificate). A node accepts a
 * connection to its Raft port only from a peer whose certificate one of these vouches for, and connects only to peers
 * it vouches for whose certificate names the host the cluster gives them (docs/cluster.md, "Raft over mutual TLS").
 *
 * <p>Built from objects, so that whoever configures the broker reads its key stores (PKCS12, JKS, PEM) as it sees
 * fit; {@link #fromKeyStores} and {@link #fromPkcs12} read the usual two stores. The key is checked to go with the
 * first certificate of the chain, so that a node given another node's certificate fails at its start, not at each
 * handshake.
 *
 * <p>Immutable and thread-safe.
 */
public final class RaftTls {

    private final PrivateKey privateKey;
    private final List<X509Certificate> certificateChain;
    private final List<X509Certificate> trustedCertificates;
    /** Ratis's form of the same, built once: every Raft client of the node takes it. */
    private final GrpcTlsConfig grpcTlsConfig;

    /**
     * @param privateKey the node's private key
     * @param certificateChain the node's certificate, which goes with {@code privateKey}, then those that signed it
     * @param trustedCertificates the certificates a peer's chain must lead to (not empty)
     * @throws IllegalArgumentException naming the argument at fault: one empty or holding null, or a key that does not
     *     go with the chain's first certificate
     */
    public RaftTls(PrivateKey privateKey, List<X509Certificate> certificateChain,
                   List<X509Certificate> trustedCertificates) {
        this.privateKey = Objects.requireNonNull(privateKey, "privateKey");
        this.certificateChain = checked("certificateChain", certificateChain);
        this.trustedCertificates = checked("trustedCertificates", trustedCertificates);
        checkPair(privateKey, certificateChain.getFirst());
        this.grpcTlsConfig = GrpcTlsConfig.newBuilder().setName("raft")
                .setPrivateKey(new TlsConf.PrivateKeyConf(privateKey))
                .setKeyCertificates(new TlsConf.CertificatesConf(this.certificateChain))
                .setTrustCertificates(new TlsConf.CertificatesConf(this.trustedCertificates))
                .setMutualTls(true)
                .build();
    }

    /**
     * @param keyStore a store holding exactly one private key entry: the node's key and its certificate chain
     * @param keyPassword that entry's password
     * @param trustStore a store whose trusted certificate entries are the certificates the node trusts
     * @return the node's TLS material from them
     * @throws GeneralSecurityException if the key cannot be recovered
     * @throws IllegalArgumentException if the key store holds no private key or more than one, or the trust store no
     *     trusted certificate, or as {@link #RaftTls}
     */
    public static RaftTls fromKeyStores(KeyStore keyStore, char[] keyPassword, KeyStore trustStore)
            throws GeneralSecurityException {
        List<String> keys = new ArrayList<>();
        for (String alias : Collections.list(keyStore.aliases())) {
            if (keyStore.isKeyEntry(alias)) {
                keys.add(alias);
            }
        }
        if (keys.size() != 1) {
            throw new IllegalArgumentException("the Raft key store must hold exactly one private key; it holds "
                    + keys.size() + " " + keys);
        }
        String alias = keys.getFirst();
        Key key = keyStore.getKey(alias, keyPassword);
        if (!(key instanceof PrivateKey privateKey)) {
            throw new IllegalArgumentException("the Raft key store's entry '" + alias + "' is no private key");
        }
        Certificate[] chain = keyStore.getCertificateChain(alias);
        List<X509Certificate> certificates = new ArrayList<>();
        for (Certificate certificate : chain == null ? new Certificate[0] : chain) {
            certificates.add(x509(certificate, "the Raft key store's entry '" + alias + "'"));
        }
        List<X509Certificate> trusted = new ArrayList<>();
        for (String name : Collections.list(trustStore.aliases())) {
            if (trustStore.isCertificateEntry(name)) {
                trusted.add(x509(trustStore.getCertificate(name), "the Raft trust store's entry '" + name + "'"));
            }
        }
        if (trusted.isEmpty()) {
            throw new IllegalArgumentException("the Raft trust store holds no trusted certificate");
        }
        return new RaftTls(privateKey, certificates, trusted);
    }

    /**
     * Reads a PKCS12 key store and trust store, the key's password being its store's, as Java's tools write them.
     *
     * @param keyStore the node's key store: one private key entry and its certificate chain
     * @param keyStorePassword its password
     * @param trustStore the trust store: the certificates the node trusts
     * @param trustStorePassword its password
     * @return the node's TLS material from them
     * @throws IOException naming the file, if a store cannot be read, or its key recovered, with its password
     * @throws IllegalArgumentException as {@link #fromKeyStores}
     */
    public static RaftTls fromPkcs12(Path keyStore, char[] keyStorePassword, Path trustStore,
                                     char[] trustStorePassword) throws IOException {
        KeyStore keys = pkcs12(keyStore, keyStorePassword);
        KeyStore trusted = pkcs12(trustStore, trustStorePassword);
        try {
            return fromKeyStores(keys, keyStorePassword, trusted);
        } catch (GeneralSecurityException e) {
            throw new IOException("cannot read the private key of the Raft key store " + keyStore + ": "
                    + e.getMessage(), e);
        }
    }

    /** @return the node's private key */
    public PrivateKey privateKey() {
        return privateKey;
    }

    /** @return the node's certificate, then those that signed it */
    public List<X509Certificate> certificateChain() {
        return certificateChain;
    }

    /** @return the certificates a peer's chain must lead to */
    public List<X509Certificate> trustedCertificates() {
        return trustedCertificates;
    }

    /**
     * @return the same for Ratis's gRPC transport, with mutual TLS on: the server asks every connecting peer for its
     *     certificate, and every client presents the node's
     */
    GrpcTlsConfig grpcTlsConfig() {
        return grpcTlsConfig;
    }

    /** Names the node's certificate and the trusted ones, never the key. */
    @Override
    public String toString() {
        return "RaftTls[" + certificateChain.getFirst().getSubjectX500Principal().getName() + ", trusting "
                + trustedCertificates.stream().map(c -> c.getSubjectX500Principal().getName()).toList() + "]";
    }

    private static List<X509Certificate> checked(String name, List<X509Certificate> certificates) {
        Objects.requireNonNull(certificates, name);
        if (certificates.isEmpty() || certificates.stream().anyMatch(Objects::isNull)) {
            throw new IllegalArgumentException(name + " must name at least one certificate, and no null");
        }
        return List.copyOf(certificates);
    }

    private static X509Certificate x509(Certificate certificate, String where) {
        if (!(certificate instanceof X509Certificate x509)) {
            throw new IllegalArgumentException(where + " is no X.509 certificate");
        }
        return x509;
    }

    private static KeyStore pkcs12(Path path, char[] password) throws IOException {
        try (InputStream in = Files.newInputStream(path)) {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(in, password);
            return store;
        } catch (IOException | GeneralSecurityException e) {
            throw new IOException("cannot read the PKCS12 store " + path + ": " + e.getMessage(), e);
        }
    }

    /**
     * Signs a few bytes with the key and verifies them with the certificate's public key. A TLS peer would refuse
     * the pair at each handshake, as an error about the handshake, not about the node's configuration.
     */
    private static void checkPair(PrivateKey key, X509Certificate certificate) {
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            case "EdDSA", "Ed25519", "Ed448" -> key.getAlgorithm();
            default -> null;
        };
        String mismatch = "privateKey does not go with the first certificate of certificateChain ("
                + certificate.getSubjectX500Principal().getName() + ")";
        if (algorithm == null) {
            if (!key.getAlgorithm().equals(certificate.getPublicKey().getAlgorithm())) {
                throw new IllegalArgumentException(mismatch);
            }
            return;
        }
        byte[] probe = "sluice raft tls".getBytes(StandardCharsets.US_ASCII);
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(probe);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(certificate.getPublicKey());
            verifier.update(probe);
            if (!verifier.verify(signature)) {
                throw new IllegalArgumentException(mismatch);
            }
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException(mismatch + ": " + e.getMessage(), e);
        }
    }
}

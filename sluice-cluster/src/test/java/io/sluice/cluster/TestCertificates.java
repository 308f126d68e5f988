package io.sluice.cluster;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A certificate authority for tests and the keys it signs, made by the JDK's keytool (the JDK has no API that builds
 * a certificate) in PKCS12 stores under a directory, all with the password {@link #PASSWORD}. Each signed
 * certificate names 127.0.0.1 and localhost, where the test clusters listen, and serves both ends of a TLS
 * connection, as a node's does. Valid for two days.
 */
final class TestCertificates {

    /** The password of every store made here. */
    static final String PASSWORD = "test-password";

    private final Path directory;
    private final String authority;

    private TestCertificates(Path directory, String authority) {
        this.directory = directory;
        this.authority = authority;
    }

    /**
     * Makes a certificate authority, its key store {@code <name>-ca.p12} and a trust store holding its certificate
     * alone, {@code <name>-trust.p12}.
     */
    static TestCertificates authority(Path directory, String name) throws IOException {
        TestCertificates certificates = new TestCertificates(directory, name);
        certificates.keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1",
                "-dname", "CN=" + name + " test authority", "-ext", "bc:c", "-validity", "2",
                "-keystore", certificates.authorityStore().toString());
        certificates.keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore",
                certificates.authorityStore().toString(), "-file", certificates.authorityCertificate().toString());
        certificates.keytool("-importcert", "-noprompt", "-alias", "ca", "-file",
                certificates.authorityCertificate().toString(), "-keystore", certificates.trustStore().toString());
        return certificates;
    }

    /** @return the trust store: this authority's certificate */
    Path trustStore() {
        return directory.resolve(authority + "-trust.p12");
    }

    /** @return this authority's certificate, PEM */
    Path authorityCertificate() {
        return directory.resolve(authority + "-ca.pem");
    }

    private Path authorityStore() {
        return directory.resolve(authority + "-ca.p12");
    }

    /**
     * Makes a key and a certificate this authority signs for it, in the key store {@code <owner>.p12}: its one
     * private key entry, with the chain of the certificate and the authority's.
     *
     * @return the key store
     */
    Path signedKeyStore(String owner) throws IOException {
        Path store = directory.resolve(owner + ".p12");
        Path request = directory.resolve(owner + ".csr");
        Path signed = directory.resolve(owner + ".pem");
        keytool("-genkeypair", "-alias", "key", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + owner,
                "-validity", "2", "-keystore", store.toString());
        keytool("-certreq", "-alias", "key", "-keystore", store.toString(), "-file", request.toString());
        keytool("-gencert", "-rfc", "-alias", "ca", "-keystore", authorityStore().toString(), "-infile",
                request.toString(), "-outfile", signed.toString(), "-validity", "2",
                "-ext", "san=ip:127.0.0.1,dns:localhost", "-ext", "ku:c=digitalSignature,keyAgreement",
                "-ext", "eku=serverAuth,clientAuth");
        // The reply carries the chain up to the authority, which keytool then needs nowhere else.
        Path chain = directory.resolve(owner + "-chain.pem");
        Files.writeString(chain, Files.readString(signed, StandardCharsets.US_ASCII)
                + Files.readString(authorityCertificate(), StandardCharsets.US_ASCII), StandardCharsets.US_ASCII);
        keytool("-importcert", "-noprompt", "-alias", "key", "-file", chain.toString(), "-keystore",
                store.toString());
        return store;
    }

    /** @return the TLS of a node whose key this authority signed, trusting this authority */
    RaftTls raftTls(String owner) throws IOException {
        return RaftTls.fromPkcs12(signedKeyStore(owner), PASSWORD.toCharArray(), trustStore(),
                PASSWORD.toCharArray());
    }

    private void keytool(String... arguments) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        // A short-lived JVM each: the first compiler tier and the serial collector cost the shared cores least.
        command.addAll(List.of("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"));
        command.addAll(List.of(arguments));
        command.addAll(List.of("-storetype", "PKCS12", "-storepass", PASSWORD));
        Process process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true)
                .start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IOException("keytool " + String.join(" ", arguments) + " failed: " + output);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted waiting for keytool", e);
        }
    }
}

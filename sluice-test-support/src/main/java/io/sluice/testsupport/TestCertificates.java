package io.sluice.testsupport;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Key and trust stores for TLS tests, made with the JDK's keytool: a certificate authority, and certificates it signs
 * (EC P-256, valid for 127.0.0.1 and localhost), in PKCS12 files, with PEM copies of the certificates.
 */
public final class TestCertificates {

    public static final String PASSWORD = "test-password";

    private final Path dir;
    private final String ca;

    /** Makes a certificate authority named {@code ca} in {@code dir}. */
    public TestCertificates(Path dir, String ca) throws IOException, InterruptedException {
        this.dir = dir;
        this.ca = ca;
        Files.createDirectories(dir);
        keytool("-genkeypair", "-alias", ca, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=" + ca,
                "-ext", "bc:c", "-validity", "30", "-keystore", store(ca).toString(), "-storetype", "PKCS12",
                "-storepass", PASSWORD);
        keytool("-exportcert", "-rfc", "-alias", ca, "-keystore", store(ca).toString(), "-storepass", PASSWORD,
                "-file", pem(ca).toString());
        keytool("-importcert", "-noprompt", "-alias", ca, "-file", pem(ca).toString(), "-keystore",
                trustStore().toString(), "-storetype", "PKCS12", "-storepass", PASSWORD);
    }

    /** @return the PKCS12 trust store holding this authority's certificate */
    public Path trustStore() {
        return dir.resolve(ca + "-trust.p12");
    }

    /** @return the authority's certificate, PEM */
    public Path caPem() {
        return pem(ca);
    }

    /**
     * Makes a key store holding a key and its certificate signed by this authority, with the chain.
     *
     * @param name the file's name and the key's alias
     * @param distinguishedName the certificate's subject
     * @return the PKCS12 key store
     */
    public Path sign(String name, String distinguishedName) throws IOException, InterruptedException {
        Path store = store(name);
        keytool("-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                distinguishedName, "-validity", "30", "-keystore", store.toString(), "-storetype", "PKCS12",
                "-storepass", PASSWORD);
        Path request = dir.resolve(name + ".csr");
        keytool("-certreq", "-alias", name, "-keystore", store.toString(), "-storepass", PASSWORD, "-file",
                request.toString());
        Path signed = dir.resolve(name + ".crt");
        keytool("-gencert", "-alias", ca, "-keystore", store(ca).toString(), "-storepass", PASSWORD, "-infile",
                request.toString(), "-outfile", signed.toString(), "-rfc", "-validity", "30", "-ext",
                "SAN=ip:127.0.0.1,dns:localhost", "-ext", "ku:c=digitalSignature,keyAgreement", "-ext",
                "eku=serverAuth,clientAuth");
        // The reply holds the whole chain, so the key store keeps one entry: the key with its chain.
        Path chain = dir.resolve(name + "-chain.pem");
        Files.writeString(chain, Files.readString(signed) + Files.readString(pem(ca)));
        keytool("-importcert", "-noprompt", "-alias", name, "-file", chain.toString(), "-keystore",
                store.toString(), "-storepass", PASSWORD);
        return store;
    }

    /**
     * Writes the key and certificate chain of a key store {@link #sign} made as PEM files, for clients that take
     * no PKCS12 (kafka-python, franz-go): {@code <name>-key.pem} (PKCS#8, unencrypted) and {@code <name>-chain.pem}
     * (the certificate, then its authority's).
     *
     * @param name the key store's name, as given to {@link #sign}
     * @return the key's file; the chain's is beside it
     */
    public Path pemKeyAndChain(String name) throws java.security.GeneralSecurityException, IOException {
        java.security.KeyStore keys = java.security.KeyStore.getInstance("PKCS12");
        try (var in = Files.newInputStream(store(name))) {
            keys.load(in, PASSWORD.toCharArray());
        }
        java.util.Base64.Encoder base64 = java.util.Base64.getMimeEncoder(64, "\n".getBytes());
        java.security.Key key = keys.getKey(name, PASSWORD.toCharArray());
        Path keyFile = dir.resolve(name + "-key.pem");
        Files.writeString(keyFile, "-----BEGIN PRIVATE KEY-----\n" + base64.encodeToString(key.getEncoded())
                + "\n-----END PRIVATE KEY-----\n");
        StringBuilder chain = new StringBuilder();
        for (java.security.cert.Certificate certificate : keys.getCertificateChain(name)) {
            chain.append("-----BEGIN CERTIFICATE-----\n").append(base64.encodeToString(certificate.getEncoded()))
                    .append("\n-----END CERTIFICATE-----\n");
        }
        Files.writeString(dir.resolve(name + "-chain.pem"), chain);
        return keyFile;
    }

    private Path store(String name) {
        return dir.resolve(name + ".p12");
    }

    private Path pem(String name) {
        return dir.resolve(name + ".pem");
    }

    private static void keytool(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        // A short-lived JVM each: the first compiler tier and the serial collector cost the shared cores least.
        command.addAll(List.of("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"));
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new IOException("keytool " + String.join(" ", args) + " failed: " + output);
        }
    }
}

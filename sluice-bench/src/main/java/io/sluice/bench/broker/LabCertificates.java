package io.sluice.bench.broker;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A certificate authority and one broker certificate it signs, made at run time with the JDK's keytool in a run's
 * scratch directory: EC P-256 keys, the broker's certificate valid for 127.0.0.1 and localhost, a PKCS12 key store
 * (the key with its chain) and a PKCS12 trust store (the authority's certificate). Both brokers of a race get the same
 * files. The same steps as the tests' {@code io.sluice.testsupport.TestCertificates}, which the lab cannot use: that
 * module is for tests only.
 *
 * @param keyStore the broker's key and chain
 * @param trustStore the authority's certificate, for clients
 * @param password both stores' password (and the key's)
 */
record LabCertificates(Path keyStore, Path trustStore, String password) {

    private static final String AUTHORITY = "sluice-bench-ca";
    private static final String BROKER = "broker";

    /**
     * Makes the authority and the broker's certificate in {@code dir}.
     *
     * @param dir a directory of the run's own (created if absent)
     */
    static LabCertificates make(Path dir) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        String password = "bench-" + Long.toHexString(System.nanoTime());
        Path authority = dir.resolve(AUTHORITY + ".p12");
        Path authorityPem = dir.resolve(AUTHORITY + ".pem");
        Path trustStore = dir.resolve(AUTHORITY + "-trust.p12");
        Path keyStore = dir.resolve(BROKER + ".p12");
        keytool("-genkeypair", "-alias", AUTHORITY, "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=" + AUTHORITY, "-ext", "bc:c", "-validity", "2", "-keystore", authority.toString(), "-storetype",
                "PKCS12", "-storepass", password);
        keytool("-exportcert", "-rfc", "-alias", AUTHORITY, "-keystore", authority.toString(), "-storepass",
                password, "-file", authorityPem.toString());
        keytool("-importcert", "-noprompt", "-alias", AUTHORITY, "-file", authorityPem.toString(), "-keystore",
                trustStore.toString(), "-storetype", "PKCS12", "-storepass", password);
        keytool("-genkeypair", "-alias", BROKER, "-keyalg", "EC", "-groupname", "secp256r1", "-dname",
                "CN=broker,O=Sluice bench", "-validity", "2", "-keystore", keyStore.toString(), "-storetype", "PKCS12",
                "-storepass", password);
        Path request = dir.resolve(BROKER + ".csr");
        keytool("-certreq", "-alias", BROKER, "-keystore", keyStore.toString(), "-storepass", password, "-file",
                request.toString());
        Path signed = dir.resolve(BROKER + ".crt");
        keytool("-gencert", "-alias", AUTHORITY, "-keystore", authority.toString(), "-storepass", password,
                "-infile", request.toString(), "-outfile", signed.toString(), "-rfc", "-validity", "2", "-ext",
                "SAN=ip:127.0.0.1,dns:localhost", "-ext", "ku:c=digitalSignature,keyAgreement", "-ext",
                "eku=serverAuth,clientAuth");
        // The reply holds the whole chain, so the key store keeps one entry: the key with its chain.
        Path chain = dir.resolve(BROKER + "-chain.pem");
        Files.writeString(chain, Files.readString(signed) + Files.readString(authorityPem));
        keytool("-importcert", "-noprompt", "-alias", BROKER, "-file", chain.toString(), "-keystore",
                keyStore.toString(), "-storepass", password);
        return new LabCertificates(keyStore, trustStore, password);
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
            process.destroyForcibly();
            throw new IOException("keytool " + args[0] + " failed: " + output);
        }
    }
}

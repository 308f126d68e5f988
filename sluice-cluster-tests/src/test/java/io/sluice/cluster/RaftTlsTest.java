package io.sluice.cluster;

import io.sluice.testsupport.TestCertificates;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's Raft TLS material: read from PKCS12 stores as keytool writes them, handed to Ratis with mutual TLS on, and
 * refused, naming what is wrong, where it could only fail at each handshake.
 */
class RaftTlsTest {

    @TempDir
    static Path dir;

    private static TestCertificates authority;
    private static RaftTls one;
    private static RaftTls two;

    @BeforeAll
    static void makeCertificates() throws Exception {
        authority = new TestCertificates(dir, "cluster");
        one = RaftTlsTest.raftTls(authority, "node-1");
        two = RaftTlsTest.raftTls(authority, "node-2");
    }

    /** @return the TLS of a node whose key {@code authority} signed, trusting that authority */
    static RaftTls raftTls(TestCertificates authority, String owner) throws IOException {
        try {
            return RaftTls.fromPkcs12(authority.sign(owner, "CN=" + owner), TestCertificates.PASSWORD.toCharArray(),
                    authority.trustStore(), TestCertificates.PASSWORD.toCharArray());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    @Test
    void aPkcs12KeyStoreGivesTheKeyItsChainAndTheTrustStoreTheAuthority() {
        assertThat(one.certificateChain()).hasSize(2);
        assertThat(one.certificateChain().getFirst().getSubjectX500Principal().getName()).isEqualTo("CN=node-1");
        assertThat(one.certificateChain().get(1).getSubjectX500Principal().getName())
                .isEqualTo("CN=cluster");
        assertThat(one.trustedCertificates()).containsExactly(one.certificateChain().get(1));
        assertThat(one.privateKey().getAlgorithm()).isEqualTo("EC");
        assertThat(one.toString()).contains("CN=node-1", "CN=cluster")
                .doesNotContainIgnoringCase("private");
    }

    @Test
    void ratisIsGivenMutualTlsWithTheSameMaterial() {
        var config = one.grpcTlsConfig();
        assertThat(config.isMutualTls()).isTrue();
        assertThat(config.isFileBasedConfig()).isFalse();
        assertThat(config.getPrivateKey()).isSameAs(one.privateKey());
        assertThat(config.getKeyManager().getKeyCertificates().get()).containsExactlyElementsOf(one.certificateChain());
        assertThat(config.getTrustStore()).containsExactlyElementsOf(one.trustedCertificates());
        assertThat(GrpcConfigKeys.TLS.conf(RaftSettings.parameters(one))).isSameAs(config);
        assertThat(GrpcConfigKeys.TLS.conf(RaftSettings.parameters(null))).isNull();
    }

    @Test
    void aKeyThatDoesNotGoWithTheCertificateIsRefused() {
        assertThatThrownBy(() -> new RaftTls(one.privateKey(), two.certificateChain(), one.trustedCertificates()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("privateKey does not go with the first certificate of certificateChain")
                .hasMessageContaining("CN=node-2");
    }

    @Test
    void missingCertificatesAreRefusedByName() {
        assertThatThrownBy(() -> new RaftTls(one.privateKey(), List.of(), one.trustedCertificates()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("certificateChain");
        assertThatThrownBy(() -> new RaftTls(one.privateKey(), one.certificateChain(), List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("trustedCertificates");
        assertThatThrownBy(() -> new RaftTls(null, one.certificateChain(), one.trustedCertificates()))
                .isInstanceOf(NullPointerException.class).hasMessage("privateKey");
    }

    @Test
    void aWrongPasswordNamesTheStore() {
        Path keyStore = dir.resolve("node-1.p12"); // made by raftTls above
        assertThatThrownBy(() -> RaftTls.fromPkcs12(keyStore, "wrong".toCharArray(), authority.trustStore(),
                TestCertificates.PASSWORD.toCharArray()))
                .isInstanceOf(IOException.class).hasMessageContaining(keyStore.toString());
    }

    @Test
    void aTrustStoreWithoutTrustedCertificatesIsRefused() {
        // A key store holds a key entry and no trusted certificate entry.
        Path keyStore = dir.resolve("node-1.p12"); // made by raftTls above
        char[] password = TestCertificates.PASSWORD.toCharArray();
        assertThatThrownBy(() -> RaftTls.fromPkcs12(keyStore, password, keyStore, password))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no trusted certificate");
    }
}

package io.sluice.bench.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;

class BrokersTest {

    /**
     * The ports of one cluster are picked together and differ: one port at a time, each socket closed before the next
     * was opened, the kernel could hand the same port out twice, and a cluster race failed at start on a cluster string
     * naming one address twice.
     */
    @Test
    void portsPickedTogetherAllDiffer() throws Exception {
        int[] ports = Brokers.freePorts(500);

        assertThat(ports).hasSize(500);
        assertThat(Arrays.stream(ports).min().orElseThrow()).isPositive();
        assertThat(Arrays.stream(ports).distinct().count()).isEqualTo(500);
    }

    /** Each listener is measured first in one round of three, last in another. */
    @Test
    void theListenersOrderTurnsFromRoundToRound() {
        assertThat(TlsRaceRun.turned(SecuredListeners.NAMES, 0)).containsExactly("PLAINTEXT", "SSL", "SASL_SSL");
        assertThat(TlsRaceRun.turned(SecuredListeners.NAMES, 1)).containsExactly("SSL", "SASL_SSL", "PLAINTEXT");
        assertThat(TlsRaceRun.turned(SecuredListeners.NAMES, 2)).containsExactly("SASL_SSL", "PLAINTEXT", "SSL");
        assertThat(TlsRaceRun.turned(SecuredListeners.NAMES, 3)).containsExactly("PLAINTEXT", "SSL", "SASL_SSL");
    }

    /** Both brokers get one set of Kafka keys, and every client the same pins: TLS 1.3, one suite, SCRAM-SHA-512. */
    @Test
    void securedListenersPinTheSameProtocolAndSuiteOnBothSides() {
        SecuredListeners listeners = new SecuredListeners(new LabCertificates(Path.of("/k.p12"), Path.of("/t.p12"),
                "secret"), "bench", "pw");

        Map<String, String> broker = listeners.brokerSettings(Map.of("PLAINTEXT", 1001, "SSL", 1002, "SASL_SSL",
                1003));

        assertThat(broker).containsEntry("listeners",
                "PLAINTEXT://127.0.0.1:1001,SSL://127.0.0.1:1002,SASL_SSL://127.0.0.1:1003")
                .containsEntry("ssl.enabled.protocols", "TLSv1.3").containsEntry("ssl.protocol", "TLSv1.3")
                .containsEntry("ssl.cipher.suites", "TLS_AES_256_GCM_SHA384")
                .containsEntry("sasl.enabled.mechanisms", "SCRAM-SHA-512")
                .containsKey("listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config");
        assertThat(listeners.clientSettings("PLAINTEXT")).isEqualTo(Map.of("security.protocol", "PLAINTEXT"));
        assertThat(listeners.clientSettings("SSL")).containsEntry("ssl.enabled.protocols", "TLSv1.3")
                .containsEntry("ssl.cipher.suites", "TLS_AES_256_GCM_SHA384")
                .containsEntry("ssl.truststore.location", "/t.p12").doesNotContainKey("sasl.mechanism");
        assertThat(listeners.clientSettings("SASL_SSL")).containsEntry("sasl.mechanism", "SCRAM-SHA-512")
                .containsEntry("ssl.cipher.suites", "TLS_AES_256_GCM_SHA384");
        assertThat((String) listeners.clientSettings("SASL_SSL").get("sasl.jaas.config"))
                .contains("username=\"bench\" password=\"pw\"");
        assertThat(SecuredListeners.NAMES.getFirst()).isEqualTo("PLAINTEXT");
    }
}

package io.sluice.bench.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
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
}

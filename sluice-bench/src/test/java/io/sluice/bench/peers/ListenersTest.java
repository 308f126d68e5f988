package io.sluice.bench.peers;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/** The listener check that guards the RocketMQ race sees a wildcard listener and passes a loopback one. */
class ListenersTest {

    @Test
    void wildcardListenerIsFoundAndLoopbackIsNot() throws Exception {
        try (ServerSocket loopback = new ServerSocket()) {
            loopback.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            assertThat(Listeners.beyondLoopback()).noneMatch(a -> a.endsWith(":" + loopback.getLocalPort()));
            try (ServerSocket wildcard = new ServerSocket(0)) {
                assertThat(Listeners.beyondLoopback()).anyMatch(a -> a.endsWith(":" + wildcard.getLocalPort()));
            }
        }
    }

    @Test
    void loopbackAddressesInTheKernelsHexForm() {
        assertThat(Listeners.loopback("0100007F")).isTrue();
        assertThat(Listeners.loopback("00000000")).isFalse();
        assertThat(Listeners.loopback("00000000000000000000000001000000")).isTrue();
        assertThat(Listeners.loopback("00000000000000000000000000000000")).isFalse();
    }
}

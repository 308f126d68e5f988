package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.net.FrameServer;
import io.sluice.broker.net.Outbound;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/** Clients that announce large requests and send nothing cannot hold the broker's room for requests. */
class FrameServerLimitsTest {

    @Test
    void silentClientsHoldingTheQueuedBytesAreClosedAndOthersServed() throws Exception {
        // 1 MiB frames, 2 MiB of queued request bytes, 1 s to send a body once its size has come.
        FrameServer.Limits limits = new FrameServer.Limits(1 << 20, 10, 8, 2 << 20, 600_000, 120_000, 1_000);
        try (FrameServer server = new FrameServer(new InetSocketAddress("127.0.0.1", 0), frame -> {
            ByteBuffer echo = ByteBuffer.allocate(4 + frame.remaining()).putInt(frame.remaining()).put(frame).flip();
            return CompletableFuture.completedFuture(Outbound.of(echo));
        }, limits);
             Socket silent1 = new Socket("127.0.0.1", server.port());
             Socket silent2 = new Socket("127.0.0.1", server.port());
             Socket polite = new Socket("127.0.0.1", server.port())) {
            // Each silent client claims a 1 MiB request and sends none of it: together all the room there is.
            new DataOutputStream(silent1.getOutputStream()).writeInt(1 << 20);
            new DataOutputStream(silent2.getOutputStream()).writeInt(1 << 20);
            Thread.sleep(200);
            polite.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(polite.getOutputStream());
            out.writeInt(2_000);
            out.write(new byte[2_000]);
            long start = System.nanoTime();
            DataInputStream in = new DataInputStream(polite.getInputStream());
            assertThat(in.readInt()).isEqualTo(2_000);
            in.readFully(new byte[2_000]);
            assertThat((System.nanoTime() - start) / 1e9).as("served once the silent ones were closed").isLessThan(8);
            // The silent connections were closed.
            silent1.setSoTimeout(5_000);
            assertThat(silent1.getInputStream().read()).isEqualTo(-1);
        }
    }
}

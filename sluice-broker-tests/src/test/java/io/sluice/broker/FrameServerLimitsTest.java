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

/**
 * Clients that announce large requests and send nothing cannot hold the broker's room for requests, and requests
 * that compute for long do not stop other connections.
 */
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

    @Test
    void requestsThatComputeForLongDoNotStopOtherConnections() throws Exception {
        // A request whose first byte is 1 computes for 3 s (as a hostile or very large request might); others echo.
        // As many such requests run at once as the machine has cores.
        int cores = Runtime.getRuntime().availableProcessors();
        FrameServer.Limits limits = FrameServer.Limits.of(1 << 20, cores + 10);
        try (FrameServer server = new FrameServer(new InetSocketAddress("127.0.0.1", 0), frame -> {
            if (frame.get(frame.position()) == 1) {
                long until = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(3);
                long spins = 0;
                while (System.nanoTime() < until) {
                    spins++;
                }
                return CompletableFuture.completedFuture(Outbound.of(ByteBuffer.allocate(12).putInt(8).putLong(spins)
                        .flip()));
            }
            ByteBuffer echo = ByteBuffer.allocate(4 + frame.remaining()).putInt(frame.remaining()).put(frame).flip();
            return CompletableFuture.completedFuture(Outbound.of(echo));
        }, limits)) {
            java.util.List<Socket> busy = new java.util.ArrayList<>();
            try (Socket honest = new Socket("127.0.0.1", server.port())) {
                for (int i = 0; i < cores; i++) {
                    Socket socket = new Socket("127.0.0.1", server.port());
                    busy.add(socket);
                    DataOutputStream out = new DataOutputStream(socket.getOutputStream());
                    out.writeInt(1);
                    out.write(1);
                }
                Thread.sleep(300); // the busy requests are computing
                honest.setSoTimeout(10_000);
                DataOutputStream out = new DataOutputStream(honest.getOutputStream());
                DataInputStream in = new DataInputStream(honest.getInputStream());
                long start = System.nanoTime();
                out.writeInt(1);
                out.write(2);
                assertThat(in.readInt()).isEqualTo(1);
                assertThat(in.read()).isEqualTo(2);
                double seconds = (System.nanoTime() - start) / 1e9;
                assertThat(seconds).as("answered while %d requests computed for 3 s", cores).isLessThan(1.5);
            } finally {
                for (Socket socket : busy) {
                    socket.close();
                }
            }
        }
    }
}

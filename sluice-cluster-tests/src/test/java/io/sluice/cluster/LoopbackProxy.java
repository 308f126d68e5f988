package io.sluice.cluster;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP forwarder on 127.0.0.1 in front of one node's Raft port, standing for the network to that node. {@link #cut}
 * makes it a black hole, as a partition that isolates the node would: bytes are read and dropped, so senders see
 * silence, not errors. {@link #heal} resets the connections that lived through the cut (what was dropped cannot be
 * delivered late) and forwards again. Threads are virtual; closing stops everything.
 */
final class LoopbackProxy implements AutoCloseable {

    private final ServerSocket listener;
    private final int target;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private volatile boolean cut;
    private volatile boolean closed;

    LoopbackProxy(int target) throws IOException {
        this.target = target;
        this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().name("proxy-" + port()).start(this::accept);
    }

    int port() {
        return listener.getLocalPort();
    }

    /** From now on every byte through the proxy, either way, is dropped. */
    void cut() {
        cut = true;
    }

    /** Resets every connection open now and forwards again. */
    void heal() {
        for (Socket socket : open) {
            closeQuietly(socket);
        }
        cut = false;
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket();
                try {
                    server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target), 2000);
                } catch (IOException e) {
                    closeQuietly(client);
                    closeQuietly(server);
                    continue;
                }
                open.add(client);
                open.add(server);
                Thread.ofVirtual().start(() -> pump(client, server));
                Thread.ofVirtual().start(() -> pump(server, client));
            } catch (IOException e) {
                if (!closed) {
                    continue;
                }
                return;
            }
        }
    }

    private void pump(Socket from, Socket to) {
        byte[] buffer = new byte[64 * 1024];
        try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                if (!cut) {
                    out.write(buffer, 0, n);
                }
            }
        } catch (IOException e) {
            // the other side went, or the proxy cut it
        } finally {
            closeQuietly(from);
            closeQuietly(to);
            open.remove(from);
            open.remove(to);
        }
    }

    private static void closeQuietly(Socket socket) {
        try {
            socket.close();
        } catch (IOException e) {
            // closing anyway
        }
    }

    @Override
    public void close() throws IOException {
        closed = true;
        listener.close();
        for (Socket socket : open) {
            closeQuietly(socket);
        }
    }
}

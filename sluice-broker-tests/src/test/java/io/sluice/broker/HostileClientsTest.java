package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.net.AcceptRates;
import io.sluice.broker.net.FrameHandler;
import io.sluice.broker.net.FrameServer;
import io.sluice.broker.net.Outbound;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Clients that misbehave on purpose, over real sockets, while an honest one is served: a request whose parsing would
 * take the broker's heap (a broker in a process with a 256 MiB heap), a size header left unfinished, more connections
 * from one address than it may have, and a client that asks and never reads its answers.
 */
class HostileClientsTest {

    @TempDir
    Path dir;

    private Process process;

    @AfterEach
    void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    /** A Metadata v1 request naming {@code topics} distinct topics of one to three letters, as its frame. */
    private static byte[] metadataBomb(int topics) {
        ByteBuffer body = ByteBuffer.allocate(64 + topics * 6);
        body.putShort((short) 3).putShort((short) 1).putInt(7).putShort((short) 4).put("bomb".getBytes());
        body.putInt(topics);
        for (int i = 0; i < topics; i++) {
            String name = Integer.toString(i, 36);
            body.putShort((short) name.length()).put(name.getBytes(StandardCharsets.US_ASCII));
        }
        body.flip();
        ByteBuffer frame = ByteBuffer.allocate(4 + body.remaining()).putInt(body.remaining()).put(body);
        return frame.array();
    }

    @Test
    void requestsThatWouldTakeTheHeapOnceParsedLeaveTheBrokerUpForHonestClients() throws Exception {
        int port = freePort();
        Path log = startBroker(port);
        String bootstrap = "127.0.0.1:" + port;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic("honest", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        // Three attackers, each with a 6 MiB Metadata request naming 1.1 million topics (about 400 MB of objects
        // once parsed and answered), sent again as soon as a connection is closed, for the honest client's run.
        byte[] bomb = metadataBomb(1_100_000);
        AtomicInteger closed = new AtomicInteger();
        List<Thread> attackers = new ArrayList<>();
        java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
        for (int i = 0; i < 3; i++) {
            attackers.add(Thread.ofPlatform().start(() -> {
                while (!stop.get()) {
                    try (Socket socket = new Socket("127.0.0.1", port)) {
                        socket.setSoTimeout(60_000);
                        socket.getOutputStream().write(bomb);
                        if (socket.getInputStream().read() < 0) {
                            closed.incrementAndGet();
                        }
                    } catch (IOException e) {
                        closed.incrementAndGet();
                    }
                }
            }));
        }
        int records = 2_000;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000,
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000), new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>("honest", ("r" + i).getBytes(StandardCharsets.UTF_8)));
                if (i % 100 == 0) {
                    producer.flush();
                }
            }
            producer.flush();
        }
        int read = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition("honest", 0)));
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read < records && System.nanoTime() < until) {
                read += consumer.poll(Duration.ofMillis(200)).count();
            }
        }
        stop.set(true);
        for (Thread attacker : attackers) {
            attacker.join(70_000);
        }
        assertThat(read).isEqualTo(records);
        assertThat(process.isAlive()).as(Files.readString(log)).isTrue();
        assertThat(Files.readString(log)).doesNotContain("OutOfMemoryError").contains("would take about");
        assertThat(closed.get()).as("the attackers' connections were closed").isGreaterThanOrEqualTo(3);
    }

    /** Starts a {@link BrokerChild} with a 256 MiB heap over this test's store; returns its log once it is ready. */
    private Path startBroker(int port, String... options) throws Exception {
        Path log = dir.resolve("broker-" + System.nanoTime() + ".log");
        process = BrokerChild.start(dir.resolve("store"), port, log, options);
        return log;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** @return the descriptors the broker's process holds now */
    private long descriptors() throws IOException {
        try (var open = Files.list(Path.of("/proc", Long.toString(process.pid()), "fd"))) {
            return open.count();
        }
    }

    /**
     * Partitions written once each, as a client may create and write them, cost the broker no more descriptors than
     * its budget of open logs allows, before and after a restart, and every record stays readable: before the budget,
     * each partition written held its files open until the broker stopped, and a restart opened them all again.
     */
    @Test
    void partitionsWrittenOnceHoldNoMoreDescriptorsThanTheOpenLogBudget() throws Exception {
        int budget = 32;
        int topics = 4;
        int partitionsEach = 500;
        int port = freePort();
        startBroker(port, "maxOpenLogs=" + budget);
        long idle = descriptors();
        // A log open holds a descriptor per segment file and at times one more for sendfile; the rest is sockets.
        long bound = idle + 3L * budget + 64;
        String bootstrap = "127.0.0.1:" + port;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            for (int t = 0; t < topics; t++) {
                admin.createTopics(List.of(new NewTopic("wide-" + t, partitionsEach, (short) 1))).all()
                        .get(60, TimeUnit.SECONDS);
            }
        }
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.LINGER_MS_CONFIG, 50),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int t = 0; t < topics; t++) {
                for (int p = 0; p < partitionsEach; p++) {
                    producer.send(new ProducerRecord<>("wide-" + t, p, null, (t + "/" + p).getBytes()));
                }
            }
            producer.flush();
        }
        long written = descriptors();
        assertThat(written).as("descriptors after %d partitions were written, %d when idle", topics * partitionsEach,
                idle).isLessThan(bound);

        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
        port = freePort();
        startBroker(port, "maxOpenLogs=" + budget);
        bootstrap = "127.0.0.1:" + port;
        long restarted = descriptors();
        assertThat(restarted).as("descriptors after a restart, %d when idle", idle).isLessThan(bound);

        List<TopicPartition> all = new ArrayList<>();
        for (int t = 0; t < topics; t++) {
            for (int p = 0; p < partitionsEach; p++) {
                all.add(new TopicPartition("wide-" + t, p));
            }
        }
        java.util.Set<String> read = new java.util.HashSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(all);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (read.size() < all.size() && System.nanoTime() < until) {
                for (var record : consumer.poll(Duration.ofMillis(200))) {
                    assertThat(new String(record.value())).isEqualTo(record.topic().substring(5) + "/"
                            + record.partition());
                    read.add(record.topic() + "/" + record.partition());
                }
            }
            assertThat(descriptors()).as("descriptors while every partition is read").isLessThan(bound);
        }
        assertThat(read).as("partitions read back").hasSize(all.size());
    }

    private static FrameServer echoServer(FrameServer.Limits limits, AtomicInteger handled, int responseBytes)
            throws IOException {
        return new FrameServer(new InetSocketAddress("127.0.0.1", 0), frame -> {
            handled.incrementAndGet();
            // A request whose first byte is 9 is answered with responseBytes (if set); any other is echoed.
            int size = responseBytes > 0 && frame.get(frame.position()) == 9 ? responseBytes : frame.remaining();
            ByteBuffer echo = ByteBuffer.allocate(4 + size).putInt(size);
            echo.put(frame.slice(frame.position(), Math.min(size, frame.remaining())));
            return CompletableFuture.completedFuture(Outbound.of(echo.position(4 + size).flip()));
        }, limits);
    }

    private static void assertEchoes(Socket socket) throws IOException {
        socket.setSoTimeout(10_000);
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        out.writeInt(3);
        out.write(new byte[] {1, 2, 3});
        DataInputStream in = new DataInputStream(socket.getInputStream());
        assertThat(in.readInt()).isEqualTo(3);
        in.readFully(new byte[3]);
    }

    @Test
    void aSizeLeftUnfinishedIsTimedAsABodyIs() throws Exception {
        FrameServer.Limits limits = new FrameServer.Limits(1 << 20, 10, 8, 2 << 20, 600_000, 120_000, 1_000);
        try (FrameServer server = echoServer(limits, new AtomicInteger(), 0);
             Socket partial = new Socket("127.0.0.1", server.port());
             Socket honest = new Socket("127.0.0.1", server.port())) {
            partial.getOutputStream().write(new byte[] {0, 0, 1}); // three bytes of four
            partial.setSoTimeout(10_000);
            long start = System.nanoTime();
            assertThat(partial.getInputStream().read()).as("closed").isEqualTo(-1);
            assertThat((System.nanoTime() - start) / 1e9).as("after the body timeout, not the idle one").isLessThan(8);
            assertEchoes(honest);
        }
    }

    @Test
    void anAddressGetsAtMostItsConnections() throws Exception {
        FrameServer.Limits limits = FrameServer.Limits.of(1 << 20, 100).withPerIp(3,
                Map.of(InetAddress.getByName("127.0.0.3"), 5));
        try (FrameServer server = echoServer(limits, new AtomicInteger(), 0)) {
            List<Socket> sockets = new ArrayList<>();
            try {
                for (int i = 0; i < 3; i++) {
                    sockets.add(new Socket("127.0.0.1", server.port()));
                }
                Socket fourth = new Socket("127.0.0.1", server.port());
                sockets.add(fourth);
                fourth.setSoTimeout(10_000);
                assertThat(fourth.getInputStream().read()).as("the fourth from one address is closed").isEqualTo(-1);
                // Another address has its own count; an overridden one its own cap.
                Socket other = new Socket(InetAddress.getLoopbackAddress(), server.port(),
                        InetAddress.getByName("127.0.0.2"), 0);
                sockets.add(other);
                assertEchoes(other);
                for (int i = 0; i < 5; i++) {
                    Socket overridden = new Socket(InetAddress.getLoopbackAddress(), server.port(),
                            InetAddress.getByName("127.0.0.3"), 0);
                    sockets.add(overridden);
                    assertEchoes(overridden);
                }
                // A closed connection gives its place back.
                sockets.get(0).close();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (true) {
                    Socket again = new Socket("127.0.0.1", server.port());
                    sockets.add(again);
                    try {
                        assertEchoes(again);
                        break;
                    } catch (IOException e) {
                        assertThat(System.nanoTime()).as("the place came back").isLessThan(deadline);
                        Thread.sleep(50);
                    }
                }
            } finally {
                for (Socket socket : sockets) {
                    socket.close();
                }
            }
        }
    }

    /**
     * A broker's listeners count connections together, as Kafka's do: {@code max.connections.per.ip} and
     * {@code max.connections} over every listener, and {@code listener.name.<listener>.max.connections} for one.
     */
    @Test
    void aBrokersListenersCountConnectionsTogether() throws Exception {
        FrameServer.Shared counts = new FrameServer.Shared(FrameServer.Limits.of(1 << 20, 3).withPerIp(2, Map.of()));
        FrameHandler echo = frame -> {
            ByteBuffer answer = ByteBuffer.allocate(4 + frame.remaining()).putInt(frame.remaining()).put(frame);
            return CompletableFuture.completedFuture(Outbound.of(answer.flip()));
        };
        InetSocketAddress any = new InetSocketAddress("127.0.0.1", 0);
        List<Socket> sockets = new ArrayList<>();
        try (FrameServer a = new FrameServer(any, peer -> echo, counts, 10, null, AcceptRates.NONE);
             FrameServer b = new FrameServer(any, peer -> echo, counts, 1, null, AcceptRates.NONE)) {
            assertEchoes(connect(sockets, a, "127.0.0.1"));
            assertEchoes(connect(sockets, b, "127.0.0.1"));
            assertClosed(connect(sockets, a, "127.0.0.1"), "a third from 127.0.0.1 over both listeners");
            assertClosed(connect(sockets, b, "127.0.0.2"), "a second on the listener that takes one");
            assertEchoes(connect(sockets, a, "127.0.0.2"));
            assertClosed(connect(sockets, a, "127.0.0.3"), "a fourth to the broker that takes three");
        } finally {
            for (Socket socket : sockets) {
                socket.close();
            }
        }
    }

    /**
     * The room for request bytes read and not yet handled is the broker's, not a listener's: a large request held on
     * one listener leaves another listener's large request no room (it is closed after the body timeout), while a
     * small one there, which needs no room, is served.
     */
    @Test
    void listenersShareTheRoomForRequestBytes() throws Exception {
        FrameServer.Shared counts = new FrameServer.Shared(new FrameServer.Limits(1 << 20, 10, 8,
                (1 << 20) + (100 << 10), 600_000, 120_000, 1_000));
        CountDownLatch release = new CountDownLatch(1);
        FrameHandler holding = frame -> {
            try {
                release.await(); // the request's room is held until it is handled
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return CompletableFuture.completedFuture(Outbound.of(ByteBuffer.allocate(4).putInt(0).flip()));
        };
        FrameHandler echo = frame -> {
            ByteBuffer answer = ByteBuffer.allocate(4 + frame.remaining()).putInt(frame.remaining()).put(frame);
            return CompletableFuture.completedFuture(Outbound.of(answer.flip()));
        };
        InetSocketAddress any = new InetSocketAddress("127.0.0.1", 0);
        try (FrameServer a = new FrameServer(any, peer -> holding, counts, 10, null, AcceptRates.NONE);
             FrameServer b = new FrameServer(any, peer -> echo, counts, 10, null, AcceptRates.NONE);
             Socket held = new Socket("127.0.0.1", a.port());
             Socket large = new Socket("127.0.0.1", b.port());
             Socket small = new Socket("127.0.0.1", b.port())) {
            DataOutputStream out = new DataOutputStream(held.getOutputStream());
            out.writeInt(900 << 10);
            out.write(new byte[900 << 10]);
            out.flush();
            Thread.sleep(500); // read, its room taken, its handler waiting
            // Its body is sent in full (from a thread of its own: the broker reads it only once it has room).
            Thread.ofVirtual().start(() -> {
                try {
                    DataOutputStream second = new DataOutputStream(large.getOutputStream());
                    second.writeInt(900 << 10);
                    second.write(new byte[900 << 10]);
                    second.flush();
                } catch (IOException e) {
                    // closed by the broker, as the case expects
                }
            });
            large.setSoTimeout(10_000);
            int first;
            try {
                first = large.getInputStream().read();
            } catch (SocketException reset) {
                first = -1; // closed with its body unread: a reset rather than an end
            }
            assertThat(first).as("a large request on the other listener, with no room left: closed").isEqualTo(-1);
            assertEchoes(small);
        } finally {
            release.countDown();
        }
    }

    /** The same caps from the broker's settings, Kafka's keys, and a wrong one refused at start. */
    @Test
    void aListenersOwnCapIsTakenFromItsSettings() throws Exception {
        Map<String, String> settings = Map.of("listeners", "PLAINTEXT://127.0.0.1:0,OTHER://127.0.0.1:0",
                "listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,OTHER:PLAINTEXT",
                "max.connections.per.ip", "3", "listener.name.other.max.connections", "1");
        List<Socket> sockets = new ArrayList<>();
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(settings))) {
            int plain = broker.ports().get("PLAINTEXT");
            int other = broker.ports().get("OTHER");
            assertApiVersions(connect(sockets, other));
            assertClosed(connect(sockets, other), "a second on OTHER, which takes one");
            assertApiVersions(connect(sockets, plain));
            assertApiVersions(connect(sockets, plain));
            assertClosed(connect(sockets, plain), "a fourth from one address over both listeners");
        } finally {
            for (Socket socket : sockets) {
                socket.close();
            }
        }
        Map<String, String> wrong = new HashMap<>(settings);
        wrong.put("listener.name.other.max.connections", "-1");
        try (Store store = Store.open(dir.resolve("wrong"), StoreConfig.builder().build())) {
            assertThatThrownBy(() -> Broker.start(store, BrokerConfig.defaults()
                    .withPort(0).withSecurity(wrong))).hasMessageContaining("listener.name.other.max.connections");
        }
    }

    private static Socket connect(List<Socket> sockets, FrameServer server, String from) throws IOException {
        Socket socket = new Socket(InetAddress.getLoopbackAddress(), server.port(), InetAddress.getByName(from), 0);
        sockets.add(socket);
        return socket;
    }

    private static Socket connect(List<Socket> sockets, int port) throws IOException {
        Socket socket = new Socket("127.0.0.1", port);
        sockets.add(socket);
        return socket;
    }

    private static void assertClosed(Socket socket, String what) throws IOException {
        socket.setSoTimeout(10_000);
        assertThat(socket.getInputStream().read()).as(what + ": closed").isEqualTo(-1);
    }

    /** Asserts that an ApiVersions v0 is answered on the socket. */
    private static void assertApiVersions(Socket socket) throws IOException {
        socket.setSoTimeout(10_000);
        DataOutputStream out = new DataOutputStream(socket.getOutputStream());
        out.writeInt(10);
        out.writeShort(18); // ApiVersions
        out.writeShort(0);
        out.writeInt(7); // correlation id
        out.writeShort(-1); // no client id
        DataInputStream in = new DataInputStream(socket.getInputStream());
        int size = in.readInt();
        assertThat(in.readInt()).as("the correlation id").isEqualTo(7);
        in.readFully(new byte[size - 4]);
    }

    @Test
    void aClientThatDoesNotReadItsAnswersIsNotAnsweredMore() throws Exception {
        AtomicInteger handled = new AtomicInteger();
        int answer = 8 << 20; // 8 MiB each
        try (FrameServer server = echoServer(FrameServer.Limits.of(1 << 20, 10), handled, answer);
             Socket greedy = new Socket("127.0.0.1", server.port());
             Socket honest = new Socket("127.0.0.1", server.port())) {
            OutputStream out = greedy.getOutputStream();
            for (int i = 0; i < 40; i++) {
                out.write(new byte[] {0, 0, 0, 1, 9});
            }
            out.flush();
            Thread.sleep(2_000);
            // One answer in the socket's buffers being written, one waiting: not forty (320 MiB), nor eight.
            assertThat(handled.get()).as("requests answered for a client that reads nothing").isLessThanOrEqualTo(3);
            assertEchoes(honest);
        }
    }

    /**
     * The bound on answers left untaken counts only those: a client that reads every answer is served however many
     * bytes of answers it takes over its connection's life. The count once kept the bytes of every answer written
     * through a buffer, so a producer's connection stopped being read after 4 MiB of small answers.
     */
    @Test
    void aClientThatReadsItsAnswersIsServedPastTheBoundOnUntakenAnswers() throws Exception {
        AtomicInteger handled = new AtomicInteger();
        int answer = 64 << 10;
        long total = 3 * FrameServer.MAX_UNSENT_BYTES;
        try (FrameServer server = echoServer(FrameServer.Limits.of(1 << 20, 10), handled, answer);
             Socket client = new Socket("127.0.0.1", server.port())) {
            client.setSoTimeout(10_000);
            DataOutputStream out = new DataOutputStream(client.getOutputStream());
            DataInputStream in = new DataInputStream(client.getInputStream());
            for (long taken = 0; taken < total; taken += answer) {
                out.write(new byte[] {0, 0, 0, 1, 9});
                out.flush();
                assertThat(in.readInt()).as("the answer after %d bytes taken", taken).isEqualTo(answer);
                in.readFully(new byte[answer]);
            }
            assertThat(handled.get()).isEqualTo((int) (total / answer));
        }
    }
}

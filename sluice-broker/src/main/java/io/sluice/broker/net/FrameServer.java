package io.sluice.broker.net;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Size-prefixed frames over TCP. Each connection has a reader (a platform thread, since it runs the handler's work)
 * and a writer (a virtual thread, which only waits and writes): the reader takes
 * requests in order and hands each to the {@link FrameHandler}, which does what the request changes before it
 * returns, and queues the response it will complete (at most {@link Limits#maxInFlight} per connection); the writer
 * sends the responses in request order as they complete. A response ready at once with none before it still
 * waiting is written by the reader itself, without a hand-off. So a client that pipelines (Kafka's producer sends up to
 * five requests without waiting) has its requests' waits overlap (one group commit can serve several), while the
 * order of effects and of responses is the order of requests.
 *
 * <p>Limits: a frame size outside 0..{@code maxFrameBytes}, or a handler that refuses a frame, closes that connection
 * with one log line; other connections go on. A connection reads through a 64 KiB buffer of its own; bytes of larger
 * requests read but not yet handled are bounded across all connections ({@link Limits#maxQueuedBytes}): a reader
 * waits for room before it reads such a frame's body, so a flood of producers meets back-pressure, not an
 * {@link OutOfMemoryError}. A client that announces a request and does not send its body within
 * {@link Limits#bodyTimeoutMillis} (or finds no room within it) is closed, so silent clients cannot hold the room.
 * Connections beyond {@code maxConnections}, beyond an address's cap or beyond the listener's own are closed on accept
 * (the first two and the room count over all the listeners of a {@link Shared}); a connection idle longer than
 * {@link Limits#idleMillis}, or whose client has not taken a response for {@link Limits#writeTimeoutMillis}, is
 * closed.
 */
public final class FrameServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FrameServer.class);

    /**
     * What one server accepts.
     *
     * @param maxFrameBytes the largest request
     * @param maxConnections connections served at once
     * @param maxInFlight requests of one connection read ahead of their responses
     * @param maxQueuedBytes request bytes read and not yet handled, over all connections (at least maxFrameBytes)
     * @param idleMillis a connection with no request and no response for this long is closed
     * @param writeTimeoutMillis a response the client does not take within this is abandoned with its connection
     */
    public record Limits(int maxFrameBytes, int maxConnections, int maxInFlight, long maxQueuedBytes, long idleMillis,
                         long writeTimeoutMillis, long bodyTimeoutMillis, int maxConnectionsPerIp,
                         Map<InetAddress, Integer> perIpOverrides) {

        /** Limits without a cap per client address. */
        public Limits(int maxFrameBytes, int maxConnections, int maxInFlight, long maxQueuedBytes, long idleMillis,
                      long writeTimeoutMillis, long bodyTimeoutMillis) {
            this(maxFrameBytes, maxConnections, maxInFlight, maxQueuedBytes, idleMillis, writeTimeoutMillis,
                    bodyTimeoutMillis, Integer.MAX_VALUE, Map.of());
        }

        /** @return these limits with at most {@code perIp} connections from one address, {@code overrides} aside */
        public Limits withPerIp(int perIp, Map<InetAddress, Integer> overrides) {
            return new Limits(maxFrameBytes, maxConnections, maxInFlight, maxQueuedBytes, idleMillis,
                    writeTimeoutMillis, bodyTimeoutMillis, perIp, overrides);
        }

        /** Checks the fields. */
        public Limits {
            perIpOverrides = Map.copyOf(perIpOverrides);
            if (maxConnectionsPerIp < 0 || perIpOverrides.values().stream().anyMatch(n -> n < 0)) {
                throw new IllegalArgumentException("connections per address must not be negative");
            }
            if (maxFrameBytes < 16 || maxConnections < 1 || maxInFlight < 1 || maxQueuedBytes < maxFrameBytes
                    || idleMillis < 1 || writeTimeoutMillis < 1 || bodyTimeoutMillis < 1) {
                throw new IllegalArgumentException("invalid limits " + maxFrameBytes + ", " + maxConnections + ", "
                        + maxInFlight + ", " + maxQueuedBytes + ", " + idleMillis + ", " + writeTimeoutMillis + ", "
                        + bodyTimeoutMillis);
            }
        }

        /**
         * @return Kafka-like defaults around a frame size: 8 in flight per connection, requests taking at most a
         *     quarter of the heap at once (at most 512 MiB, at least a frame), 10 minutes idle, 2 minutes to take a response, 30 s to send a request's body once its size
         *     has come (Kafka's request.timeout.ms)
         */
        public static Limits of(int maxFrameBytes, int maxConnections) {
            return new Limits(maxFrameBytes, maxConnections, 8, Math.max(maxFrameBytes,
                    Math.min(512L << 20, Runtime.getRuntime().maxMemory() / 4)), 600_000, 120_000, 30_000);
        }
    }

    /**
     * What a broker's listeners count together, as Kafka counts it per broker: connections ({@code max.connections}),
     * connections from each client address ({@code max.connections.per.ip}), and request bytes read and not yet
     * handled.
     */
    public static final class Shared {
        private final Limits limits;
        private final Semaphore connectionSlots;
        /** Permits are kilobytes of request bodies (a permit per started KiB), so the count fits an int. */
        private final Semaphore queuedKib;
        /** Connections open now by client address. */
        private final Map<InetAddress, Integer> perAddress = new ConcurrentHashMap<>();

        /** @param limits the limits of every listener that shares these counts */
        public Shared(Limits limits) {
            this.limits = Objects.requireNonNull(limits, "limits");
            this.connectionSlots = new Semaphore(limits.maxConnections());
            // Not fair: a small request may pass a large one waiting for room, so that clients who announce large
            // frames and send nothing cannot queue everyone behind them (they are closed after bodyTimeoutMillis).
            this.queuedKib = new Semaphore((int) Math.min(Integer.MAX_VALUE, limits.maxQueuedBytes() >> 10), false);
        }
    }

    private final ServerSocketChannel server;
    private final FrameHandler.Factory handlers;
    private final AcceptRates rates;
    /** Makes each connection's TLS engine, or null on a plaintext listener. */
    private final Supplier<SSLEngine> tls;
    private final Limits limits;
    private final Shared shared;
    /** This listener's own connection cap (Kafka's {@code listener.name.<listener>.max.connections}). */
    private final Semaphore listenerSlots;
    private final int listenerMaxConnections;
    private final Set<Connection> connections = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private final Thread reaper;
    private volatile boolean closed;

    /**
     * Binds and starts accepting.
     *
     * @param address where to listen (port 0: any free port, see {@link #port()})
     * @param handler answers each frame
     * @param limits what is accepted
     * @throws IOException when the address cannot be bound
     */
    public FrameServer(InetSocketAddress address, FrameHandler handler, Limits limits) throws IOException {
        this(address, peer -> handler, limits, null);
        Objects.requireNonNull(handler, "handler");
    }

    /**
     * Binds and starts accepting, each connection with a handler of its own, over TLS if asked.
     *
     * @param address where to listen (port 0: any free port, see {@link #port()})
     * @param handlers makes each connection's handler once its TLS handshake (if any) is done
     * @param limits what is accepted
     * @param tls makes a server-side engine for each connection, or null for plaintext
     * @throws IOException when the address cannot be bound
     */
    public FrameServer(InetSocketAddress address, FrameHandler.Factory handlers, Limits limits,
                       Supplier<SSLEngine> tls) throws IOException {
        this(address, handlers, limits, tls, AcceptRates.NONE);
    }

    /**
     * As above, connections made no faster than {@code rates} allows.
     *
     * @param rates the broker's and each address's connection rate
     */
    public FrameServer(InetSocketAddress address, FrameHandler.Factory handlers, Limits limits,
                       Supplier<SSLEngine> tls, AcceptRates rates) throws IOException {
        this(address, handlers, new Shared(limits), Integer.MAX_VALUE, tls, rates);
    }

    /**
     * As above, one of a broker's listeners: {@code shared} counts with the others.
     *
     * @param shared what the broker's listeners count together, and their limits
     * @param listenerMaxConnections connections this listener serves at once, besides the broker's cap
     */
    public FrameServer(InetSocketAddress address, FrameHandler.Factory handlers, Shared shared,
                       int listenerMaxConnections, Supplier<SSLEngine> tls, AcceptRates rates) throws IOException {
        this.rates = Objects.requireNonNull(rates, "rates");
        this.handlers = Objects.requireNonNull(handlers, "handlers");
        this.tls = tls;
        this.shared = Objects.requireNonNull(shared, "shared");
        this.limits = shared.limits;
        if (listenerMaxConnections < 0) {
            throw new IllegalArgumentException("a listener's max.connections must not be negative, was "
                    + listenerMaxConnections);
        }
        this.listenerMaxConnections = listenerMaxConnections;
        this.listenerSlots = new Semaphore(listenerMaxConnections);
        this.server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(address);
        } catch (IOException e) {
            server.close();
            throw e;
        }
        this.acceptor = Thread.ofPlatform().name("sluice-broker-accept").daemon().start(this::accept);
        this.reaper = Thread.ofVirtual().name("sluice-broker-reaper").start(this::reap);
    }

    /** @return the port bound */
    public int port() {
        try {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new IllegalStateException("the listener is closed", e);
        }
    }

    /** @return connections being served now */
    public int connections() {
        return connections.size();
    }

    private void accept() {
        long backoffMillis = 0;
        while (!closed) {
            SocketChannel channel;
            try {
                channel = server.accept();
                backoffMillis = 0;
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException | RuntimeException e) {
                // Out of file descriptors, say: wait rather than spin, longer while it lasts.
                backoffMillis = Math.min(1_000, Math.max(10, backoffMillis * 2));
                LOG.warn("accepting a connection failed ({}); retrying in {} ms", e.toString(), backoffMillis);
                sleep(backoffMillis);
                continue;
            }
            InetAddress address = address(channel);
            if (address == null) {
                closeQuietly(channel);
                continue;
            }
            long wait = rates.waitMillis(System.currentTimeMillis());
            if (wait > 0) {
                sleep(wait); // max.connection.creation.rate: the acceptor takes no connection meanwhile
            }
            long refuse = rates.refuseMillis(address, System.currentTimeMillis());
            if (refuse > 0) {
                LOG.info("closing a connection from {} in {} ms: its address makes connections faster than its quota",
                        remote(channel), refuse);
                SocketChannel held = channel;
                CompletableFuture.delayedExecutor(refuse, TimeUnit.MILLISECONDS).execute(() -> closeQuietly(held));
                continue;
            }
            int allowed = limits.perIpOverrides().getOrDefault(address, limits.maxConnectionsPerIp());
            if (shared.perAddress.merge(address, 1, Integer::sum) > allowed) {
                release(address);
                LOG.warn("closing a connection from {}: it already has its maximum of {} connections"
                        + " (max.connections.per.ip)", remote(channel), allowed);
                closeQuietly(channel);
                continue;
            }
            if (!listenerSlots.tryAcquire()) {
                release(address);
                LOG.warn("closing a connection from {}: its listener already serves its maximum of {} connections",
                        remote(channel), listenerMaxConnections);
                closeQuietly(channel);
                continue;
            }
            if (!shared.connectionSlots.tryAcquire()) {
                listenerSlots.release();
                release(address);
                LOG.warn("closing a connection from {}: the broker already serves its maximum of {} connections",
                        remote(channel), limits.maxConnections());
                closeQuietly(channel);
                continue;
            }
            Connection connection = new Connection(channel, address);
            connections.add(connection);
            connection.start();
        }
    }

    private void release(InetAddress address) {
        shared.perAddress.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
    }

    private static InetAddress address(SocketChannel channel) {
        try {
            return ((InetSocketAddress) channel.getRemoteAddress()).getAddress();
        } catch (IOException e) {
            return null; // gone already
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Closes connections idle too long or stuck writing to a client that does not read. */
    private void reap() {
        long period = Math.max(10, Math.min(Math.min(limits.idleMillis(), limits.writeTimeoutMillis()),
                limits.bodyTimeoutMillis()) / 4);
        while (!closed) {
            sleep(Math.min(period, 1_000));
            long now = System.nanoTime();
            for (Connection connection : connections) {
                connection.reapIfDue(now);
            }
        }
    }

    /** One client connection: its channel, its reader and writer threads, its queue of pending responses. */
    private final class Connection {

        private final SocketChannel channel;
        /** What requests are read from and responses written to: the socket, or TLS over it. */
        private ByteChannel io;
        private GatheringByteChannel out;
        private FrameHandler handler;
        private final BlockingQueue<CompletableFuture<Outbound>> pending;
        /**
         * Responses queued or taken by the writer and not yet written. Order: the reader writes a response itself
         * only while this is 0, checked under {@link #writeLock}, which the writer holds while it writes and
         * decrements; so no response overtakes an earlier one.
         */
        private final java.util.concurrent.atomic.AtomicInteger inFlight = new java.util.concurrent.atomic.AtomicInteger();
        private final java.util.concurrent.locks.ReentrantLock writeLock = new java.util.concurrent.locks.ReentrantLock();
        private volatile long lastActive = System.nanoTime();
        /** Until when (System.nanoTime) the reader takes no request: a throttled client's mute. */
        private volatile long mutedUntil;
        /** When the write in progress started, or 0. */
        private volatile long writeStarted;
        /** When the request whose body is awaited announced its size, or 0. */
        private volatile long bodyStarted;
        private Thread reader;
        private Thread writer;

        private final InetAddress address;
        /** Bytes of responses completed and not yet written: the reader takes no request while they are too many. */
        private final java.util.concurrent.atomic.AtomicLong unsent = new java.util.concurrent.atomic.AtomicLong();
        private final Object unsentLock = new Object();

        Connection(SocketChannel channel, InetAddress address) {
            this.channel = channel;
            this.address = address;
            this.io = channel;
            this.out = channel;
            this.pending = new ArrayBlockingQueue<>(limits.maxInFlight());
        }

        void start() {
            writer = Thread.ofVirtual().name("sluice-broker-writer").unstarted(this::write);
            // The reader runs the handler, so it is a platform thread: the kernel shares the cores among readers, and
            // one client's request that computes for long (a large compressed batch, a hostile request) slows the
            // others by its share. On virtual threads, whose carriers are as many as the cores, as many such
            // requests stopped every connection until they ended.
            reader = Thread.ofPlatform().daemon().name("sluice-broker-reader").unstarted(this::read);
            writer.start();
            reader.start();
        }

        void reapIfDue(long now) {
            long body = bodyStarted;
            if (body != 0 && now - body > TimeUnit.MILLISECONDS.toNanos(limits.bodyTimeoutMillis())) {
                LOG.warn("closing the connection from {}: a request's body did not arrive within {} ms of its size",
                        remote(channel), limits.bodyTimeoutMillis());
                closeQuietly(channel);
                return;
            }
            long started = writeStarted;
            if (started != 0 && now - started > TimeUnit.MILLISECONDS.toNanos(limits.writeTimeoutMillis())) {
                LOG.warn("closing the connection from {}: it took no response bytes for {} ms", remote(channel),
                        limits.writeTimeoutMillis());
                closeQuietly(channel);
            } else if (started == 0 && inFlight.get() == 0
                    && now - lastActive > TimeUnit.MILLISECONDS.toNanos(limits.idleMillis())) {
                LOG.info("closing the connection from {}: idle for {} ms", remote(channel), limits.idleMillis());
                closeQuietly(channel);
            }
        }

        private void read() {
            try {
                channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
                if (!open()) {
                    return;
                }
                // Reads take what the socket has, up to 64 KiB, so that a pipelining client's frames (and a frame's
                // size with its body) come in one system call; a larger frame gets a buffer of its own.
                ByteBuffer in = ByteBuffer.allocate(READ_BUFFER_BYTES).flip();
                while (!closed) {
                    awaitRoomForResponses();
                    if (!fillHeader(in)) {
                        return; // the client closed between requests
                    }
                    lastActive = System.nanoTime();
                    int bytes = in.getInt(in.position());
                    int most = Math.min(limits.maxFrameBytes(), handler.maxFrameBytes());
                    if (bytes < 0 || bytes > most) {
                        LOG.warn("closing the connection from {}: a request of {} bytes (at most {} accepted)",
                                remote(channel), bytes, most);
                        return;
                    }
                    // A frame that fits the connection's read buffer needs no room beyond it; a larger one takes
                    // its bytes from the budget shared by every connection before it is allocated.
                    int kib = 4 + bytes <= in.capacity() ? 0 : (bytes + 1023) >>> 10;
                    bodyStarted = System.nanoTime();
                    if (!shared.queuedKib.tryAcquire(kib, limits.bodyTimeoutMillis(), TimeUnit.MILLISECONDS)) {
                        LOG.warn("closing the connection from {}: no room for its request of {} bytes within {} ms",
                                remote(channel), bytes, limits.bodyTimeoutMillis());
                        return;
                    }
                    CompletableFuture<Outbound> response;
                    try {
                        ByteBuffer frame;
                        if (4 + bytes <= in.capacity()) {
                            fill(io, in, 4 + bytes, false);
                            frame = in.slice(in.position() + 4, bytes);
                            in.position(in.position() + 4 + bytes);
                        } else {
                            in.position(in.position() + 4);
                            frame = ByteBuffer.allocate(bytes);
                            int buffered = Math.min(in.remaining(), bytes);
                            frame.put(in.slice(in.position(), buffered));
                            in.position(in.position() + buffered);
                            readFully(io, frame, false);
                            frame.flip();
                        }
                        bodyStarted = 0;
                        lastActive = System.nanoTime();
                        // What the request becomes once parsed may be many times its bytes (a list of short names
                        // becomes objects): that too is taken from the shared room while it is handled.
                        long memory = handler.memoryOf(frame);
                        int more = memory <= READ_BUFFER_BYTES ? 0
                                : (int) Math.max(0, Math.min(Integer.MAX_VALUE, (memory + 1023) >>> 10) - kib);
                        if (more > 0 && (long) more + kib > limits.maxQueuedBytes() >> 10) {
                            LOG.warn("closing the connection from {}: a request of {} bytes would take about {} MiB"
                                    + " of memory, more than the broker lets all requests take ({} MiB)",
                                    remote(channel), bytes, memory >> 20, limits.maxQueuedBytes() >> 20);
                            return;
                        }
                        if (more > 0 && !shared.queuedKib.tryAcquire(more, limits.bodyTimeoutMillis(),
                                TimeUnit.MILLISECONDS)) {
                            LOG.warn("closing the connection from {}: no room for its request of {} bytes within {}"
                                    + " ms", remote(channel), bytes, limits.bodyTimeoutMillis());
                            return;
                        }
                        try {
                            response = handler.handle(frame);
                        } catch (Exception | Error e) {
                            // Whatever a request does wrong ends its connection, never the broker or this thread
                            // without its writer knowing.
                            response = CompletableFuture.failedFuture(e);
                        } finally {
                            shared.queuedKib.release(more);
                        }
                    } finally {
                        shared.queuedKib.release(kib);
                    }
                    countUnsent(response);
                    if (!writeNowIfFirst(response)) {
                        inFlight.incrementAndGet();
                        pending.put(response);
                    }
                    if (response.isCompletedExceptionally()) {
                        return; // the writer logs and closes once earlier responses are out
                    }
                }
            } catch (EOFException | ClosedChannelException e) {
                // the client went away mid-request, or the connection was closed
            } catch (IOException e) {
                if (!closed) {
                    LOG.debug("connection from {} ended: {}", remote(channel), e.toString());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                // Let the writer finish what is queued, then close; if the writer has ended, nobody waits for this.
                boolean interrupted = Thread.interrupted();
                try {
                    while (writer.isAlive() && !pending.offer(END, 100, TimeUnit.MILLISECONDS)) {
                        // the queue is full: the writer is still sending earlier responses
                    }
                } catch (InterruptedException e) {
                    interrupted = true;
                }
                if (interrupted) {
                    Thread.currentThread().interrupt();
                }
            }
        }

        /**
         * Reads a request's size; once its first byte has come, the rest of the size and the body are timed (a
         * client that sends part of a size and stops is closed as one that stops inside a body is).
         *
         * @return false if the client closed between requests
         */
        private boolean fillHeader(ByteBuffer in) throws IOException {
            if (in.remaining() >= 4) {
                return true;
            }
            if (in.hasRemaining()) {
                bodyStarted = System.nanoTime();
            }
            in.compact();
            try {
                while (in.position() < 4) {
                    if (io.read(in) < 0) {
                        if (in.position() == 0) {
                            return false;
                        }
                        throw new EOFException("the connection ended inside a request's size");
                    }
                    if (bodyStarted == 0 && in.position() > 0) {
                        bodyStarted = System.nanoTime();
                    }
                }
            } finally {
                in.flip();
            }
            return true;
        }

        /** Counts a response's bytes as unsent from when it completes until it is written. */
        private void countUnsent(CompletableFuture<Outbound> response) {
            response.thenAccept(out -> {
                if (out != null) {
                    unsent.addAndGet(out.size());
                }
            });
        }

        /** @param bytes the response's size, taken before it was written (writing may consume what it measures) */
        private void sent(long bytes) {
            if (unsent.addAndGet(-bytes) <= MAX_UNSENT_BYTES) {
                synchronized (unsentLock) {
                    unsentLock.notifyAll();
                }
            }
        }

        /**
         * Waits, before reading another request, while the client has more than {@link #MAX_UNSENT_BYTES} of responses
         * it has not taken: a client that sends and does not read is held to that much (and closed after the write
         * timeout), not to as many responses as it can ask for.
         */
        private void awaitRoomForResponses() throws InterruptedException {
            synchronized (unsentLock) {
                while (unsent.get() > MAX_UNSENT_BYTES && channel.isOpen()) {
                    unsentLock.wait(100);
                }
            }
            // A client over its quota: nothing is read until its throttle time has passed.
            long muted;
            while ((muted = mutedUntil - System.nanoTime()) > 0 && channel.isOpen()) {
                sleep(Math.max(1, TimeUnit.NANOSECONDS.toMillis(muted)));
            }
        }

        /**
         * The reader's shortcut: a response ready at once, with nothing queued before it, is written by the reader
         * itself, sparing a hand-off to the writer thread (the common case: an ASYNC produce, a metadata request).
         *
         * @return true if written (or nothing to write); false if it must go through the queue
         */
        private boolean writeNowIfFirst(CompletableFuture<Outbound> response) throws IOException {
            if (!response.isDone() || response.isCompletedExceptionally()) {
                return false;
            }
            writeLock.lock();
            try {
                if (inFlight.get() != 0) {
                    return false;
                }
                send(response.getNow(null));
                return true;
            } finally {
                writeLock.unlock();
            }
        }

        /** Writes one response under the write lock, timed for the reaper. */
        private void send(Outbound response) throws IOException {
            if (response == null) {
                return;
            }
            writeStarted = System.nanoTime();
            long bytes = response.size();
            try {
                if (out instanceof TlsChannel tls) {
                    // Gathered into records of the largest size: a response's many small pieces (headers, each
                    // partition's records) would otherwise each be a record and a system call.
                    tls.cork();
                    try {
                        response.writeTo(out);
                    } finally {
                        tls.uncork();
                    }
                } else {
                    response.writeTo(out);
                }
            } finally {
                sent(bytes);
            }
            writeStarted = 0;
            lastActive = System.nanoTime();
            if (response.closesConnection()) {
                closeQuietly(channel);
            }
            if (response.muteMillis() > 0) {
                mutedUntil = Math.max(mutedUntil, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
                        response.muteMillis()));
            }
        }

        /**
         * Runs the TLS handshake if the listener has TLS (timed as a request body is), then makes the handler.
         *
         * @return false if the connection is refused
         */
        private boolean open() throws IOException {
            SSLSession session = null;
            if (tls != null) {
                TlsChannel secured = new TlsChannel(channel, tls.get());
                bodyStarted = System.nanoTime();
                try {
                    secured.handshake();
                } catch (SSLException e) {
                    LOG.info("closing the connection from {}: the TLS handshake failed: {}", remote(channel),
                            e.getMessage());
                    return false;
                } finally {
                    bodyStarted = 0;
                }
                session = secured.session();
                io = secured;
                out = secured;
            }
            handler = handlers.open(new FrameHandler.Peer((InetSocketAddress) channel.getRemoteAddress(), session));
            return true;
        }

        private void write() {
            try {
                while (true) {
                    CompletableFuture<Outbound> next = pending.take();
                    if (next == END) {
                        return;
                    }
                    Outbound response;
                    try {
                        response = next.get();
                    } catch (ExecutionException e) {
                        Throwable cause = e.getCause();
                        LOG.warn("closing the connection from {}: {}", remote(channel),
                                cause.getMessage() != null ? cause.getMessage() : cause.toString());
                        return;
                    }
                    writeLock.lock();
                    try {
                        send(response);
                        inFlight.decrementAndGet();
                    } finally {
                        writeLock.unlock();
                    }
                }
            } catch (ClosedChannelException e) {
                // closed by the client, the reaper or the broker
            } catch (IOException e) {
                if (!closed) {
                    LOG.debug("writing to {} failed: {}", remote(channel), e.toString());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                writeStarted = 0;
                closeQuietly(channel);
                // Wake a reader waiting for room in the queue or for data.
                reader.interrupt();
                try {
                    reader.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                connections.remove(this);
                release(address);
                listenerSlots.release();
                shared.connectionSlots.release();
            }
        }

        void closeAndJoin(long deadlineNanos) {
            closeQuietly(channel);
            writer.interrupt();
            try {
                long left = deadlineNanos - System.nanoTime();
                if (left > 0) {
                    writer.join(java.time.Duration.ofNanos(left));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Marks the end of a connection's requests in its queue of responses. */
    private static final CompletableFuture<Outbound> END = CompletableFuture.completedFuture(null);

    /**
     * Bytes of completed responses a client may leave untaken before its connection reads no more requests (Kafka's
     * broker reads no request of a connection while a response to it is waiting).
     */
    public static final long MAX_UNSENT_BYTES = 4L << 20;

    /** Bytes a connection reads at once; frames up to this size (with their size) are read through it. */
    private static final int READ_BUFFER_BYTES = 64 * 1024;

    /**
     * Makes {@code in} (in read mode) hold at least {@code wanted} bytes, compacting and reading as needed.
     *
     * @return false at end of stream with nothing buffered when {@code endAllowed}, else true
     * @throws EOFException at end of stream inside a frame
     */
    private static boolean fill(ReadableByteChannel channel, ByteBuffer in, int wanted, boolean endAllowed)
            throws IOException {
        if (in.remaining() >= wanted) {
            return true;
        }
        in.compact();
        try {
            while (in.position() < wanted) {
                if (channel.read(in) < 0) {
                    if (endAllowed && in.position() == 0) {
                        return false;
                    }
                    throw new EOFException("the connection ended inside a request");
                }
            }
        } finally {
            in.flip();
        }
        return true;
    }

    /** @return false at end of stream before the first byte when {@code endAllowed}, else true once full */
    private static boolean readFully(ReadableByteChannel connection, ByteBuffer buffer, boolean endAllowed)
            throws IOException {
        while (buffer.hasRemaining()) {
            if (connection.read(buffer) < 0) {
                if (endAllowed && buffer.position() == 0) {
                    return false;
                }
                throw new EOFException("the connection ended inside a request");
            }
        }
        return true;
    }

    private static String remote(SocketChannel connection) {
        try {
            return String.valueOf(connection.getRemoteAddress());
        } catch (IOException e) {
            return "a closed connection";
        }
    }

    private static void closeQuietly(SocketChannel connection) {
        try {
            connection.close();
        } catch (IOException e) {
            LOG.debug("closing a connection failed: {}", e.toString());
        }
    }

    /** Stops accepting, closes every connection and waits (up to 5 s) for their threads to end. */
    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        for (Connection connection : connections) {
            connection.closeAndJoin(deadline);
        }
        reaper.interrupt();
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}

package io.sluice.broker.net;

import java.io.EOFException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ByteChannel;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.GatheringByteChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.locks.ReentrantLock;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLEngineResult.HandshakeStatus;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLHandshakeException;
import javax.net.ssl.SSLSession;

/**
 * TLS over a blocking socket with the JDK's {@link SSLEngine}: one reader thread calls {@link #read}, one writer at a
 * time calls {@link #write} (the engine's wrap and unwrap may run at once, as its contract allows). Renegotiation of
 * TLS 1.2 is refused once the first handshake is done, as Kafka refuses it; TLS 1.3's post-handshake messages (session
 * tickets, key updates) are served.
 *
 * <p>Under TLS the bytes of a response pass through the engine: a file region is copied into memory and encrypted, so
 * {@code sendfile} is not used (as in Kafka).
 */
public final class TlsChannel implements ByteChannel, GatheringByteChannel {

    /** Plain bytes gathered between {@link #cork} and {@link #uncork}: four records of the largest size. */
    private static final int GATHER_BYTES = 64 * 1024;

    private final SocketChannel socket;
    private final SSLEngine engine;
    /** Network bytes read and not yet unwrapped (read mode). Only the reader touches it, and the handshake. */
    private ByteBuffer netIn;
    /** Plain bytes unwrapped and not yet taken (read mode). */
    private ByteBuffer appIn;
    /** Network bytes wrapped; held under {@link #writeLock}. */
    private ByteBuffer netOut;
    /** Plain bytes written while corked, not yet wrapped (write mode); held under {@link #writeLock}. */
    private ByteBuffer gathered;
    private boolean corked;
    private final ReentrantLock writeLock = new ReentrantLock();
    private volatile boolean handshakeDone;
    private boolean inboundClosed;

    /**
     * @param socket a connected, blocking socket
     * @param engine a server-side engine, not yet used
     */
    public TlsChannel(SocketChannel socket, SSLEngine engine) {
        this.socket = socket;
        this.engine = engine;
        SSLSession session = engine.getSession();
        // Heap buffers throughout: the JDK 25 engine encrypted and decrypted about 38% slower from and into direct
        // ones (AES-256-GCM, 64 KiB at a time), far more than the socket's copy out of a heap buffer costs.
        this.netIn = ByteBuffer.allocate(session.getPacketBufferSize()).flip();
        this.appIn = ByteBuffer.allocate(session.getApplicationBufferSize()).flip();
        // Room for several records, so that a large response goes out in few system calls.
        this.netOut = ByteBuffer.allocate(4 * session.getPacketBufferSize());
    }

    /**
     * Runs the TLS handshake to its end.
     *
     * @throws SSLHandshakeException when the peer is refused (an untrusted certificate, no common protocol)
     * @throws IOException when the connection fails or ends first
     */
    public void handshake() throws IOException {
        try {
            shake();
        } catch (SSLException e) {
            // Tell the peer why (the alert the engine has ready), so that its client reports a refused handshake
            // rather than a connection that ended.
            try {
                engine.closeOutbound();
                writeLock.lock();
                try {
                    wrap(ByteBuffer.allocate(0));
                    flushNetOut();
                } finally {
                    writeLock.unlock();
                }
            } catch (IOException | RuntimeException ignored) {
                // the peer is gone
            }
            throw e;
        }
    }

    private void shake() throws IOException {
        engine.beginHandshake();
        HandshakeStatus status = engine.getHandshakeStatus();
        while (status != HandshakeStatus.FINISHED && status != HandshakeStatus.NOT_HANDSHAKING) {
            switch (status) {
                case NEED_TASK -> {
                    runTasks();
                    status = engine.getHandshakeStatus();
                }
                case NEED_WRAP -> status = wrapHandshake();
                case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> status = unwrapHandshake();
                default -> throw new SSLException("unexpected handshake status " + status);
            }
        }
        handshakeDone = true;
    }

    /** @return the session agreed (peer certificates, protocol, cipher suite) */
    public SSLSession session() {
        return engine.getSession();
    }

    private void runTasks() {
        Runnable task;
        while ((task = engine.getDelegatedTask()) != null) {
            task.run();
        }
    }

    private HandshakeStatus wrapHandshake() throws IOException {
        writeLock.lock();
        try {
            SSLEngineResult result = wrap(ByteBuffer.allocate(0));
            flushNetOut();
            if (result.getStatus() == SSLEngineResult.Status.CLOSED) {
                // The engine refused the peer (an alert was just sent): say why, as the engine knows it.
                throw new SSLHandshakeException("the TLS handshake was refused");
            }
            return result.getHandshakeStatus();
        } finally {
            writeLock.unlock();
        }
    }

    private HandshakeStatus unwrapHandshake() throws IOException {
        while (true) {
            SSLEngineResult result = unwrapOnce();
            switch (result.getStatus()) {
                case OK -> {
                    return result.getHandshakeStatus();
                }
                case BUFFER_UNDERFLOW -> readNet();
                case CLOSED -> throw new EOFException("the peer closed the connection during the TLS handshake");
                default -> throw new SSLException("unexpected unwrap status " + result.getStatus());
            }
        }
    }

    /** Unwraps what {@link #netIn} holds into {@link #appIn}, growing buffers the session asks for. */
    private SSLEngineResult unwrapOnce() throws SSLException {
        while (true) {
            appIn.compact();
            SSLEngineResult result;
            try {
                result = engine.unwrap(netIn, appIn);
            } finally {
                appIn.flip();
            }
            if (result.getStatus() != SSLEngineResult.Status.BUFFER_OVERFLOW) {
                return result;
            }
            ByteBuffer larger = ByteBuffer.allocate(appIn.remaining() + engine.getSession().getApplicationBufferSize());
            larger.put(appIn).flip();
            appIn = larger;
        }
    }

    /** Reads more network bytes into {@link #netIn}, growing it when a record needs more room. */
    private void readNet() throws IOException {
        if (netIn.remaining() == netIn.capacity() || netIn.capacity() < engine.getSession().getPacketBufferSize()) {
            ByteBuffer larger = ByteBuffer.allocate(Math.max(netIn.capacity() * 2,
                    engine.getSession().getPacketBufferSize()));
            larger.put(netIn).flip();
            netIn = larger;
        }
        netIn.compact();
        int read;
        try {
            read = socket.read(netIn);
        } finally {
            netIn.flip();
        }
        if (read < 0) {
            throw new EOFException("the connection ended inside a TLS record");
        }
    }

    /** Wraps {@code source} into {@link #netOut} (under the write lock), growing it when asked to. */
    private SSLEngineResult wrap(ByteBuffer source) throws SSLException {
        while (true) {
            SSLEngineResult result = engine.wrap(source, netOut);
            if (result.getStatus() != SSLEngineResult.Status.BUFFER_OVERFLOW) {
                if (result.getHandshakeStatus() == HandshakeStatus.NEED_TASK) {
                    runTasks();
                }
                return result;
            }
            ByteBuffer larger = ByteBuffer.allocate(netOut.capacity() + engine.getSession().getPacketBufferSize());
            netOut.flip();
            larger.put(netOut);
            netOut = larger;
        }
    }

    private void flushNetOut() throws IOException {
        netOut.flip();
        try {
            while (netOut.hasRemaining()) {
                socket.write(netOut);
            }
        } finally {
            netOut.clear();
        }
    }

    @Override
    public int read(ByteBuffer destination) throws IOException {
        if (!socket.isOpen()) {
            throw new ClosedChannelException();
        }
        while (!appIn.hasRemaining()) {
            if (inboundClosed) {
                return -1;
            }
            SSLEngineResult result = unwrapOnce();
            switch (result.getStatus()) {
                case BUFFER_UNDERFLOW -> {
                    if (!readNetOrEnd()) {
                        return -1;
                    }
                }
                case CLOSED -> {
                    inboundClosed = true;
                    closeOutbound();
                }
                case OK -> afterHandshakeStep(result.getHandshakeStatus());
                default -> throw new SSLException("unexpected unwrap status " + result.getStatus());
            }
        }
        int taken = Math.min(destination.remaining(), appIn.remaining());
        ByteBuffer slice = appIn.slice(appIn.position(), taken);
        destination.put(slice);
        appIn.position(appIn.position() + taken);
        return taken;
    }

    /** Serves what an unwrap after the first handshake asks for; refuses a TLS 1.2 renegotiation. */
    private void afterHandshakeStep(HandshakeStatus status) throws IOException {
        if (status == HandshakeStatus.NOT_HANDSHAKING || status == HandshakeStatus.FINISHED) {
            return;
        }
        if (!"TLSv1.3".equals(engine.getSession().getProtocol())) {
            throw new SSLException("TLS renegotiation is not allowed");
        }
        // TLS 1.3 after the handshake: a key update to answer, say.
        while (status == HandshakeStatus.NEED_TASK || status == HandshakeStatus.NEED_WRAP) {
            if (status == HandshakeStatus.NEED_TASK) {
                runTasks();
                status = engine.getHandshakeStatus();
            } else {
                writeLock.lock();
                try {
                    status = wrap(ByteBuffer.allocate(0)).getHandshakeStatus();
                    flushNetOut();
                } finally {
                    writeLock.unlock();
                }
            }
        }
    }

    /** @return false at the end of the stream between records */
    private boolean readNetOrEnd() throws IOException {
        boolean atRecordStart = !netIn.hasRemaining();
        try {
            readNet();
            return true;
        } catch (EOFException e) {
            if (atRecordStart) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Ends what this side sends with TLS's close (close_notify), as a connection about to be closed should: a peer
     * that reads the last response and the end of the stream together (OpenSSL 3's clients) otherwise takes the end
     * for an unexpected EOF and may drop that response. Writes nothing more after it; the socket stays open. Called
     * by the writer.
     */
    public void shutdownOutput() {
        closeOutbound();
    }

    private void closeOutbound() {
        writeLock.lock();
        try {
            if (corked) {
                encryptGathered(); // what was written goes before the close
            }
        } catch (IOException e) {
            // the peer is gone: the close goes nowhere either
        } finally {
            writeLock.unlock();
        }
        engine.closeOutbound();
        writeLock.lock();
        try {
            wrap(ByteBuffer.allocate(0));
            flushNetOut();
        } catch (IOException e) {
            // the peer is gone: nothing to tell it
        } finally {
            writeLock.unlock();
        }
    }

    @Override
    public int write(ByteBuffer source) throws IOException {
        return (int) write(new ByteBuffer[] {source}, 0, 1);
    }

    @Override
    public long write(ByteBuffer[] sources) throws IOException {
        return write(sources, 0, sources.length);
    }

    /**
     * Writes all of the sources, encrypted, before returning (a blocking channel); while {@link #cork corked}, gathers
     * them into records of the largest size, sent when they fill and at {@link #uncork}.
     */
    @Override
    public long write(ByteBuffer[] sources, int offset, int length) throws IOException {
        if (!handshakeDone) {
            throw new IllegalStateException("the TLS handshake has not run");
        }
        long written = 0;
        writeLock.lock();
        try {
            for (int i = offset; i < offset + length; i++) {
                ByteBuffer source = sources[i];
                written += source.remaining();
                if (!corked) {
                    encrypt(source);
                    continue;
                }
                while (source.hasRemaining()) {
                    if (gathered.position() == 0 && source.remaining() >= gathered.capacity()) {
                        encrypt(source); // as large as what gathering would make: no copy
                    } else {
                        int n = Math.min(gathered.remaining(), source.remaining());
                        gathered.put(gathered.position(), source, source.position(), n);
                        gathered.position(gathered.position() + n);
                        source.position(source.position() + n);
                        if (!gathered.hasRemaining()) {
                            encryptGathered();
                        }
                    }
                }
            }
            if (!corked) {
                flushNetOut();
            }
        } finally {
            writeLock.unlock();
        }
        return written;
    }

    /** Wraps all of {@code source} into {@link #netOut}, sending it whenever it has no room for another record. */
    private void encrypt(ByteBuffer source) throws IOException {
        int packet = engine.getSession().getPacketBufferSize();
        while (source.hasRemaining()) {
            if (netOut.remaining() < packet) {
                flushNetOut();
            }
            SSLEngineResult result = wrap(source);
            if (result.getStatus() == SSLEngineResult.Status.CLOSED) {
                throw new ClosedChannelException();
            }
        }
    }

    private void encryptGathered() throws IOException {
        gathered.flip();
        try {
            encrypt(gathered);
        } finally {
            gathered.clear();
        }
    }

    /**
     * From now until {@link #uncork}, writes by this thread are gathered and sent in records of the largest size (a
     * response written in many small pieces goes in few records and system calls), and {@link #room} may be filled.
     * Holds the write lock until {@link #uncork}.
     */
    public void cork() {
        writeLock.lock();
        if (gathered == null) {
            gathered = ByteBuffer.allocate(GATHER_BYTES);
        }
        corked = true;
    }

    /**
     * Sends what was gathered since {@link #cork} and lets the write lock go.
     *
     * @throws IOException if sending failed; the lock is let go anyway
     */
    public void uncork() throws IOException {
        try {
            encryptGathered();
            flushNetOut();
        } finally {
            corked = false;
            gathered.clear();
            writeLock.unlock();
        }
    }

    /** Sends what was gathered so far, staying corked; as a plain write does when not corked. */
    public void flush() throws IOException {
        writeLock.lock();
        try {
            if (corked) {
                encryptGathered();
            }
            flushNetOut();
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * The gathering buffer, to read file bytes straight into; only between {@link #cork} and {@link #uncork}, by the
     * corking thread.
     *
     * @return the buffer in write mode with room left (what it held encrypted first if it was full); bytes put in it,
     *     its position moved past them, are sent as written ones
     */
    public ByteBuffer room() throws IOException {
        if (!corked || !writeLock.isHeldByCurrentThread()) {
            throw new IllegalStateException("room is only given while corked, to the corking thread");
        }
        if (!gathered.hasRemaining()) {
            encryptGathered();
        }
        return gathered;
    }

    @Override
    public boolean isOpen() {
        return socket.isOpen();
    }

    /** Closes the socket (without waiting for the peer's close_notify). */
    @Override
    public void close() throws IOException {
        socket.close();
    }
}

import javax.net.ssl.*;
import java.nio.ByteBuffer;
import java.security.*;
import java.io.*;

/**
 * The JDK's SSLEngine encrypting and decrypting 64 KiB at a time (TLS 1.3, TLS_AES_256_GCM_SHA384), from and into
 * heap buffers against direct ones: what TlsChannel's choice of buffers rests on. Run by scripts/ssl-engine-buffers.sh:
 * {@code java SslEngineBuffers.java <PKCS12 key store> <password>}; prints MB/s per round and kind.
 */
public class SslEngineBuffers {
    public static void main(String[] args) throws Exception {
        String ks = args[0]; char[] pw = args[1].toCharArray();
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = new FileInputStream(ks)) { store.load(in, pw); }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance("PKIX"); kmf.init(store, pw);
        TrustManager[] trustAll = { new javax.net.ssl.X509TrustManager() {
            public void checkClientTrusted(java.security.cert.X509Certificate[] c, String a) {}
            public void checkServerTrusted(java.security.cert.X509Certificate[] c, String a) {}
            public java.security.cert.X509Certificate[] getAcceptedIssuers() { return new java.security.cert.X509Certificate[0]; } } };
        SSLContext ctx = SSLContext.getInstance("TLSv1.3"); ctx.init(kmf.getKeyManagers(), trustAll, null);
        for (int round = 0; round < 3; round++) {
            for (boolean direct : new boolean[] {false, true}) {
                SSLEngine client = ctx.createSSLEngine("localhost", 1); client.setUseClientMode(true);
                SSLEngine server = ctx.createSSLEngine(); server.setUseClientMode(false);
                client.setEnabledCipherSuites(new String[] {"TLS_AES_256_GCM_SHA384"});
                int pkt = server.getSession().getPacketBufferSize();
                ByteBuffer c2s = ByteBuffer.allocate(4 * pkt), s2c = ByteBuffer.allocate(4 * pkt);
                ByteBuffer capp = ByteBuffer.allocate(64 << 10), sapp = ByteBuffer.allocate(64 << 10);
                ByteBuffer empty = ByteBuffer.allocate(0);
                // handshake
                client.beginHandshake(); server.beginHandshake();
                for (int i = 0; i < 1000 && (client.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING || server.getHandshakeStatus() != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING); i++) {
                    step(client, empty, c2s, s2c, capp); step(server, empty, s2c, c2s, sapp);
                }
                // Let each side take what the other still sent (TLS 1.3 session tickets).
                for (int k = 0; k < 4; k++) {
                    s2c.flip(); while (s2c.hasRemaining()) { capp.clear(); client.unwrap(s2c, capp); } s2c.clear();
                    c2s.flip(); while (c2s.hasRemaining()) { sapp.clear(); server.unwrap(c2s, sapp); } c2s.clear();
                    server.wrap(empty, s2c); client.wrap(empty, c2s);
                }
                s2c.flip(); while (s2c.hasRemaining()) { capp.clear(); client.unwrap(s2c, capp); } s2c.clear();
                ByteBuffer plain = direct ? ByteBuffer.allocateDirect(64 << 10) : ByteBuffer.allocate(64 << 10);
                ByteBuffer net = direct ? ByteBuffer.allocateDirect(8 * pkt) : ByteBuffer.allocate(8 * pkt);
                ByteBuffer out = ByteBuffer.allocate(64 << 10);
                long bytes = 0; long start = System.nanoTime();
                while (System.nanoTime() - start < 3_000_000_000L) {
                    plain.clear();
                    while (plain.hasRemaining()) { net.clear(); server.wrap(plain, net); net.flip();
                        // decrypt on the client side from the same kind of buffer
                        out.clear(); client.unwrap(net, out); bytes += out.position(); }
                }
                double secs = (System.nanoTime() - start) / 1e9;
                System.out.printf("round %d %s: %.0f MB/s (encrypt+decrypt)%n", round, direct ? "direct" : "heap  ", bytes / secs / 1e6);
            }
        }
    }
    static void step(SSLEngine e, ByteBuffer empty, ByteBuffer outNet, ByteBuffer inNet, ByteBuffer app) throws Exception {
        switch (e.getHandshakeStatus()) {
            case NEED_WRAP -> e.wrap(empty, outNet);
            case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> { inNet.flip(); e.unwrap(inNet, app); inNet.compact(); }
            case NEED_TASK -> { Runnable r; while ((r = e.getDelegatedTask()) != null) r.run(); }
            default -> {}
        }
    }
}

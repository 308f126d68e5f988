package io.sluice.bench.peers;

import io.sluice.bench.race.Durability;
import io.sluice.bench.race.Target;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.common.BrokerConfig;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageAccessor;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExtBatch;
import org.apache.rocketmq.common.message.MessageExtBrokerInner;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.GetMessageResult;
import org.apache.rocketmq.store.GetMessageStatus;
import org.apache.rocketmq.store.PutMessageResult;
import org.apache.rocketmq.store.config.BrokerRole;
import org.apache.rocketmq.store.config.FlushDiskType;
import org.apache.rocketmq.store.config.MessageStoreConfig;
import org.apache.rocketmq.store.stats.BrokerStatsManager;

/**
 * Apache RocketMQ's store ({@code DefaultMessageStore}) embedded: its commit log and consume queues, written
 * through the mapping or, with {@code transientStorePool}, through pooled direct buffers committed by
 * {@code FileChannel}; SYNC_FLUSH (group commit) or ASYNC_FLUSH. Replication is replaced by
 * {@link LocalOnlyHaService}, so the store opens no socket.
 */
public final class RocketMqTarget implements Target {

    private static final InetSocketAddress LOOPBACK = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);

    private final DefaultMessageStore store;
    private final ExecutorService sendThreads;

    /**
     * @param transientPool write through RocketMQ's pooled direct buffers; RocketMQ allows it only with
     *                      ASYNC_FLUSH
     */
    public RocketMqTarget(Path directory, Durability durability, boolean transientPool, long segmentBytes)
            throws Exception {
        if (transientPool && durability == Durability.SYNC) {
            throw new IllegalArgumentException("RocketMQ's transient store pool works only with ASYNC_FLUSH");
        }
        MessageStoreConfig config = new MessageStoreConfig();
        config.setStorePathRootDir(directory.toString());
        config.setStorePathCommitLog(directory.resolve("commitlog").toString());
        config.setMappedFileSizeCommitLog(Math.toIntExact(segmentBytes));
        config.setFlushDiskType(durability == Durability.SYNC ? FlushDiskType.SYNC_FLUSH : FlushDiskType.ASYNC_FLUSH);
        config.setBrokerRole(BrokerRole.ASYNC_MASTER);
        // With the pool, RocketMQ allocates and mlocks its default five segment-sized buffers at start; fewer
        // would starve its allocator, which prepares two segments ahead, each with a buffer.
        config.setTransientStorePoolEnable(transientPool);
        BrokerConfig broker = new BrokerConfig();
        store = new DefaultMessageStore(config, new BrokerStatsManager(broker.getBrokerClusterName(), true), null,
                broker, new ConcurrentHashMap<>());
        if (!store.load()) {
            throw new IOException("RocketMQ's store did not load " + directory);
        }
        store.start();
        // RocketMQ encodes a put on the calling thread, with a per-thread encoder that holds a direct buffer of
        // the maximum message size: it expects puts from the broker's small, fixed pool of send threads, not
        // from hundreds of short-lived virtual threads. So puts run on such a pool, sized as the broker sizes it.
        AtomicInteger threadNumber = new AtomicInteger();
        sendThreads = Executors.newFixedThreadPool(broker.getSendMessageThreadPoolNums(),
                r -> Thread.ofPlatform().daemon().name("rocketmq-send-" + threadNumber.getAndIncrement()).unstarted(r));
    }

    @Override
    public void send(int queue, List<byte[]> bodies) {
        PutMessageResult result = CompletableFuture.supplyAsync(() -> put(queue, bodies), sendThreads)
                .thenCompose(future -> future).join();
        if (result == null || !result.isOk()) {
            throw new IllegalStateException("RocketMQ refused the put: "
                    + (result == null ? "no result" : result.getPutMessageStatus()));
        }
    }

    private CompletableFuture<PutMessageResult> put(int queue, List<byte[]> bodies) {
        if (bodies.size() == 1) {
            MessageExtBrokerInner message = new MessageExtBrokerInner();
            stamp(message, queue);
            message.setBody(bodies.getFirst());
            message.setPropertiesString("");
            return store.asyncPutMessage(message);
        } else {
            List<Message> messages = new ArrayList<>(bodies.size());
            for (byte[] body : bodies) {
                messages.add(new Message(TOPIC, body));
            }
            MessageExtBatch batch = new MessageExtBatch();
            stamp(batch, queue);
            batch.setBody(MessageDecoder.encodeMessages(messages));
            batch.setPropertiesString("");
            return store.asyncPutMessages(batch);
        }
    }

    private static void stamp(MessageExtBrokerInner message, int queue) {
        message.setTopic(TOPIC);
        message.setQueueId(queue);
        message.setTagsCode(0);
        message.setSysFlag(0);
        message.setBornTimestamp(System.currentTimeMillis());
        message.setBornHost(LOOPBACK);
        message.setStoreHost(LOOPBACK);
        MessageAccessor.setProperties(message, new HashMap<>());
    }

    @Override
    public long count(long acknowledged) throws Exception {
        // Consume queues are built from the commit log by a dispatcher thread, and with the transient store
        // pool only what the commit thread has written to the file is dispatched: wait for both.
        long deadline = System.nanoTime() + 30_000_000_000L;
        long count = queued();
        while (count < acknowledged && System.nanoTime() - deadline < 0) {
            Thread.sleep(5);
            count = queued();
        }
        if (count < acknowledged) {
            System.err.printf("rocketmq: %d of %d acknowledged messages readable after 30 s; the dispatcher is %d "
                            + "bytes behind a commit log of %d%n", count, acknowledged, store.dispatchBehindBytes(),
                    store.getMaxPhyOffset());
        }
        return count;
    }

    private long queued() throws Exception {
        long count = 0;
        for (int queue = 0; queue < QUEUES; queue++) {
            count += store.getMaxOffsetInQueue(TOPIC, queue);
        }
        return count;
    }

    @Override
    public byte[] first(int queue) {
        GetMessageResult result = store.getMessage("bench", TOPIC, queue, 0, 1, null);
        try {
            if (result == null || result.getStatus() != GetMessageStatus.FOUND) {
                return null;
            }
            ByteBuffer record = result.getMessageBufferList().getFirst();
            return MessageDecoder.decode(record, true, false).getBody();
        } finally {
            if (result != null) {
                result.release();
            }
        }
    }

    @Override
    public void close() {
        sendThreads.shutdownNow();
        store.shutdown();
    }
}

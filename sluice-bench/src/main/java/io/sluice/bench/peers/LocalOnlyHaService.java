package io.sluice.bench.peers;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.rocketmq.remoting.protocol.body.HARuntimeInfo;
import org.apache.rocketmq.store.CommitLog;
import org.apache.rocketmq.store.DefaultMessageStore;
import org.apache.rocketmq.store.PutMessageStatus;
import org.apache.rocketmq.store.ha.HAClient;
import org.apache.rocketmq.store.ha.HAConnection;
import org.apache.rocketmq.store.ha.HAConnectionStateNotificationRequest;
import org.apache.rocketmq.store.ha.HAService;
import org.apache.rocketmq.store.ha.WaitNotifyObject;

/**
 * Stands in for RocketMQ's replication service in the embedded store. RocketMQ's default one accepts replicas
 * on a port bound to every interface; the race needs a single store and must not listen beyond 127.0.0.1, so
 * this one opens no socket and has no replicas. RocketMQ's store loads it through its own service file
 * ({@code META-INF/service/org.apache.rocketmq.store.ha.HAService}) in place of {@code DefaultHAService}.
 * Under ASYNC_MASTER, the role the race uses, the store never waits on it. Thread-safe (stateless).
 */
public final class LocalOnlyHaService implements HAService {

    private final AtomicInteger connections = new AtomicInteger();
    private final AtomicLong pushedOffset = new AtomicLong();
    private final WaitNotifyObject waitNotify = new WaitNotifyObject();

    /** Instantiated by RocketMQ's service loader. */
    public LocalOnlyHaService() {
    }

    @Override
    public void init(DefaultMessageStore store) {
        // Nothing to open: no replicas.
    }

    @Override
    public void start() {
        // No acceptor thread and no socket.
    }

    @Override
    public void shutdown() {
        // Nothing was started.
    }

    @Override
    public void updateMasterAddress(String address) {
        // A single store has no master to follow.
    }

    @Override
    public void updateHaMasterAddress(String address) {
        // A single store has no master to follow.
    }

    @Override
    public int inSyncReplicasNums(long masterPutWhere) {
        return 1;
    }

    @Override
    public AtomicInteger getConnectionCount() {
        return connections;
    }

    @Override
    public void putRequest(CommitLog.GroupCommitRequest request) {
        // Only a SYNC_MASTER waits for replicas; with none, the wait is over at once.
        request.wakeupCustomer(PutMessageStatus.PUT_OK);
    }

    @Override
    public void putGroupConnectionStateRequest(HAConnectionStateNotificationRequest request) {
        request.getRequestFuture().complete(false);
    }

    @Override
    public List<HAConnection> getConnectionList() {
        return List.of();
    }

    @Override
    public HAClient getHAClient() {
        return null;
    }

    @Override
    public AtomicLong getPush2SlaveMaxOffset() {
        return pushedOffset;
    }

    @Override
    public HARuntimeInfo getRuntimeInfo(long masterPutWhere) {
        return new HARuntimeInfo();
    }

    @Override
    public WaitNotifyObject getWaitNotifyObject() {
        return waitNotify;
    }

    @Override
    public boolean isSlaveOK(long masterPutWhere) {
        return false;
    }
}

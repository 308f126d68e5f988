package io.sluice.cluster;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.server.RaftServer;

/**
 * Puts a leading Raft division in the state Ratis 3.3.0 leaves it in after a hand-over whose first try fails at once
 * (the transferee's StartLeaderElection call already failed, say, or it has no log appender): TransferLeadership's
 * request stays pending with no timeout scheduled to end it, and the division refuses every append as "stepping
 * down" until the group elects a leader. That first try is a race (the call must fail before Ratis looks at it), so
 * the tests make its outcome here, in Ratis's own fields, rather than wait for the race. Those fields are Ratis
 * 3.3.0's private ones: a Ratis upgrade must check that this still makes that state (and whether the fault remains).
 */
final class RatisHandOvers {

    private RatisHandOvers() {
    }

    /** Leaves a hand-over of {@code division}'s leadership to {@code to} pending, as a failed start does. */
    static void leavePending(RaftServer.Division division, RaftPeerId to) throws ReflectiveOperationException {
        Method getter = division.getClass().getDeclaredMethod("getTransferLeadership");
        getter.setAccessible(true);
        Object transfer = getter.invoke(division);
        Field pendingField = transfer.getClass().getDeclaredField("pending");
        pendingField.setAccessible(true);
        Class<?> pendingType = Class.forName(transfer.getClass().getName() + "$PendingRequest");
        Constructor<?> constructor = pendingType.getDeclaredConstructor(transfer.getClass(),
                TransferLeadershipRequest.class);
        constructor.setAccessible(true);
        Object pending = constructor.newInstance(transfer, new TransferLeadershipRequest(ClientId.randomId(),
                division.getId(), division.getGroup().getGroupId(), 1, to, 300));
        @SuppressWarnings("unchecked")
        AtomicReference<Object> reference = (AtomicReference<Object>) pendingField.get(transfer);
        if (!reference.compareAndSet(null, pending)) {
            throw new IllegalStateException(division.getMemberId() + " has a hand-over pending already");
        }
    }
}

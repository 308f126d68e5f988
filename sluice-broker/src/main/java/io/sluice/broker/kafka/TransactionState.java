package io.sluice.broker.kafka;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * A transactional id's state as its coordinator saves it after each change (docs/format.md, "Transaction state"):
 * the producer id and epoch it holds, its transaction's timeout, where the transaction stands, the partitions and
 * groups it wrote to, and the group offsets it is to commit. Immutable.
 *
 * @param transactionalId the transactional id
 * @param producerId the producer id it holds
 * @param epoch its producer epoch
 * @param timeoutMs its transaction timeout
 * @param status where its transaction stands
 * @param startedMs when its last transaction began (its first partition added), -1 before its first
 * @param updatedMs when it last changed
 * @param partitions the partitions its transaction wrote to
 * @param groups the consumer groups its transaction commits offsets of (AddOffsetsToTxn)
 * @param offsets the group offsets its transaction is to commit (TxnOffsetCommit), applied at its commit
 */
record TransactionState(String transactionalId, long producerId, short epoch, int timeoutMs, Status status,
                        long startedMs, long updatedMs, Set<Partition> partitions, Set<String> groups,
                        List<Offset> offsets) {

    /** Where a transaction stands, as Kafka names the states (ListTransactions and DescribeTransactions print them). */
    enum Status {
        EMPTY("Empty"), ONGOING("Ongoing"), PREPARE_COMMIT("PrepareCommit"), PREPARE_ABORT("PrepareAbort"),
        COMPLETE_COMMIT("CompleteCommit"), COMPLETE_ABORT("CompleteAbort");

        private final String kafkaName;

        Status(String kafkaName) {
            this.kafkaName = kafkaName;
        }

        /** @return the state's name as Kafka's admin APIs print it */
        String kafkaName() {
            return kafkaName;
        }
    }

    /**
     * One partition a transaction wrote to.
     *
     * @param topic the topic
     * @param index the partition
     */
    record Partition(String topic, int index) {
    }

    /**
     * A group offset a transaction is to commit.
     *
     * @param group the group's Kafka id
     * @param topic the topic
     * @param partition the partition
     * @param offset the next offset the group reads
     */
    record Offset(String group, String topic, int partition, long offset) {
    }

    /** Copies the collections: a state never changes. */
    TransactionState {
        partitions = Set.copyOf(new LinkedHashSet<>(partitions));
        groups = Set.copyOf(groups);
        offsets = List.copyOf(offsets);
    }

    /** @return the state of a transactional id just given a producer id: no transaction open */
    static TransactionState empty(String transactionalId, long producerId, short epoch, int timeoutMs, long now) {
        return new TransactionState(transactionalId, producerId, epoch, timeoutMs, Status.EMPTY, -1, now, Set.of(),
                Set.of(), List.of());
    }

    /** @return this state moved to {@code next}, at {@code now}, its partitions, groups and offsets kept */
    TransactionState to(Status next, long now) {
        return new TransactionState(transactionalId, producerId, epoch, timeoutMs, next, startedMs, now, partitions,
                groups, offsets);
    }

    /**
     * @return this transaction ended ({@code next}, a complete state): no partition, group or offset; its start time
     *     kept, as DescribeTransactions shows it
     */
    TransactionState completed(Status next, long now) {
        return new TransactionState(transactionalId, producerId, epoch, timeoutMs, next, startedMs, now, Set.of(),
                Set.of(), List.of());
    }

    /** @return this state with a transaction open (since now, if it was not) and writing to more partitions, groups */
    TransactionState adding(Set<Partition> morePartitions, Set<String> moreGroups, long now) {
        Set<Partition> allPartitions = new LinkedHashSet<>(partitions);
        allPartitions.addAll(morePartitions);
        Set<String> allGroups = new LinkedHashSet<>(groups);
        allGroups.addAll(moreGroups);
        return new TransactionState(transactionalId, producerId, epoch, timeoutMs, Status.ONGOING,
                status == Status.ONGOING ? startedMs : now, now, allPartitions, allGroups, offsets);
    }

    /** @return this state with more offsets to commit; a later offset of a group's partition replaces an earlier */
    TransactionState staging(List<Offset> more, long now) {
        List<Offset> all = new ArrayList<>();
        for (Offset kept : offsets) {
            if (more.stream().noneMatch(one -> one.group().equals(kept.group()) && one.topic().equals(kept.topic())
                    && one.partition() == kept.partition())) {
                all.add(kept);
            }
        }
        all.addAll(more);
        return new TransactionState(transactionalId, producerId, epoch, timeoutMs, status, startedMs, now, partitions,
                groups, all);
    }

    /** @return this state with another producer id and epoch, and timeout */
    TransactionState withProducer(long newProducerId, short newEpoch, int newTimeoutMs, long now) {
        return new TransactionState(transactionalId, newProducerId, newEpoch, newTimeoutMs, status, startedMs, now,
                partitions, groups, offsets);
    }

    /** Version of the encoding below. */
    private static final byte VERSION = 0;

    /** @return the state's bytes, as saved (docs/format.md) */
    byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(VERSION);
            out.writeUTF(transactionalId);
            out.writeLong(producerId);
            out.writeShort(epoch);
            out.writeInt(timeoutMs);
            out.writeByte(status.ordinal());
            out.writeLong(startedMs);
            out.writeLong(updatedMs);
            out.writeInt(partitions.size());
            for (Partition partition : partitions) {
                out.writeUTF(partition.topic());
                out.writeInt(partition.index());
            }
            out.writeInt(groups.size());
            for (String group : groups) {
                out.writeUTF(group);
            }
            out.writeInt(offsets.size());
            for (Offset offset : offsets) {
                out.writeUTF(offset.group());
                out.writeUTF(offset.topic());
                out.writeInt(offset.partition());
                out.writeLong(offset.offset());
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /**
     * @return the state {@link #encode} wrote
     * @throws IllegalArgumentException if the bytes are not such a state
     */
    static TransactionState decode(byte[] bytes) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            byte version = in.readByte();
            if (version != VERSION) {
                throw new IllegalArgumentException("transaction state of unknown version " + version);
            }
            String id = in.readUTF();
            long producerId = in.readLong();
            short epoch = in.readShort();
            int timeoutMs = in.readInt();
            Status status = Status.values()[in.readByte()];
            long startedMs = in.readLong();
            long updatedMs = in.readLong();
            Set<Partition> partitions = new LinkedHashSet<>();
            for (int i = in.readInt(); i > 0; i--) {
                partitions.add(new Partition(in.readUTF(), in.readInt()));
            }
            Set<String> groups = new LinkedHashSet<>();
            for (int i = in.readInt(); i > 0; i--) {
                groups.add(in.readUTF());
            }
            List<Offset> offsets = new ArrayList<>();
            for (int i = in.readInt(); i > 0; i--) {
                offsets.add(new Offset(in.readUTF(), in.readUTF(), in.readInt(), in.readLong()));
            }
            if (in.available() > 0) {
                throw new IllegalArgumentException("transaction state with " + in.available() + " bytes past its end");
            }
            return new TransactionState(id, producerId, epoch, timeoutMs, status, startedMs, updatedMs, partitions,
                    groups, offsets);
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("not a transaction state: " + e, e);
        }
    }
}

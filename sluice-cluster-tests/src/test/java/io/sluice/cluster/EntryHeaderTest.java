package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.KafkaBatch;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;

/** The log's record of an entry's batches, and how an entry's data is cut into batches. */
class EntryHeaderTest {

    @Test
    void anEntryOfSeveralBatchesReadsBackAsWritten() {
        EntryHeader header = new EntryHeader(1_000, new int[] {3, 1, 7}, new int[] {300, 90, 1_200});
        EntryHeader read = EntryHeader.decode(header.encode());

        assertThat(read).isEqualTo(header);
        assertThat(read.batches()).isEqualTo(3);
        assertThat(read.count()).isEqualTo(11);
        assertThat(read.size()).isEqualTo(1_590);
        assertThat(read.end()).isEqualTo(1_011);
        assertThat(read.count(2)).isEqualTo(7);
        assertThat(read.size(1)).isEqualTo(90);
        assertThat(header.encode().size()).isEqualTo(13 + 3 * 8);
    }

    @Test
    void aVersionOneEntryReadsAsOneBatch() {
        ByteBuffer v1 = ByteBuffer.allocate(17).put((byte) 1).putLong(42).putInt(5).putInt(700);
        EntryHeader read = EntryHeader.decode(ByteString.copyFrom(v1.array()));

        assertThat(read).isEqualTo(EntryHeader.single(42, 5, 700));
        assertThat(read.end()).isEqualTo(47);
    }

    @Test
    void dataThatIsNoHeaderIsRefused() {
        byte[] header = new EntryHeader(0, new int[] {1, 2}, new int[] {80, 90}).encode().toByteArray();
        byte[] cut = java.util.Arrays.copyOf(header, header.length - 1);
        byte[] noBatches = ByteBuffer.allocate(13).put((byte) 2).putLong(0).putInt(0).array();
        byte[] zeroCount = new EntryHeader(0, new int[] {1, 2}, new int[] {80, 90}).encode().toByteArray();
        ByteBuffer.wrap(zeroCount).putInt(13 + 8, 0);

        assertThatThrownBy(() -> EntryHeader.decode(ByteString.copyFrom(cut))).hasMessageContaining("not a batch entry");
        assertThatThrownBy(() -> EntryHeader.decode(ByteString.copyFrom(noBatches)))
                .hasMessageContaining("not a batch entry");
        assertThatThrownBy(() -> EntryHeader.decode(ByteString.copyFrom(zeroCount)))
                .hasMessageContaining("covers 0 offsets");
        assertThatThrownBy(() -> EntryHeader.decode(ByteString.EMPTY)).hasMessageContaining("version none");
        assertThatThrownBy(() -> new EntryHeader(-1, new int[] {1}, new int[] {1})).hasMessageContaining("-1");
    }

    @Test
    void aLogStartEntryNamesNoBatchAndEndsWhereTheBatchesBeforeItEnd() {
        EntryHeader header = EntryHeader.logStart(500, 120);
        EntryHeader read = EntryHeader.decode(header.encode());

        assertThat(read).isEqualTo(header).isNotEqualTo(EntryHeader.single(500, 1, 100));
        assertThat(read.logStart()).isEqualTo(120);
        assertThat(read.batches()).isZero();
        assertThat(read.size()).isZero();
        assertThat(read.baseOffset()).isEqualTo(500);
        assertThat(read.end()).isEqualTo(500);
        assertThat(header.encode().size()).isEqualTo(17);
        assertThat(EntryHeader.single(42, 5, 700).logStart()).isEqualTo(-1);
        assertThatThrownBy(() -> EntryHeader.logStart(100, 101)).hasMessageContaining("log start 101");
    }

    @Test
    void aRequestForALogStartEntryIsNoBatchAndNoBatchIsTakenForOne() {
        assertThat(EntryHeader.requestedLogStart(EntryHeader.logStartRequest(77))).isEqualTo(77);
        assertThat(EntryHeader.requestedLogStart(EntryHeader.logStartRequest(0))).isZero();
        byte[] batch = KafkaBatch.of(1L, List.of(new byte[10]));
        batch[0] = 3;
        assertThat(EntryHeader.requestedLogStart(ByteString.copyFrom(batch))).isEqualTo(-1);
        assertThat(EntryHeader.requestedLogStart(ByteString.EMPTY)).isEqualTo(-1);
        assertThatThrownBy(() -> PartitionStore.split(EntryHeader.logStartRequest(77)))
                .hasMessageContaining("batch 0");
    }

    @Test
    void anEntrysDataIsCutIntoItsBatches() {
        byte[] one = KafkaBatch.of(1L, List.of(new byte[10], new byte[20], new byte[30]));
        byte[] two = KafkaBatch.of(2L, List.of(new byte[100]));
        ByteString data = ByteString.copyFrom(one).concat(ByteString.copyFrom(two));

        int[][] batches = PartitionStore.split(data);

        assertThat(batches[0]).containsExactly(3, 1);
        assertThat(batches[1]).containsExactly(one.length, two.length);
    }

    @Test
    void aCutOrDamagedBatchInAnEntrysDataIsNamed() {
        byte[] one = KafkaBatch.of(1L, List.of(new byte[10]));
        byte[] two = KafkaBatch.of(2L, List.of(new byte[100]));
        ByteString cut = ByteString.copyFrom(one).concat(ByteString.copyFrom(two, 0, two.length - 5));
        byte[] damaged = two.clone();
        damaged[damaged.length - 1] ^= 1;

        assertThatThrownBy(() -> PartitionStore.split(cut)).hasMessageContaining("batch 1 at byte "
                + one.length);
        assertThatThrownBy(() -> PartitionStore.split(ByteString.copyFrom(one)
                .concat(ByteString.copyFrom(damaged)))).hasMessageContaining("CRC32C");
        assertThatThrownBy(() -> PartitionStore.split(ByteString.EMPTY)).hasMessageContaining("batch 0");
        assertThatThrownBy(() -> PartitionStore.split(ByteString.copyFrom(new byte[5])))
                .hasMessageContaining("batch 0");
    }
}

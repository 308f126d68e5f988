package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.zip.CRC32C;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Produce requests written by hand with the generated classes: every refusal carries the error Apache Kafka 4.3.1
 * answers for the same bytes (CORRUPT_MESSAGE for a CRC that does not match, INVALID_RECORD for records that do not
 * parse, UNKNOWN_SERVER_ERROR for a length or codec no batch has) and stores nothing; the idempotent producer's retries are answered with their first offsets, before and after a restart.
 */
class ProduceValidationTest {

    private static final short VERSION = 9;

    @TempDir
    Path dir;

    private static SimpleRecord[] records(int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(("r" + i).getBytes(StandardCharsets.UTF_8));
        }
        return records;
    }

    private static ProduceRequestData request(String topic, int partition, short acks, MemoryRecords records) {
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName(topic).setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(partition).setRecords(records))));
        return new ProduceRequestData().setAcks(acks).setTimeoutMs(10_000).setTopicData(topics);
    }

    private static ProduceResponseData.PartitionProduceResponse produce(Socket socket, ProduceRequestData request)
            throws IOException {
        ProduceResponseData response = new ProduceResponseData(KafkaWire.exchange(socket, ApiKeys.PRODUCE, VERSION,
                request), VERSION);
        return response.responses().iterator().next().partitionResponses().getFirst();
    }

    /** Rewrites a batch's CRC32C after a change, so that only the changed field is wrong. */
    private static void fixCrc(ByteBuffer batch) {
        CRC32C crc = new CRC32C();
        crc.update(batch.duplicate().position(21));
        batch.putInt(17, (int) crc.getValue());
    }

    private Store open() {
        Store store = Store.open(dir, StoreConfig.builder().build());
        store.createTopic("t", TopicLayout.QUEUE, 1);
        return store;
    }

    @Test
    void damagedOrRefusedBatchesGetKafkasErrorsAndStoreNothing() throws Exception {
        try (Store store = open();
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            MemoryRecords good = MemoryRecords.withRecords(Compression.NONE, records(3));

            ByteBuffer badCrc = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            badCrc.put(70, (byte) (badCrc.get(70) ^ 1));
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(badCrc))).errorCode())
                    .isEqualTo(Errors.CORRUPT_MESSAGE.code());

            // The count says 4 and the offsets agree, but only 3 records are there (CRC made to match).
            ByteBuffer badCount = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            badCount.putInt(57, 4).putInt(23, 3);
            fixCrc(badCount);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(badCount))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            // Offsets spanning more than the count.
            ByteBuffer badDelta = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            badDelta.putInt(23, 7);
            fixCrc(badDelta);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(badDelta))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            // An unknown codec and a negative offset span, the CRC matching: the codec is read first, as Kafka does.
            ByteBuffer codecAndDelta = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            codecAndDelta.putShort(21, (short) 5).putInt(23, -1);
            fixCrc(codecAndDelta);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(codecAndDelta)))
                    .errorCode()).isEqualTo(Errors.UNKNOWN_SERVER_ERROR.code());

            // Truncated: a batch cut short.
            ByteBuffer cut = good.buffer().duplicate().limit(good.sizeInBytes() - 5).slice();
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(cut))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            // A batch length that overflows the buffer's limit arithmetic (found by the fuzzer).
            ByteBuffer hugeLength = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            hugeLength.putInt(8, Integer.MAX_VALUE);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(hugeLength)))
                    .errorCode()).isEqualTo(Errors.UNKNOWN_SERVER_ERROR.code());

            // A compressed batch whose count (and offset span) is forged: 2^31-1 records claimed, 1 held.
            MemoryRecords gzip = MemoryRecords.withRecords(Compression.gzip().build(), records(1));
            ByteBuffer forged = ByteBuffer.allocate(gzip.sizeInBytes()).put(gzip.buffer().duplicate()).flip();
            forged.putInt(57, Integer.MAX_VALUE).putInt(23, Integer.MAX_VALUE - 1);
            fixCrc(forged);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(forged))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            // An uncompressed record of zero bytes: Kafka's consumer would refuse the batch forever.
            ByteBuffer empty = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            empty.put(61, (byte) 0);
            fixCrc(empty);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(empty))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            // Two batches for one partition.
            ByteBuffer two = ByteBuffer.allocate(2 * good.sizeInBytes()).put(good.buffer().duplicate())
                    .put(good.buffer().duplicate()).flip();
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(two))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            // A transaction's batch sent without a transactional id, as Kafka answers it; a control batch.
            MemoryRecords transactional = MemoryRecords.withTransactionalRecords(Compression.NONE, 9L, (short) 0, 0,
                    records(1));
            assertThat(produce(socket, request("t", 0, (short) 1, transactional)).errorCode())
                    .isEqualTo(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code());
            MemoryRecords control = MemoryRecords.withEndTransactionMarker(0L, 0L, 0, 9L, (short) 0,
                    new org.apache.kafka.common.record.internal.EndTransactionMarker(
                            org.apache.kafka.common.record.internal.ControlRecordType.COMMIT, 0));
            assertThat(produce(socket, request("t", 0, (short) 1, control)).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());

            assertThat(produce(socket, request("t", 0, (short) 2, good)).errorCode())
                    .isEqualTo(Errors.INVALID_REQUIRED_ACKS.code());
            assertThat(produce(socket, request("missing", 0, (short) 1, good)).errorCode())
                    .isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
            assertThat(produce(socket, request("t", 1, (short) 1, good)).errorCode())
                    .isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
            assertThat(store.maxOffset("t", 0)).as("nothing refused was stored").isZero();

            ProduceResponseData.PartitionProduceResponse ok = produce(socket, request("t", 0, (short) -1, good));
            assertThat(ok.errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(ok.baseOffset()).isZero();
            assertThat(store.maxOffset("t", 0)).isEqualTo(3);
        }
    }

    @Test
    void produceBelowV3IsAdvertisedButRefusedByClosingTheConnection() throws Exception {
        try (Store store = open();
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            assertThatThrownBy(() -> KafkaWire.exchange(socket, ApiKeys.PRODUCE, (short) 2, (short) 3,
                    request("t", 0, (short) 1, MemoryRecords.withRecords(Compression.NONE, records(1)))))
                    .isInstanceOf(IOException.class);
            assertThat(store.maxOffset("t", 0)).isZero();
        }
    }

    @Test
    void anIdempotentProducersRetriesAreAnsweredWithTheirOriginalOffsetsAcrossARestart() throws Exception {
        long producerId = 4242;
        try (Store store = open();
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            MemoryRecords first = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 0, 0,
                    records(3));
            MemoryRecords second = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 0, 3,
                    records(2));
            assertThat(produce(socket, request("t", 0, (short) -1, first)).baseOffset()).isZero();
            assertThat(produce(socket, request("t", 0, (short) -1, second)).baseOffset()).isEqualTo(3);
            ProduceResponseData.PartitionProduceResponse retry = produce(socket, request("t", 0, (short) -1, first));
            assertThat(retry.errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(retry.baseOffset()).as("a retry gets the original's offset").isZero();
            assertThat(store.maxOffset("t", 0)).as("and is not stored again").isEqualTo(5);

            MemoryRecords gap = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 0, 9,
                    records(1));
            assertThat(produce(socket, request("t", 0, (short) 1, gap)).errorCode())
                    .isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code());
            MemoryRecords newEpoch = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 1, 0,
                    records(1));
            assertThat(produce(socket, request("t", 0, (short) 1, newEpoch)).baseOffset()).isEqualTo(5);
            MemoryRecords oldEpoch = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 0, 5,
                    records(1));
            assertThat(produce(socket, request("t", 0, (short) 1, oldEpoch)).errorCode())
                    .isEqualTo(Errors.INVALID_PRODUCER_EPOCH.code());
            assertThat(store.maxOffset("t", 0)).isEqualTo(6);
        }
        // After a restart the state is rebuilt from the log: a retry of the last batch is still recognised.
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            MemoryRecords last = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 1, 0,
                    records(1));
            ProduceResponseData.PartitionProduceResponse retry = produce(socket, request("t", 0, (short) -1, last));
            assertThat(retry.errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(retry.baseOffset()).isEqualTo(5);
            MemoryRecords gap = MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, (short) 1, 3,
                    records(1));
            assertThat(produce(socket, request("t", 0, (short) 1, gap)).errorCode())
                    .isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER.code());
            assertThat(store.maxOffset("t", 0)).isEqualTo(6);
        }
    }

    private static ProduceRequestData twoPartitions(String topic, MemoryRecords zero, MemoryRecords one) {
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName(topic).setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(zero),
                new ProduceRequestData.PartitionProduceData().setIndex(1).setRecords(one))));
        return new ProduceRequestData().setAcks((short) 1).setTimeoutMs(10_000).setTopicData(topics);
    }

    @Test
    void aRequestWithAGoodAndABadPartitionIsAnsweredPerPartitionAndTheConnectionStays() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            store.createTopic("two", TopicLayout.BATCHES, 2);
            MemoryRecords good = MemoryRecords.withRecords(Compression.NONE, records(2));
            // Codec id 5 names no codec; the CRC is made to match so that only the codec is wrong.
            ByteBuffer codec5 = ByteBuffer.allocate(good.sizeInBytes()).put(good.buffer().duplicate()).flip();
            codec5.putShort(21, (short) 5);
            fixCrc(codec5);
            ProduceResponseData response = new ProduceResponseData(KafkaWire.exchange(socket, ApiKeys.PRODUCE, VERSION,
                    twoPartitions("two", good, MemoryRecords.readableRecords(codec5))), VERSION);
            List<ProduceResponseData.PartitionProduceResponse> answers =
                    response.responses().iterator().next().partitionResponses();
            assertThat(answers.get(0).errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(answers.get(0).baseOffset()).isZero();
            assertThat(answers.get(1).errorCode()).as(answers.get(1).errorMessage())
                    .isEqualTo(Errors.UNKNOWN_SERVER_ERROR.code());
            assertThat(answers.get(1).errorMessage()).contains("compression type id 5");
            // The same connection goes on, and partition 0 holds its batch once.
            assertThat(produce(socket, request("two", 0, (short) 1, good)).baseOffset()).isEqualTo(2);
            assertThat(store.maxOffset("two", 0)).isEqualTo(4);
            assertThat(store.maxOffset("two", 1)).isZero();
        }
    }

    @Test
    void aCompressedBatchOverTheLargestTakenIsRefusedBeforeItIsDecompressed() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().maxMessageBytes(64 * 1024).build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            // A zstd batch of 100 KiB whose compressed bytes are garbage (its CRC made to match): the size alone
            // refuses it, so the answer is MESSAGE_TOO_LARGE, not the INVALID_RECORD that decompressing would give.
            MemoryRecords small = MemoryRecords.withRecords(Compression.zstd().build(), records(1));
            ByteBuffer big = ByteBuffer.allocate(100 * 1024);
            big.put(small.buffer().duplicate().limit(RECORDS_START));
            while (big.hasRemaining()) {
                big.put((byte) 0x5A);
            }
            big.flip();
            big.putInt(8, big.limit() - 12);
            fixCrc(big);
            ProduceResponseData.PartitionProduceResponse tooLarge =
                    produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(big)));
            assertThat(tooLarge.errorCode()).as(tooLarge.errorMessage()).isEqualTo(Errors.MESSAGE_TOO_LARGE.code());
            // The same garbage in a batch under the limit is decompressed, and refused as records that do not parse.
            ByteBuffer garbage = ByteBuffer.allocate(1024).put(small.buffer().duplicate().limit(RECORDS_START));
            while (garbage.hasRemaining()) {
                garbage.put((byte) 0x5A);
            }
            garbage.flip();
            garbage.putInt(8, garbage.limit() - 12);
            fixCrc(garbage);
            assertThat(produce(socket, request("t", 0, (short) 1, MemoryRecords.readableRecords(garbage))).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());
            assertThat(store.maxOffset("t", 0)).isZero();
        }
    }

    @Test
    void aSmallCompressedBatchThatDecompressesPastTheBoundIsRefusedAndConsumersAreSpared() throws Exception {
        try (Store store = open();
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            // One record of 96 MiB of zeros: zstd makes a few KiB of it; it decompresses past the 64 MiB bound.
            MemoryRecords bomb = MemoryRecords.withRecords(Compression.zstd().build(),
                    new SimpleRecord(new byte[96 << 20]));
            assertThat(bomb.sizeInBytes()).isLessThan(store.config().maxMessageBytes());
            ProduceResponseData.PartitionProduceResponse answer = produce(socket, request("t", 0, (short) 1, bomb));
            assertThat(answer.errorCode()).as(answer.errorMessage()).isEqualTo(Errors.MESSAGE_TOO_LARGE.code());
            // A record that claims a value of 2 GiB its bytes do not hold is refused as one that does not parse.
            ByteBuffer claims = ByteBuffer.allocate(64);
            claims.put((byte) 0); // attributes
            claims.put((byte) 0).put((byte) 0); // timestamp delta, offset delta
            claims.put((byte) 1); // key: null (zig-zag -1)
            claims.put(new byte[] {(byte) 0xFE, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, 0x0F}); // value: 2^31 - 1
            claims.put("abc".getBytes(StandardCharsets.UTF_8)).put((byte) 0).flip();
            MemoryRecords lying = compressedRecord(claims);
            assertThat(produce(socket, request("t", 0, (short) 1, lying)).errorCode())
                    .isEqualTo(Errors.INVALID_RECORD.code());
            assertThat(store.maxOffset("t", 0)).as("nothing refused was stored").isZero();
            // A batch within the bound is taken.
            MemoryRecords fine = MemoryRecords.withRecords(Compression.zstd().build(),
                    new SimpleRecord(new byte[8 << 20]));
            assertThat(produce(socket, request("t", 0, (short) 1, fine)).errorCode()).isEqualTo(Errors.NONE.code());
        }
    }

    /** Where a v2 batch's records start. */
    private static final int RECORDS_START = 61;

    /** @return a gzip batch of one record whose body (after its length) is {@code body}, its CRC matching */
    private static MemoryRecords compressedRecord(ByteBuffer body) throws IOException {
        java.io.ByteArrayOutputStream raw = new java.io.ByteArrayOutputStream();
        raw.write(body.remaining() << 1); // the record's length, a one-byte zig-zag varint
        raw.write(body.array(), body.position(), body.remaining());
        java.io.ByteArrayOutputStream compressed = new java.io.ByteArrayOutputStream();
        try (java.util.zip.GZIPOutputStream gzip = new java.util.zip.GZIPOutputStream(compressed)) {
            gzip.write(raw.toByteArray());
        }
        MemoryRecords template = MemoryRecords.withRecords(Compression.gzip().build(), records(1));
        byte[] payload = compressed.toByteArray();
        ByteBuffer batch = ByteBuffer.allocate(RECORDS_START + payload.length);
        batch.put(template.buffer().duplicate().limit(RECORDS_START)).put(payload).flip();
        batch.putInt(8, batch.limit() - 12);
        fixCrc(batch);
        return MemoryRecords.readableRecords(batch);
    }
}

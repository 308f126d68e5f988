package io.sluice.broker.kafka;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

/**
 * Decodes the Kafka record batches the broker stored (opaque store records), compressed or not, into plain records,
 * so that tools outside this package (the CLI's consume) read what Kafka producers wrote without Kafka's classes.
 */
public final class KafkaBatches {

    /**
     * One record of a batch.
     *
     * @param offset its offset (the queue offset)
     * @param timestamp its timestamp, epoch ms (the producer's, or the append time for LogAppendTime batches)
     * @param key its key, or null
     * @param value its value, or null
     * @param headers its headers, in order (a repeated name keeps its last value)
     */
    public record DecodedRecord(long offset, long timestamp, byte[] key, byte[] value, Map<String, byte[]> headers) {
    }

    private KafkaBatches() {
    }

    /**
     * @param batch one stored batch, from its baseOffset field on
     * @return its records
     * @throws IllegalArgumentException if the bytes are not a valid batch
     */
    public static List<DecodedRecord> decode(ByteBuffer batch) {
        List<DecodedRecord> records = new ArrayList<>();
        try {
            for (MutableRecordBatch b : MemoryRecords.readableRecords(batch.slice()).batches()) {
                b.ensureValid();
                for (Record record : b) {
                    Map<String, byte[]> headers = new LinkedHashMap<>();
                    for (Header header : record.headers()) {
                        headers.put(header.key(), header.value());
                    }
                    records.add(new DecodedRecord(record.offset(), record.timestamp(), bytes(record.key()),
                            bytes(record.value()), headers));
                }
            }
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("not a valid Kafka record batch: " + e.getMessage(), e);
        }
        return records;
    }

    private static byte[] bytes(ByteBuffer buffer) {
        if (buffer == null) {
            return null;
        }
        byte[] bytes = new byte[buffer.remaining()];
        buffer.duplicate().get(bytes);
        return bytes;
    }
}

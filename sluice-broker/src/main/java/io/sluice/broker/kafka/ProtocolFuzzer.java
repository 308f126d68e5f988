package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.TopicIds;
import io.sluice.broker.local.LocalCluster;
import io.sluice.broker.local.LocalPartitions;
import io.sluice.broker.net.Outbound;
import io.sluice.store.Store;
import io.sluice.store.TopicLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.LongConsumer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

/**
 * Feeds the protocol adapter random frames and mutations of valid ones (every served API at every served version),
 * seeded so that a finding can be replayed. A request may be refused ({@link ProtocolException}: its connection
 * would be closed with one log line) or answered; anything else (another exception, a response future failing
 * with something other than a refusal, a broker that stops answering a plain ApiVersions) is a finding. Runs over
 * a real store.
 */
public final class ProtocolFuzzer {

    /**
     * What a run saw.
     *
     * @param pendingAtEnd responses still waiting when the run ended: long polls (at most 30 s) and group joins
     *     (up to their rebalance time-out); the run does not hold a connection's limit of requests in flight, so
     *     many may wait at once
     */
    public record Report(long inputs, long answered, long refused, long pendingAtEnd, List<String> findings) {
        /** @return true if nothing went wrong */
        public boolean ok() {
            return findings.isEmpty();
        }
    }

    private static final int MAX_FINDINGS = 20;

    private final SplittableRandom random;
    private final List<byte[]> corpus = new ArrayList<>();

    private ProtocolFuzzer(long seed) {
        this.random = new SplittableRandom(seed);
    }

    /**
     * @param store the store to serve; topics {@code fuzz} (2 partitions) is created if missing
     * @param inputs frames to try
     * @param seed the run's seed
     * @param progress told the inputs done every 10,000
     * @return what happened
     */
    public static Report run(Store store, long inputs, long seed, LongConsumer progress) {
        ProtocolFuzzer fuzzer = new ProtocolFuzzer(seed);
        store.createTopic("fuzz", TopicLayout.BATCHES, 2);
        // As a broker alone gives it at its start: the requests that name topics by id name this one.
        TopicIds.identifyAll(store);
        fuzzer.buildCorpus(KafkaTopicIds.kafka(store.topicId("fuzz")));
        LocalPartitions partitions = new LocalPartitions(store, 0);
        LocalCluster cluster = new LocalCluster(store, partitions, new ClusterView.Node(0, "127.0.0.1", 9092),
                TopicLayout.BATCHES);
        try (ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
             KafkaApis apis = new KafkaApis(partitions, cluster, store.config(), new KafkaApis.Settings(0, "127.0.0.1",
                     9092, "fuzz", 1, false, TopicLayout.BATCHES, KafkaApis.DEFAULT_OFFSETS_RETENTION_MINUTES),
                     executor, null)) {
            return fuzzer.loop(apis, inputs, progress);
        }
    }

    private Report loop(KafkaApis apis, long inputs, LongConsumer progress) {
        Map<String, Integer> findings = new LinkedHashMap<>();
        List<CompletableFuture<Outbound>> pending = new ArrayList<>();
        long answered = 0;
        long refused = 0;
        for (long i = 0; i < inputs; i++) {
            byte[] frame = next();
            try {
                CompletableFuture<Outbound> response = apis.handle(ByteBuffer.wrap(frame));
                if (response.isDone()) {
                    if (check(response, frame, findings)) {
                        answered++;
                    } else {
                        refused++;
                    }
                } else {
                    pending.add(response);
                }
            } catch (ProtocolException e) {
                refused++;
            } catch (RuntimeException | Error e) {
                finding(findings, frame, e);
            }
            if (i % 1_000 == 999) {
                for (Iterator<CompletableFuture<Outbound>> it = pending.iterator(); it.hasNext(); ) {
                    CompletableFuture<Outbound> response = it.next();
                    if (response.isDone()) {
                        it.remove();
                        if (check(response, null, findings)) {
                            answered++;
                        } else {
                            refused++;
                        }
                    }
                }

            }
            if (i % 10_000 == 9_999) {
                alive(apis, findings);
                progress.accept(i + 1);
            }
            if (findings.size() >= MAX_FINDINGS) {
                break;
            }
        }
        alive(apis, findings);
        List<String> list = new ArrayList<>();
        findings.forEach((what, count) -> list.add(count + " x " + what));
        return new Report(inputs, answered, refused, pending.stream().filter(f -> !f.isDone()).count(), list);
    }

    /** @return true if answered, false if refused; records a finding for anything else */
    private static boolean check(CompletableFuture<Outbound> response, byte[] frame, Map<String, Integer> findings) {
        try {
            Outbound out = response.getNow(null);
            if (out != null && out.size() < 8) {
                findings.merge("a response of " + out.size() + " bytes", 1, Integer::sum);
            }
            return true;
        } catch (java.util.concurrent.CompletionException e) {
            if (e.getCause() instanceof ProtocolException) {
                return false;
            }
            finding(findings, frame, e.getCause());
            return false;
        }
    }

    private static void finding(Map<String, Integer> findings, byte[] frame, Throwable e) {
        StackTraceElement top = e.getStackTrace().length > 0 ? e.getStackTrace()[0] : null;
        String what = (frame != null && frame.length >= 4
                ? "api " + ByteBuffer.wrap(frame).getShort(0) + " v" + ByteBuffer.wrap(frame).getShort(2) + ": " : "")
                + e + (top != null ? " at " + top : "");
        findings.merge(what, 1, Integer::sum);
    }

    /** A plain ApiVersions must be answered at any time. */
    private void alive(KafkaApis apis, Map<String, Integer> findings) {
        try {
            CompletableFuture<Outbound> response = apis.handle(ByteBuffer.wrap(frame(ApiKeys.API_VERSIONS, (short) 3,
                    new ApiVersionsRequestData().setClientSoftwareName("fuzz").setClientSoftwareVersion("1"))));
            if (response.get(10, TimeUnit.SECONDS) == null) {
                findings.merge("ApiVersions went unanswered", 1, Integer::sum);
            }
        } catch (Exception e) {
            findings.merge("ApiVersions failed: " + e, 1, Integer::sum);
        }
    }

    private byte[] next() {
        int kind = random.nextInt(10);
        if (kind == 0) {
            // Pure noise, with a plausible header now and then.
            byte[] noise = new byte[random.nextInt(64)];
            random.nextBytes(noise);
            if (noise.length >= 4 && random.nextBoolean()) {
                ByteBuffer.wrap(noise).putShort(0, (short) random.nextInt(-2, 80)).putShort(2,
                        (short) random.nextInt(-2, 20));
            }
            return noise;
        }
        byte[] valid = corpus.get(random.nextInt(corpus.size()));
        if (kind == 1) {
            return valid.clone();
        }
        return mutate(valid.clone());
    }

    private byte[] mutate(byte[] frame) {
        int steps = 1 + random.nextInt(4);
        for (int s = 0; s < steps && frame.length > 0; s++) {
            int at = random.nextInt(frame.length);
            switch (random.nextInt(6)) {
                case 0 -> frame[at] ^= (byte) (1 << random.nextInt(8));
                case 1 -> frame[at] = (byte) random.nextInt(256);
                case 2 -> frame = java.util.Arrays.copyOf(frame, random.nextInt(frame.length + 1));
                case 3 -> {
                    byte[] longer = java.util.Arrays.copyOf(frame, frame.length + 1 + random.nextInt(32));
                    for (int i = frame.length; i < longer.length; i++) {
                        longer[i] = (byte) random.nextInt(256);
                    }
                    frame = longer;
                }
                case 4 -> {
                    if (at + 4 <= frame.length) {
                        int[] extremes = {-1, 0, 1, Integer.MAX_VALUE, Integer.MIN_VALUE, 0x7FFF, 0xFFFF, 65_536};
                        ByteBuffer.wrap(frame).putInt(at, extremes[random.nextInt(extremes.length)]);
                    }
                }
                default -> {
                    if (at + 2 <= frame.length) {
                        ByteBuffer.wrap(frame).putShort(at, (short) random.nextInt(-3, 3));
                    }
                }
            }
        }
        return frame;
    }

    /**
     * Valid requests: each served API's default request at each served version, and populated ones.
     *
     * @param fuzzId the id of topic {@code fuzz}, which the requests that name topics by id name
     */
    private void buildCorpus(Uuid fuzzId) {
        for (ApiKeys key : ApiKeys.values()) {
            for (short v = key.oldestVersion(); v <= key.latestVersion(); v++) {
                if (SupportedApis.accepts(key, v)) {
                    add(key, v, key.messageType.newRequest());
                }
            }
        }
        MemoryRecords records = MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("a".getBytes()),
                new SimpleRecord("k".getBytes(), "b".getBytes()));
        MemoryRecords idempotent = MemoryRecords.withIdempotentRecords(Compression.NONE, 77L, (short) 0, 0,
                new SimpleRecord("c".getBytes()));
        for (short v = 3; v <= 12; v++) {
            for (MemoryRecords batch : List.of(records, idempotent)) {
                ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
                topics.add(new ProduceRequestData.TopicProduceData().setName("fuzz").setPartitionData(List.of(
                        new ProduceRequestData.PartitionProduceData().setIndex(v % 2).setRecords(batch))));
                add(ApiKeys.PRODUCE, v, new ProduceRequestData().setAcks((short) (v % 3 - 1)).setTimeoutMs(1000)
                        .setTopicData(topics));
            }
        }
        for (short v = 4; v <= 18; v++) {
            add(ApiKeys.FETCH, v, new FetchRequestData().setMaxWaitMs(v % 2 == 0 ? 0 : 5).setMinBytes(1)
                    .setMaxBytes(1 << 20).setTopics(List.of(new FetchRequestData.FetchTopic().setTopic("fuzz")
                            .setTopicId(fuzzId).setPartitions(List.of(new FetchRequestData.FetchPartition()
                                    .setPartition(v % 2).setFetchOffset(0).setPartitionMaxBytes(1 << 20))))));
        }
        ProduceRequestData.TopicProduceDataCollection byId = new ProduceRequestData.TopicProduceDataCollection();
        byId.add(new ProduceRequestData.TopicProduceData().setTopicId(fuzzId).setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(1).setRecords(records))));
        add(ApiKeys.PRODUCE, (short) 13, new ProduceRequestData().setAcks((short) 1).setTimeoutMs(1000)
                .setTopicData(byId));
        add(ApiKeys.METADATA, (short) 12, new MetadataRequestData().setTopics(List.of(
                new MetadataRequestData.MetadataRequestTopic().setName(null).setTopicId(fuzzId))));
        add(ApiKeys.OFFSET_COMMIT, (short) 10, new OffsetCommitRequestData().setGroupId("fg")
                .setGenerationIdOrMemberEpoch(-1).setTopics(List.of(new OffsetCommitRequestData
                        .OffsetCommitRequestTopic().setTopicId(fuzzId).setPartitions(List.of(new OffsetCommitRequestData
                        .OffsetCommitRequestPartition().setPartitionIndex(0).setCommittedOffset(1))))));
        OffsetFetchRequestData.OffsetFetchRequestGroup byIdGroup = new OffsetFetchRequestData.OffsetFetchRequestGroup()
                .setGroupId("fg").setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics()
                        .setTopicId(fuzzId).setPartitionIndexes(List.of(0))));
        add(ApiKeys.OFFSET_FETCH, (short) 10, new OffsetFetchRequestData().setGroups(List.of(byIdGroup)));
        add(ApiKeys.DESCRIBE_TOPIC_PARTITIONS, (short) 0, new DescribeTopicPartitionsRequestData()
                .setResponsePartitionLimit(1).setTopics(List.of(new DescribeTopicPartitionsRequestData.TopicRequest()
                        .setName("fuzz"))).setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("fuzz")
                        .setPartitionIndex(1)));
        for (short v = 1; v <= 11; v++) {
            add(ApiKeys.LIST_OFFSETS, v, new ListOffsetsRequestData().setTopics(List.of(
                    new ListOffsetsRequestData.ListOffsetsTopic().setName("fuzz").setPartitions(List.of(
                            new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0)
                                    .setTimestamp(v - 7))))));
        }
        for (short v = 2; v <= 4; v++) {
            OffsetForLeaderEpochRequestData.OffsetForLeaderTopicCollection topics =
                    new OffsetForLeaderEpochRequestData.OffsetForLeaderTopicCollection();
            topics.add(new OffsetForLeaderEpochRequestData.OffsetForLeaderTopic().setTopic("fuzz")
                    .setPartitions(List.of(new OffsetForLeaderEpochRequestData.OffsetForLeaderPartition()
                            .setPartition(v % 2).setCurrentLeaderEpoch(v - 3).setLeaderEpoch(v - 3))));
            add(ApiKeys.OFFSET_FOR_LEADER_EPOCH, v, new OffsetForLeaderEpochRequestData().setReplicaId(-1)
                    .setTopics(topics));
        }
        for (short v = 1; v <= 13; v++) {
            add(ApiKeys.METADATA, v, new MetadataRequestData().setTopics(List.of(
                    new MetadataRequestData.MetadataRequestTopic().setName("fuzz"))));
        }
        for (short v = 0; v <= 9; v++) {
            JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                    new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
            protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range")
                    .setMetadata(new byte[] {0, 1, 2}));
            add(ApiKeys.JOIN_GROUP, v, new JoinGroupRequestData().setGroupId("fg").setSessionTimeoutMs(10_000)
                    .setRebalanceTimeoutMs(1_000).setMemberId("").setProtocolType("consumer")
                    .setProtocols(protocols));
        }
        for (short v = 0; v <= 5; v++) {
            add(ApiKeys.SYNC_GROUP, v, new SyncGroupRequestData().setGroupId("fg").setGenerationId(1)
                    .setMemberId("m").setAssignments(List.of()));
        }
        for (short v = 2; v <= 9; v++) {
            add(ApiKeys.OFFSET_COMMIT, v, new OffsetCommitRequestData().setGroupId("fg")
                    .setGenerationIdOrMemberEpoch(-1).setTopics(List.of(new OffsetCommitRequestData
                            .OffsetCommitRequestTopic().setName("fuzz").setPartitions(List.of(new OffsetCommitRequestData
                            .OffsetCommitRequestPartition().setPartitionIndex(0).setCommittedOffset(1))))));
        }
        for (short v = 1; v <= 7; v++) {
            add(ApiKeys.OFFSET_FETCH, v, new OffsetFetchRequestData().setGroupId("fg").setTopics(List.of(
                    new OffsetFetchRequestData.OffsetFetchRequestTopic().setName("fuzz").setPartitionIndexes(List.of(0)))));
        }
        for (short v = 2; v <= 7; v++) {
            CreateTopicsRequestData.CreatableTopicCollection topics = new CreateTopicsRequestData.CreatableTopicCollection();
            topics.add(new CreateTopicsRequestData.CreatableTopic().setName("fz" + v).setNumPartitions(2)
                    .setReplicationFactor((short) 1));
            add(ApiKeys.CREATE_TOPICS, v, new CreateTopicsRequestData().setTopics(topics).setTimeoutMs(1000));
        }
    }

    private void add(ApiKeys key, short version, ApiMessage body) {
        try {
            corpus.add(frame(key, version, body));
        } catch (RuntimeException e) {
            // A default request some versions cannot encode (a field they lack set): not part of the corpus.
        }
    }

    private static byte[] frame(ApiKeys key, short version, ApiMessage body) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(1).setClientId("fuzz");
        int size = header.size(cache, headerVersion) + body.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        body.write(writer, cache, version);
        return out.array();
    }
}

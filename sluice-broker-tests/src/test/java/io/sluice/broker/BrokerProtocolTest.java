package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The broker's first APIs over a real socket on 127.0.0.1: a stock admin client, and frames no client sends. */
class BrokerProtocolTest {

    @TempDir
    Path dir;

    private Store store;
    private Broker broker;

    @BeforeEach
    void start() throws IOException {
        store = Store.open(dir, StoreConfig.builder().build());
        broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
    }

    @AfterEach
    void stop() throws IOException {
        broker.close();
        store.close();
    }

    @Test
    void aStockAdminClientDescribesTheCluster() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000))) {
            DescribeClusterResult cluster = admin.describeCluster();
            assertThat(cluster.clusterId().get(20, TimeUnit.SECONDS)).isEqualTo("sluice-cluster");
            assertThat(cluster.nodes().get(20, TimeUnit.SECONDS)).extracting(Node::id, Node::host, Node::port)
                    .containsExactly(org.assertj.core.groups.Tuple.tuple(0, "127.0.0.1", broker.port()));
            assertThat(cluster.controller().get(20, TimeUnit.SECONDS).id()).isZero();
        }
    }

    @Test
    void createPartitionsForAnEmptyTopicNameIsAnsweredNotDropped() throws IOException {
        // Found by the protocol fuzzer: the name check threw past the handler and closed the connection.
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopicCollection topics =
                    new org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopicCollection();
            topics.add(new org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic()
                    .setName("").setCount(3));
            ByteBufferAccessor reader = KafkaWire.exchange(socket, ApiKeys.CREATE_PARTITIONS, (short) 1,
                    new org.apache.kafka.common.message.CreatePartitionsRequestData().setTopics(topics)
                            .setTimeoutMs(1000));
            var response = new org.apache.kafka.common.message.CreatePartitionsResponseData(reader, (short) 1);
            assertThat(response.results().getFirst().errorCode()).isEqualTo(Errors.INVALID_TOPIC_EXCEPTION.code());
        }
    }

    @Test
    void apiVersionsListsTheServedRangesWithResponseHeaderV0() throws IOException {
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            ApiVersionsResponseData response = apiVersions(socket, (short) 3);
            assertThat(response.errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(response.apiKeys()).extracting(v -> v.apiKey() + ":" + v.minVersion() + "-" + v.maxVersion())
                    .containsExactlyInAnyOrder("18:0-4", "3:0-13", "19:2-7", "37:0-3", "60:0-2", "0:0-13", "1:4-18",
                            "2:1-11", "23:2-4", "22:0-5", "10:0-6", "11:0-9", "14:0-5", "12:0-4", "13:0-5", "8:2-10",
                            "9:1-10", "75:0-0",
                            "15:0-6", "16:0-5", "42:0-2", "47:0-0", "32:1-4", "33:0-2", "44:0-1", "20:1-6", "21:0-2", "43:0-2",
                            // Transactions, the markers between brokers, log directories.
                            "24:0-5", "25:0-4", "26:0-4", "28:0-4", "66:0-2", "65:0-0", "61:0-0", "27:1-2", "35:1-5",
                            // KIP-848 consumer groups.
                            "68:0-1", "69:0-1",
                            // Authentication and SCRAM credentials.
                            "17:0-1", "36:0-2", "50:0-0", "51:0-0",
                            // ACLs.
                            "29:1-3", "30:1-3", "31:1-3",
                            // Client quotas.
                            "48:0-1", "49:0-1");
            // As Kafka 4 finalizes it by default: the consumer group protocol is on.
            assertThat(response.finalizedFeatures().find("group.version").maxVersionLevel()).isEqualTo((short) 1);
        }
    }

    @Test
    void anApiVersionsRequestTooNewIsAnsweredWithUnsupportedVersionAndTheBrokersRange() throws IOException {
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            short tooNew = (short) (ApiKeys.API_VERSIONS.latestVersion() + 1);
            ApiVersionsResponseData response = apiVersions(socket, tooNew);
            assertThat(response.errorCode()).isEqualTo(Errors.UNSUPPORTED_VERSION.code());
            assertThat(response.apiKeys().find(ApiKeys.API_VERSIONS.id).maxVersion())
                    .isEqualTo(ApiKeys.API_VERSIONS.latestVersion());
        }
    }

    /** On a broker serving one connection at a time, so that a connection slot lost to garbage would show. */
    @Test
    void garbageClosesOnlyItsConnection() throws IOException {
        broker.close();
        BrokerConfig defaults = BrokerConfig.defaults();
        broker = Broker.start(store, new BrokerConfig(defaults.host(), 0, defaults.nodeId(), defaults.clusterId(),
                defaults.maxRequestBytes(), 1, defaults.defaultPartitions(), defaults.autoCreateTopics(),
                defaults.topicLayout(), -1, defaults.offsetsRetentionMinutes(), defaults.leaderImbalanceCheckSeconds()));
        byte[][] garbage = {
            {0, 0, 0, 2, 1, 2},                          // a frame shorter than any header
            {0x7f, 0x7f, 0x7f, 0x7f},                    // a frame size far over the limit
            {(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xf0}, // a negative size
            {0, 0, 0, 12, 0x7f, 0x00, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0}, // an unknown API key
            {0, 0, 0, 12, 0, 3, 0x7f, 0x00, 0, 0, 0, 7, 0, 0, 0, 0}, // Metadata in a version nobody speaks
        };
        for (byte[] bytes : garbage) {
            awaitFreeSlot();
            try (Socket socket = new Socket("127.0.0.1", broker.port())) {
                socket.setSoTimeout(10_000);
                socket.getOutputStream().write(bytes);
                socket.getOutputStream().flush();
                assertThat(socket.getInputStream().read()).as("the broker closes the connection").isEqualTo(-1);
            }
        }
        awaitFreeSlot();
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            assertThat(apiVersions(socket, (short) 0).errorCode()).as("a fresh connection is still served")
                    .isEqualTo(Errors.NONE.code());
        }
    }

    /** The broker closed the previous connection; its slot is released just after, on the connection's thread. */
    private void awaitFreeSlot() {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (broker.connections() > 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(broker.connections()).as("connections still open").isZero();
    }

    @Test
    void metadataV0WithNoTopicsListsEveryTopic() throws IOException {
        store.createTopic("a", io.sluice.store.TopicLayout.QUEUE, 2);
        store.createTopic("b", io.sluice.store.TopicLayout.SHARED, 1);
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            ByteBufferAccessor reader = KafkaWire.exchange(socket, ApiKeys.METADATA, (short) 0,
                    new MetadataRequestData().setTopics(java.util.List.of()));
            MetadataResponseData response = new MetadataResponseData(reader, (short) 0);
            assertThat(response.topics()).extracting(t -> t.name() + ":" + t.partitions().size())
                    .containsExactlyInAnyOrder("a:2", "b:1");
        }
    }

    /**
     * The Metadata v13 request frame (without its size prefix) that confluent-kafka 2.16.0 (librdkafka 2.16.0) sends
     * for {@code AdminClient.list_topics()}, as captured on the wire: header v2 (api key 3, version 13, correlation id
     * 3, client id "rdkafka", no tags), then {@code 00 00 00 00 01 00 00}. librdkafka reserves four bytes for the
     * topic count and, asking for every topic, leaves them as they are instead of shrinking them to the one-byte
     * varint 0 (null): then come its allow_auto_topic_creation (1), include_topic_authorized_operations (0) and tags
     * (none). Read by the v13 schema, as Kafka reads it, the body is topics null, allow_auto_topic_creation false,
     * include_topic_authorized_operations false, no tags, and three bytes past its end ({@code 01 00 00}).
     */
    static final String LIBRDKAFKA_LIST_TOPICS_METADATA_V13 = "0003000d00000003000772646b61666b6100"
            + "00000000010000";

    /**
     * The Metadata v13 request that librdkafka 2.16.0 sends before that one (brokers only: an empty topic array), as
     * captured; its body has no bytes to spare.
     */
    static final String LIBRDKAFKA_BROKERS_ONLY_METADATA_V13 = "0003000d00000002000772646b61666b610001000000";

    /** Kafka reads a request by its version's schema and leaves alone whatever follows; so does this broker. */
    @Test
    void librdkafkasListTopicsMetadataWithTrailingBytesIsAnsweredWithEveryTopic() throws IOException {
        store.createTopic("orders", io.sluice.store.TopicLayout.QUEUE, 3);
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            socket.setSoTimeout(10_000);
            ByteBufferAccessor reader = sendRaw(socket, HexFormat.of().parseHex(LIBRDKAFKA_LIST_TOPICS_METADATA_V13));
            assertThat(new ResponseHeaderData(reader, ApiKeys.METADATA.responseHeaderVersion((short) 13))
                    .correlationId()).isEqualTo(3);
            MetadataResponseData response = new MetadataResponseData(reader, (short) 13);
            assertThat(reader.remaining()).as("bytes past the end of the response").isZero();
            assertThat(response.clusterId()).isEqualTo("sluice-cluster");
            assertThat(response.controllerId()).isZero();
            assertThat(response.brokers()).extracting(b -> b.nodeId() + "@" + b.host() + ":" + b.port())
                    .containsExactly("0@127.0.0.1:" + broker.port());
            assertThat(response.topics()).extracting(t -> t.name() + ":" + t.errorCode() + ":" + t.partitions().size())
                    .containsExactly("orders:0:3");
            // The connection is still served.
            assertThat(apiVersions(socket, (short) 3).errorCode()).isEqualTo(Errors.NONE.code());
        }
    }

    /** A body that ends inside its schema is refused, as Kafka refuses it: the connection is closed. */
    @Test
    void aTruncatedMetadataV13RequestClosesTheConnection() throws IOException {
        byte[] whole = HexFormat.of().parseHex(LIBRDKAFKA_BROKERS_ONLY_METADATA_V13);
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            socket.setSoTimeout(10_000);
            assertThat(new MetadataResponseData(skipHeader(sendRaw(socket, whole)), (short) 13).brokers())
                    .as("the whole request is answered").hasSize(1);
        }
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            socket.setSoTimeout(10_000);
            // Without its last byte, the request's tag count.
            byte[] truncated = java.util.Arrays.copyOf(whole, whole.length - 1);
            socket.getOutputStream().write(ByteBuffer.allocate(4 + truncated.length).putInt(truncated.length)
                    .put(truncated).array());
            assertThat(socket.getInputStream().read()).as("the broker closes the connection").isEqualTo(-1);
        }
    }

    /** Sends one request frame as given, with its size prefix; returns the response frame, header included. */
    private static ByteBufferAccessor sendRaw(Socket socket, byte[] frame) throws IOException {
        socket.getOutputStream().write(ByteBuffer.allocate(4 + frame.length).putInt(frame.length).put(frame).array());
        DataInputStream input = new DataInputStream(socket.getInputStream());
        byte[] response = new byte[input.readInt()];
        input.readFully(response);
        return new ByteBufferAccessor(ByteBuffer.wrap(response));
    }

    private static ByteBufferAccessor skipHeader(ByteBufferAccessor reader) {
        new ResponseHeaderData(reader, ApiKeys.METADATA.responseHeaderVersion((short) 13));
        return reader;
    }

    private static ApiVersionsResponseData apiVersions(Socket socket, short version) throws IOException {
        ApiVersionsRequestData body = new ApiVersionsRequestData().setClientSoftwareName("test")
                .setClientSoftwareVersion("1");
        // A version newer than any schema is sent with the newest body, and answered in v0.
        short latest = ApiKeys.API_VERSIONS.latestVersion();
        ByteBufferAccessor reader = KafkaWire.exchange(socket, ApiKeys.API_VERSIONS, version,
                (short) Math.min(version, latest), body);
        return new ApiVersionsResponseData(reader, version > latest ? 0 : version);
    }
}

package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Small Metadata and DeleteTopics requests that cost time quadratic in their size when every name goes into the
 * response's collection keyed by name (a name repeated thousands of times, thousands of unnamed topics) are answered
 * at once.
 * Each took minutes before: a Metadata v1 request naming a topic 8,000 times took 198 s.
 */
class HostileRequestsTest {

    @TempDir
    Path dir;

    private Store store;
    private Broker broker;

    @BeforeEach
    void start() throws IOException {
        store = Store.open(dir, StoreConfig.builder().build());
        store.createTopic("t", TopicLayout.BATCHES, 1);
        broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
    }

    @AfterEach
    void stop() throws IOException {
        broker.close();
        store.close();
    }

    @Test
    void metadataNamingATopicThousandsOfTimesAnswersItOnce() throws Exception {
        List<MetadataRequestData.MetadataRequestTopic> topics = new ArrayList<>();
        for (int i = 0; i < 8_000; i++) {
            topics.add(new MetadataRequestData.MetadataRequestTopic().setName("t"));
        }
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            MetadataResponseData response = new MetadataResponseData(KafkaWire.exchange(socket, ApiKeys.METADATA,
                    (short) 1, new MetadataRequestData().setTopics(topics)), (short) 1);
            assertThat(response.topics()).hasSize(1);
            assertThat(response.topics().iterator().next().partitions()).hasSize(1);
        }
    }

    @Test
    void metadataAskingForThousandsOfTopicIdsIsAnswered() throws Exception {
        List<MetadataRequestData.MetadataRequestTopic> topics = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            topics.add(new MetadataRequestData.MetadataRequestTopic().setName(null).setTopicId(new Uuid(1, i + 1)));
        }
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            MetadataResponseData response = new MetadataResponseData(KafkaWire.exchange(socket, ApiKeys.METADATA,
                    (short) 12, new MetadataRequestData().setTopics(topics)), (short) 12);
            assertThat(response.topics()).isNotEmpty().allSatisfy(topic -> assertThat(topic.errorCode())
                    .isEqualTo(Errors.UNKNOWN_TOPIC_ID.code()));
        }
    }

    @Test
    void deleteTopicsNamingThousandsOfUnknownIdsOrOneNameWithThousandsOfIdsIsAnswered() throws Exception {
        List<DeleteTopicsRequestData.DeleteTopicState> topics = new ArrayList<>();
        for (int i = 0; i < 10_000; i++) {
            topics.add(new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(new Uuid(1, i + 1)));
            topics.add(new DeleteTopicsRequestData.DeleteTopicState().setName("t").setTopicId(new Uuid(2, i + 1)));
        }
        try (Socket socket = new Socket("127.0.0.1", broker.port())) {
            DeleteTopicsResponseData response = new DeleteTopicsResponseData(KafkaWire.exchange(socket,
                    ApiKeys.DELETE_TOPICS, (short) 6, new DeleteTopicsRequestData().setTopics(topics)
                            .setTimeoutMs(1_000)), (short) 6);
            assertThat(response.responses()).isNotEmpty().allSatisfy(topic -> assertThat(topic.errorCode())
                    .isIn(Errors.UNKNOWN_TOPIC_ID.code(), Errors.INVALID_REQUEST.code()));
        }
        assertThat(store.queueCount("t")).isEqualTo(1);
    }
}

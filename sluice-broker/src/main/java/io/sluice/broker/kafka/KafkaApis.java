package io.sluice.broker.kafka;

import java.nio.ByteBuffer;
import java.util.Objects;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersionCollection;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBroker;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBrokerCollection;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopic;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopicCollection;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * The Kafka protocol adapter: turns one request frame into its response frame with the generated message classes of
 * the pinned kafka-clients, the only place that uses them. Framing and connections are the caller's
 * ({@code io.sluice.broker.net}); what is served is {@link SupportedApis}.
 */
public final class KafkaApis {

    /** Bytes of the fixed part of a request header: api key, api version, correlation id, client id length. */
    private static final int MIN_HEADER_BYTES = 10;

    private final int nodeId;
    private final String host;
    private final int port;
    private final String clusterId;

    /**
     * @param nodeId this broker's node id, also named as the controller
     * @param host the host clients are told to connect to
     * @param port the port clients are told to connect to
     * @param clusterId the cluster id Metadata reports
     */
    public KafkaApis(int nodeId, String host, int port, String clusterId) {
        this.nodeId = nodeId;
        this.host = Objects.requireNonNull(host, "host");
        this.port = port;
        this.clusterId = Objects.requireNonNull(clusterId, "clusterId");
    }

    /**
     * @param frame one request without its size prefix
     * @return the response, its 4-byte size prefix included, ready to write
     * @throws ProtocolException when the request cannot be answered; the caller closes the connection
     */
    public ByteBuffer handle(ByteBuffer frame) throws ProtocolException {
        if (frame.remaining() < MIN_HEADER_BYTES) {
            throw new ProtocolException("a request of " + frame.remaining() + " bytes is shorter than a request header");
        }
        short apiKey = frame.getShort(frame.position());
        short version = frame.getShort(frame.position() + 2);
        if (!ApiKeys.hasId(apiKey)) {
            throw new ProtocolException("unknown API key " + apiKey);
        }
        ApiKeys key = ApiKeys.forId(apiKey);
        ByteBufferAccessor in = new ByteBufferAccessor(frame);
        RequestHeaderData header;
        try {
            header = new RequestHeaderData(in, key.requestHeaderVersion(version));
        } catch (RuntimeException e) {
            throw new ProtocolException("malformed header of a " + key.name + " v" + version + " request", e);
        }
        if (key == ApiKeys.API_VERSIONS && !SupportedApis.accepts(key, version)) {
            // A newer client than this broker: answer in v0 with this broker's ApiVersions range, so that the client
            // retries with a version both sides know.
            ApiVersionCollection own = new ApiVersionCollection();
            own.add(new ApiVersion().setApiKey(key.id).setMinVersion(key.oldestVersion())
                    .setMaxVersion(key.latestVersion()));
            return encode(header.correlationId(), key, (short) 0, new ApiVersionsResponseData()
                    .setErrorCode(Errors.UNSUPPORTED_VERSION.code()).setApiKeys(own));
        }
        if (!SupportedApis.accepts(key, version)) {
            throw new ProtocolException(key.name + " v" + version + " is not served by this broker");
        }
        ApiMessage request = key.messageType.newRequest();
        try {
            request.read(in, version);
        } catch (RuntimeException e) {
            throw new ProtocolException("malformed " + key.name + " v" + version + " request", e);
        }
        if (in.remaining() != 0) {
            throw new ProtocolException(in.remaining() + " bytes past the end of a " + key.name + " v" + version
                    + " request");
        }
        ApiMessage response = switch (key) {
            case API_VERSIONS -> new ApiVersionsResponseData().setApiKeys(SupportedApis.advertised());
            case METADATA -> metadata((MetadataRequestData) request);
            default -> throw new IllegalStateException(key + " is listed as served but has no handler");
        };
        return encode(header.correlationId(), key, version, response);
    }

    private MetadataResponseData metadata(MetadataRequestData request) {
        MetadataResponseBrokerCollection brokers = new MetadataResponseBrokerCollection();
        brokers.add(new MetadataResponseBroker().setNodeId(nodeId).setHost(host).setPort(port));
        MetadataResponseTopicCollection topics = new MetadataResponseTopicCollection();
        if (request.topics() != null) {
            for (MetadataRequestData.MetadataRequestTopic topic : request.topics()) {
                topics.add(new MetadataResponseTopic().setName(topic.name()).setTopicId(Uuid.ZERO_UUID)
                        .setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code()));
            }
        }
        return new MetadataResponseData().setBrokers(brokers).setClusterId(clusterId).setControllerId(nodeId)
                .setTopics(topics);
    }

    private static ByteBuffer encode(int correlationId, ApiKeys key, short version, ApiMessage response) {
        // ApiVersions answers with header v0 whatever the version, so that any client can read it.
        short headerVersion = key.responseHeaderVersion(version);
        ResponseHeaderData header = new ResponseHeaderData().setCorrelationId(correlationId);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = header.size(cache, headerVersion) + response.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(4 + size);
        out.putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        response.write(writer, cache, version);
        return out.flip();
    }
}

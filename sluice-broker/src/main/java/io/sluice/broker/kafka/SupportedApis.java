package io.sluice.broker.kafka;

import java.util.EnumMap;
import java.util.Map;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersionCollection;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * The APIs this broker serves and the versions of each, the single table ApiVersions advertises and every request
 * is checked against. Clients use the highest version both sides list, so only what is implemented in full is
 * listed.
 */
final class SupportedApis {

    private record Range(short min, short max) {
    }

    private static final Map<ApiKeys, Range> RANGES = new EnumMap<>(ApiKeys.class);

    static {
        // Literal ranges: what the handlers implement, not what the pinned kafka-clients happens to know, so that
        // a version bump never advertises a version nobody wrote the handling of.
        serve(ApiKeys.API_VERSIONS, 0, 4);
        // Metadata v10+ carries each topic's id (KIP-516), and v12+ asks for topics by id.
        serve(ApiKeys.METADATA, 0, 13);
        // Admin's describeTopics by name (kafka-topics --describe) asks it rather than Metadata where it is served.
        serve(ApiKeys.DESCRIBE_TOPIC_PARTITIONS, 0, 0);
        serve(ApiKeys.CREATE_TOPICS, 2, 7);
        serve(ApiKeys.CREATE_PARTITIONS, 0, 3);
        serve(ApiKeys.DESCRIBE_CLUSTER, 0, 2);
        // Produce v13 names topics by id. v0-2 are advertised too (see advertised()).
        serve(ApiKeys.PRODUCE, 3, 13);
        // Fetch v13+ names topics by id; v15, 17 and 18 add what only a follower sends (replica state, directory id,
        // high watermark), v16 the leaders' endpoints in a NOT_LEADER_OR_FOLLOWER answer.
        serve(ApiKeys.FETCH, 4, 18);
        // v11 takes EARLIEST_PENDING_UPLOAD (-6), answered as a broker without tiered storage answers it.
        serve(ApiKeys.LIST_OFFSETS, 1, 11);
        // Where a leader epoch ends: consumers validate their position after a change of leader (KIP-320).
        serve(ApiKeys.OFFSET_FOR_LEADER_EPOCH, 2, 4);
        serve(ApiKeys.INIT_PRODUCER_ID, 0, 5);
        // The classic consumer-group protocol. OffsetCommit and OffsetFetch 10 name topics by id only (Kafka's own
        // clients send it from the KIP-848 consumer; the classic consumer and Admin stay on 9).
        serve(ApiKeys.FIND_COORDINATOR, 0, 6);
        serve(ApiKeys.JOIN_GROUP, 0, 9);
        serve(ApiKeys.SYNC_GROUP, 0, 5);
        serve(ApiKeys.HEARTBEAT, 0, 4);
        serve(ApiKeys.LEAVE_GROUP, 0, 5);
        serve(ApiKeys.OFFSET_COMMIT, 2, 10);
        serve(ApiKeys.OFFSET_FETCH, 1, 10);
        serve(ApiKeys.DESCRIBE_GROUPS, 0, 6);
        serve(ApiKeys.LIST_GROUPS, 0, 5);
        serve(ApiKeys.DELETE_GROUPS, 0, 2);
        serve(ApiKeys.OFFSET_DELETE, 0, 0);
        // KIP-848 consumer groups (group.protocol=consumer); v1 takes a subscription by pattern.
        serve(ApiKeys.CONSUMER_GROUP_HEARTBEAT, 0, 1);
        serve(ApiKeys.CONSUMER_GROUP_DESCRIBE, 0, 1);
        serve(ApiKeys.DESCRIBE_CONFIGS, 1, 4);
        serve(ApiKeys.ALTER_CONFIGS, 0, 2);
        serve(ApiKeys.INCREMENTAL_ALTER_CONFIGS, 0, 1);
        // v6 names topics by name or by id.
        serve(ApiKeys.DELETE_TOPICS, 1, 6);
        serve(ApiKeys.DELETE_RECORDS, 0, 2);
        // Preferred elections (and unclean ones, answered as Raft allows).
        serve(ApiKeys.ELECT_LEADERS, 0, 2);
        // Transactions, version 1 (no transaction.version feature is finalized): clients add partitions themselves,
        // with AddPartitionsToTxn v3 or lower; v4-5 (a broker's verification of a batch) are served too. EndTxn v5 and
        // TxnOffsetCommit v5 are transaction version 2's.
        serve(ApiKeys.ADD_PARTITIONS_TO_TXN, 0, 5);
        serve(ApiKeys.ADD_OFFSETS_TO_TXN, 0, 4);
        serve(ApiKeys.END_TXN, 0, 4);
        serve(ApiKeys.TXN_OFFSET_COMMIT, 0, 4);
        serve(ApiKeys.LIST_TRANSACTIONS, 0, 2);
        serve(ApiKeys.DESCRIBE_TRANSACTIONS, 0, 0);
        serve(ApiKeys.DESCRIBE_PRODUCERS, 0, 0);
        // A coordinator's markers to a partition's leader (v2 adds the transaction version, unused here).
        serve(ApiKeys.WRITE_TXN_MARKERS, 1, 2);
        // kafka-log-dirs: the store's directory and each hosted partition's bytes.
        serve(ApiKeys.DESCRIBE_LOG_DIRS, 1, 5);
        // Authentication (answered on every listener; on one without SASL with ILLEGAL_SASL_STATE, as Kafka does) and
        // the SCRAM credentials kafka-configs --entity-type users manages.
        serve(ApiKeys.SASL_HANDSHAKE, 0, 1);
        serve(ApiKeys.SASL_AUTHENTICATE, 0, 2);
        serve(ApiKeys.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, 0);
        serve(ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, 0, 0);
        // ACLs (kafka-acls), answered SECURITY_DISABLED without an authorizer, as Kafka answers them.
        serve(ApiKeys.DESCRIBE_ACLS, 1, 3);
        serve(ApiKeys.CREATE_ACLS, 1, 3);
        serve(ApiKeys.DELETE_ACLS, 1, 3);
        // Client quotas (kafka-client-quotas, kafka-configs --entity-type users/clients/ips).
        serve(ApiKeys.DESCRIBE_CLIENT_QUOTAS, 0, 1);
        serve(ApiKeys.ALTER_CLIENT_QUOTAS, 0, 1);
    }


    private SupportedApis() {
    }

    private static void serve(ApiKeys key, int min, int max) {
        if (min < key.oldestVersion() || max > key.latestVersion()) {
            throw new IllegalStateException(key + " v" + min + "-" + max + " is outside what the pinned kafka-clients"
                    + " parses (v" + key.oldestVersion() + "-" + key.latestVersion() + ")");
        }
        RANGES.put(key, new Range((short) min, (short) max));
    }

    /** @return the highest version of {@code key} served */
    static short highest(ApiKeys key) {
        return RANGES.get(key).max;
    }

    /** @return whether {@code version} of {@code key} is served */
    static boolean accepts(ApiKeys key, short version) {
        Range range = RANGES.get(key);
        return range != null && version >= range.min && version <= range.max;
    }

    /** The group version offered and finalized: 1, the KIP-848 consumer group protocol. */
    static final short GROUP_VERSION = 1;
    private static final String GROUP_VERSION_FEATURE = "group.version";

    /** The transaction version offered and finalized: 1 (KIP-890 part 2's version 2 is not offered). */
    static final short TRANSACTION_VERSION = 1;

    /**
     * @return {@code response} with the features this broker supports and has finalized (what {@code kafka-features
     *     describe} prints, and what clients choose their transaction protocol by): transaction.version 1, and
     *     group.version 1 (KIP-848 consumer groups, which Kafka 4 finalizes by default). Features of Kafka's own
     *     metadata (metadata.version, kraft.version) and of protocols not served (share.version, streams.version) are
     *     not listed. The epoch is 0: they never change.
     */
    static ApiVersionsResponseData withFeatures(ApiVersionsResponseData response) {
        ApiVersionsResponseData.SupportedFeatureKeyCollection supported =
                new ApiVersionsResponseData.SupportedFeatureKeyCollection();
        supported.add(new ApiVersionsResponseData.SupportedFeatureKey().setName("transaction.version")
                .setMinVersion((short) 0).setMaxVersion(TRANSACTION_VERSION));
        supported.add(new ApiVersionsResponseData.SupportedFeatureKey().setName(GROUP_VERSION_FEATURE)
                .setMinVersion((short) 0).setMaxVersion(GROUP_VERSION));
        ApiVersionsResponseData.FinalizedFeatureKeyCollection finalized =
                new ApiVersionsResponseData.FinalizedFeatureKeyCollection();
        finalized.add(new ApiVersionsResponseData.FinalizedFeatureKey().setName("transaction.version")
                .setMinVersionLevel(TRANSACTION_VERSION).setMaxVersionLevel(TRANSACTION_VERSION));
        finalized.add(new ApiVersionsResponseData.FinalizedFeatureKey().setName(GROUP_VERSION_FEATURE)
                .setMinVersionLevel(GROUP_VERSION).setMaxVersionLevel(GROUP_VERSION));
        return response.setSupportedFeatures(supported).setFinalizedFeaturesEpoch(0).setFinalizedFeatures(finalized);
    }

    /** @return the entries of an ApiVersions response */
    static ApiVersionCollection advertised() {
        ApiVersionCollection versions = new ApiVersionCollection();
        // Produce is advertised from v0, as Kafka 4 does because librdkafka's compressed produce needs to see it,
        // and v0-2 are refused on receipt like every version outside the served range.
        RANGES.forEach((key, range) -> versions.add(new ApiVersion().setApiKey(key.id)
                .setMinVersion(key == ApiKeys.PRODUCE ? ApiKeys.PRODUCE_API_VERSIONS_RESPONSE_MIN_VERSION : range.min)
                .setMaxVersion(range.max)));
        return versions;
    }
}

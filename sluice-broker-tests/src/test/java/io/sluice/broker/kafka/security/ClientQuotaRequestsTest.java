package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasRequestData.EntityData;
import org.apache.kafka.common.message.AlterClientQuotasRequestData.EntryData;
import org.apache.kafka.common.message.AlterClientQuotasRequestData.OpData;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData.ComponentData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData;
import org.apache.kafka.common.metadata.ClientQuotaRecord;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.requests.AlterClientQuotasRequest;
import org.apache.kafka.common.requests.AlterClientQuotasResponse;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.utils.LogContext;
import org.apache.kafka.image.ClientQuotaImage;
import org.apache.kafka.image.ClientQuotasImage;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.junit.jupiter.api.Test;

/**
 * AlterClientQuotas and DescribeClientQuotas: Kafka's messages case by case, then random requests against Kafka
 * 4.3.1's own controller (ClientQuotaControlManager, reached by reflection: it is package-private) and metadata image
 * (ClientQuotasImage.describe), which must give the same responses, byte for byte, and the same quotas.
 */
class ClientQuotaRequestsTest {

    private static final short V1 = 1;

    private static EntryData entry(String[][] entity, OpData... ops) {
        List<EntityData> components = new ArrayList<>();
        for (String[] component : entity) {
            components.add(new EntityData().setEntityType(component[0]).setEntityName(component[1]));
        }
        return new EntryData().setEntity(components).setOps(new ArrayList<>(List.of(ops)));
    }

    private static OpData set(String key, double value) {
        return new OpData().setKey(key).setValue(value);
    }

    private static OpData remove(String key) {
        return new OpData().setKey(key).setRemove(true);
    }

    private static AlterClientQuotasResponseData.EntryData only(AlterClientQuotasResponseData response) {
        assertThat(response.entries()).hasSize(1);
        return response.entries().get(0);
    }

    private static String refusal(QuotaSet quotas, EntryData entry) {
        QuotaMutation mutation = ClientQuotaRequests.alter(new AlterClientQuotasRequestData().setEntries(
                new ArrayList<>(List.of(entry))), V1);
        AlterClientQuotasResponseData.EntryData answer = only(mutation.applyTo(quotas).response());
        return answer.errorCode() == 0 ? null : Errors.forCode(answer.errorCode()) + ": " + answer.errorMessage();
    }

    @Test
    void refusesAsKafkaDoes() {
        QuotaSet none = QuotaSet.empty();
        String[][] alice = {{"user", "alice"}};
        assertThat(refusal(none, entry(new String[][] {}, set("producer_byte_rate", 1))))
                .isEqualTo("INVALID_REQUEST: Invalid empty client quota entity");
        assertThat(refusal(none, entry(new String[][] {{"group", "g"}}, set("producer_byte_rate", 1))))
                .isEqualTo("INVALID_REQUEST: Unhandled client quota entity type: group");
        assertThat(refusal(none, entry(new String[][] {{"user", ""}}, set("producer_byte_rate", 1))))
                .isEqualTo("INVALID_REQUEST: Empty user not supported");
        assertThat(refusal(none, entry(new String[][] {{"user", "a"}, {"ip", "10.0.0.1"}},
                set("producer_byte_rate", 1))))
                .isEqualTo("INVALID_REQUEST: Invalid quota entity combination, IP entity shouldnot be combined with "
                        + "User or ClientId");
        assertThat(refusal(none, entry(new String[][] {{"ip", "x.invalid"}}, set("connection_creation_rate", 1))))
                .isEqualTo("INVALID_REQUEST: x.invalid is not a valid IP or resolvable host.");
        assertThat(refusal(none, entry(alice, set("connection_creation_rate", 1))))
                .isEqualTo("INVALID_REQUEST: Invalid configuration key connection_creation_rate");
        assertThat(refusal(none, entry(new String[][] {{"ip", null}}, set("producer_byte_rate", 1))))
                .isEqualTo("INVALID_REQUEST: Invalid configuration key producer_byte_rate");
        assertThat(refusal(none, entry(alice, set("producer_byte_rate", 0))))
                .isEqualTo("INVALID_REQUEST: Quota producer_byte_rate must be greater than 0");
        assertThat(refusal(none, entry(alice, set("request_percentage", -1))))
                .isEqualTo("INVALID_REQUEST: Quota request_percentage must be greater than 0");
        assertThat(refusal(none, entry(alice, set("consumer_byte_rate", 1.5))))
                .isEqualTo("INVALID_REQUEST: consumer_byte_rate cannot be a fractional value.");
        assertThat(refusal(none, entry(alice, set("consumer_byte_rate", 1e19))))
                .isEqualTo("INVALID_REQUEST: Proposed value for consumer_byte_rate is too large for a LONG.");
        assertThat(refusal(none, entry(new String[][] {{"ip", "10.0.0.1"}}, set("connection_creation_rate", 3e9))))
                .isEqualTo("INVALID_REQUEST: Proposed value for connection_creation_rate is too large for an INT.");
        assertThat(refusal(none, entry(alice, set("producer_byte_rate", 1), set("producer_byte_rate", 2))))
                .isEqualTo("INVALID_REQUEST: Ignoring duplicate entity ClientQuotaEntity(entries={user=alice})");
        assertThat(refusal(none, entry(alice, set("request_percentage", 0.5), set("controller_mutation_rate",
                Double.NaN), set("producer_byte_rate", 1e6 + 1e-7)))).isNull();
    }

    @Test
    void changesOnlyTheEntitiesItTakesAndAnswersOncePerEntity() {
        QuotaSet before = QuotaSet.empty().with(Map.of(QuotaEntity.user("alice"),
                Map.of("producer_byte_rate", 100.0, "consumer_byte_rate", 200.0)));
        AlterClientQuotasRequestData request = new AlterClientQuotasRequestData().setEntries(new ArrayList<>(List.of(
                entry(new String[][] {{"user", "alice"}}, remove("producer_byte_rate"), set("request_percentage", 50)),
                entry(new String[][] {{"client-id", null}}, set("producer_byte_rate", 1024)),
                entry(new String[][] {{"user", "bob"}}, set("producer_byte_rate", 1024), set("consumer_byte_rate",
                        0.5)),
                entry(new String[][] {{"client-id", null}}, set("consumer_byte_rate", 1024)))));
        QuotaMutation mutation = ClientQuotaRequests.alter(request, V1);
        String stored = mutation.apply(before.encode());
        QuotaSet after = QuotaSet.decode(stored);
        assertThat(after.quotas(QuotaEntity.user("alice"))).containsExactly(Map.entry("consumer_byte_rate", 200.0),
                Map.entry("request_percentage", 50.0));
        // The second entry for the default client id is ignored, and its answer replaces the first's, whose change
        // is made all the same.
        assertThat(after.quotas(QuotaEntity.clientId(null))).containsExactly(Map.entry("producer_byte_rate", 1024.0));
        assertThat(after.quotas(QuotaEntity.user("bob"))).isEmpty();
        List<AlterClientQuotasResponseData.EntryData> answers = mutation.response().entries();
        assertThat(answers).hasSize(3);
        Map<String, String> byEntity = new HashMap<>();
        for (AlterClientQuotasResponseData.EntryData answer : answers) {
            byEntity.put(answer.entity().get(0).entityName(), answer.errorCode() + " " + answer.errorMessage());
        }
        assertThat(byEntity).containsEntry("alice", "0 null")
                .containsEntry("bob", "42 consumer_byte_rate cannot be a fractional value.")
                .containsEntry(null, "42 Ignoring duplicate entity ClientQuotaEntity(entries={client-id=null})");

        QuotaMutation validateOnly = ClientQuotaRequests.alter(request.duplicate().setValidateOnly(true), V1);
        assertThat(validateOnly.apply(before.encode())).isEqualTo(before.encode());
        assertThat(validateOnly.response()).isEqualTo(mutation.response());
    }

    @Test
    void refusesMoreThanTenThousandChangesAsAWhole() {
        List<EntryData> entries = new ArrayList<>();
        for (int i = 0; i < 5001; i++) {
            entries.add(entry(new String[][] {{"user", "u" + i}}, set("producer_byte_rate", 1),
                    set("consumer_byte_rate", 1)));
        }
        QuotaMutation mutation = ClientQuotaRequests.alter(new AlterClientQuotasRequestData().setEntries(entries), V1);
        assertThat(mutation.apply("")).isEmpty();
        assertThat(mutation.response().entries()).hasSize(5001).allSatisfy(answer -> {
            assertThat(answer.errorCode()).isEqualTo(Errors.POLICY_VIOLATION.code());
            assertThat(answer.errorMessage()).isEqualTo("Request parameters do not satisfy the configured policy.");
        });
    }

    @Test
    void describesWhatTheFilterMatches() {
        QuotaSet quotas = QuotaSet.empty().with(Map.of(
                QuotaEntity.user("alice"), Map.of("producer_byte_rate", 1.0),
                QuotaEntity.user(null), Map.of("producer_byte_rate", 2.0),
                QuotaEntity.userClientId("alice", "app"), Map.of("producer_byte_rate", 3.0),
                QuotaEntity.userClientId(null, null), Map.of("producer_byte_rate", 4.0),
                QuotaEntity.clientId("app"), Map.of("producer_byte_rate", 5.0),
                QuotaEntity.ip("10.0.0.1"), Map.of("connection_creation_rate", 6.0)));
        assertThat(values(quotas, false, component("user", 0, "alice"))).containsExactlyInAnyOrder(1.0, 3.0);
        assertThat(values(quotas, true, component("user", 0, "alice"))).containsExactly(1.0);
        assertThat(values(quotas, false, component("user", 1, null))).containsExactlyInAnyOrder(2.0, 4.0);
        assertThat(values(quotas, false, component("user", 2, null))).containsExactlyInAnyOrder(1.0, 2.0, 3.0, 4.0);
        assertThat(values(quotas, true, component("user", 2, null), component("client-id", 2, null)))
                .containsExactlyInAnyOrder(3.0, 4.0);
        assertThat(values(quotas, false, component("client-id", 0, "app"))).containsExactlyInAnyOrder(3.0, 5.0);
        assertThat(values(quotas, false)).hasSize(6);
        assertThat(values(quotas, true)).isEmpty();
        assertThat(values(quotas, false, component("ip", 2, null))).containsExactly(6.0);

        assertThat(describeRefusal(quotas, component("", 2, null))).isEqualTo("INVALID_REQUEST Invalid empty entity "
                + "type.");
        assertThat(describeRefusal(quotas, component("user", 2, null), component("user", 0, "a")))
                .isEqualTo("INVALID_REQUEST Entity type user cannot appear more than once in the filter.");
        assertThat(describeRefusal(quotas, component("group", 2, null)))
                .isEqualTo("UNSUPPORTED_VERSION Unsupported entity type group");
        assertThat(describeRefusal(quotas, component("user", 0, null)))
                .isEqualTo("INVALID_REQUEST Request specified MATCH_TYPE_EXACT, but set match string to null.");
        assertThat(describeRefusal(quotas, component("user", 1, "a")))
                .isEqualTo("INVALID_REQUEST Request specified MATCH_TYPE_DEFAULT, but also specified a match string.");
        assertThat(describeRefusal(quotas, component("user", 2, "a"))).isEqualTo("INVALID_REQUEST Request specified "
                + "MATCH_TYPE_SPECIFIED, but also specified a match string.");
        assertThat(describeRefusal(quotas, component("user", 7, null)))
                .isEqualTo("INVALID_REQUEST Unknown match type 7");
        assertThat(describeRefusal(quotas, component("ip", 2, null), component("client-id", 1, null)))
                .isEqualTo("INVALID_REQUEST Invalid entity filter component combination. IP filter component should "
                        + "not be used with user or clientId filter component.");
        assertThat(ClientQuotaRequests.describeError(Errors.CLUSTER_AUTHORIZATION_FAILED).errorMessage())
                .isEqualTo("Cluster authorization failed.");
    }

    private static ComponentData component(String type, int matchType, String match) {
        return new ComponentData().setEntityType(type).setMatchType((byte) matchType).setMatch(match);
    }

    private static List<Double> values(QuotaSet quotas, boolean strict, ComponentData... components) {
        DescribeClientQuotasResponseData response = ClientQuotaRequests.describe(quotas,
                new DescribeClientQuotasRequestData().setComponents(List.of(components)).setStrict(strict), V1);
        assertThat(response.errorCode()).isZero();
        List<Double> values = new ArrayList<>();
        response.entries().forEach(entry -> entry.values().forEach(value -> values.add(value.value())));
        return values;
    }

    private static String describeRefusal(QuotaSet quotas, ComponentData... components) {
        DescribeClientQuotasResponseData response = ClientQuotaRequests.describe(quotas,
                new DescribeClientQuotasRequestData().setComponents(List.of(components)), V1);
        assertThat(response.entries()).isNull();
        return Errors.forCode(response.errorCode()) + " " + response.errorMessage();
    }

    // ---- Against Kafka's own classes ----

    private static final String[] TYPES = {"user", "user", "client-id", "client-id", "ip", "group", ""};
    private static final String[] NAMES = {null, "alice", "bob", "", "<default>", "10.0.0.1", "::1", "x.invalid"};
    private static final String[] KEYS = {"producer_byte_rate", "consumer_byte_rate", "request_percentage",
        "controller_mutation_rate", "connection_creation_rate", "bogus"};
    private static final double[] VALUES = {1, 1024, 0.5, 0, -3, 1e19, 3e9, 2.5, Double.NaN, 100, 1e6 + 1e-7};

    /** Kafka's controller state and its answers, through reflection. */
    private static final class KafkaController {

        private final Object manager;
        private final Method alter;

        KafkaController() throws ReflectiveOperationException {
            Class<?> type = Class.forName("org.apache.kafka.controller.ClientQuotaControlManager");
            Constructor<?> constructor = type.getDeclaredConstructor(LogContext.class, SnapshotRegistry.class);
            constructor.setAccessible(true);
            LogContext context = new LogContext();
            manager = constructor.newInstance(context, new SnapshotRegistry(context));
            alter = type.getDeclaredMethod("alterClientQuotas", Collection.class);
            alter.setAccessible(true);
        }

        @SuppressWarnings("unchecked") // the controller's result type, erased by reflection
        AlterClientQuotasResponseData alter(List<ClientQuotaAlteration> alterations, boolean validateOnly)
                throws ReflectiveOperationException {
            if (alterations.isEmpty()) {
                return AlterClientQuotasResponse.fromQuotaEntities(Map.of(), 0).data();
            }
            Object result = alter.invoke(manager, alterations);
            Method records = result.getClass().getMethod("records");
            records.setAccessible(true);
            Method response = result.getClass().getMethod("response");
            response.setAccessible(true);
            if (!validateOnly) {
                for (ApiMessageAndVersion record : (List<ApiMessageAndVersion>) records.invoke(result)) {
                    manager.getClass().getMethod("replay", ClientQuotaRecord.class).invoke(manager, record.message());
                }
            }
            return AlterClientQuotasResponse.fromQuotaEntities((Map<ClientQuotaEntity, ApiError>)
                    response.invoke(result), 0).data();
        }

        @SuppressWarnings("unchecked") // a TimelineHashMap of the controller's, read by reflection
        Map<ClientQuotaEntity, Map<String, Double>> quotas() throws ReflectiveOperationException {
            Field field = manager.getClass().getDeclaredField("clientQuotaData");
            field.setAccessible(true);
            Map<ClientQuotaEntity, Map<String, Double>> data = (Map<ClientQuotaEntity, Map<String, Double>>)
                    field.get(manager);
            Map<ClientQuotaEntity, Map<String, Double>> copy = new HashMap<>();
            data.forEach((entity, values) -> copy.put(entity, new HashMap<>(values)));
            return copy;
        }
    }

    @Test
    void answersAsKafkasControllerAndImage() throws Exception {
        long seed = Long.getLong("sluice.quotas.seed", System.nanoTime());
        System.out.println("ClientQuotaRequestsTest seed: " + seed + " (-Dsluice.quotas.seed=" + seed + ")");
        Random random = new Random(seed);
        KafkaController kafka = new KafkaController();
        QuotaSet ours = QuotaSet.empty();
        for (int round = 0; round < 400; round++) {
            AlterClientQuotasRequestData request = randomAlter(random);
            List<ClientQuotaAlteration> alterations = new AlterClientQuotasRequest(request.duplicate(), V1).entries();
            AlterClientQuotasResponseData expected;
            try {
                expected = kafka.alter(alterations, request.validateOnly());
            } catch (java.lang.reflect.InvocationTargetException e) {
                // More than 10,000 records: the controller's operation fails as a whole.
                throw new AssertionError("seed " + seed + ": unexpected failure of Kafka's controller", e);
            }
            QuotaMutation.QuotaChange change = ClientQuotaRequests.alter(request, V1).applyTo(ours);
            assertThat(change.response()).as("seed %d round %d: %s", seed, round, request).isEqualTo(expected);
            ours = change.quotas();
            assertThat(kafkaForm(ours)).as("seed %d round %d: quotas", seed, round).isEqualTo(kafka.quotas());
            for (int i = 0; i < 5; i++) {
                DescribeClientQuotasRequestData describe = randomDescribe(random);
                // As text: the messages' equals tells NaN from itself.
                assertThat(sorted(ClientQuotaRequests.describe(ours, describe, V1))).as("seed %d round %d: %s", seed,
                        round, describe).hasToString(sorted(kafkaDescribe(kafka.quotas(), describe)).toString());
            }
        }
    }

    private static DescribeClientQuotasResponseData kafkaDescribe(Map<ClientQuotaEntity, Map<String, Double>> quotas,
                                                                  DescribeClientQuotasRequestData request) {
        Map<ClientQuotaEntity, ClientQuotaImage> entities = new HashMap<>();
        quotas.forEach((entity, values) -> entities.put(entity, new ClientQuotaImage(values)));
        try {
            return new ClientQuotasImage(entities).describe(request);
        } catch (ApiException e) {
            return new DescribeClientQuotasResponseData().setErrorCode(Errors.forException(e).code())
                    .setErrorMessage(e.getMessage()).setEntries(null);
        }
    }

    /** The response with its entries, and each entry's values, in one order: Kafka's hash order depends on history. */
    private static DescribeClientQuotasResponseData sorted(DescribeClientQuotasResponseData response) {
        DescribeClientQuotasResponseData copy = response.duplicate();
        if (copy.entries() != null) {
            copy.entries().forEach(entry -> entry.values().sort(Comparator.comparing(value -> value.key())));
            copy.entries().sort(Comparator.comparing(entry -> entry.entity().toString()));
        }
        return copy;
    }

    private static Map<ClientQuotaEntity, Map<String, Double>> kafkaForm(QuotaSet quotas) {
        Map<ClientQuotaEntity, Map<String, Double>> form = new HashMap<>();
        quotas.entities().forEach((entity, values) -> form.put(entity.toKafka(), new HashMap<>(values)));
        return form;
    }

    private static AlterClientQuotasRequestData randomAlter(Random random) {
        List<EntryData> entries = new ArrayList<>();
        int count = random.nextInt(4);
        for (int i = 0; i < count; i++) {
            List<String[]> entity = new ArrayList<>();
            int components = random.nextInt(10) == 0 ? random.nextInt(4) : 1 + random.nextInt(2);
            for (int c = 0; c < components; c++) {
                String type = random.nextInt(5) == 0 ? TYPES[random.nextInt(TYPES.length)]
                        : TYPES[random.nextInt(5)];
                String name = random.nextInt(3) == 0 ? null : NAMES[1 + random.nextInt(NAMES.length - 1)];
                if (type.equals("ip") && name != null && random.nextBoolean()) {
                    name = random.nextBoolean() ? "10.0.0.1" : "::1";
                }
                entity.add(new String[] {type, name});
            }
            List<OpData> ops = new ArrayList<>();
            int opCount = random.nextInt(4);
            for (int o = 0; o < opCount; o++) {
                String key = KEYS[random.nextInt(KEYS.length)];
                if (random.nextInt(3) == 0) {
                    ops.add(remove(key));
                } else {
                    double value = random.nextBoolean() ? VALUES[random.nextInt(VALUES.length)]
                            : 1 + random.nextInt(5);
                    ops.add(set(key, value));
                }
            }
            entries.add(entry(entity.toArray(new String[0][]), ops.toArray(new OpData[0])));
            if (random.nextInt(8) == 0) {
                entries.add(entries.get(random.nextInt(entries.size())).duplicate());
            }
        }
        return new AlterClientQuotasRequestData().setEntries(entries).setValidateOnly(random.nextInt(6) == 0);
    }

    private static DescribeClientQuotasRequestData randomDescribe(Random random) {
        List<ComponentData> components = new ArrayList<>();
        int count = random.nextInt(3);
        for (int i = 0; i < count; i++) {
            String type = random.nextInt(8) == 0 ? TYPES[random.nextInt(TYPES.length)] : TYPES[random.nextInt(5)];
            int matchType = random.nextInt(10) == 0 ? 3 : random.nextInt(3);
            String match = matchType == 0 || random.nextInt(10) == 0 ? NAMES[random.nextInt(NAMES.length)] : null;
            components.add(component(type, matchType, match));
        }
        return new DescribeClientQuotasRequestData().setComponents(components).setStrict(random.nextBoolean());
    }
}

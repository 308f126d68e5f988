package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.kafka.ProtocolException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.message.CreateAclsRequestData;
import org.apache.kafka.common.message.CreateAclsRequestData.AclCreation;
import org.apache.kafka.common.message.CreateAclsResponseData;
import org.apache.kafka.common.message.CreateAclsResponseData.AclCreationResult;
import org.apache.kafka.common.message.DeleteAclsRequestData;
import org.apache.kafka.common.message.DeleteAclsRequestData.DeleteAclsFilter;
import org.apache.kafka.common.message.DeleteAclsResponseData;
import org.apache.kafka.common.message.DeleteAclsResponseData.DeleteAclsFilterResult;
import org.apache.kafka.common.message.DeleteAclsResponseData.DeleteAclsMatchingAcl;
import org.apache.kafka.common.message.DescribeAclsRequestData;
import org.apache.kafka.common.message.DescribeAclsResponseData;
import org.apache.kafka.common.message.DescribeAclsResponseData.AclDescription;
import org.apache.kafka.common.message.DescribeAclsResponseData.DescribeAclsResource;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/**
 * DescribeAcls, CreateAcls and DeleteAcls, each case as a Kafka 4.3.1 broker (KRaft, StandardAuthorizer) answered the
 * same request, sent raw at v3: codes are Kafka's (resource type TOPIC 2, GROUP 3, CLUSTER 4; pattern type ANY 1,
 * MATCH 2, LITERAL 3, PREFIXED 4; operation ANY 1, ALL 2, READ 3; permission ANY 1, DENY 2, ALLOW 3; 0 is UNKNOWN, 99
 * a code Kafka does not know).
 */
class AclRequestsTest {

    private static final short V3 = 3;
    private static final byte TOPIC = 2;
    private static final byte GROUP = 3;
    private static final byte CLUSTER = 4;
    private static final byte ANY = 1;
    private static final byte MATCH = 2;
    private static final byte LITERAL = 3;
    private static final byte PREFIXED = 4;
    private static final byte ALL = 2;
    private static final byte READ = 3;
    private static final byte DENY = 2;
    private static final byte ALLOW = 3;

    private static AclCreation creation(int type, String name, int pattern, String principal, String host,
                                        int operation, int permission) {
        return new AclCreation().setResourceType((byte) type).setResourceName(name)
                .setResourcePatternType((byte) pattern).setPrincipal(principal).setHost(host)
                .setOperation((byte) operation).setPermissionType((byte) permission);
    }

    private static AclCreation readTopic(String name) {
        return creation(TOPIC, name, LITERAL, "User:alice", "*", READ, ALLOW);
    }

    private static AclChange<CreateAclsResponseData> create(AclSet acls, AclCreation... creations)
            throws ProtocolException {
        return AclRequests.create(new CreateAclsRequestData().setCreations(List.of(creations)), V3).applyTo(acls);
    }

    private static AclCreationResult created() {
        return new AclCreationResult();
    }

    private static AclCreationResult refused(int code, String message) {
        return new AclCreationResult().setErrorCode((short) code).setErrorMessage(message);
    }

    private static AclSet set(AclCreation... creations) throws ProtocolException {
        return create(AclSet.empty(), creations).acls();
    }

    @Test
    void aValidCreationIsMadeAndAnsweredWithoutError() throws ProtocolException {
        AclChange<CreateAclsResponseData> change = create(AclSet.empty(), readTopic("t1"));
        assertThat(change.response().results()).containsExactly(created());
        assertThat(change.response().results().get(0).errorMessage()).as("Kafka leaves the default").isEmpty();
        assertThat(change.acls().acls()).containsExactly(new Acl(ResourceType.TOPIC, "t1", PatternType.LITERAL,
                "User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
        assertThat(create(AclSet.empty()).response().results()).isEmpty();
    }

    @Test
    void aCreationNamingAnyFailsTheWholeRequest() throws ProtocolException {
        List<AclCreation> namingAny = List.of(creation(ANY, "t1", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", ANY, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", MATCH, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", LITERAL, "User:alice", "*", ANY, ALLOW),
                creation(TOPIC, "t1", LITERAL, "User:alice", "*", READ, ANY));
        AclSet before = set(readTopic("t0"));
        for (AclCreation any : namingAny) {
            AclChange<CreateAclsResponseData> change = create(before, readTopic("t4"), any);
            assertThat(change.response().results()).as("%s", any)
                    .containsExactly(refused(-1, null), refused(-1, null));
            assertThat(change.acls()).isSameAs(before);
        }
    }

    @Test
    void anUnknownCodeZeroClosesTheConnection() {
        for (AclCreation unknown : List.of(creation(0, "t1", LITERAL, "User:a", "*", READ, ALLOW),
                creation(TOPIC, "t1", 0, "User:a", "*", READ, ALLOW), creation(TOPIC, "t1", LITERAL, "User:a", "*", 0,
                        ALLOW), creation(TOPIC, "t1", LITERAL, "User:a", "*", READ, 0))) {
            assertThatThrownBy(() -> AclRequests.create(new CreateAclsRequestData().setCreations(
                    List.of(readTopic("t"), unknown)), V3)).isInstanceOf(ProtocolException.class)
                    .hasMessageContaining("CreateAcls v3 names an UNKNOWN (0) code");
        }
        assertThatThrownBy(() -> AclRequests.describe(AclSet.empty(), describeAll().setResourceTypeFilter((byte) 0),
                V3)).isInstanceOf(ProtocolException.class);
        assertThatThrownBy(() -> AclRequests.describe(AclSet.empty(), describeAll().setPatternTypeFilter((byte) 0),
                V3)).isInstanceOf(ProtocolException.class);
        assertThatThrownBy(() -> AclRequests.delete(new DeleteAclsRequestData().setFilters(
                List.of(deleteAll(), deleteAll().setOperation((byte) 0))), V3)).isInstanceOf(ProtocolException.class);
    }

    @Test
    void aCreationKafkaCannotHoldIsRefusedWithItsMessage() throws ProtocolException {
        String noColon = "(no colon is present separating the principal type from the principal name)";
        AclChange<CreateAclsResponseData> change = create(AclSet.empty(),
                creation(99, "t1", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(-1, "t1", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", 99, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", LITERAL, "User:alice", "*", 99, ALLOW),
                creation(TOPIC, "t1", LITERAL, "User:alice", "*", READ, 99),
                creation(TOPIC, "t1", LITERAL, "alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", LITERAL, "", "*", READ, ALLOW),
                creation(TOPIC, "", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "", PREFIXED, "User:alice", "*", READ, ALLOW),
                creation(CLUSTER, "foo", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(CLUSTER, "", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(CLUSTER, "kafka", PREFIXED, "User:alice", "*", READ, ALLOW),
                // In Kafka's order of checks: the name first, then the codes, then the principal.
                creation(99, "", LITERAL, "alice", "*", READ, ALLOW),
                creation(99, "x", LITERAL, "alice", "*", READ, ALLOW),
                creation(TOPIC, "x", 99, "User:a", "*", 99, 99),
                creation(TOPIC, "x", LITERAL, "a", "*", 99, ALLOW));
        String cluster = "The only valid name for the CLUSTER resource is kafka-cluster";
        assertThat(change.response().results()).containsExactly(
                refused(42, "Invalid resourceType UNKNOWN"), refused(42, "Invalid resourceType UNKNOWN"),
                refused(42, "Invalid patternType UNKNOWN"), refused(42, "Invalid operation UNKNOWN"),
                refused(42, "Invalid permissionType UNKNOWN"),
                refused(42, "Could not parse principal from `alice` " + noColon),
                refused(42, "Could not parse principal from `` " + noColon),
                refused(42, "Invalid empty resource name"), refused(42, "Invalid empty resource name"),
                refused(42, cluster), refused(42, cluster), refused(42, cluster),
                refused(42, "Invalid empty resource name"), refused(42, "Invalid resourceType UNKNOWN"),
                refused(42, "Invalid patternType UNKNOWN"), refused(42, "Invalid operation UNKNOWN"));
        assertThat(change.acls()).isEqualTo(AclSet.empty());
    }

    @Test
    void whatKafkaTakesIsTaken() throws ProtocolException {
        AclChange<CreateAclsResponseData> change = create(AclSet.empty(),
                creation(TOPIC, "t1", LITERAL, ":", "*", READ, ALLOW),
                creation(TOPIC, "t1", LITERAL, "Group:x", "*", READ, ALLOW),
                creation(TOPIC, "t2", LITERAL, "User:alice", "", READ, ALLOW),
                creation(CLUSTER, "kafka-cluster", PREFIXED, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t5", PREFIXED, "User:*", "*", ALL, DENY),
                creation(GROUP, "*", LITERAL, "User:*", "*", READ, ALLOW),
                creation(6, "tok", LITERAL, "User:bob", "*", READ, ALLOW),
                creation(7, "bob", LITERAL, "User:bob", "*", READ, ALLOW),
                creation(5, "tx", LITERAL, "User:bob", "*", 8, ALLOW),
                creation(TOPIC, "t6", LITERAL, "User:bob", "*", 12, ALLOW));
        assertThat(change.response().results()).hasSize(10).containsOnly(created());
        assertThat(change.acls().size()).isEqualTo(10);
    }

    @Test
    void mixedCreationsAreAnsweredOneByOne() throws ProtocolException {
        AclChange<CreateAclsResponseData> change = create(AclSet.empty(), readTopic("t3"),
                creation(99, "t3", LITERAL, "User:alice", "*", READ, ALLOW), readTopic("t3"));
        assertThat(change.response().results()).containsExactly(created(), refused(42,
                "Invalid resourceType UNKNOWN"), created());
        assertThat(change.acls().size()).as("created once").isEqualTo(1);
        AclChange<CreateAclsResponseData> again = create(change.acls(), readTopic("t3"));
        assertThat(again.response().results()).containsExactly(created());
        assertThat(again.acls()).as("already there").isSameAs(change.acls());
    }

    @Test
    void moreThanTenThousandNewBindingsAreRefusedAsPolicyViolations() throws ProtocolException {
        List<AclCreation> many = new ArrayList<>();
        many.add(creation(CLUSTER, "foo", LITERAL, "User:a", "*", READ, ALLOW));
        many.add(creation(TOPIC, "x", LITERAL, "nocolon", "*", READ, ALLOW));
        many.add(creation(TOPIC, "", LITERAL, "User:a", "*", READ, ALLOW));
        for (int i = 0; i < 10_001; i++) {
            many.add(readTopic("e" + i));
        }
        CreateAclsRequestData request = new CreateAclsRequestData().setCreations(many);
        AclChange<CreateAclsResponseData> change = AclRequests.create(request, V3).applyTo(AclSet.empty());
        String tooMany = "Unable to perform excessively large batch operation.";
        assertThat(change.response().results().subList(0, 4)).containsExactly(
                refused(42, "The only valid name for the CLUSTER resource is kafka-cluster"), refused(44, tooMany),
                refused(42, "Invalid empty resource name"), refused(44, tooMany));
        assertThat(change.response().results()).filteredOn(result -> result.errorCode() == 44).hasSize(10_002);
        assertThat(change.acls()).isEqualTo(AclSet.empty());
        // What exists already is no new record: 10,000 existing and one new are taken.
        AclSet tenThousand = AclRequests.create(new CreateAclsRequestData().setCreations(many.subList(3, 10_003)), V3)
                .applyTo(AclSet.empty()).acls();
        assertThat(tenThousand.size()).isEqualTo(10_000);
        AclChange<CreateAclsResponseData> plusOne = AclRequests.create(request, V3).applyTo(tenThousand);
        assertThat(plusOne.response().results()).filteredOn(result -> result.errorCode() == 0).hasSize(10_001);
        assertThat(plusOne.acls().size()).isEqualTo(10_001);
        // Repeats of one binding are one record.
        List<AclCreation> repeats = new ArrayList<>();
        for (int i = 0; i < 20_000; i++) {
            repeats.add(readTopic("d" + i % 10));
        }
        assertThat(AclRequests.create(new CreateAclsRequestData().setCreations(repeats), V3).applyTo(AclSet.empty())
                .acls().size()).isEqualTo(10);
    }

    private static DescribeAclsRequestData describeAll() {
        return new DescribeAclsRequestData().setResourceTypeFilter(ANY).setResourceNameFilter(null)
                .setPatternTypeFilter(ANY).setPrincipalFilter(null).setHostFilter(null).setOperation(ANY)
                .setPermissionType(ANY);
    }

    /** The bindings the Kafka broker held when the DescribeAcls and DeleteAcls cases were sent to it. */
    private static AclSet probed() throws ProtocolException {
        return set(creation(TOPIC, "t1", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t1", LITERAL, ":", "*", READ, ALLOW),
                creation(TOPIC, "t1", LITERAL, "Group:x", "*", READ, ALLOW),
                creation(TOPIC, "t2", LITERAL, "User:alice", "", READ, ALLOW),
                creation(TOPIC, "t3", LITERAL, "User:alice", "*", READ, ALLOW),
                creation(TOPIC, "t5", PREFIXED, "User:*", "*", ALL, DENY),
                creation(TOPIC, "t6", LITERAL, "User:bob", "*", 12, ALLOW),
                creation(GROUP, "*", LITERAL, "User:*", "*", READ, ALLOW),
                creation(CLUSTER, "kafka-cluster", PREFIXED, "User:alice", "*", READ, ALLOW),
                creation(5, "tx", LITERAL, "User:bob", "*", 8, ALLOW),
                creation(6, "tok", LITERAL, "User:bob", "*", READ, ALLOW),
                creation(7, "bob", LITERAL, "User:bob", "*", READ, ALLOW));
    }

    private static List<String> described(DescribeAclsRequestData request) throws ProtocolException {
        DescribeAclsResponseData response = AclRequests.describe(probed(), request, V3);
        assertThat(response.errorCode()).isZero();
        assertThat(response.errorMessage()).as("Kafka leaves the default").isEmpty();
        List<String> lines = new ArrayList<>();
        for (DescribeAclsResource resource : response.resources()) {
            StringBuilder line = new StringBuilder(resource.resourceType() + "/" + resource.resourceName() + "/"
                    + resource.patternType() + ":");
            for (AclDescription acl : resource.acls()) {
                line.append(' ').append(acl.principal()).append('@').append(acl.host()).append('/')
                        .append(acl.operation()).append('/').append(acl.permissionType());
            }
            lines.add(line.toString());
        }
        return lines;
    }

    @Test
    void describeGroupsTheMatchingBindingsByResourcePattern() throws ProtocolException {
        assertThat(described(describeAll())).containsExactly(
                "2/t1/3: :@*/3/3 Group:x@*/3/3 User:alice@*/3/3", "2/t2/3: User:alice@/3/3",
                "2/t3/3: User:alice@*/3/3", "2/t5/4: User:*@*/2/2", "2/t6/3: User:bob@*/12/3", "3/*/3: User:*@*/3/3",
                "4/kafka-cluster/4: User:alice@*/3/3", "5/tx/3: User:bob@*/8/3", "6/tok/3: User:bob@*/3/3",
                "7/bob/3: User:bob@*/3/3");
        assertThat(AclRequests.describe(AclSet.empty(), describeAll(), V3).resources()).isEmpty();
    }

    @Test
    void describeFiltersAsKafkasFiltersDo() throws ProtocolException {
        assertThat(described(describeAll().setResourceTypeFilter(TOPIC).setResourceNameFilter("t1")
                .setPatternTypeFilter(MATCH))).containsExactly("2/t1/3: :@*/3/3 Group:x@*/3/3 User:alice@*/3/3");
        assertThat(described(describeAll().setResourceTypeFilter(TOPIC).setPatternTypeFilter(MATCH))).hasSize(5);
        assertThat(described(describeAll().setResourceNameFilter("t5x").setPatternTypeFilter(MATCH)))
                .as("a prefix and the wildcard that would match t5x").containsExactly("2/t5/4: User:*@*/2/2",
                        "3/*/3: User:*@*/3/3");
        assertThat(described(describeAll().setResourceTypeFilter(GROUP).setResourceNameFilter("anything")
                .setPatternTypeFilter(MATCH))).containsExactly("3/*/3: User:*@*/3/3");
        assertThat(described(describeAll().setResourceNameFilter("*").setPatternTypeFilter(LITERAL)))
                .as("* only matches the wildcard").containsExactly("3/*/3: User:*@*/3/3");
        assertThat(described(describeAll().setResourceNameFilter("t5").setPatternTypeFilter(ANY)))
                .containsExactly("2/t5/4: User:*@*/2/2");
        assertThat(described(describeAll().setHostFilter("*"))).as("* is a host like any other").hasSize(9);
        assertThat(described(describeAll().setPrincipalFilter("User:*")))
                .containsExactly("2/t5/4: User:*@*/2/2", "3/*/3: User:*@*/3/3");
        assertThat(described(describeAll().setOperation(READ))).as("no operation implies another").hasSize(7);
        assertThat(described(describeAll().setOperation(ALL))).containsExactly("2/t5/4: User:*@*/2/2");
        assertThat(described(describeAll().setPermissionType(DENY))).containsExactly("2/t5/4: User:*@*/2/2");
        for (DescribeAclsRequestData unknown : List.of(describeAll().setResourceTypeFilter((byte) 99),
                describeAll().setPatternTypeFilter((byte) 99), describeAll().setOperation((byte) 99),
                describeAll().setPermissionType((byte) 99))) {
            assertThat(described(unknown)).as("a code Kafka does not know matches nothing").isEmpty();
        }
    }

    private static DeleteAclsFilter deleteAll() {
        return new DeleteAclsFilter().setResourceTypeFilter(ANY).setResourceNameFilter(null).setPatternTypeFilter(ANY)
                .setPrincipalFilter(null).setHostFilter(null).setOperation(ANY).setPermissionType(ANY);
    }

    private static AclChange<DeleteAclsResponseData> delete(AclSet acls, DeleteAclsFilter... filters)
            throws ProtocolException {
        return AclRequests.delete(new DeleteAclsRequestData().setFilters(List.of(filters)), V3).applyTo(acls);
    }

    private static DeleteAclsFilterResult filterRefused(String message) {
        return new DeleteAclsFilterResult().setErrorCode((short) 42).setErrorMessage(message);
    }

    @Test
    void aFilterWithAnUnknownCodeIsRefusedAlone() throws ProtocolException {
        AclSet acls = probed();
        AclChange<DeleteAclsResponseData> change = delete(acls, deleteAll().setResourceTypeFilter((byte) 99),
                deleteAll().setPatternTypeFilter((byte) 99), deleteAll().setOperation((byte) 99),
                deleteAll().setPermissionType((byte) 99), deleteAll().setResourceTypeFilter((byte) 99)
                        .setOperation((byte) 99), deleteAll().setResourceTypeFilter(TOPIC).setResourceNameFilter("zzz")
                        .setPatternTypeFilter(LITERAL));
        assertThat(change.response().filterResults()).containsExactly(filterRefused("Unknown patternFilter."),
                filterRefused("Unknown patternFilter."), filterRefused("Unknown entryFilter."),
                filterRefused("Unknown entryFilter."), filterRefused("Unknown patternFilter."),
                new DeleteAclsFilterResult().setErrorMessage(null));
        assertThat(change.acls()).isSameAs(acls);
        assertThat(delete(acls).response().filterResults()).isEmpty();
    }

    @Test
    void eachFilterListsWhatItMatchedAndTheirUnionIsDeleted() throws ProtocolException {
        AclSet acls = probed();
        AclChange<DeleteAclsResponseData> change = delete(acls, deleteAll().setResourceTypeFilter(TOPIC)
                .setResourceNameFilter("t1").setPatternTypeFilter(LITERAL).setPrincipalFilter("User:alice"),
                deleteAll().setResourceTypeFilter(TOPIC).setResourceNameFilter("t1").setPatternTypeFilter(MATCH),
                deleteAll().setResourceTypeFilter((byte) 99));
        List<DeleteAclsFilterResult> results = change.response().filterResults();
        assertThat(results).hasSize(3);
        DeleteAclsMatchingAcl alice = new DeleteAclsMatchingAcl().setErrorMessage(null).setResourceType(TOPIC)
                .setResourceName("t1").setPatternType(LITERAL).setPrincipal("User:alice").setHost("*")
                .setOperation(READ).setPermissionType(ALLOW);
        assertThat(results.get(0)).isEqualTo(new DeleteAclsFilterResult().setErrorMessage(null)
                .setMatchingAcls(List.of(alice)));
        assertThat(results.get(1).errorMessage()).isNull();
        assertThat(results.get(1).matchingAcls()).extracting(DeleteAclsMatchingAcl::principal)
                .containsExactly(":", "Group:x", "User:alice");
        assertThat(results.get(2)).isEqualTo(filterRefused("Unknown patternFilter."));
        assertThat(change.acls().size()).isEqualTo(acls.size() - 3);
        assertThat(delete(change.acls(), deleteAll()).acls()).isEqualTo(AclSet.empty());
        assertThat(delete(AclSet.empty(), deleteAll()).response().filterResults())
                .containsExactly(new DeleteAclsFilterResult().setErrorMessage(null));
    }

    @Test
    void deletingMoreThanTenThousandBindingsFailsEveryFilter() throws ProtocolException {
        List<AclCreation> many = new ArrayList<>();
        for (int i = 0; i < 10_001; i++) {
            many.add(readTopic("b" + i));
        }
        AclSet acls = AclRequests.create(new CreateAclsRequestData().setCreations(many.subList(0, 10_000)), V3)
                .applyTo(AclSet.empty()).acls();
        AclSet plusOne = AclRequests.create(new CreateAclsRequestData().setCreations(many), V3).applyTo(acls).acls();
        String tooMany = "Cannot remove more than 10000 acls in a single delete operation.";
        AclChange<DeleteAclsResponseData> change = delete(plusOne, deleteAll().setResourceTypeFilter((byte) 99),
                deleteAll());
        assertThat(change.response().filterResults()).containsExactly(filterRefused(tooMany), filterRefused(tooMany));
        assertThat(change.acls()).isSameAs(plusOne);
        assertThat(delete(acls, deleteAll(), deleteAll()).acls()).as("the same 10,000 twice")
                .isEqualTo(AclSet.empty());
    }

    /** A Kafka 4.3.1 broker without authorizer.class.name answered these. */
    @Test
    void withoutAnAuthorizerEveryRequestIsAnsweredSecurityDisabled() throws ProtocolException {
        assertThat(AclRequests.describeWithoutAuthorizer(describeAll(), V3)).isEqualTo(new DescribeAclsResponseData()
                .setErrorCode((short) 54).setErrorMessage("No Authorizer is configured on the broker"));
        assertThat(AclRequests.createWithoutAuthorizer(new CreateAclsRequestData().setCreations(List.of(
                readTopic("t"), creation(ANY, "t", LITERAL, "User:a", "*", READ, ALLOW))), V3).results())
                .containsExactly(refused(54, "No Authorizer is configured."), refused(54,
                        "No Authorizer is configured."));
        DeleteAclsFilterResult disabled = new DeleteAclsFilterResult().setErrorCode((short) 54)
                .setErrorMessage("No Authorizer is configured.");
        assertThat(AclRequests.deleteWithoutAuthorizer(new DeleteAclsRequestData().setFilters(List.of(deleteAll(),
                deleteAll().setResourceTypeFilter((byte) 99))), V3).filterResults())
                .containsExactly(disabled, disabled);
        assertThatThrownBy(() -> AclRequests.createWithoutAuthorizer(new CreateAclsRequestData().setCreations(
                List.of(creation(0, "t", LITERAL, "User:a", "*", READ, ALLOW))), V3))
                .as("the connection is closed first").isInstanceOf(ProtocolException.class);
        assertThatThrownBy(() -> AclRequests.describeWithoutAuthorizer(describeAll().setOperation((byte) 0), V3))
                .isInstanceOf(ProtocolException.class);
        assertThatThrownBy(() -> AclRequests.deleteWithoutAuthorizer(new DeleteAclsRequestData().setFilters(
                List.of(deleteAll().setPermissionType((byte) 0))), V3)).isInstanceOf(ProtocolException.class);
    }

    @Test
    void aMutationAppliesToTheStoredTextAndRemembersItsResponse() throws ProtocolException {
        AclMutation<CreateAclsResponseData> mutation = AclRequests.create(new CreateAclsRequestData()
                .setCreations(List.of(readTopic("t1"))), V3);
        assertThatThrownBy(mutation::response).isInstanceOf(IllegalStateException.class);
        String stored = mutation.apply("");
        assertThat(AclSet.decode(stored).size()).isEqualTo(1);
        assertThat(mutation.response().results()).containsExactly(created());
        assertThat(mutation.apply(stored)).as("nothing changes: the same text").isSameAs(stored);
        assertThat(mutation.applied().acls()).isEqualTo(AclSet.decode(stored));

        AclMutation<DeleteAclsResponseData> delete = AclRequests.delete(new DeleteAclsRequestData()
                .setFilters(List.of(deleteAll())), V3);
        assertThat(delete.apply("")).as("no set stored, none made").isEmpty();
        assertThat(delete.apply(null)).isEmpty();
        assertThat(delete.response().filterResults().get(0).matchingAcls()).isEmpty();
        String emptied = delete.apply(stored);
        assertThat(AclSet.decode(emptied)).isEqualTo(AclSet.empty());
        assertThat(delete.response().filterResults().get(0).matchingAcls()).as("the last application's").hasSize(1);
        assertThatThrownBy(() -> delete.apply("garbage\n")).isInstanceOf(CorruptAclSetException.class);
        assertThat(delete.response().filterResults().get(0).matchingAcls()).hasSize(1);
    }

    @Test
    void versionsOneToThreeAreAnsweredAndWritten() throws ProtocolException {
        assertThatThrownBy(() -> AclRequests.describe(AclSet.empty(), describeAll(), (short) 0))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> AclRequests.create(new CreateAclsRequestData(), (short) 4))
                .isInstanceOf(IllegalArgumentException.class);
        for (short version = AclRequests.MIN_VERSION; version <= AclRequests.MAX_VERSION; version++) {
            roundTrip(AclRequests.describe(probed(), describeAll(), version), new DescribeAclsResponseData(),
                    version);
            roundTrip(AclRequests.create(new CreateAclsRequestData().setCreations(List.of(readTopic("x"),
                    creation(99, "x", LITERAL, "User:a", "*", READ, ALLOW))), version).applyTo(probed()).response(),
                    new CreateAclsResponseData(), version);
            roundTrip(AclRequests.create(new CreateAclsRequestData().setCreations(List.of(creation(ANY, "x",
                    LITERAL, "User:a", "*", READ, ALLOW))), version).applyTo(probed()).response(),
                    new CreateAclsResponseData(), version);
            roundTrip(AclRequests.delete(new DeleteAclsRequestData().setFilters(List.of(deleteAll(),
                    deleteAll().setOperation((byte) 99))), version).applyTo(probed()).response(),
                    new DeleteAclsResponseData(), version);
        }
    }

    private static void roundTrip(ApiMessage response, ApiMessage empty, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buffer = ByteBuffer.allocate(response.size(cache, version));
        response.write(new ByteBufferAccessor(buffer), cache, version);
        empty.read(new ByteBufferAccessor(buffer.flip()), version);
        assertThat(empty).as("v%d", version).isEqualTo(response);
    }
}

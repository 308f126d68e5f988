package io.sluice.broker.kafka.security;

import io.sluice.broker.kafka.ProtocolException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBindingFilter;
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
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;

/**
 * DescribeAcls, CreateAcls and DeleteAcls as Kafka 4.3.1 answers them (its request classes' checks, AclApis on the
 * controller, AclControlManager), as pure functions of the ACL set. Checked against a Kafka 4.3.1 broker: see
 * {@code AclRequestsTest} for each answer.
 *
 * <p>What Kafka refuses, and how:
 * <ul>
 *   <li>A request that names code 0 (UNKNOWN) as a resource type, pattern type, operation or permission anywhere:
 *       Kafka's request class refuses to parse it and the broker closes the connection. Here: {@link
 *       ProtocolException}, thrown before anything is applied.</li>
 *   <li>CreateAcls naming ANY (or MATCH as pattern type) in any creation: Kafka's AclBinding refuses it while the
 *       request is read, and every creation is answered UNKNOWN_SERVER_ERROR, none made.</li>
 *   <li>A creation of CLUSTER named other than {@code kafka-cluster}, then one with an empty name: INVALID_REQUEST
 *       (AclApis), then a code Kafka does not know (UNKNOWN), a principal without a colon: INVALID_REQUEST
 *       (AclControlManager), each with Kafka's message. The others are made.</li>
 *   <li>A creation of more than 10,000 new bindings (Kafka's records per operation): nothing made; every creation
 *       that reached the controller is answered POLICY_VIOLATION, the ones AclApis refused keep their error.</li>
 *   <li>A DeleteAcls filter with an unknown resource or pattern type, then an unknown operation or permission:
 *       INVALID_REQUEST for that filter. Bindings matched by more than one filter are listed under each. More than
 *       10,000 bindings matched in all: nothing deleted, every filter answered INVALID_REQUEST.</li>
 *   <li>DescribeAcls is never refused: a filter with a code Kafka does not know matches nothing.</li>
 * </ul>
 *
 * <p>Order: Kafka lists DescribeAcls resources and DeleteAcls matches in hash order, which no client relies on; here
 * they are in {@link Acl#ORDER}. Authorizing the request itself (DESCRIBE, or ALTER, on the cluster) is the caller's;
 * without an authorizer, Kafka answers SECURITY_DISABLED ({@link #describeWithoutAuthorizer} and the others).
 *
 * <p>Stateless and thread-safe.
 */
public final class AclRequests {

    /** The versions of the three APIs Kafka 4.3.1 serves, and these functions answer. */
    public static final short MIN_VERSION = 1;
    public static final short MAX_VERSION = 3;
    /** The only name Kafka takes for a CLUSTER resource. */
    public static final String CLUSTER_NAME = "kafka-cluster";
    /** Kafka's message to DescribeAcls when no authorizer is configured. */
    static final String NO_AUTHORIZER_ON_BROKER = "No Authorizer is configured on the broker";
    /** Kafka's message to CreateAcls and DeleteAcls when no authorizer is configured. */
    static final String NO_AUTHORIZER = "No Authorizer is configured.";
    /** Kafka's largest number of records one controller operation writes (QuorumController.MAX_RECORDS_PER_USER_OP). */
    static final int MAX_RECORDS_PER_OPERATION = 10_000;

    private AclRequests() {
    }

    /**
     * @param acls the current set
     * @return the bindings the request's filter matches, one resource per pattern
     * @throws ProtocolException if Kafka would close the connection instead of answering
     */
    public static DescribeAclsResponseData describe(AclSet acls, DescribeAclsRequestData request, short version)
            throws ProtocolException {
        checkParses(request, version);
        AclBindingFilter filter = new AclBindingFilter(
                new ResourcePatternFilter(ResourceType.fromCode(request.resourceTypeFilter()),
                        request.resourceNameFilter(), PatternType.fromCode(request.patternTypeFilter())),
                new AccessControlEntryFilter(request.principalFilter(), request.hostFilter(),
                        AclOperation.fromCode(request.operation()),
                        AclPermissionType.fromCode(request.permissionType())));
        List<DescribeAclsResource> resources = new ArrayList<>();
        DescribeAclsResource resource = null;
        Acl previous = null;
        for (Acl acl : acls.matching(filter)) {
            if (previous == null || !samePattern(previous, acl)) {
                resource = new DescribeAclsResource().setResourceType(acl.resourceType().code())
                        .setResourceName(acl.resourceName()).setPatternType(acl.patternType().code());
                resources.add(resource);
            }
            resource.acls().add(new AclDescription().setPrincipal(acl.principal()).setHost(acl.host())
                    .setOperation(acl.operation().code()).setPermissionType(acl.permission().code()));
            previous = acl;
        }
        return new DescribeAclsResponseData().setResources(resources);
    }

    /**
     * @return the request as a change of the stored set (nothing is applied yet)
     * @throws ProtocolException if Kafka would close the connection instead of answering
     */
    public static AclMutation<CreateAclsResponseData> create(CreateAclsRequestData request, short version)
            throws ProtocolException {
        checkParses(request, version);
        List<AclCreation> creations = List.copyOf(request.creations());
        return new AclMutation<>(acls -> create(acls, creations));
    }

    /**
     * @return the request as a change of the stored set (nothing is applied yet)
     * @throws ProtocolException if Kafka would close the connection instead of answering
     */
    public static AclMutation<DeleteAclsResponseData> delete(DeleteAclsRequestData request, short version)
            throws ProtocolException {
        checkParses(request, version);
        List<AclBindingFilter> filters = new ArrayList<>(request.filters().size());
        for (DeleteAclsFilter filter : request.filters()) {
            filters.add(new AclBindingFilter(
                    new ResourcePatternFilter(ResourceType.fromCode(filter.resourceTypeFilter()),
                            filter.resourceNameFilter(), PatternType.fromCode(filter.patternTypeFilter())),
                    new AccessControlEntryFilter(filter.principalFilter(), filter.hostFilter(),
                            AclOperation.fromCode(filter.operation()),
                            AclPermissionType.fromCode(filter.permissionType()))));
        }
        List<AclBindingFilter> copy = List.copyOf(filters);
        return new AclMutation<>(acls -> delete(acls, copy));
    }

    /**
     * Kafka's answer when no authorizer is configured: SECURITY_DISABLED.
     *
     * @throws ProtocolException if Kafka would close the connection instead of answering
     */
    public static DescribeAclsResponseData describeWithoutAuthorizer(DescribeAclsRequestData request, short version)
            throws ProtocolException {
        checkParses(request, version);
        return new DescribeAclsResponseData().setErrorCode(Errors.SECURITY_DISABLED.code())
                .setErrorMessage(NO_AUTHORIZER_ON_BROKER);
    }

    /**
     * Kafka's answer when no authorizer is configured: SECURITY_DISABLED for every creation.
     *
     * @throws ProtocolException if Kafka would close the connection instead of answering
     */
    public static CreateAclsResponseData createWithoutAuthorizer(CreateAclsRequestData request, short version)
            throws ProtocolException {
        checkParses(request, version);
        List<AclCreationResult> results = new ArrayList<>(request.creations().size());
        for (int i = 0; i < request.creations().size(); i++) {
            results.add(error(Errors.SECURITY_DISABLED, NO_AUTHORIZER));
        }
        return new CreateAclsResponseData().setResults(results);
    }

    /**
     * Kafka's answer when no authorizer is configured: SECURITY_DISABLED for every filter.
     *
     * @throws ProtocolException if Kafka would close the connection instead of answering
     */
    public static DeleteAclsResponseData deleteWithoutAuthorizer(DeleteAclsRequestData request, short version)
            throws ProtocolException {
        checkParses(request, version);
        List<DeleteAclsFilterResult> results = new ArrayList<>(request.filters().size());
        for (int i = 0; i < request.filters().size(); i++) {
            results.add(filterError(Errors.SECURITY_DISABLED, NO_AUTHORIZER));
        }
        return new DeleteAclsResponseData().setFilterResults(results);
    }

    private static void checkParses(DescribeAclsRequestData request, short version) throws ProtocolException {
        checkVersion(version);
        if (hasUnknownCode(request.resourceTypeFilter(), request.patternTypeFilter(), request.operation(),
                request.permissionType())) {
            throw new ProtocolException("DescribeAcls v" + version + " names an UNKNOWN (0) code: " + request);
        }
    }

    private static void checkParses(CreateAclsRequestData request, short version) throws ProtocolException {
        checkVersion(version);
        for (AclCreation creation : request.creations()) {
            if (hasUnknownCode(creation.resourceType(), creation.resourcePatternType(), creation.operation(),
                    creation.permissionType())) {
                throw new ProtocolException("CreateAcls v" + version + " names an UNKNOWN (0) code: " + creation);
            }
        }
    }

    private static void checkParses(DeleteAclsRequestData request, short version) throws ProtocolException {
        checkVersion(version);
        for (DeleteAclsFilter filter : request.filters()) {
            if (hasUnknownCode(filter.resourceTypeFilter(), filter.patternTypeFilter(), filter.operation(),
                    filter.permissionType())) {
                throw new ProtocolException("DeleteAcls v" + version + " names an UNKNOWN (0) code: " + filter);
            }
        }
    }

    private static AclChange<CreateAclsResponseData> create(AclSet acls, List<AclCreation> creations) {
        List<AclCreationResult> results = new ArrayList<>(creations.size());
        if (creations.stream().anyMatch(AclRequests::namesAny)) {
            // Kafka builds an AclBinding of every creation first; one that names ANY throws, and the whole request
            // is answered with the error of an unexpected exception.
            for (int i = 0; i < creations.size(); i++) {
                results.add(error(Errors.UNKNOWN_SERVER_ERROR, null));
            }
            return new AclChange<>(acls, new CreateAclsResponseData().setResults(results));
        }
        Set<Acl> added = new LinkedHashSet<>();
        boolean[] reachedController = new boolean[creations.size()];
        for (int i = 0; i < creations.size(); i++) {
            AclCreation creation = creations.get(i);
            ResourceType type = ResourceType.fromCode(creation.resourceType());
            String refusal = null;
            if (type == ResourceType.CLUSTER && !CLUSTER_NAME.equals(creation.resourceName())) {
                refusal = "The only valid name for the CLUSTER resource is " + CLUSTER_NAME;
            } else if (creation.resourceName().isEmpty()) {
                refusal = "Invalid empty resource name";
            } else {
                reachedController[i] = true;
                try {
                    Acl acl = new Acl(type, creation.resourceName(), PatternType.fromCode(
                            creation.resourcePatternType()), creation.principal(), creation.host(),
                            AclOperation.fromCode(creation.operation()),
                            AclPermissionType.fromCode(creation.permissionType()));
                    if (!acls.contains(acl)) {
                        added.add(acl);
                    }
                } catch (IllegalArgumentException e) {
                    // Acl's checks are AclControlManager.validateNewAcl's, in its order and with its messages.
                    refusal = e.getMessage();
                }
            }
            results.add(refusal == null ? new AclCreationResult() : error(Errors.INVALID_REQUEST, refusal));
        }
        if (added.size() > MAX_RECORDS_PER_OPERATION) {
            for (int i = 0; i < creations.size(); i++) {
                if (reachedController[i]) {
                    results.set(i, error(Errors.POLICY_VIOLATION,
                            "Unable to perform excessively large batch operation."));
                }
            }
            return new AclChange<>(acls, new CreateAclsResponseData().setResults(results));
        }
        return new AclChange<>(acls.plus(added), new CreateAclsResponseData().setResults(results));
    }

    private static AclChange<DeleteAclsResponseData> delete(AclSet acls, List<AclBindingFilter> filters) {
        List<DeleteAclsFilterResult> results = new ArrayList<>(filters.size());
        Set<Acl> removed = new LinkedHashSet<>();
        for (AclBindingFilter filter : filters) {
            if (filter.patternFilter().isUnknown()) {
                results.add(filterError(Errors.INVALID_REQUEST, "Unknown patternFilter."));
                continue;
            }
            if (filter.entryFilter().isUnknown()) {
                results.add(filterError(Errors.INVALID_REQUEST, "Unknown entryFilter."));
                continue;
            }
            List<DeleteAclsMatchingAcl> matches = new ArrayList<>();
            for (Acl acl : acls.matching(filter)) {
                removed.add(acl);
                matches.add(matchingAcl(acl));
            }
            if (removed.size() > MAX_RECORDS_PER_OPERATION) {
                List<DeleteAclsFilterResult> refused = new ArrayList<>(filters.size());
                for (int i = 0; i < filters.size(); i++) {
                    refused.add(filterError(Errors.INVALID_REQUEST, "Cannot remove more than "
                            + MAX_RECORDS_PER_OPERATION + " acls in a single delete operation."));
                }
                return new AclChange<>(acls, new DeleteAclsResponseData().setFilterResults(refused));
            }
            results.add(new DeleteAclsFilterResult().setErrorCode(Errors.NONE.code()).setErrorMessage(null)
                    .setMatchingAcls(matches));
        }
        return new AclChange<>(acls.minus(removed), new DeleteAclsResponseData().setFilterResults(results));
    }

    private static DeleteAclsMatchingAcl matchingAcl(Acl acl) {
        return new DeleteAclsMatchingAcl().setErrorCode(Errors.NONE.code()).setErrorMessage(null)
                .setResourceType(acl.resourceType().code()).setResourceName(acl.resourceName())
                .setPatternType(acl.patternType().code()).setPrincipal(acl.principal()).setHost(acl.host())
                .setOperation(acl.operation().code()).setPermissionType(acl.permission().code());
    }

    /** @return true if kafka-clients' AclBinding refuses the creation: ANY where a binding needs a value */
    private static boolean namesAny(AclCreation creation) {
        PatternType patternType = PatternType.fromCode(creation.resourcePatternType());
        return ResourceType.fromCode(creation.resourceType()) == ResourceType.ANY
                || patternType == PatternType.ANY || patternType == PatternType.MATCH
                || AclOperation.fromCode(creation.operation()) == AclOperation.ANY
                || AclPermissionType.fromCode(creation.permissionType()) == AclPermissionType.ANY;
    }

    /** @return true if Kafka's request classes refuse to parse these codes (they test the code 0, not the enum) */
    private static boolean hasUnknownCode(byte resourceType, byte patternType, byte operation, byte permission) {
        return resourceType == ResourceType.UNKNOWN.code() || patternType == PatternType.UNKNOWN.code()
                || operation == AclOperation.UNKNOWN.code() || permission == AclPermissionType.UNKNOWN.code();
    }

    private static boolean samePattern(Acl a, Acl b) {
        return a.resourceType() == b.resourceType() && a.patternType() == b.patternType()
                && a.resourceName().equals(b.resourceName());
    }

    /** Kafka's ApiError.fromThrowable: no message for UNKNOWN_SERVER_ERROR. */
    private static AclCreationResult error(Errors error, String message) {
        return new AclCreationResult().setErrorCode(error.code()).setErrorMessage(message);
    }

    private static DeleteAclsFilterResult filterError(Errors error, String message) {
        return new DeleteAclsFilterResult().setErrorCode(error.code()).setErrorMessage(message);
    }

    private static void checkVersion(short version) {
        if (version < MIN_VERSION || version > MAX_VERSION) {
            throw new IllegalArgumentException("ACL APIs are served at versions " + MIN_VERSION + " to "
                    + MAX_VERSION + ", not " + version);
        }
    }
}

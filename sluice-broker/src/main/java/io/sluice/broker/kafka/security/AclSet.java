package io.sluice.broker.kafka.security;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.acl.AclBindingFilter;

/**
 * The cluster's ACLs: a set of {@link Acl bindings}, in {@link Acl#ORDER}, without duplicates (Kafka keeps a binding
 * once however often it is created). A change makes a new set; {@link #encode()} and {@link #decode(String)} are the
 * stored form ({@link AclSetFormat}).
 *
 * <p>Immutable and thread-safe.
 */
public final class AclSet {

    private static final AclSet EMPTY = new AclSet(List.of());

    private final List<Acl> sorted;
    private final Set<Acl> members;

    private AclSet(List<Acl> sorted) {
        this.sorted = Collections.unmodifiableList(sorted);
        this.members = new HashSet<>(sorted);
    }

    /** @return the set without bindings */
    public static AclSet empty() {
        return EMPTY;
    }

    /** @return the set of these bindings, each once */
    public static AclSet of(Collection<Acl> acls) {
        return acls.isEmpty() ? EMPTY : new AclSet(new ArrayList<>(new TreeSet<>(acls)));
    }

    /**
     * Reads a set written by {@link #encode()}.
     *
     * @throws CorruptAclSetException if {@code encoded} is not a whole set in a version this build reads
     */
    public static AclSet decode(String encoded) {
        return AclSetFormat.decode(encoded);
    }

    /**
     * Reads the cluster's ACL record: its text as {@link #encode()} wrote it, or the empty text of a cluster that never
     * stored one ({@code ClusterView.securityRecord} answers "" for a record it does not have).
     *
     * @param record the record's text; "" (or null) for none
     * @throws CorruptAclSetException if a non-empty text is not a whole set in a version this build reads
     */
    public static AclSet ofRecord(String record) {
        return record == null || record.isEmpty() ? EMPTY : decode(record);
    }

    /** @return this set in its stored form, the same text for the same set */
    public String encode() {
        return AclSetFormat.encode(this);
    }

    /** @return the bindings, in {@link Acl#ORDER} */
    public List<Acl> acls() {
        return sorted;
    }

    /** @return how many bindings the set has */
    public int size() {
        return sorted.size();
    }

    /** @return true if the set has no bindings */
    public boolean isEmpty() {
        return sorted.isEmpty();
    }

    /** @return true if the set has this binding */
    public boolean contains(Acl acl) {
        return members.contains(acl);
    }

    /** @return the bindings that {@code filter} matches, in {@link Acl#ORDER}, as Kafka's filters match them */
    public List<Acl> matching(AclBindingFilter filter) {
        List<Acl> matching = new ArrayList<>();
        for (Acl acl : sorted) {
            if (filter.matches(acl.toBinding())) {
                matching.add(acl);
            }
        }
        return matching;
    }

    /** @return this set with these bindings too; this very set if it has them all */
    public AclSet plus(Collection<Acl> added) {
        if (members.containsAll(added)) {
            return this;
        }
        List<Acl> all = new ArrayList<>(sorted);
        all.addAll(added);
        return of(all);
    }

    /** @return this set without these bindings; this very set if it has none of them */
    public AclSet minus(Collection<Acl> removed) {
        Set<Acl> gone = new HashSet<>(removed);
        gone.retainAll(members);
        if (gone.isEmpty()) {
            return this;
        }
        List<Acl> kept = new ArrayList<>(sorted.size() - gone.size());
        for (Acl acl : sorted) {
            if (!gone.contains(acl)) {
                kept.add(acl);
            }
        }
        return kept.isEmpty() ? EMPTY : new AclSet(kept);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof AclSet set && sorted.equals(set.sorted);
    }

    @Override
    public int hashCode() {
        return sorted.hashCode();
    }

    @Override
    public String toString() {
        return "AclSet" + sorted;
    }
}

package io.sluice.broker.kafka.security;

import java.util.Objects;
import java.util.function.Function;
import java.util.function.UnaryOperator;

/**
 * A CreateAcls or DeleteAcls request, checked, as a function from the stored ACL set to the next one: given to the
 * cluster's atomic update of the stored text, it reads the text it is given, applies the request, remembers the
 * response that application gives, and returns the text to store. The response is therefore always the one of the set
 * the request was applied to, whatever changed the set while the request waited.
 *
 * <p>The update may call {@link #apply} more than once (a retry after a conflicting write): the response is that of
 * the last call, which must be the one whose result was stored. {@link #response()} is read after the update has
 * completed, on any thread: the remembered change is published through a volatile field.
 *
 * @param <R> the response data's type
 */
public final class AclMutation<R> implements UnaryOperator<String> {

    private final Function<AclSet, AclChange<R>> change;
    private volatile AclChange<R> applied;

    AclMutation(Function<AclSet, AclChange<R>> change) {
        this.change = Objects.requireNonNull(change, "change");
    }

    /**
     * Applies the request to the stored set.
     *
     * @param record the stored text ({@link AclSet#encode()}), or "" when no ACL set was ever stored
     *     ({@link AclSet#ofRecord})
     * @return the text to store, never null: {@code record} itself when the request changes nothing
     * @throws CorruptAclSetException if {@code record} cannot be read; nothing is remembered then
     */
    @Override
    public String apply(String record) {
        AclSet before = AclSet.ofRecord(record);
        AclChange<R> result = applyTo(before);
        applied = result;
        if (result.acls() == before) {
            return record == null ? "" : record;
        }
        return result.acls().encode();
    }

    /**
     * Applies the request to a set, remembering nothing: the pure form of {@link #apply}.
     *
     * @return the set after the request and its response
     */
    public AclChange<R> applyTo(AclSet acls) {
        return change.apply(Objects.requireNonNull(acls, "acls"));
    }

    /**
     * @return the set and response of the last {@link #apply}
     * @throws IllegalStateException if it was never applied
     */
    public AclChange<R> applied() {
        AclChange<R> result = applied;
        if (result == null) {
            throw new IllegalStateException("the ACL request was not applied to the stored set");
        }
        return result;
    }

    /**
     * @return the response of the last {@link #apply}
     * @throws IllegalStateException if it was never applied
     */
    public R response() {
        return applied().response();
    }
}

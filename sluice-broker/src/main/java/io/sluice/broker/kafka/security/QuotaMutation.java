package io.sluice.broker.kafka.security;

import java.util.Objects;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;

/**
 * An AlterClientQuotas request, checked, as a function from the stored quota set to the next one: given to the
 * cluster's atomic update of the stored text ({@code alterSecurityRecord("quotas", mutation)}), it reads the text it
 * is given, applies the request, remembers the response that application gives, and returns the text to store. The
 * response is therefore always the one of the set the request was applied to, whatever changed the set while the
 * request waited. A request with {@code validateOnly} answers as the others and stores the text it was given.
 *
 * <p>The update may call {@link #apply} more than once (a retry after a conflicting write): the response is that of
 * the last call, which must be the one whose result was stored. {@link #response()} is read after the update has
 * completed, on any thread: the remembered change is published through a volatile field.
 */
public final class QuotaMutation implements UnaryOperator<String> {

    /** The name of the security record the quota set is stored under. */
    public static final String RECORD = "quotas";

    private final Function<QuotaSet, QuotaChange> change;
    private volatile QuotaChange applied;

    QuotaMutation(Function<QuotaSet, QuotaChange> change) {
        this.change = Objects.requireNonNull(change, "change");
    }

    /**
     * What the request does to a set: the set after it and the response that tells the client.
     *
     * @param quotas the set after the request; the very set it was applied to when it changes nothing
     * @param response the response data (throttle time 0: the caller sets it)
     */
    public record QuotaChange(QuotaSet quotas, AlterClientQuotasResponseData response) {

        /** @throws NullPointerException if either is null */
        public QuotaChange {
            Objects.requireNonNull(quotas, "quotas");
            Objects.requireNonNull(response, "response");
        }
    }

    /**
     * Applies the request to the stored set.
     *
     * @param record the stored text ({@link QuotaSet#encode()}), or "" when no quota set was ever stored
     * @return the text to store, never null: {@code record} itself when the request changes nothing
     * @throws CorruptQuotaSetException if {@code record} cannot be read; nothing is remembered then
     */
    @Override
    public String apply(String record) {
        QuotaSet before = QuotaSet.ofRecord(record);
        QuotaChange result = applyTo(before);
        applied = result;
        if (result.quotas() == before) {
            return record == null ? "" : record;
        }
        return result.quotas().encode();
    }

    /**
     * Applies the request to a set, remembering nothing: the pure form of {@link #apply}.
     *
     * @return the set after the request and its response
     */
    public QuotaChange applyTo(QuotaSet quotas) {
        return change.apply(Objects.requireNonNull(quotas, "quotas"));
    }

    /**
     * @return the set and response of the last {@link #apply}
     * @throws IllegalStateException if it was never applied
     */
    public QuotaChange applied() {
        QuotaChange result = applied;
        if (result == null) {
            throw new IllegalStateException("the AlterClientQuotas request was not applied to the stored set");
        }
        return result;
    }

    /**
     * @return the response of the last {@link #apply}
     * @throws IllegalStateException if it was never applied
     */
    public AlterClientQuotasResponseData response() {
        return applied().response();
    }
}

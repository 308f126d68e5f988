package io.sluice.broker.kafka.security;

import java.util.Objects;

/**
 * What a CreateAcls or DeleteAcls request does to a set: the set after it, and the response that tells the client.
 *
 * @param acls the set after the request; the very set it was applied to when it changes nothing
 * @param response the response data, for the request's version
 * @param <R> the response data's type
 */
public record AclChange<R>(AclSet acls, R response) {

    /** @throws NullPointerException if either is null */
    public AclChange {
        Objects.requireNonNull(acls, "acls");
        Objects.requireNonNull(response, "response");
    }
}

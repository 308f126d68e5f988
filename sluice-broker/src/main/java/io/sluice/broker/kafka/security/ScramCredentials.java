package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsResponseData;
import org.apache.kafka.common.protocol.Errors;

/**
 * The SCRAM credentials of the cluster's users, as Kafka keeps them (RFC 5802): per user and mechanism a salt, the
 * stored key {@code H(HMAC(salted password, "Client Key"))}, the server key {@code HMAC(salted password, "Server
 * Key")} and the iteration count. Neither the password nor the salted password is kept. Immutable; kept as text
 * ({@link #encode}), one credential per line: {@code <mechanism> <base64 user> <iterations> <base64 salt> <base64
 * stored key> <base64 server key>}, after a {@code v1} line.
 */
public final class ScramCredentials {

    /** Kafka's bounds on iterations (4096 is SCRAM's minimum for both mechanisms). */
    static final int MIN_ITERATIONS = 4096;
    static final int MAX_ITERATIONS = 16384;

    /** One user's credential for one mechanism. */
    public record Credential(byte[] salt, byte[] storedKey, byte[] serverKey, int iterations) {
    }

    /** The empty set. */
    public static final ScramCredentials EMPTY = new ScramCredentials(Map.of());

    /** By mechanism name ("SCRAM-SHA-256"), then user. */
    private final Map<String, Map<String, Credential>> byMechanism;

    private ScramCredentials(Map<String, Map<String, Credential>> byMechanism) {
        this.byMechanism = byMechanism;
    }

    /** @return the user's credential for the mechanism, or null */
    public Credential get(String mechanism, String user) {
        Map<String, Credential> users = byMechanism.get(mechanism);
        return users == null ? null : users.get(user);
    }

    /** @return the text form {@link #decode} reads */
    public String encode() {
        StringBuilder text = new StringBuilder("v1\n");
        Base64.Encoder b64 = Base64.getEncoder();
        new TreeMap<>(byMechanism).forEach((mechanism, users) -> new TreeMap<>(users).forEach((user, c) ->
                text.append(mechanism).append(' ').append(b64.encodeToString(user.getBytes(StandardCharsets.UTF_8)))
                        .append(' ').append(c.iterations()).append(' ').append(b64.encodeToString(c.salt()))
                        .append(' ').append(b64.encodeToString(c.storedKey())).append(' ')
                        .append(b64.encodeToString(c.serverKey())).append('\n')));
        return text.toString();
    }

    /**
     * @param text what {@link #encode} wrote, or "" for none
     * @throws IllegalArgumentException if the text is not whole
     */
    public static ScramCredentials decode(String text) {
        if (text.isEmpty()) {
            return EMPTY;
        }
        String[] lines = text.split("\n");
        if (!lines[0].equals("v1")) {
            throw new IllegalArgumentException("SCRAM credentials of an unknown format: " + lines[0]);
        }
        Map<String, Map<String, Credential>> byMechanism = new HashMap<>();
        Base64.Decoder b64 = Base64.getDecoder();
        for (int i = 1; i < lines.length; i++) {
            String[] fields = lines[i].split(" ");
            if (fields.length != 6 || mechanism(fields[0]) == ScramMechanism.UNKNOWN) {
                throw new IllegalArgumentException("a SCRAM credential line " + i + " is not whole");
            }
            try {
                byMechanism.computeIfAbsent(fields[0], m -> new HashMap<>()).put(
                        new String(b64.decode(fields[1]), StandardCharsets.UTF_8),
                        new Credential(b64.decode(fields[3]), b64.decode(fields[4]), b64.decode(fields[5]),
                                Integer.parseInt(fields[2])));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("a SCRAM credential line " + i + " is not whole", e);
            }
        }
        return new ScramCredentials(byMechanism);
    }

    private static ScramMechanism mechanism(String name) {
        return ScramMechanism.fromMechanismName(name);
    }

    /** The outcome of an AlterUserScramCredentials request: the credentials to keep and the answer. */
    public record Altered(ScramCredentials credentials, AlterUserScramCredentialsResponseData response) {
    }

    /**
     * Applies AlterUserScramCredentials as Kafka's controller does: each user altered at most once per request
     * (DUPLICATE_RESOURCE), known mechanisms (UNSUPPORTED_SASL_MECHANISM), 4096..16384 iterations and a non-empty name
     * (UNACCEPTABLE_CREDENTIAL), deletions of existing credentials only (RESOURCE_NOT_FOUND). The salted password sent
     * becomes the stored and server keys.
     */
    public Altered alter(AlterUserScramCredentialsRequestData request) {
        Map<String, AlterUserScramCredentialsRequestData.ScramCredentialDeletion> deletions = new LinkedHashMap<>();
        Map<String, AlterUserScramCredentialsRequestData.ScramCredentialUpsertion> upsertions = new LinkedHashMap<>();
        Map<String, String[]> errors = new LinkedHashMap<>();
        for (var deletion : request.deletions()) {
            if (errors.containsKey(deletion.name())) {
                continue;
            }
            if (deletions.remove(deletion.name()) != null) {
                errors.put(deletion.name(), duplicate());
                continue;
            }
            String[] error = check(deletion.name(), deletion.mechanism());
            if (error == null && get(ScramMechanism.fromType(deletion.mechanism()).mechanismName(),
                    deletion.name()) == null) {
                error = new String[] {Errors.RESOURCE_NOT_FOUND.name(),
                        "Attempt to delete a user credential that does not exist"};
            }
            if (error != null) {
                errors.put(deletion.name(), error);
            } else {
                deletions.put(deletion.name(), deletion);
            }
        }
        for (var upsertion : request.upsertions()) {
            if (errors.containsKey(upsertion.name())) {
                continue;
            }
            if (deletions.remove(upsertion.name()) != null || upsertions.remove(upsertion.name()) != null) {
                errors.put(upsertion.name(), duplicate());
                continue;
            }
            String[] error = check(upsertion.name(), upsertion.mechanism());
            if (error == null && upsertion.iterations() < MIN_ITERATIONS) {
                error = new String[] {Errors.UNACCEPTABLE_CREDENTIAL.name(), "Too few iterations"};
            } else if (error == null && upsertion.iterations() > MAX_ITERATIONS) {
                error = new String[] {Errors.UNACCEPTABLE_CREDENTIAL.name(), "Too many iterations"};
            }
            if (error != null) {
                errors.put(upsertion.name(), error);
            } else {
                upsertions.put(upsertion.name(), upsertion);
            }
        }
        Map<String, Map<String, Credential>> next = new HashMap<>();
        byMechanism.forEach((mechanism, users) -> next.put(mechanism, new HashMap<>(users)));
        AlterUserScramCredentialsResponseData response = new AlterUserScramCredentialsResponseData();
        for (var deletion : deletions.values()) {
            next.get(ScramMechanism.fromType(deletion.mechanism()).mechanismName()).remove(deletion.name());
            response.results().add(new AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult()
                    .setUser(deletion.name()));
        }
        for (var upsertion : upsertions.values()) {
            String mechanism = ScramMechanism.fromType(upsertion.mechanism()).mechanismName();
            next.computeIfAbsent(mechanism, m -> new HashMap<>()).put(upsertion.name(),
                    fromSaltedPassword(mechanism, upsertion.salt(), upsertion.saltedPassword(),
                            upsertion.iterations()));
            response.results().add(new AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult()
                    .setUser(upsertion.name()));
        }
        errors.forEach((user, error) -> response.results().add(
                new AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult().setUser(user)
                        .setErrorCode(Errors.valueOf(error[0]).code()).setErrorMessage(error[1])));
        next.values().removeIf(Map::isEmpty);
        return new Altered(new ScramCredentials(next), response);
    }

    private static String[] duplicate() {
        return new String[] {Errors.DUPLICATE_RESOURCE.name(),
                "A user credential cannot be altered twice in the same request"};
    }

    private static String[] check(String user, byte mechanism) {
        if (user.isEmpty()) {
            return new String[] {Errors.UNACCEPTABLE_CREDENTIAL.name(), "Username must not be empty"};
        }
        if (ScramMechanism.fromType(mechanism) == ScramMechanism.UNKNOWN) {
            return new String[] {Errors.UNSUPPORTED_SASL_MECHANISM.name(), "Unknown SCRAM mechanism"};
        }
        return null;
    }

    /** DescribeUserScramCredentials as Kafka answers it: every user when none is named, duplicates refused. */
    public DescribeUserScramCredentialsResponseData describe(DescribeUserScramCredentialsRequestData request) {
        Map<String, Boolean> users = new LinkedHashMap<>();
        if (request.users() == null || request.users().isEmpty()) {
            byMechanism.values().forEach(named -> named.keySet().forEach(user -> users.put(user, false)));
        } else {
            for (var user : request.users()) {
                users.put(user.name(), users.containsKey(user.name()));
            }
        }
        DescribeUserScramCredentialsResponseData response = new DescribeUserScramCredentialsResponseData();
        users.forEach((user, duplicate) -> {
            var result = new DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResult()
                    .setUser(user);
            if (duplicate) {
                result.setErrorCode(Errors.DUPLICATE_RESOURCE.code()).setErrorMessage(
                        "Cannot describe SCRAM credentials for the same user twice in a single request: " + user);
            } else {
                List<DescribeUserScramCredentialsResponseData.CredentialInfo> infos = new ArrayList<>();
                for (ScramMechanism mechanism : List.of(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)) {
                    Credential credential = get(mechanism.mechanismName(), user);
                    if (credential != null) {
                        infos.add(new DescribeUserScramCredentialsResponseData.CredentialInfo()
                                .setMechanism(mechanism.type()).setIterations(credential.iterations()));
                    }
                }
                if (infos.isEmpty()) {
                    result.setErrorCode(Errors.RESOURCE_NOT_FOUND.code()).setErrorMessage(
                            "Attempt to describe a user credential that does not exist: " + user);
                } else {
                    result.setCredentialInfos(infos);
                }
            }
            response.results().add(result);
        });
        return response;
    }

    /** @return the credential kept for a salted password */
    static Credential fromSaltedPassword(String mechanism, byte[] salt, byte[] saltedPassword, int iterations) {
        byte[] clientKey = hmac(mechanism, saltedPassword, "Client Key".getBytes(StandardCharsets.US_ASCII));
        return new Credential(salt.clone(), hash(mechanism, clientKey),
                hmac(mechanism, saltedPassword, "Server Key".getBytes(StandardCharsets.US_ASCII)), iterations);
    }

    /** @return Hi(password, salt, iterations) of RFC 5802 (PBKDF2 with the mechanism's HMAC) */
    static byte[] saltedPassword(String mechanism, String password, byte[] salt, int iterations) {
        byte[] key = password.getBytes(StandardCharsets.UTF_8);
        byte[] u = hmac(mechanism, key, concat(salt, new byte[] {0, 0, 0, 1}));
        byte[] result = u.clone();
        for (int i = 1; i < iterations; i++) {
            u = hmac(mechanism, key, u);
            for (int j = 0; j < result.length; j++) {
                result[j] ^= u[j];
            }
        }
        return result;
    }

    static byte[] hmac(String mechanism, byte[] key, byte[] bytes) {
        String algorithm = mechanism.equals("SCRAM-SHA-512") ? "HmacSHA512" : "HmacSHA256";
        try {
            Mac mac = Mac.getInstance(algorithm);
            mac.init(new SecretKeySpec(key, algorithm));
            return mac.doFinal(bytes);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(algorithm + " is missing from the JDK", e);
        }
    }

    static byte[] hash(String mechanism, byte[] bytes) {
        try {
            return MessageDigest.getInstance(mechanism.equals("SCRAM-SHA-512") ? "SHA-512" : "SHA-256").digest(bytes);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("SHA-2 is missing from the JDK", e);
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] both = new byte[a.length + b.length];
        System.arraycopy(a, 0, both, 0, a.length);
        System.arraycopy(b, 0, both, a.length, b.length);
        return both;
    }
}

package io.sluice.broker.kafka.security;

import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.interfaces.ECPublicKey;
import java.security.interfaces.RSAPublicKey;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.MGF1ParameterSpec;
import java.security.spec.PSSParameterSpec;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Signing keys, JSON Web Key Sets and tokens for OAUTHBEARER tests, made with the JDK alone: what an OAuth provider
 * would issue, so that the broker's verification is checked against an independent signer.
 */
public final class TestTokens {

    private static final Base64.Encoder BASE64URL = Base64.getUrlEncoder().withoutPadding();

    private TestTokens() {
    }

    /**
     * A key pair and its public half as a JWK.
     *
     * @param id the key's {@code kid}
     * @param privateKey what signs
     * @param jwk the public key as a JSON Web Key
     */
    public record SigningKey(String id, PrivateKey privateKey, String jwk) {
    }

    /** @return a new RSA key of {@code bits} bits, its JWK naming {@code kid} and {@code use: sig} */
    public static SigningKey rsa(String kid, int bits) {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
            generator.initialize(bits);
            KeyPair pair = generator.generateKeyPair();
            RSAPublicKey key = (RSAPublicKey) pair.getPublic();
            return new SigningKey(kid, pair.getPrivate(), "{\"kty\":\"RSA\",\"kid\":\"" + kid + "\",\"use\":\"sig\","
                    + "\"n\":\"" + unsigned(key.getModulus(), 0) + "\",\"e\":\"" + unsigned(key.getPublicExponent(), 0)
                    + "\"}");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return a new EC key on {@code curve} (P-256, P-384 or P-521), its JWK naming {@code kid} */
    public static SigningKey ec(String kid, String curve) {
        String jcaCurve = switch (curve) {
            case "P-256" -> "secp256r1";
            case "P-384" -> "secp384r1";
            case "P-521" -> "secp521r1";
            default -> throw new IllegalArgumentException(curve);
        };
        int bytes = switch (curve) {
            case "P-256" -> 32;
            case "P-384" -> 48;
            default -> 66;
        };
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec(jcaCurve));
            KeyPair pair = generator.generateKeyPair();
            ECPublicKey key = (ECPublicKey) pair.getPublic();
            return new SigningKey(kid, pair.getPrivate(), "{\"kty\":\"EC\",\"kid\":\"" + kid + "\",\"crv\":\"" + curve
                    + "\",\"x\":\"" + unsigned(key.getW().getAffineX(), bytes) + "\",\"y\":\""
                    + unsigned(key.getW().getAffineY(), bytes) + "\"}");
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return a JSON Web Key Set of the keys' public halves */
    public static String jwks(SigningKey... keys) {
        return "{\"keys\":[" + Arrays.stream(keys).map(SigningKey::jwk).collect(Collectors.joining(",")) + "]}";
    }

    /** @return a JWS of {@code claims} signed with {@code algorithm} by {@code key}, its header naming the key */
    public static String sign(String algorithm, SigningKey key, Map<String, ?> claims) {
        return sign(algorithm, key, "{\"alg\":\"" + algorithm + "\",\"kid\":\"" + key.id() + "\"}", json(claims));
    }

    /** @return a JWS with the header and claims given as they are */
    public static String sign(String algorithm, SigningKey key, String header, String claims) {
        String input = encode(header) + "." + encode(claims);
        try {
            Signature signer = switch (algorithm) {
                case "RS256", "RS384", "RS512" -> Signature.getInstance("SHA" + algorithm.substring(2) + "withRSA");
                case "ES256", "ES384", "ES512" ->
                        Signature.getInstance("SHA" + algorithm.substring(2) + "withECDSAinP1363Format");
                case "PS256", "PS384", "PS512" -> {
                    String digest = "SHA-" + algorithm.substring(2);
                    Signature pss = Signature.getInstance("RSASSA-PSS");
                    pss.setParameter(new PSSParameterSpec(digest, "MGF1", new MGF1ParameterSpec(digest),
                            Integer.parseInt(algorithm.substring(2)) / 8, 1));
                    yield pss;
                }
                default -> throw new IllegalArgumentException(algorithm);
            };
            signer.initSign(key.privateKey());
            signer.update(input.getBytes(StandardCharsets.US_ASCII));
            return input + "." + BASE64URL.encodeToString(signer.sign());
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** @return an unsecured JWS ({@code "alg":"none"}, empty signature) of {@code claims} */
    public static String unsecured(Map<String, ?> claims) {
        return encode("{\"alg\":\"none\"}") + "." + encode(json(claims)) + ".";
    }

    /** @return the claims of a token valid for {@code seconds} from {@code nowSeconds}, for {@code subject} */
    public static Map<String, Object> claims(String subject, long nowSeconds, long seconds) {
        Map<String, Object> claims = new LinkedHashMap<>();
        claims.put("sub", subject);
        claims.put("iat", nowSeconds);
        claims.put("exp", nowSeconds + seconds);
        return claims;
    }

    /** @return base64url of the text's UTF-8 */
    public static String encode(String text) {
        return BASE64URL.encodeToString(text.getBytes(StandardCharsets.UTF_8));
    }

    /** @return JSON of strings, numbers, booleans, lists and maps (no escaping beyond quotes and backslashes) */
    public static String json(Object value) {
        return switch (value) {
            case null -> "null";
            case String s -> "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
            case Number n -> n.toString();
            case Boolean b -> b.toString();
            case List<?> items -> items.stream().map(TestTokens::json).collect(Collectors.joining(",", "[", "]"));
            case Map<?, ?> map -> map.entrySet().stream().map(e -> json(String.valueOf(e.getKey())) + ":"
                    + json(e.getValue())).collect(Collectors.joining(",", "{", "}"));
            default -> throw new IllegalArgumentException(value.getClass().getName());
        };
    }

    private static String unsigned(BigInteger value, int length) {
        byte[] bytes = value.toByteArray();
        if (bytes.length > 1 && bytes[0] == 0) {
            bytes = Arrays.copyOfRange(bytes, 1, bytes.length);
        }
        if (bytes.length < length) {
            byte[] padded = new byte[length];
            System.arraycopy(bytes, 0, padded, length - bytes.length, bytes.length);
            bytes = padded;
        }
        return BASE64URL.encodeToString(bytes);
    }
}

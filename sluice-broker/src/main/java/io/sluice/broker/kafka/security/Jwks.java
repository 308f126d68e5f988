package io.sluice.broker.kafka.security;

import java.math.BigInteger;
import java.security.AlgorithmParameters;
import java.security.GeneralSecurityException;
import java.security.InvalidAlgorithmParameterException;
import java.security.InvalidKeyException;
import java.security.KeyFactory;
import java.security.PublicKey;
import java.security.Signature;
import java.security.SignatureException;
import java.security.spec.ECFieldFp;
import java.security.spec.ECGenParameterSpec;
import java.security.spec.ECParameterSpec;
import java.security.spec.ECPoint;
import java.security.spec.ECPublicKeySpec;
import java.security.spec.EllipticCurve;
import java.security.spec.MGF1ParameterSpec;
import java.security.spec.PSSParameterSpec;
import java.security.spec.RSAPublicKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * A JSON Web Key Set (RFC 7517) of public keys that verify signed OAUTHBEARER tokens, and the signature algorithms
 * (RFC 7518) served: RS256/384/512, PS256/384/512, ES256/384/512, verified with the JDK's {@link Signature}.
 *
 * <p>A token's key is chosen as jose4j (Kafka's JOSE library) chooses it: the first key of the set whose {@code kid}
 * is the token's (when the token names one), whose {@code kty} fits the algorithm, whose {@code use} (if any) is
 * {@code sig} and whose {@code key_ops} (if any) include {@code verify}. Two rules are stricter than jose4j's, as RFC
 * 8725 advises: a key that names an {@code alg} verifies only that algorithm, and an EC key only the algorithm of its
 * curve. Keys the set holds that cannot be used (another key type, a malformed or too small key, a point off its
 * curve) are left out and listed in {@link #skipped()}, as jose4j leaves them out; a set without a {@code keys} array
 * is refused. Immutable and thread-safe.
 */
final class Jwks {

    /** The smallest RSA modulus taken, in bits (jose4j's and NIST's floor). */
    static final int MIN_RSA_BITS = 2048;

    /** The signature algorithms served. */
    enum Algorithm {
        RS256("RSA", "SHA256withRSA", null, null),
        RS384("RSA", "SHA384withRSA", null, null),
        RS512("RSA", "SHA512withRSA", null, null),
        PS256("RSA", "RSASSA-PSS", pss("SHA-256", MGF1ParameterSpec.SHA256, 32), null),
        PS384("RSA", "RSASSA-PSS", pss("SHA-384", MGF1ParameterSpec.SHA384, 48), null),
        PS512("RSA", "RSASSA-PSS", pss("SHA-512", MGF1ParameterSpec.SHA512, 64), null),
        ES256("EC", "SHA256withECDSAinP1363Format", null, "P-256"),
        ES384("EC", "SHA384withECDSAinP1363Format", null, "P-384"),
        ES512("EC", "SHA512withECDSAinP1363Format", null, "P-521");

        private final String keyType;
        private final String jcaName;
        private final PSSParameterSpec pss;
        private final String curve;

        Algorithm(String keyType, String jcaName, PSSParameterSpec pss, String curve) {
            this.keyType = keyType;
            this.jcaName = jcaName;
            this.pss = pss;
            this.curve = curve;
        }

        private static PSSParameterSpec pss(String digest, MGF1ParameterSpec mgf, int saltBytes) {
            return new PSSParameterSpec(digest, "MGF1", mgf, saltBytes, PSSParameterSpec.TRAILER_FIELD_BC);
        }

        /** @return the algorithm of a JWS {@code alg} header, or null if it is not served */
        static Algorithm named(String name) {
            for (Algorithm algorithm : values()) {
                if (algorithm.name().equals(name)) {
                    return algorithm;
                }
            }
            return null;
        }

        /** @return true if {@code signature} is this algorithm's signature of {@code input} by {@code key}'s owner */
        boolean verifies(PublicKey key, byte[] input, byte[] signature) {
            if (curve != null && signature.length != 2 * Curve.named(curve).coordinateBytes) {
                return false; // R || S, each of the curve's size (RFC 7518 section 3.4)
            }
            try {
                Signature verifier = Signature.getInstance(jcaName);
                if (pss != null) {
                    verifier.setParameter(pss);
                }
                verifier.initVerify(key);
                verifier.update(input);
                return verifier.verify(signature);
            } catch (SignatureException | InvalidKeyException | InvalidAlgorithmParameterException e) {
                return false;
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("the JDK lacks " + jcaName, e);
            }
        }
    }

    /** The curves of EC keys taken. */
    private enum Curve {
        P256("P-256", "secp256r1", 32), P384("P-384", "secp384r1", 48), P521("P-521", "secp521r1", 66);

        private final String jwkName;
        private final String jcaName;
        private final int coordinateBytes;

        Curve(String jwkName, String jcaName, int coordinateBytes) {
            this.jwkName = jwkName;
            this.jcaName = jcaName;
            this.coordinateBytes = coordinateBytes;
        }

        static Curve named(String jwkName) {
            for (Curve curve : values()) {
                if (curve.jwkName.equals(jwkName)) {
                    return curve;
                }
            }
            return null;
        }

        ECParameterSpec parameters() {
            try {
                AlgorithmParameters parameters = AlgorithmParameters.getInstance("EC");
                parameters.init(new ECGenParameterSpec(jcaName));
                return parameters.getParameterSpec(ECParameterSpec.class);
            } catch (GeneralSecurityException e) {
                throw new IllegalStateException("the JDK lacks the curve " + jcaName, e);
            }
        }
    }

    /**
     * One usable key of the set.
     *
     * @param id its {@code kid}, or null
     * @param type its {@code kty}: RSA or EC
     * @param use its {@code use}, or null
     * @param operations its {@code key_ops}, or null
     * @param algorithm its {@code alg}, or null
     * @param curve its {@code crv} (EC keys), or null
     * @param publicKey the key
     */
    record Key(String id, String type, String use, List<String> operations, String algorithm, String curve,
               PublicKey publicKey) {
    }

    private final List<Key> keys;
    private final List<String> skipped;

    private Jwks(List<Key> keys, List<String> skipped) {
        this.keys = List.copyOf(keys);
        this.skipped = List.copyOf(skipped);
    }

    /**
     * @param json a JSON Web Key Set
     * @throws IllegalArgumentException if it is not JSON, or has no {@code keys} array
     */
    static Jwks parse(String json) {
        Map<String, Object> set;
        try {
            set = Json.parseObject(json);
        } catch (Json.Malformed e) {
            throw new IllegalArgumentException("not a JSON Web Key Set: " + e.getMessage());
        }
        Object members = Jws.claim(set, "keys");
        if (members == null) {
            throw new IllegalArgumentException("The JSON JWKS content does not include the keys member.");
        }
        if (!(members instanceof List<?> items)) {
            throw new IllegalArgumentException("the keys member of the JSON Web Key Set is not an array");
        }
        List<Key> keys = new ArrayList<>();
        List<String> skipped = new ArrayList<>();
        for (int i = 0; i < items.size(); i++) {
            try {
                keys.add(key(items.get(i)));
            } catch (IllegalArgumentException e) {
                skipped.add("key " + i + ": " + e.getMessage());
            }
        }
        return new Jwks(keys, skipped);
    }

    /** @return the usable keys, in the set's order */
    List<Key> keys() {
        return keys;
    }

    /** @return why each key left out was left out */
    List<String> skipped() {
        return skipped;
    }

    /**
     * @param algorithm the token's {@code alg}
     * @param keyId the token's {@code kid}, or null
     * @return the key that verifies the token, or null if none fits
     */
    Key select(Algorithm algorithm, String keyId) {
        for (Key key : keys) {
            if (keyId != null && !keyId.equals(key.id())
                    || !key.type().equals(algorithm.keyType)
                    || key.use() != null && !key.use().equals("sig")
                    || key.operations() != null && !key.operations().contains("verify")
                    || key.algorithm() != null && !key.algorithm().equals(algorithm.name())
                    || algorithm.curve != null && !algorithm.curve.equals(key.curve())) {
                continue;
            }
            return key;
        }
        return null;
    }

    private static Key key(Object member) {
        if (!(member instanceof Map<?, ?> raw)) {
            throw new IllegalArgumentException("not a JSON object");
        }
        @SuppressWarnings("unchecked") // Json makes objects only as Map<String, Object>
        Map<String, Object> jwk = (Map<String, Object>) raw;
        String id = string(jwk, "kid", false);
        String type = string(jwk, "kty", true);
        String use = string(jwk, "use", false);
        String algorithm = string(jwk, "alg", false);
        List<String> operations = strings(jwk, "key_ops");
        String where = id == null ? "" : " (kid " + id + ")";
        try {
            return switch (type) {
                case "RSA" -> new Key(id, type, use, operations, algorithm, null, rsa(jwk));
                case "EC" -> {
                    String curve = string(jwk, "crv", true);
                    yield new Key(id, type, use, operations, algorithm, curve, ec(jwk, curve));
                }
                default -> throw new IllegalArgumentException("key type " + type + " is not served (RSA and EC are)");
            };
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(e.getMessage() + where);
        }
    }

    private static PublicKey rsa(Map<String, Object> jwk) {
        BigInteger modulus = new BigInteger(1, base64(jwk, "n"));
        BigInteger exponent = new BigInteger(1, base64(jwk, "e"));
        if (modulus.bitLength() < MIN_RSA_BITS) {
            throw new IllegalArgumentException("an RSA key of " + modulus.bitLength() + " bits; at least "
                    + MIN_RSA_BITS + " are required");
        }
        if (exponent.signum() == 0) {
            throw new IllegalArgumentException("an RSA key with a zero exponent");
        }
        try {
            return KeyFactory.getInstance("RSA").generatePublic(new RSAPublicKeySpec(modulus, exponent));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("an invalid RSA key: " + e.getMessage());
        }
    }

    private static PublicKey ec(Map<String, Object> jwk, String curveName) {
        Curve curve = Curve.named(curveName);
        if (curve == null) {
            throw new IllegalArgumentException("curve " + curveName + " is not served (P-256, P-384 and P-521 are)");
        }
        byte[] x = base64(jwk, "x");
        byte[] y = base64(jwk, "y");
        if (x.length != curve.coordinateBytes || y.length != curve.coordinateBytes) {
            throw new IllegalArgumentException("coordinates of " + curve.jwkName + " must be " + curve.coordinateBytes
                    + " bytes");
        }
        ECParameterSpec parameters = curve.parameters();
        ECPoint point = new ECPoint(new BigInteger(1, x), new BigInteger(1, y));
        if (!onCurve(parameters.getCurve(), point)) {
            throw new IllegalArgumentException("the point is not on " + curve.jwkName);
        }
        try {
            return KeyFactory.getInstance("EC").generatePublic(new ECPublicKeySpec(point, parameters));
        } catch (GeneralSecurityException e) {
            throw new IllegalArgumentException("an invalid EC key: " + e.getMessage());
        }
    }

    /** @return true if y² = x³ + ax + b (mod p), both coordinates below p */
    private static boolean onCurve(EllipticCurve curve, ECPoint point) {
        BigInteger p = ((ECFieldFp) curve.getField()).getP();
        BigInteger x = point.getAffineX();
        BigInteger y = point.getAffineY();
        if (x.compareTo(p) >= 0 || y.compareTo(p) >= 0) {
            return false;
        }
        BigInteger right = x.pow(3).add(curve.getA().multiply(x)).add(curve.getB()).mod(p);
        return y.modPow(BigInteger.TWO, p).equals(right);
    }

    private static String string(Map<String, Object> jwk, String name, boolean required) {
        Object value = Jws.claim(jwk, name);
        if (value == null && required) {
            throw new IllegalArgumentException("no " + name);
        }
        if (value != null && !(value instanceof String)) {
            throw new IllegalArgumentException(name + " is not a string");
        }
        return (String) value;
    }

    private static List<String> strings(Map<String, Object> jwk, String name) {
        Object value = Jws.claim(jwk, name);
        if (value == null) {
            return null;
        }
        if (!(value instanceof List<?> items) || !items.stream().allMatch(String.class::isInstance)) {
            throw new IllegalArgumentException(name + " is not an array of strings");
        }
        return items.stream().map(String.class::cast).toList();
    }

    private static byte[] base64(Map<String, Object> jwk, String name) {
        String value = string(jwk, name, true);
        byte[] bytes;
        try {
            bytes = Base64.getUrlDecoder().decode(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(name + " is not base64url: " + e.getMessage());
        }
        if (bytes.length == 0) {
            throw new IllegalArgumentException(name + " is empty");
        }
        return bytes;
    }
}

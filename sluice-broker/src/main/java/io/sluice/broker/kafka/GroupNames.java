package io.sluice.broker.kafka;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;

/**
 * Kafka group ids (any non-empty string) as store consumer-group names ({@code [a-zA-Z0-9._-]}, at most 249
 * characters), one to one: letters, digits, '.' and '-' stay as they are, and every other byte of the id's UTF-8
 * (the underscore included) becomes {@code _XX} in upper-case hex. So {@code orders-audit} is stored as itself and
 * {@code my group} as {@code my_20group}.
 */
final class GroupNames {

    static final int MAX_STORE_NAME = 249;

    private GroupNames() {
    }

    /** @return the store name of a group id, or null if it would be longer than the store allows */
    static String toStore(String groupId) {
        StringBuilder name = new StringBuilder(groupId.length());
        for (byte b : groupId.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xFF);
            if (c < 0x80 && (Character.isLetterOrDigit(c) || c == '.' || c == '-')) {
                name.append(c);
            } else {
                name.append('_').append(HexFormat.of().withUpperCase().toHexDigits(b));
            }
        }
        return name.isEmpty() || name.length() > MAX_STORE_NAME || name.toString().equals(".")
                || name.toString().equals("..") ? null : name.toString();
    }

    /** @return the group id a store name stands for, or null if the name is not one {@link #toStore} makes */
    static String fromStore(String name) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(name.length());
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            if (c == '_') {
                if (i + 2 >= name.length()) {
                    return null;
                }
                try {
                    bytes.write(HexFormat.fromHexDigits(name, i + 1, i + 3));
                } catch (IllegalArgumentException e) {
                    return null;
                }
                i += 2;
            } else {
                bytes.write(c);
            }
        }
        String id = new String(bytes.toByteArray(), StandardCharsets.UTF_8);
        return name.equals(toStore(id)) ? id : null;
    }
}

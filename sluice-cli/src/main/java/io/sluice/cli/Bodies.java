package io.sluice.cli;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

/**
 * How a message body is printed: as text when it is valid UTF-8, else base64, and in JSON with the encoding
 * named, so that any body (binary included) comes out as valid JSON and round-trips byte for byte.
 */
final class Bodies {

    private Bodies() {
    }

    /** @return the body as text if it is valid UTF-8, else null */
    static String utf8OrNull(byte[] body) {
        try {
            return StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(body)).toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** Adds {@code bodyEncoding} ("utf-8" or "base64") and {@code body} to a JSON object. */
    static Json put(Json json, byte[] body) {
        String text = utf8OrNull(body);
        return text != null ? json.put("bodyEncoding", "utf-8").put("body", text)
                : json.put("bodyEncoding", "base64").put("body", Base64.getEncoder().encodeToString(body));
    }

    /** @return the body for a tab-separated line: its text, or {@code base64:<encoded>} if it is not UTF-8 */
    static String forLine(byte[] body) {
        String text = utf8OrNull(body);
        return text != null ? text : "base64:" + Base64.getEncoder().encodeToString(body);
    }
}

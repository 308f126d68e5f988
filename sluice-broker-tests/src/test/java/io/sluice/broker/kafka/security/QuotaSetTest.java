package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;

/** The quota set and its stored text: round trips, one text per set, and every kind of damage refused. */
class QuotaSetTest {

    private static QuotaSet sample() {
        Map<QuotaEntity, Map<String, Double>> values = new LinkedHashMap<>();
        values.put(QuotaEntity.ip("10.0.0.1"), Map.of(QuotaSet.CONNECTION_CREATION_RATE, 20.0));
        values.put(QuotaEntity.userClientId("alice", null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 1048576.0,
                QuotaSet.REQUEST_PERCENTAGE, 12.5));
        values.put(QuotaEntity.user(null), Map.of(QuotaSet.CONSUMER_BYTE_RATE, 1000.0));
        values.put(QuotaEntity.clientId("tab\there\nand\\<default>"), Map.of(QuotaSet.CONTROLLER_MUTATION_RATE,
                Double.NaN));
        values.put(QuotaEntity.clientId("<default>"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 5.0));
        values.put(QuotaEntity.ip(null), Map.of(QuotaSet.CONNECTION_CREATION_RATE, 3.0));
        return QuotaSet.of(values);
    }

    /** Rewrites the trailer of a text whose value lines were edited, so that only the edit is wrong. */
    private static String resealed(String text) {
        String body = text.substring(0, text.lastIndexOf("end "));
        int values = body.split("\n").length - 1;
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.UTF_8));
        return body + "end " + values + " crc32c=" + String.format("%08x", crc.getValue()) + "\n";
    }

    @Test
    void readsBackWhatItWrites() {
        QuotaSet set = sample();
        String text = set.encode();
        assertThat(QuotaSet.decode(text)).isEqualTo(set);
        assertThat(QuotaSet.decode(text).encode()).isEqualTo(text);
        assertThat(set.size()).isEqualTo(7);
        assertThat(set.quota(QuotaEntity.userClientId("alice", null), QuotaSet.REQUEST_PERCENTAGE)).isEqualTo(12.5);
        assertThat(set.quota(QuotaEntity.clientId("<default>"), QuotaSet.PRODUCER_BYTE_RATE)).isEqualTo(5.0);
        assertThat(set.quota(QuotaEntity.clientId(null), QuotaSet.PRODUCER_BYTE_RATE)).isNull();
    }

    @Test
    void writesOneTextPerSetInEntityThenKeyOrder() {
        String body = "sluice-client-quotas 1\n"
                + "\t\t<default>\tconnection_creation_rate\t3.0\n"
                + "\t\t=10.0.0.1\tconnection_creation_rate\t20.0\n"
                + "\t=<default>\t\tproducer_byte_rate\t5.0\n"
                + "\t=tab\\there\\nand\\\\<default>\t\tcontroller_mutation_rate\tNaN\n"
                + "<default>\t\t\tconsumer_byte_rate\t1000.0\n"
                + "=alice\t<default>\t\tproducer_byte_rate\t1048576.0\n"
                + "=alice\t<default>\t\trequest_percentage\t12.5\n";
        assertThat(sample().encode()).isEqualTo(body + String.format("end 7 crc32c=%08x\n", crc(body)));
    }

    @Test
    void anEmptyRecordIsTheEmptySet() {
        assertThat(QuotaSet.ofRecord("")).isSameAs(QuotaSet.empty());
        assertThat(QuotaSet.ofRecord(null)).isSameAs(QuotaSet.empty());
        assertThat(QuotaSet.decode(QuotaSet.empty().encode())).isEqualTo(QuotaSet.empty());
    }

    @Test
    void aChangeThatChangesNothingIsTheSameSet() {
        QuotaSet set = sample();
        assertThat(set.with(Map.of(QuotaEntity.user(null), Map.of(QuotaSet.CONSUMER_BYTE_RATE, 1000.0))))
                .isSameAs(set);
        Map<String, Double> removal = new LinkedHashMap<>();
        removal.put(QuotaSet.PRODUCER_BYTE_RATE, null);
        assertThat(set.with(Map.of(QuotaEntity.user("nobody"), removal))).isSameAs(set);
        QuotaSet without = set.with(Map.of(QuotaEntity.clientId("<default>"), removal));
        assertThat(without.entities()).doesNotContainKey(QuotaEntity.clientId("<default>"));
        assertThat(without.size()).isEqualTo(6);
    }

    @Test
    void refusesDamage() {
        String text = sample().encode();
        assertThatThrownBy(() -> QuotaSet.decode(text.substring(0, text.length() - 1)))
                .isInstanceOf(CorruptQuotaSetException.class).hasMessageContaining("cut short");
        assertThatThrownBy(() -> QuotaSet.decode("sluice-acls 1\n" + text.substring(text.indexOf('\n') + 1)))
                .hasMessageContaining("line 1: not a quota set");
        assertThatThrownBy(() -> QuotaSet.decode(text.replace("sluice-client-quotas 1", "sluice-client-quotas 2")))
                .hasMessageContaining("version 2, and this build reads version 1 only");
        assertThatThrownBy(() -> QuotaSet.decode(text.replace("20.0", "21.0")))
                .hasMessageContaining("line 9: checksum");
        assertThatThrownBy(() -> QuotaSet.decode(text.substring(0, text.lastIndexOf("end "))))
                .hasMessageContaining("no trailer line");
        String recounted = text.replaceFirst("end 7 ", "end 8 ");
        assertThatThrownBy(() -> QuotaSet.decode(recounted)).hasMessageContaining("the trailer counts 8 values");
    }

    @Test
    void refusesLinesKafkaCouldNotHold() {
        String text = sample().encode();
        assertThat(QuotaSet.decode(resealed(text))).isEqualTo(sample());
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t20.0\n", "\t20\n"))))
                .isInstanceOf(CorruptQuotaSetException.class)
                .hasMessageContaining("line 3: value \"20\" is not written as this build writes 20.0");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t20.0\n", "\ttwenty\n"))))
                .hasMessageContaining("line 3: value \"twenty\" is not a number");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("=10.0.0.1\tconnection_creation_rate",
                "=10.0.0.1\tproducer_byte_rate"))))
                .hasMessageContaining("line 3: key \"producer_byte_rate\" is not a quota of QuotaEntity(ip=10.0.0.1)");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t\t=10.0.0.1\t", "=bob\t\t=10.0.0.1\t"))))
                .hasMessageContaining("line 3: Invalid quota entity combination");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t\t=10.0.0.1\t", "\t\t10.0.0.1\t"))))
                .hasMessageContaining("line 3: an entity component is neither empty, <default> nor =<name>");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t\t=10.0.0.1\t", "\t\t=\t"))))
                .hasMessageContaining("line 3: an empty entity name");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t\t=10.0.0.1\t", "\t\t=\\q\t"))))
                .hasMessageContaining("line 3: unknown escape \\q");
        assertThatThrownBy(() -> QuotaSet.decode(resealed(text.replace("\t20.0\n", "\t20.0\textra\n"))))
                .hasMessageContaining("line 3: 6 fields, not 5");
        String[] lines = text.split("\n");
        String swapped = lines[0] + "\n" + lines[2] + "\n" + lines[1] + "\n" + "end 0\n";
        assertThatThrownBy(() -> QuotaSet.decode(resealed(swapped)))
                .hasMessageContaining("line 3: values out of order or repeated");
        String repeated = lines[0] + "\n" + lines[1] + "\n" + lines[1] + "\n" + "end 0\n";
        assertThatThrownBy(() -> QuotaSet.decode(resealed(repeated)))
                .hasMessageContaining("line 3: values out of order or repeated");
    }

    private static long crc(String text) {
        CRC32C crc = new CRC32C();
        crc.update(text.getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }
}

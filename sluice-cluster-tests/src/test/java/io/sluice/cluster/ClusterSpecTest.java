package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class ClusterSpecTest {

    @Test
    void parsesBrokersInOrderAndPrintsThemBack() {
        String text = "1@127.0.0.1:9092/9192, 2@127.0.0.1:9093/9193,3@localhost:9094/9194";
        ClusterSpec spec = ClusterSpec.parse(text);
        assertThat(spec.nodes()).containsExactly(new ClusterSpec.Node(1, "127.0.0.1", 9092, 9192),
                new ClusterSpec.Node(2, "127.0.0.1", 9093, 9193), new ClusterSpec.Node(3, "localhost", 9094, 9194));
        assertThat(spec.node(2).raftAddress()).isEqualTo("127.0.0.1:9193");
        assertThat(ClusterSpec.parse(spec.toString())).isEqualTo(spec);
        assertThatThrownBy(() -> spec.node(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("node id 4 is not in the cluster ([1, 2, 3])");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "''|the cluster string is empty",
        "1@127.0.0.1:9092|expected id@host:clientPort/raftPort",
        "1@127.0.0.1:9092/|expected id@host:clientPort/raftPort",
        "@127.0.0.1:9092/9192|expected id@host:clientPort/raftPort",
        "1@:9092/9192|expected id@host:clientPort/raftPort",
        "x@127.0.0.1:9092/9192|the node id 'x' is not a number",
        "0@127.0.0.1:9092/9192|the node id 0 is not in 1..",
        "1@127.0.0.1:70000/9192|the client port 70000 is not in 1..65535",
        "1@127.0.0.1:9092/0|the Raft port 0 is not in 1..65535",
        "1@127.0.0.1:9092/99999999999999|the Raft port 99999999999999 is not in 1..65535",
        "1@127.0.0.1:9092/9192,1@127.0.0.1:9093/9193|node id 1 is given twice",
        "1@127.0.0.1:9092/9192,2@127.0.0.1:9192/9193|address 127.0.0.1:9192 is given twice",
        "1@127.0.0.1:9092/9092|uses it for both ports",
        "1@127.0.0.1:9092/9192,|'' in the cluster string",
    })
    void refusesWhatIsNotAClusterNamingTheElementAtFault(String text, String message) {
        assertThatThrownBy(() -> ClusterSpec.parse(text)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(message);
    }

    @Test
    void refusesMoreBrokersThanItTakes() {
        StringBuilder text = new StringBuilder();
        for (int i = 1; i <= ClusterSpec.MAX_NODES + 1; i++) {
            text.append(i == 1 ? "" : ",").append(i).append("@127.0.0.1:").append(10_000 + i).append('/')
                    .append(20_000 + i);
        }
        assertThatThrownBy(() -> ClusterSpec.parse(text.toString())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most " + ClusterSpec.MAX_NODES);
    }
}

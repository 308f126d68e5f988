package io.sluice.cluster;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The static set of brokers of a cluster, as {@code --cluster} gives it: {@code id@host:clientPort/raftPort}, comma
 * separated, e.g. {@code 1@127.0.0.1:9092/9192,2@127.0.0.1:9093/9193,3@127.0.0.1:9094/9194}. Each broker serves
 * Kafka clients on its client port and speaks Raft to the others on its Raft port.
 *
 * @param nodes the brokers, in the order given
 */
public record ClusterSpec(List<Node> nodes) {

    /** The most brokers a cluster string may name. */
    public static final int MAX_NODES = 64;

    /**
     * One broker.
     *
     * @param id its node id, 1 or more, unique in the cluster
     * @param host the address both its ports listen on
     * @param clientPort the Kafka client port
     * @param raftPort the Raft port
     */
    public record Node(int id, String host, int clientPort, int raftPort) {

        /** @return {@code host:raftPort} */
        public String raftAddress() {
            return host + ":" + raftPort;
        }

        @Override
        public String toString() {
            return id + "@" + host + ":" + clientPort + "/" + raftPort;
        }
    }

    public ClusterSpec {
        nodes = List.copyOf(nodes);
    }

    /**
     * Parses and checks a cluster string.
     *
     * @throws IllegalArgumentException naming the element at fault: a malformed element, an id that is not a
     *     positive number, a port out of range, a node id or an address given twice, or too many nodes
     */
    public static ClusterSpec parse(String text) {
        Objects.requireNonNull(text, "cluster");
        if (text.isBlank()) {
            throw new IllegalArgumentException("the cluster string is empty; expected id@host:clientPort/raftPort,...");
        }
        String[] elements = text.split(",", -1);
        if (elements.length > MAX_NODES) {
            throw new IllegalArgumentException("the cluster string names " + elements.length + " brokers; at most "
                    + MAX_NODES);
        }
        List<Node> nodes = new ArrayList<>();
        Map<Integer, Node> byId = new HashMap<>();
        Map<String, Node> byAddress = new HashMap<>();
        for (String element : elements) {
            Node node = parseNode(element.trim());
            Node same = byId.putIfAbsent(node.id(), node);
            if (same != null) {
                throw new IllegalArgumentException("node id " + node.id() + " is given twice in the cluster string ("
                        + same + " and " + node + ")");
            }
            for (int port : new int[] {node.clientPort(), node.raftPort()}) {
                Node taken = byAddress.putIfAbsent(node.host() + ":" + port, node);
                if (taken != null) {
                    throw new IllegalArgumentException("address " + node.host() + ":" + port + " is given twice in the"
                            + " cluster string (" + taken + (taken == node ? " uses it for both ports" : " and " + node)
                            + ")");
                }
            }
            nodes.add(node);
        }
        return new ClusterSpec(nodes);
    }

    private static Node parseNode(String element) {
        String expected = "expected id@host:clientPort/raftPort, e.g. 1@127.0.0.1:9092/9192";
        int at = element.indexOf('@');
        int slash = element.lastIndexOf('/');
        int colon = slash < 0 ? -1 : element.lastIndexOf(':', slash);
        if (at <= 0 || colon <= at + 1 || slash <= colon + 1 || slash == element.length() - 1) {
            throw new IllegalArgumentException("'" + element + "' in the cluster string: " + expected);
        }
        int id = number(element, element.substring(0, at), "node id", 1, Integer.MAX_VALUE);
        String host = element.substring(at + 1, colon);
        if (host.isBlank() || host.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException("'" + element + "' in the cluster string: no host; " + expected);
        }
        int clientPort = number(element, element.substring(colon + 1, slash), "client port", 1, 65_535);
        int raftPort = number(element, element.substring(slash + 1), "Raft port", 1, 65_535);
        return new Node(id, host, clientPort, raftPort);
    }

    private static int number(String element, String text, String what, int min, int max) {
        long value;
        try {
            value = text.length() > 10 ? Long.MAX_VALUE : Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + element + "' in the cluster string: the " + what + " '" + text
                    + "' is not a number");
        }
        if (value < min || value > max) {
            throw new IllegalArgumentException("'" + element + "' in the cluster string: the " + what + " " + text
                    + " is not in " + min + ".." + max);
        }
        return (int) value;
    }

    /**
     * @return the node with {@code id}
     * @throws IllegalArgumentException if the cluster has none, naming the ids it has
     */
    public Node node(int id) {
        for (Node node : nodes) {
            if (node.id() == id) {
                return node;
            }
        }
        throw new IllegalArgumentException("node id " + id + " is not in the cluster (" + ids() + ")");
    }

    private List<Integer> ids() {
        return nodes.stream().map(Node::id).toList();
    }

    /** @return the string {@link #parse} reads back to this spec */
    @Override
    public String toString() {
        return String.join(",", nodes.stream().map(Node::toString).toList());
    }
}

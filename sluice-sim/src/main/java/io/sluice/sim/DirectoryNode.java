package io.sluice.sim;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A directory of a {@link SimFileSystem}: volatile entries, durable entries, and the name changes made since the
 * last sync, in order (a journaling file system commits them in order, so a power cut keeps a prefix of them). Used
 * under the file system's lock.
 */
final class DirectoryNode extends SimNode {
    final TreeMap<String, SimNode> entries = new TreeMap<>();
    final TreeMap<String, SimNode> durable = new TreeMap<>();
    final List<NameChange> log = new ArrayList<>();

    void change(NameChange change) {
        change.applyTo(entries);
        log.add(change);
    }

    /** A directory sync: the volatile entries become the durable ones. */
    void sync() {
        durable.clear();
        durable.putAll(entries);
        log.clear();
    }

    /** One logged name operation of a directory. */
    record NameChange(Kind kind, String name, SimNode node, String from) {
        enum Kind { CREATE, DELETE, RENAME }

        void applyTo(Map<String, SimNode> entries) {
            switch (kind) {
                case CREATE -> entries.put(name, node);
                case DELETE -> entries.remove(name);
                case RENAME -> {
                    if (entries.get(from) == node) {
                        entries.remove(from);
                        entries.put(name, node);
                    }
                }
            }
        }
    }
}

package io.sluice.store.internal.recovery;

import io.sluice.store.TopicLayout;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Where a store's logs live (docs/format.md, "Directory"): the shared log in the store's own directory, a TOPIC
 * topic's log in {@code logs/<topic>/}, a QUEUE or BATCHES topic's in {@code logs/<topic>/<queueId>/}, each named
 * in the checkpoint ("" for the shared log, {@code <topic>} or {@code <topic>/<queueId>}). Stateless.
 */
public final class LogDirectories {

    /** A compacted segment's copy being written: {@code log/<base>.cleaned} (docs/format.md, "Compaction"). */
    public static final String CLEANED_SUFFIX = ".cleaned";
    /** Present while a compacted segment's index entries may not be forced: {@code log/<base>.reindex}. */
    public static final String REINDEX_SUFFIX = ".reindex";

    /** The directory under the store that holds the logs of topics with logs of their own. */
    public static final String OWN_LOGS_DIRECTORY = "logs";
    /** The shared log's name in the checkpoint. */
    public static final String SHARED_LOG = "";

    private LogDirectories() {
    }

    /**
     * A log's directory, and what its records are.
     *
     * @param directory the directory holding its {@code log/}, {@code index/} and {@code keys/}
     * @param format a BATCHES topic's queue's batch format, else store records
     */
    public record LogRoot(Path directory, LogFormat format) {
    }

    /**
     * @param root the store's directory
     * @param registry the topics with logs of their own
     * @return every log's directory by log name, the shared log first; logs whose directory does not exist yet are
     *     left out
     * @throws IOException if a directory cannot be listed
     */
    public static Map<String, LogRoot> of(FileIO io, Path root, TopicRegistry registry) throws IOException {
        Map<String, LogRoot> logs = new LinkedHashMap<>();
        logs.put(SHARED_LOG, new LogRoot(root, LogFormat.records()));
        for (Map.Entry<String, TopicLayout> topic : registry.ownLogs().entrySet()) {
            Path topicDirectory = root.resolve(OWN_LOGS_DIRECTORY).resolve(topic.getKey());
            if (!io.isDirectory(topicDirectory)) {
                continue;
            }
            if (topic.getValue() == TopicLayout.TOPIC) {
                logs.put(topic.getKey(), new LogRoot(topicDirectory, LogFormat.records()));
                continue;
            }
            for (Path queue : io.list(topicDirectory)) {
                String name = queue.getFileName().toString();
                if (io.isDirectory(queue) && !name.isEmpty() && name.length() <= 10
                        && name.chars().allMatch(Character::isDigit)) {
                    int queueId = Integer.parseInt(name);
                    logs.put(topic.getKey() + "/" + queueId, new LogRoot(queue, format(topic.getKey(),
                            topic.getValue(), queueId)));
                }
            }
        }
        return logs;
    }

    /** @return the format of the log holding a queue of a topic in {@code layout} */
    public static LogFormat format(String topic, TopicLayout layout, int queueId) {
        return layout == TopicLayout.BATCHES ? LogFormat.batches(topic, queueId) : LogFormat.records();
    }

    /** @return the log's name in the checkpoint: the topic's for a TOPIC log, {@code <topic>/<queueId>} otherwise */
    public static String name(String topic, TopicLayout layout, int queueId) {
        return layout == TopicLayout.TOPIC ? topic : topic + "/" + queueId;
    }

    /** @return the directory of a topic's log of its own under the store's {@code root} */
    public static Path directory(Path root, String topic, TopicLayout layout, int queueId) {
        Path topicDirectory = root.resolve(OWN_LOGS_DIRECTORY).resolve(topic);
        return layout == TopicLayout.TOPIC ? topicDirectory : topicDirectory.resolve(Integer.toString(queueId));
    }
}

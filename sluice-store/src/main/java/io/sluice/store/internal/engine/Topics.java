package io.sluice.store.internal.engine;

import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.recovery.TopicRegistry;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creating, declaring and deleting topics: every change of the topic registry, which decides where a topic's data
 * is (docs/store.md, "Layouts"). A change is durable before the call returns; a registry save that failed after its
 * rename leaves the store unable to tell which registry a restart would read, so every log stops writing.
 *
 * <p>Thread-safe: changes hold the log-creation lock.
 */
public final class Topics {

    private static final Logger LOG = LoggerFactory.getLogger(Topics.class);

    private final Logs logs;
    private final TopicRegistry registry;
    private final StoreConfig config;
    private final Path root;

    Topics(Logs logs) {
        this.logs = logs;
        this.registry = logs.registry();
        this.config = logs.config();
        this.root = logs.root();
    }

    /** Creates a topic in a layout ({@code Store.createTopic(String, TopicLayout)}). */
    public void create(String topic, TopicLayout layout) {
        Names.checkTopic(topic);
        Objects.requireNonNull(layout, "layout");
        logs.checkWritable();
        synchronized (logs.ownLock()) {
            TopicLayout existing = registry.layout(topic);
            if (existing != TopicLayout.SHARED) {
                if (existing != layout) {
                    throw new IllegalArgumentException("topic " + topic + " already exists with layout " + existing);
                }
                return;
            }
            if (layout != TopicLayout.SHARED) {
                register(topic, layout, registry.queues(topic), registry.configs(topic));
            }
        }
    }

    /**
     * Creates a topic with a declared number of queues ({@code Store.createTopic(String, TopicLayout, int)}).
     *
     * @return true if created; false if the topic already had a declared queue count (nothing changes)
     */
    public boolean create(String topic, TopicLayout layout, int queueCount) {
        return create(topic, layout, queueCount, Map.of());
    }

    /**
     * Creates a topic with a declared number of queues and its configs ({@code Store.createTopic(String, TopicLayout,
     * int, Map)}), in one registry save.
     *
     * @return true if created; false if the topic already had a declared queue count (nothing changes)
     */
    public boolean create(String topic, TopicLayout layout, int queueCount, Map<String, String> configs) {
        return create(topic, layout, queueCount, configs, null);
    }

    /**
     * Creates a topic with a declared number of queues, its configs and its id ({@code Store.createTopic(String,
     * TopicLayout, int, Map, UUID)}), in one registry save.
     *
     * @param id the topic's id, or null for none
     * @return true if created; false if the topic already had a declared queue count (nothing changes)
     */
    public boolean create(String topic, TopicLayout layout, int queueCount, Map<String, String> configs, UUID id) {
        Names.checkTopic(topic);
        Objects.requireNonNull(configs, "configs");
        Objects.requireNonNull(layout, "layout");
        checkQueueCount(queueCount);
        logs.checkWritable();
        synchronized (logs.ownLock()) {
            if (registry.queues(topic) > 0) {
                return false;
            }
            TopicLayout existing = registry.layout(topic);
            if (existing != TopicLayout.SHARED && existing != layout) {
                throw new IllegalArgumentException("topic " + topic + " already exists with layout " + existing);
            }
            for (int queue : logs.queues(topic)) {
                if (queue >= queueCount) {
                    throw new IllegalArgumentException("topic " + topic + " holds messages in queue " + queue
                            + ", so it cannot be declared with " + queueCount + " queues");
                }
            }
            register(topic, new TopicRegistry.Entry(layout, queueCount, configs,
                    id != null ? id : registry.id(topic)));
            return true;
        }
    }

    /**
     * Gives declared topics without an id the ids given ({@code Store.setTopicIds}), in one registry save.
     *
     * @throws IllegalArgumentException if a topic has no declared queue count, has another id, or an id is another
     *     topic's or given twice (nothing changes then)
     */
    public void setIds(Map<String, UUID> ids) {
        Objects.requireNonNull(ids, "ids");
        ids.forEach((topic, id) -> {
            Names.checkTopic(topic);
            Objects.requireNonNull(id, "id");
        });
        logs.checkWritable();
        synchronized (logs.ownLock()) {
            for (String topic : ids.keySet()) {
                if (registry.queues(topic) == 0) {
                    throw new IllegalArgumentException("topic " + topic + " was not created with a queue count, so it"
                            + " has no id");
                }
            }
            try {
                registry.identify(config.fileIO(), root, ids);
            } catch (TopicRegistry.UncertainSaveException e) {
                throw stopWritingAfter(e, "cannot record the ids of topics " + ids.keySet());
            } catch (IOException e) {
                throw new StoreException("cannot record the ids of topics " + ids.keySet() + ": " + e.getMessage(), e);
            }
        }
    }

    /** @return the topic's id, or null for a topic without one, or unknown */
    public UUID id(String topic) {
        Names.checkTopic(topic);
        return registry.id(topic);
    }

    /** @return the topic whose id this is, or null */
    public String topicOf(UUID id) {
        return registry.topicOf(id);
    }

    /** @return the id of every topic that has one, by topic, sorted */
    public Map<String, UUID> ids() {
        logs.checkOpen();
        return registry.ids();
    }

    /** Raises a topic's declared queue count ({@code Store.increaseQueueCount}). */
    public void increaseQueueCount(String topic, int queueCount) {
        Names.checkTopic(topic);
        checkQueueCount(queueCount);
        logs.checkWritable();
        synchronized (logs.ownLock()) {
            int current = registry.queues(topic);
            if (current == 0) {
                throw new IllegalArgumentException("topic " + topic + " was not created with a queue count");
            }
            if (queueCount <= current) {
                throw new IllegalArgumentException("topic " + topic + " has " + current + " queues; a new count must be"
                        + " larger, was " + queueCount);
            }
            register(topic, registry.layout(topic), queueCount, registry.configs(topic));
        }
    }

    /** Replaces a declared topic's configs ({@code Store.setTopicConfigs}). */
    public void setConfigs(String topic, Map<String, String> configs) {
        Names.checkTopic(topic);
        Objects.requireNonNull(configs, "configs");
        logs.checkWritable();
        synchronized (logs.ownLock()) {
            TopicRegistry.Entry entry = registry.entry(topic);
            if (entry.queues() == 0) {
                throw new IllegalArgumentException("topic " + topic + " was not created with a queue count");
            }
            if (!entry.configs().equals(new java.util.TreeMap<>(configs))) {
                register(topic, entry.layout(), entry.queues(), configs);
            }
        }
    }

    /** @return the topic's configs, sorted by name; empty for a topic with none, or unknown */
    public Map<String, String> configs(String topic) {
        Names.checkTopic(topic);
        return registry.configs(topic);
    }

    /** @return the topic's declared queue count; 0 for a topic created without one, or unknown */
    public int queueCount(String topic) {
        Names.checkTopic(topic);
        return registry.queues(topic);
    }

    /** @return every topic with a declared queue count, and that count, sorted by name */
    public Map<String, Integer> declared() {
        logs.checkOpen();
        return registry.declared();
    }

    /** @return the topic's layout (SHARED for a topic never created otherwise) */
    public TopicLayout layout(String topic) {
        Names.checkTopic(topic);
        return registry.layout(topic);
    }

    private void checkQueueCount(int queueCount) {
        if (queueCount < 1 || queueCount > config.maxQueuesPerTopic()) {
            throw new IllegalArgumentException("a queue count must be between 1 and maxQueuesPerTopic ("
                    + config.maxQueuesPerTopic() + "), was " + queueCount);
        }
    }

    /** Saves the registry with the topic's entry, keeping the id it has; called under the log-creation lock. */
    private void register(String topic, TopicLayout layout, int queueCount, Map<String, String> configs) {
        register(topic, new TopicRegistry.Entry(layout, queueCount, configs, registry.id(topic)));
    }

    /** Saves the registry with the topic's entry; called under the log-creation lock. */
    private void register(String topic, TopicRegistry.Entry entry) {
        TopicLayout layout = entry.layout();
        try {
            boolean created;
            if (layout != TopicLayout.SHARED && registry.layout(topic) == TopicLayout.SHARED) {
                // Files a deletion could not remove must not come back as the new topic's messages.
                logs.removeFilesOf(topic);
                // Nor may a checkpoint entry of the deleted logs speak for the new ones, nor their log starts.
                logs.checkpoints().forget(topic);
                logs.logStarts().forget(config.fileIO(), root, topic);
                // A log of its own only for a topic the shared log holds nothing of, checked and recorded under the
                // shared log's append lock so that no append slips in between.
                created = logs.shared().ifTopicAbsent(topic, () -> registry.register(config.fileIO(), root, topic,
                        entry));
            } else {
                registry.register(config.fileIO(), root, topic, entry);
                created = true;
            }
            if (!created) {
                throw new IllegalArgumentException("topic " + topic + " already exists with layout SHARED");
            }
        } catch (TopicRegistry.UncertainSaveException e) {
            throw stopWritingAfter(e, "cannot record topic " + topic);
        } catch (IOException e) {
            throw new StoreException("cannot record topic " + topic + ": " + e.getMessage(), e);
        }
    }

    /**
     * The registry file may or may not hold the change now: appending anywhere could strand messages where the
     * next open does not look. Every log stops writing.
     *
     * @return the exception to throw
     */
    private StoreException stopWritingAfter(TopicRegistry.UncertainSaveException e, String what) {
        logs.stopWriting("saving the topic registry failed after its rename: " + e.getMessage());
        return new StoreException(what + ": " + e.getMessage() + "; the store is now read-only", e);
    }

    /**
     * Deletes a topic that has a log of its own ({@code Store.deleteTopic}).
     *
     * @return false if there is no such topic
     */
    public boolean delete(String topic) {
        Names.checkTopic(topic);
        logs.checkWritable();
        logs.setLock().writeLock().lock();
        try {
            synchronized (logs.ownLock()) {
                logs.checkWritable();
                TopicRegistry.Entry entry = registry.entry(topic);
                if (entry.layout() == TopicLayout.SHARED) {
                    if (entry.queues() == 0 && !logs.shared().topics().contains(topic)) {
                        return false;
                    }
                    throw new IllegalArgumentException("topic " + topic + " lives in the shared log, between other"
                            + " topics' messages: only a topic with a log of its own (TOPIC or QUEUE layout) can be"
                            + " deleted; its messages leave with retention");
                }
                deleteOwn(topic);
                return true;
            }
        } finally {
            logs.setLock().writeLock().unlock();
        }
    }

    /**
     * The registry first: its save is the deletion's commit point, and a failure before it changes nothing. Then the
     * logs close, the positions on the topic go, a checkpoint without the logs is written, and the topic's directory
     * is deleted. A crash after the commit point leaves the directory: the next open removes it and the positions on
     * its topic.
     */
    private void deleteOwn(String topic) {
        FileIO io = config.fileIO();
        int count = logs.namesOf(topic).size();
        try {
            registry.unregister(io, root, topic);
        } catch (TopicRegistry.UncertainSaveException e) {
            throw stopWritingAfter(e, "cannot delete topic " + topic);
        } catch (IOException e) {
            throw new StoreException("cannot delete topic " + topic + ": " + e.getMessage(), e);
        }
        List<Throwable> errors = new ArrayList<>();
        for (LogStore log : logs.removeTopic(topic)) {
            try {
                log.closeDeleted();
            } catch (RuntimeException e) {
                errors.add(e);
            }
        }
        try {
            logs.consumers().removeTopic(topic);
            logs.logStarts().forget(io, root, topic);
            // Positions and checkpoint durable before the files go: until then the directory marks the deletion
            // as unfinished for the next open.
            logs.checkpoints().writeCurrent();
            logs.removeFilesOf(topic);
        } catch (IOException | RuntimeException e) {
            errors.add(e);
        }
        if (!errors.isEmpty()) {
            StoreException failure = new StoreException("topic " + topic + " is deleted, but removing its files"
                    + " or positions failed; the next open removes them");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
        LOG.info("deleted topic {} ({} logs)", topic, count);
    }
}

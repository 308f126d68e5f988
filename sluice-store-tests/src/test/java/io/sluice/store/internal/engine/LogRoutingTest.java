package io.sluice.store.internal.engine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.NoLeaks;
import io.sluice.store.TestStores;
import io.sluice.store.TopicDeletedException;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/** Which log an append goes to, where a race with a topic's deletion could send it to the wrong one. */
@ExtendWith(NoLeaks.class)
class LogRoutingTest {

    @TempDir
    Path dir;

    /**
     * A TOPIC topic whose one log the topic created again may already have (an append to queue 0 created it). The
     * window (between an append's registry read and its log lookup) is too short to hit from outside, so the lookup
     * is called as such an append makes it, with the layout it read before the deletion: it must refuse queue 3 of a
     * topic that now has 2 queues, not hand out the new log.
     */
    @Test
    void anAppendThatReadTheDeletedTopicsCountLandsInNoQueueBeyondTheNewOne() {
        try (StoreEngine engine = StoreEngine.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC)
                .maxQueuesPerTopic(64).build(), false)) {
            engine.topics().create("t", TopicLayout.TOPIC, 4);
            engine.topics().delete("t");
            engine.topics().create("t", TopicLayout.TOPIC, 2);
            engine.appends().append("t", 0, message("again")).join(); // the new log exists
            assertThatThrownBy(() -> engine.logs().use("t", TopicLayout.TOPIC, 3, true))
                    .isInstanceOf(TopicDeletedException.class);
            assertThat(engine.appends().append("t", 1, message("fine")).join().firstQueueOffset()).isZero();
        }
    }

    private static Message message(String text) {
        return Message.of(text.getBytes(StandardCharsets.UTF_8));
    }
}

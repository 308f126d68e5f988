package io.sluice.store.internal.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The lifetime scheme: readers hold, the owner retires, the last release frees, once. */
class RefCountedTest {

    private static class Counted extends RefCounted {
        final AtomicInteger frees = new AtomicInteger();

        Counted() {
        }

        Counted(boolean handedOver) {
            if (handedOver) {
                handOver();
            }
        }

        @Override
        protected void free() {
            frees.incrementAndGet();
        }
    }

    @Test
    void aRetiredObjectTakesNoNewReaderAndIsFreedWhenTheLastOneLetsGo() {
        Counted object = new Counted();
        assertThat(object.tryRetain()).isTrue();

        object.retire();

        assertThat(object.tryRetain()).as("a reader arriving after the retirement").isFalse();
        assertThat(object.frees).hasValue(0);
        object.release();
        assertThat(object.frees).hasValue(1);
        assertThat(object.isLive()).isFalse();
    }

    @Test
    void retireIfUnusedFreesOnlyWithoutReaders() {
        Counted held = new Counted();
        assertThat(held.tryRetain()).isTrue();
        assertThat(held.retireIfUnused()).isFalse();
        assertThat(held.isRetired()).isFalse();
        held.release();
        assertThat(held.retireIfUnused()).isTrue();
        assertThat(held.frees).hasValue(1);
        assertThat(held.tryRetain()).isFalse();
    }

    @Test
    void aReleaseTooManyIsAnErrorAndFreesNothing() {
        Counted object = new Counted();
        assertThat(object.tryRetain()).isTrue();
        object.release();
        assertThatThrownBy(object::release).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("released more often than retained");
        assertThat(object.frees).as("the owner never retired it").hasValue(0);
    }

    @Test
    void anObjectHandedOverAtBirthIsFreedByItsReadersOneRelease() {
        Counted lent = new Counted(true);
        assertThat(lent.tryRetain()).isFalse();
        lent.release();
        assertThat(lent.frees).hasValue(1);
    }
}

package io.sluice.bench;

import io.sluice.testsupport.MainCodeSleeps;
import org.junit.jupiter.api.Test;

/** No main code sleeps but where {@link MainCodeSleeps} allows: the rule run with this module's classes too. */
class MainCodeSleepsTest {

    @Test
    void mainCodeSleepsOnlyWhereAllowed() {
        MainCodeSleeps.check(MainCodeSleeps.mainClasses());
    }
}

package io.sluice.cluster;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.fields;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import io.sluice.testsupport.KafkaWire;
import io.sluice.testsupport.MainCodeSleeps;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.server.RaftServer;
import org.junit.jupiter.api.Test;

/** The cluster's layering and the rules its main code keeps, checked on the compiled classes (docs/cluster.md). */
class ClusterLayeringTest {

    private static final JavaClasses CLUSTER = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.sluice.cluster");

    /**
     * The Ratis 3.3.0 workarounds depend on Ratis and the JDK only, so that a Ratis upgrade can check them as a whole,
     * and none of them reaches into the node.
     */
    @Test
    void theRatisWorkaroundsStandAlone() {
        noClasses().that().resideInAPackage("io.sluice.cluster.ratis..")
                .should().dependOnClassesThat().resideInAnyPackage("io.sluice.cluster", "io.sluice.broker..",
                        "io.sluice.store..")
                .check(CLUSTER);
    }

    /**
     * No static field is assigned after its class is loaded: a test reaches into a node through the hooks it gives
     * that node ({@link NodeHooks}), never through a static field that every node in the JVM would share.
     */
    @Test
    void noStaticFieldIsAssigned() {
        fields().that().areDeclaredInClassesThat().resideInAPackage("io.sluice.cluster..").and().areStatic()
                .should().beFinal()
                .check(CLUSTER);
    }

    /**
     * Every Raft server and client the node builds speaks its TLS, if it has one: only {@link RaftGroups} calls Ratis's
     * builders, with the node's parameters ({@link RaftGroups#newClient}). A client built elsewhere would speak plain
     * text, which a node on mutual TLS refuses.
     */
    @Test
    void onlyTheGroupsBuildRaftServersAndClients() {
        noClasses().that().doNotHaveFullyQualifiedName(RaftGroups.class.getName())
                .should().callMethod(RaftClient.class, "newBuilder")
                .orShould().callMethod(RaftServer.class, "newBuilder")
                .check(CLUSTER);
    }

    /** No main code of any module on this class path sleeps, but for what {@link MainCodeSleeps} allows. */
    @Test
    void mainCodeSleepsOnlyWhereAllowed() {
        MainCodeSleeps.check(MainCodeSleeps.mainClasses());
    }

    /** The test-support module is on this class path as a jar of main classes, but it is test code: left out. */
    @Test
    void theMainClassesLeaveOutTheTestSupport() {
        JavaClasses main = MainCodeSleeps.mainClasses();
        assertThat(main.contain(ClusterNode.class)).isTrue();
        assertThat(main.contain(KafkaWire.class)).isFalse();
    }
}

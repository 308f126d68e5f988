package io.sluice.broker;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.Test;

/** kafka-clients is used behind one adapter package, so that a version bump touches one place. */
class BrokerLayeringTest {

    private static final JavaClasses BROKER = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .importPackages("io.sluice.broker");

    @Test
    void onlyTheAdapterUsesKafkaClients() {
        noClasses().that().resideOutsideOfPackage("io.sluice.broker.kafka..")
                .should().dependOnClassesThat().resideInAnyPackage("org.apache.kafka..")
                .check(BROKER);
    }

    @Test
    void theNetworkLayerKnowsNoProtocol() {
        noClasses().that().resideInAPackage("io.sluice.broker.net..")
                .should().dependOnClassesThat().resideInAnyPackage("io.sluice.broker.kafka..", "io.sluice.store..")
                .check(BROKER);
    }

    @Test
    void metricsKnowNoProtocolAndTheirLibraryStaysWithThem() {
        noClasses().that().resideInAPackage("io.sluice.broker.metrics..")
                .should().dependOnClassesThat().resideInAnyPackage("io.sluice.broker.kafka..", "io.sluice.broker.net..")
                .check(BROKER);
        noClasses().that().resideOutsideOfPackage("io.sluice.broker.metrics..").and().doNotHaveFullyQualifiedName(
                Broker.class.getName())
                .should().dependOnClassesThat().resideInAnyPackage("io.prometheus..")
                .check(BROKER);
    }
}

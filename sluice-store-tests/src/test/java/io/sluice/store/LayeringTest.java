package io.sluice.store;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The store's layering, checked on its compiled classes (docs/store.md, "Packages"). */
class LayeringTest {

    /** The public classes that stand in front of internal code. */
    private static final Set<String> API_FACADES = Set.of("Store", "StoreVerifier", "Calibration", "KafkaBatch");

    /** The store's main classes: not its tests, nor its test jar's seams (a jar ending in -tests.jar). */
    private static final JavaClasses STORE = new ClassFileImporter()
            .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
            .withImportOption(location -> !location.contains("-tests.jar"))
            .importPackages("io.sluice.store");

    /** JDK packages outside java.*: O_DIRECT's open option, and the process's descriptor limit (maxOpenLogs). */
    @Test
    void theStoreDependsOnTheJdkAndSlf4jOnly() {
        classes().should().onlyDependOnClassesThat()
                .resideInAnyPackage("io.sluice.store..", "java..", "javax..", "org.slf4j..", "com.sun.nio.file..",
                        "com.sun.management..", "")
                .check(STORE);
    }

    @Test
    void theStoreNeverReachesIntoTheCliBenchOrBroker() {
        noClasses().should().dependOnClassesThat()
                .resideInAnyPackage("io.sluice.cli..", "io.sluice.bench..", "io.sluice.broker..")
                .check(STORE);
    }

    @Test
    void internalPackagesHaveNoCycles() {
        slices().matching("io.sluice.store.internal.(*)..").should().beFreeOfCycles().check(STORE);
    }

    /**
     * Every file and directory operation goes through the {@link io.sluice.store.io.FileIO} seam, so a simulated
     * file system (power loss, faults) sees all of them; only the operating system's implementation may call
     * the JDK's file APIs.
     */
    @Test
    void onlyTheDefaultFileSeamTouchesTheFileSystem() {
        noClasses().that().doNotHaveFullyQualifiedName("io.sluice.store.io.ChannelFileIO")
                .and().doNotHaveFullyQualifiedName("io.sluice.store.io.ChannelFileIO$ChannelFile")
                .and().doNotHaveFullyQualifiedName("io.sluice.store.io.NativeFileIO")
                .and().doNotHaveFullyQualifiedName("io.sluice.store.io.NativeFileIO$NativeFile")
                .should().dependOnClassesThat().haveFullyQualifiedName("java.nio.file.Files")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.nio.channels.FileChannel")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.io.RandomAccessFile")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.io.FileInputStream")
                .orShould().dependOnClassesThat().haveFullyQualifiedName("java.io.FileOutputStream")
                .check(STORE);
    }

    @Test
    void theFileSeamAndTheCacheKnowNothingOfTheLog() {
        noClasses().that().resideInAnyPackage("io.sluice.store.io..", "io.sluice.store.internal.cache..",
                "io.sluice.store.internal.io..")
                .should().dependOnClassesThat().resideInAnyPackage("io.sluice.store.internal.log..",
                        "io.sluice.store.internal.index..", "io.sluice.store.internal.recovery..",
                        "io.sluice.store.internal.flush..", "io.sluice.store.internal.retention..",
                        "io.sluice.store.internal.read..", "io.sluice.store.internal.verify..",
                        "io.sluice.store.internal.engine..")
                .check(STORE);
    }

    /**
     * The public package holds the API only: what callers use. An engine class left there would have to be
     * package-private (the API package's types are all public) and would reach into the internal packages, which
     * only the API's facades do: {@code Store} over the engine, {@code StoreVerifier} over the verifier,
     * {@code Calibration} for its file and {@code KafkaBatch} for the batch checks an append makes.
     */
    @Test
    void thePublicPackageHoldsOnlyTheApi() {
        classes().that().resideInAPackage("io.sluice.store").and().areTopLevelClasses().should().bePublic()
                .check(STORE);
        noClasses().that().resideInAPackage("io.sluice.store")
                .and(DescribedPredicate.describe("are not a facade",
                        (JavaClass c) -> !API_FACADES.contains(c.getSimpleName())))
                .should().dependOnClassesThat().resideInAPackage("io.sluice.store.internal..")
                .check(STORE);
    }

    /** The engine is reached through {@code Store} only: nothing else in the store calls into it. */
    @Test
    void onlyTheStoreCallsTheEngine() {
        noClasses().that().resideOutsideOfPackage("io.sluice.store.internal.engine..")
                .and().doNotHaveFullyQualifiedName("io.sluice.store.Store")
                .should().dependOnClassesThat().resideInAPackage("io.sluice.store.internal.engine..")
                .check(STORE);
    }
}

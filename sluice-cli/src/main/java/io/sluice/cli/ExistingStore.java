package io.sluice.cli;

import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The {@code --dir} of the commands that read a store that must already exist. */
final class ExistingStore {

    @Option(names = "--dir", required = true, description = "Store directory.")
    Path dir;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** @return the directory @throws ParameterException (exit 2) if there is no store there */
    Path require() {
        if (!Files.isDirectory(dir)) {
            throw new ParameterException(command.commandLine(), "no store at " + dir);
        }
        return dir;
    }
}

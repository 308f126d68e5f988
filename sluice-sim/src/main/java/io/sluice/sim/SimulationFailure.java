package io.sluice.sim;

/** A check of the {@link PowerLossSimulation} that did not hold. */
final class SimulationFailure extends RuntimeException {
    private static final long serialVersionUID = 1L;

    SimulationFailure(String message) {
        super(message);
    }

    SimulationFailure(String message, Throwable cause) {
        super(message, cause);
    }
}

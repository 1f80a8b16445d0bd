import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/** Prints each check; counts the failed ones. */
final class Check {
    /** How often {@link #until} looks again at client state that offers no event to wait on. */
    static final long POLL_MS = 100;

    private static final AtomicInteger FAILURES = new AtomicInteger();

    private Check() {
    }

    /** A wait that ran out or a failure the scenario cannot go on after. */
    static final class Abort extends RuntimeException {
        Abort(String message) {
            super(message);
        }
    }

    static boolean that(boolean held, String what) {
        if (held) {
            System.out.println("ok   " + what);
        } else {
            FAILURES.incrementAndGet();
            System.out.println("FAIL " + what);
        }
        return held;
    }

    static void equal(Object expected, Object actual, String what) {
        that(java.util.Objects.equals(expected, actual),
                what + ": expected " + expected + ", got " + actual);
    }

    static void info(String what) {
        System.out.println("info " + what);
    }

    static int failures() {
        return FAILURES.get();
    }

    /**
     * Waits up to {@code timeoutMs} for {@code condition}, else aborts the scenario. Used for
     * the client's internal state (queue assignment, offsets), which the client offers no
     * listener for; waits for messages use {@link Received#awaitAll} instead.
     */
    static void until(String what, long timeoutMs, BooleanSupplier condition) {
        until(what, timeoutMs, condition, () -> "");
    }

    /** {@link #until}, saying what `state` shows when the wait runs out. */
    static void until(String what, long timeoutMs, BooleanSupplier condition,
            Supplier<String> state) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (!condition.getAsBoolean()) {
            if (System.currentTimeMillis() >= deadline) {
                throw new Abort("waited " + timeoutMs + " ms for " + what + " " + state.get());
            }
            try {
                Thread.sleep(POLL_MS);
            } catch (InterruptedException e) {
                throw new Abort("interrupted waiting for " + what);
            }
        }
        System.out.println("ok   " + what);
    }
}

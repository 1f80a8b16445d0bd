import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * Prints each check (`ok` / `FAIL` / `info`, with seconds since the start) and keeps the failed
 * ones: a compat scenario counts them, a matrix phase names the first on its RESULT line.
 */
final class Check {
    /** How often {@link #until} looks again at client state that offers no event to wait on. */
    static final long POLL_MS = 100;
    /** Failures named on the RESULT line; the rest are in the log above it. */
    static final int FAILURES_ON_RESULT_LINE = 3;

    private static final List<String> FAILURES = new ArrayList<>();
    private static final long START_MS = System.currentTimeMillis();
    /** Why the client cannot do this phase, once it said so ({@link #na}). */
    private static String notApplicable;

    private Check() {
    }

    /** A wait that ran out, or a failure the scenario cannot go on after. */
    static final class Abort extends RuntimeException {
        Abort(String message) {
            super(message);
        }
    }

    static synchronized boolean that(boolean held, String what) {
        System.out.println((held ? "ok   " : "FAIL ") + elapsed() + what);
        if (!held) {
            FAILURES.add(what);
        }
        return held;
    }

    static void equal(Object expected, Object actual, String what) {
        that(Objects.equals(expected, actual), what + ": expected " + expected + ", got " + actual);
    }

    static void info(String what) {
        System.out.println("info " + elapsed() + what);
    }

    /**
     * Waits up to {@code timeoutMs} for {@code condition}, else aborts. Only for the client's
     * internal state (queue assignment, offsets, the broker's index), which the client offers
     * no listener for; waits for messages wait on their arrival (Received, Inbox).
     */
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
        System.out.println("ok   " + elapsed() + what);
    }

    static void until(String what, long timeoutMs, BooleanSupplier condition) {
        until(what, timeoutMs, condition, () -> "");
    }

    /** Seconds since the start, to show in the log where a run spends its time. */
    static String elapsed() {
        return String.format("[%.1fs] ", (System.currentTimeMillis() - START_MS) / 1000.0);
    }

    /** Marks the phase n/a: the client has no API for it (`why` names the API missing). */
    static synchronized String na(String why) {
        notApplicable = why;
        return why;
    }

    /**
     * The RESULT line for this phase: NA with its reason, PASS with `held` when nothing failed,
     * else FAIL.
     */
    static synchronized String result(String held) {
        if (FAILURES.isEmpty() && notApplicable != null) {
            return "RESULT NA " + notApplicable;
        }
        if (FAILURES.isEmpty()) {
            return "RESULT PASS " + held;
        }
        List<String> shown = FAILURES.subList(0, Math.min(FAILURES.size(),
                FAILURES_ON_RESULT_LINE));
        return "RESULT FAIL " + String.join("; ", shown)
                + (FAILURES.size() > shown.size()
                        ? " (+" + (FAILURES.size() - shown.size()) + " more)" : "");
    }

    static synchronized int failures() {
        return FAILURES.size();
    }

    static synchronized boolean passed() {
        return FAILURES.isEmpty();
    }
}

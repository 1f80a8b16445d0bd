/**
 * How a scenario runs in either main (RingmqCompat, RingmqCompat5): bounded by a watchdog,
 * ended by one verdict line ("ALL CHECKS PASSED (...)" when every check held) and the exit
 * status, by halt: client threads left by a failed shutdown must not keep the JVM alive.
 */
final class Run {
    /** Exit status when a check failed. */
    static final int EXIT_MISMATCH = 1;
    /** Exit status when the scenario could not run (bad arguments, a wait ran out, an error). */
    static final int EXIT_ERROR = 2;
    /** Exit status when the whole scenario ran past {@link #SCENARIO_TIME_MAX_MS}. */
    static final int EXIT_TIMEOUT = 3;
    /**
     * Hard bound on one scenario: each of its waits is bounded too, this catches a client call
     * that hangs (a send or a shutdown that never returns).
     */
    static final long SCENARIO_TIME_MAX_MS = 240_000;

    private Run() {
    }

    /** A scenario's body. */
    interface Body {
        void run() throws Exception;
    }

    /** Runs `body` as scenario `name`, prints the verdict and halts with its status. */
    static void andHalt(String name, Body body) {
        Watchdog.start(name, SCENARIO_TIME_MAX_MS, "FAIL", EXIT_TIMEOUT);
        try {
            body.run();
        } catch (Check.Abort e) {
            System.out.println("FAIL " + e.getMessage());
            System.out.flush();
            Runtime.getRuntime().halt(EXIT_MISMATCH);
        } catch (Exception e) {
            System.out.println("ERROR " + e);
            e.printStackTrace(System.out);
            System.out.flush();
            Runtime.getRuntime().halt(EXIT_ERROR);
        }
        int failures = Check.failures();
        if (failures == 0) {
            System.out.println("ALL CHECKS PASSED (" + name + ")");
        } else {
            System.out.println(failures + " CHECKS FAILED (" + name + ")");
        }
        System.out.flush();
        Runtime.getRuntime().halt(failures == 0 ? 0 : EXIT_MISMATCH);
    }

    /** Prints why the arguments are unusable and `usage`, then halts with EXIT_ERROR. */
    static void usage(String why, String usage) {
        System.out.println("ERROR " + why + "\nusage: " + usage);
        System.out.flush();
        Runtime.getRuntime().halt(EXIT_ERROR);
    }
}

/**
 * The hard bound on one run (a compat scenario, a matrix phase): each of its waits is bounded
 * too, this catches a client call that hangs (a send or a shutdown that never returns).
 */
final class Watchdog {
    private Watchdog() {
    }

    /**
     * After `limitMs`, prints `verdict` + " " + `what` + " ran past ..." and halts with
     * `status` (halt, not exit: client threads left by a failed shutdown must not keep the JVM
     * alive).
     */
    static void start(String what, long limitMs, String verdict, int status) {
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(limitMs);
            } catch (InterruptedException e) {
                return;
            }
            System.out.println(verdict + " " + what + " ran past " + limitMs + " ms");
            System.out.flush();
            Runtime.getRuntime().halt(status);
        }, "watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }
}

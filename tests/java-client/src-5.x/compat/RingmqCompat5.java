/**
 * The main of the compat scenarios compiled against rocketmq-client 5.3.3 (with ../../src):
 * the scenarios whose API only the 5.x client has are here, every other one is RingmqCompat's,
 * run as it is. Arguments, output and exit statuses as RingmqCompat's. Usage: RingmqCompat5
 * timer|timer-restart-phase1|timer-restart-phase2 --namesrv HOST:PORT --topic T --group G
 * [--state FILE] [--precision-ms MS] [--crash], or any RingmqCompat scenario.
 */
public final class RingmqCompat5 {
    private RingmqCompat5() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0 || !args[0].startsWith("timer")) {
            RingmqCompat.main(args);
            return;
        }
        RingmqCompat.Args a = RingmqCompat.parse(args);
        Run.andHalt(args[0], () -> {
            switch (args[0]) {
                case "timer" -> Timers.run(a);
                case "timer-restart-phase1" -> Timers.restartPhase1(a);
                case "timer-restart-phase2" -> Timers.restartPhase2(a);
                default -> RingmqCompat.main(args);
            }
        });
    }
}

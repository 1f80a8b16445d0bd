import java.util.HashMap;
import java.util.Map;

/**
 * The main of the scenarios compiled against rocketmq-client 5.3.3 (../client-5.3.3/pom.xml),
 * with ../src: the scenarios whose API only the 5.x client has are here, every other one is
 * RingmqCompat's, run as it is. Output and exit statuses as RingmqCompat's. Usage:
 * RingmqCompat5 timer|timer-restart-phase1|timer-restart-phase2 --namesrv HOST:PORT --topic T
 * --group G [--state FILE] [--precision-ms MS] [--crash], or any RingmqCompat scenario.
 */
public final class RingmqCompat5 {
    private static final String USAGE = "RingmqCompat5 timer|timer-restart-phase1"
            + "|timer-restart-phase2 --namesrv HOST:PORT --topic T --group G [--state FILE]"
            + " [--precision-ms MS] [--crash]";

    private RingmqCompat5() {
    }

    /**
     * The scenario's arguments (topic and group unique per run); `precisionMs` is the broker's
     * timerPrecisionMs (--precision-ms, Apache's default 1000); `crash`: the broker was killed
     * between the restart phases (--crash).
     */
    record Args(String namesrv, String topic, String group, String state, long precisionMs,
            boolean crash) {
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 0) {
            Run.usage("no scenario", USAGE);
        }
        if (!args[0].startsWith("timer")) {
            RingmqCompat.main(args);
            return;
        }
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--crash")) {
                opts.put(args[i], "");
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                opts.put(args[i], args[++i]);
            } else {
                Run.usage("bad argument " + args[i], USAGE);
            }
        }
        Args a = new Args(need(opts, "--namesrv"), need(opts, "--topic"), need(opts, "--group"),
                opts.get("--state"), Long.parseLong(opts.getOrDefault("--precision-ms", "1000")),
                opts.containsKey("--crash"));
        Run.andHalt(args[0], () -> {
            switch (args[0]) {
                case "timer" -> Timers.run(a);
                case "timer-restart-phase1" -> Timers.restartPhase1(a);
                case "timer-restart-phase2" -> Timers.restartPhase2(a);
                default -> Run.usage("unknown scenario " + args[0], USAGE);
            }
        });
    }

    private static String need(Map<String, String> opts, String name) {
        String value = opts.get(name);
        if (value == null) {
            Run.usage("missing " + name, USAGE);
        }
        return value;
    }
}

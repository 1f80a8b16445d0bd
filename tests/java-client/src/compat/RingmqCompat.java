import java.util.HashMap;
import java.util.Map;

/**
 * The official RocketMQ Java client (4.9.8) against one broker and its NameServer: ringmq
 * standalone, or Apache RocketMQ itself (compat-against-apache.sh). One scenario per subcommand;
 * each prints one line per check ("ok ..." or "FAIL ...") and exits non-zero on any mismatch,
 * with "ALL CHECKS PASSED" as its last line when all held.
 *
 * Usage: RingmqCompat SCENARIO --namesrv HOST:PORT --topic T --group G [--state FILE]
 * [--crash] [--vip] [--segment-bytes N]. Scenarios: produce-consume, restart-phase1,
 * restart-phase2, rebalance, retry, dlq, delay-level, delay-restart-phase1,
 * delay-restart-phase2, orderly, orderly-rebalance, orderly-suspend, lite-pull, broadcast,
 * retention
 * (needs --segment-bytes). --crash: the broker was killed between the restart phases; --vip:
 * clients use the broker's VIP channel (its port - 2) as clients with
 * vipChannelEnabled do.
 */
public final class RingmqCompat {
    private RingmqCompat() {
    }

    public static void main(String[] args) throws Exception {
        Args a = parse(args);
        Run.andHalt(args[0], () -> {
            switch (args[0]) {
                case "produce-consume" -> ProduceConsume.run(a);
                case "restart-phase1" -> Restart.phase1(a);
                case "restart-phase2" -> Restart.phase2(a);
                case "rebalance" -> Rebalance.run(a);
                case "retry" -> Retry.run(a);
                case "dlq" -> DeadLetter.run(a);
                case "delay-level" -> Delays.level(a);
                case "delay-restart-phase1" -> Delays.restartPhase1(a);
                case "delay-restart-phase2" -> Delays.restartPhase2(a);
                case "orderly" -> Orderly.run(a);
                case "orderly-rebalance" -> OrderlyRebalance.run(a);
                case "orderly-suspend" -> OrderlySuspend.run(a);
                case "lite-pull" -> LitePull.run(a);
                case "broadcast" -> Broadcast.run(a);
                case "retention" -> Retention.run(a);
                default -> usage("unknown scenario " + args[0]);
            }
        });
    }

    /**
     * The scenario's arguments; topic and group are unique per run (the caller picks them).
     * `options` holds every option given, for a scenario's own (e.g. --answer).
     */
    record Args(String namesrv, String topic, String group, String state, boolean crash,
            boolean vip, Map<String, String> options) implements Target {
        /** A scenario's own option, which it must be given. */
        String option(String name) {
            return need(options, name);
        }
    }

    /** `args` (the scenario first, then its options) as a scenario's arguments. */
    static Args parse(String[] args) {
        if (args.length < 1) {
            usage("no scenario");
        }
        Map<String, String> opts = options(args);
        return new Args(need(opts, "--namesrv"), need(opts, "--topic"), need(opts, "--group"),
                opts.get("--state"), opts.containsKey("--crash"), opts.containsKey("--vip"),
                opts);
    }

    private static Map<String, String> options(String[] args) {
        Map<String, String> opts = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            if (args[i].equals("--crash") || args[i].equals("--vip")) {
                opts.put(args[i], "");
            } else if (args[i].startsWith("--") && i + 1 < args.length) {
                opts.put(args[i], args[++i]);
            } else {
                usage("bad argument " + args[i]);
            }
        }
        return opts;
    }

    private static String need(Map<String, String> opts, String name) {
        String value = opts.get(name);
        if (value == null) {
            usage("missing " + name);
        }
        return value;
    }

    private static void usage(String why) {
        Run.usage(why, "RingmqCompat produce-consume|restart-phase1"
                + "|restart-phase2|rebalance|retry|dlq|delay-level|delay-restart-phase1"
                + "|delay-restart-phase2|orderly|orderly-rebalance"
                + "|orderly-suspend|lite-pull|broadcast|retention"
                + " --namesrv HOST:PORT"
                + " --topic T --group G"
                + " [--state FILE] [--crash] [--vip] [--segment-bytes N]"
                + " (RingmqCompat5: also timer|timer-restart-phase1|timer-restart-phase2"
                + " [--precision-ms MS])");
    }
}

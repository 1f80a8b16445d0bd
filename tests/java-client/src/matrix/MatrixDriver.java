/**
 * One phase of one compatibility-matrix scenario (tests/matrix/README.md) with the official
 * RocketMQ Java client, 4.9.x or 5.x, whichever this was compiled and run against. Prints a
 * line per check and, last, the cell: RESULT PASS/FAIL; exits 0 on PASS, 1 on FAIL.
 *
 * Usage: MatrixDriver PHASE, with the MATRIX_* environment variables set.
 */
public final class MatrixDriver {
    /** Exit status of a failed phase (the contract's). */
    static final int EXIT_FAIL = 1;
    /**
     * Hard bound on one phase, below the orchestrator's 180 s kill: every wait is bounded
     * too, this catches a client call that hangs (a send or a shutdown that never returns).
     */
    static final long PHASE_TIME_MAX_MS = 170_000;

    private MatrixDriver() {
    }

    /** A phase: runs its checks, returns what held for the PASS line. */
    interface Phase {
        String run(Env env) throws Exception;
    }

    public static void main(String[] args) {
        String held = "";
        try {
            if (args.length != 1) {
                throw new Check.Abort("usage: driver PHASE");
            }
            Phase phase = phase(args[0]);
            Watchdog.start(args[0], PHASE_TIME_MAX_MS, "RESULT FAIL", EXIT_FAIL);
            Check.info("phase " + args[0]); // and the check log's clock starts
            held = phase.run(Env.read());
        } catch (Check.Abort e) {
            Check.that(false, e.getMessage());
        } catch (Exception e) {
            e.printStackTrace(System.out);
            Check.that(false, "error: " + e);
        }
        System.out.println(Check.result(held));
        System.out.flush();
        // halt, not exit: client threads left by a failed shutdown must not keep the JVM alive
        Runtime.getRuntime().halt(Check.passed() ? 0 : EXIT_FAIL);
    }

    private static Phase phase(String name) {
        return switch (name) {
            case "route" -> Sends::route;
            case "send-sync" -> Sends::sync;
            case "send-async" -> Sends::async;
            case "send-oneway" -> Sends::oneway;
            case "send-batch" -> Sends::batch;
            case "message-props" -> Content::messageProps;
            case "push-tag" -> Consume::pushTag;
            case "sql92" -> Sql92::sql92;
            case "broadcast" -> Consume::broadcast;
            case "consume-from" -> Consume::consumeFrom;
            case "offsets-consumer-restart" -> Offsets::consumerRestart;
            case "offsets-broker-restart.1" -> Offsets::brokerRestart1;
            case "offsets-broker-restart.2" -> Offsets::brokerRestart2;
            case "rebalance" -> Groups::rebalance;
            case "orderly" -> Groups::orderly;
            case "lite-pull" -> Pull::litePull;
            case "query" -> Content::query;
            case "request-reply" -> Reply::requestReply;
            case "cross-produce" -> Sends::crossProduce;
            case "cross-consume" -> Consume::crossConsume;
            case "transaction" -> Transactions::transaction;
            case "transaction-crash.1" -> Transactions::crash1;
            case "transaction-crash.2" -> Transactions::crash2;
            case "timer" -> TimerMessages::timer;
            default -> throw new Check.Abort("unknown phase " + name);
        };
    }
}

/**
 * Where a scenario's clients connect, and as which group: what the compat scenarios' arguments
 * (RingmqCompat.Args) and the matrix's environment (Env) both carry, so one {@link Clients}
 * serves both.
 */
interface Target {
    String namesrv();

    /** The scenario's consumer group; its producers are in group "P_" + this. */
    String group();

    /** Whether clients use the broker's VIP channel (its port - 2). */
    default boolean vip() {
        return false;
    }
}

import java.nio.file.Path;

/** The environment the matrix orchestrator hands a driver phase (tests/matrix/README.md). */
record Env(String namesrv, String brokerName, String topic, String topic2, String group,
        String group2, Path state, int count, String peer) implements Target {

    /** MATRIX_COUNT when unset: the contract's default. */
    static final int DEFAULT_COUNT = 16;

    static Env read() {
        String count = System.getenv("MATRIX_COUNT");
        return new Env(need("MATRIX_NAMESRV"), need("MATRIX_BROKER_NAME"), need("MATRIX_TOPIC"),
                System.getenv("MATRIX_TOPIC2"), need("MATRIX_GROUP"),
                System.getenv("MATRIX_GROUP2"),
                Path.of(need("MATRIX_STATE")),
                count == null || count.isEmpty() ? DEFAULT_COUNT : Integer.parseInt(count),
                System.getenv("MATRIX_PEER"));
    }

    private static String need(String name) {
        String value = System.getenv(name);
        if (value == null || value.isEmpty()) {
            throw new Check.Abort("environment variable " + name + " is not set");
        }
        return value;
    }
}

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.Message;

/**
 * sql92: push consumers with SQL92 MessageSelectors, filtered by the broker over messages
 * whose user properties are ints, doubles, strings, a value that is a number in some
 * messages and a word in others, and a property missing from some.
 */
final class Sql92 {
    /** Messages sent: enough for every case to keep some and drop some on each queue. */
    static final int COUNT = 20;
    /** SUBSCRIPTION_PARSE_FAILED: CHECK_CLIENT_CONFIG's answer to a selector that does not compile. */
    static final int SUBSCRIPTION_PARSE_FAILED = 23;

    private Sql92() {
    }

    /** One selector and the indexes of the messages it must deliver. */
    record Case(String name, String expression, IntPredicate wanted) {
    }

    /**
     * Message i: n = i (missing when i % 5 == 4), d = i / 2 as a double ("2.5"), s = alpha-i
     * or beta-i, mix = "7" or, when i % 3 == 0, "seven"; tag TagX when i % 4 == 0, else TagA.
     */
    static Message message(String topic, int i) {
        Message msg = Expect.message(topic, "sql92", i);
        if (i % 5 != 4) {
            msg.putUserProperty("n", Integer.toString(i));
        }
        msg.putUserProperty("d", Double.toString(i * 0.5));
        msg.putUserProperty("s", (i % 2 == 0 ? "alpha-" : "beta-") + i);
        msg.putUserProperty("mix", i % 3 == 0 ? "seven" : "7");
        msg.setTags(i % 4 == 0 ? "TagX" : "TagA");
        return msg;
    }

    static List<Case> cases() {
        List<Case> cases = new ArrayList<>(List.of(
                // an int and a double compared with literals of their type; missing n: unknown
                new Case("numbers", "n > 5 AND d <= 7.5",
                        i -> i % 5 != 4 && i > 5 && i <= 15),
                // a selector over a missing property
                new Case("missing", "n IS NULL OR n < 2", i -> i % 5 == 4 || i < 2),
                // "seven" is no int: the evaluation fails and the message does not match,
                // even where TAGS = 'TagX' would have held (Apache's evaluation throws)
                new Case("mismatch", "mix = 7 OR TAGS = 'TagX'", i -> i % 3 != 0),
                new Case("in-between", "s IN ('alpha-2', 'beta-3', 'beta-5') OR n NOT BETWEEN 1 AND 17",
                        i -> i == 2 || i == 3 || i == 5 || (i % 5 != 4 && (i < 1 || i > 17)))));
        if (fiveX()) {
            // 5.x's string operators; the 4.9 line's brokers (and grammar) have none
            cases.add(new Case("startswith", "s STARTSWITH 'alpha' AND d BETWEEN 2.0 AND 6.0",
                    i -> i % 2 == 0 && i >= 4 && i <= 12));
            cases.add(new Case("not-contains", "s NOT CONTAINS '1' AND TAGS = 'TagX'",
                    i -> i % 4 == 0 && !Integer.toString(i).contains("1")));
        }
        return cases;
    }

    /** Whether this is a 5.x client (whose brokers have CONTAINS, STARTSWITH, ENDSWITH). */
    static boolean fiveX() {
        return MQVersion.CURRENT_VERSION >= MQVersion.Version.V5_0_0.ordinal();
    }

    static String sql92(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> sent = new ArrayList<>();
        for (int i = 0; i < COUNT; i++) {
            sent.add(Sends.sendOk(producer, message(env.topic(), i)));
        }
        refusesAnInvalidSelector(env);
        // All cases at once, a group each: a queue whose last messages a selector drops is
        // consumed to its end only when the held pull there expires (15 s), in every case.
        List<Case> cases = cases();
        List<Consume.Running> running = new ArrayList<>();
        for (Case c : cases) {
            List<Expect> wanted = sent.stream().filter(e -> c.wanted().test(e.index())).toList();
            Inbox inbox = new Inbox();
            DefaultMQPushConsumer consumer = Clients.push(env, env.topic(),
                    env.group() + "-" + c.name(), c.name(), "*", inbox.listener(c.name()));
            // the selector replaces the "*" subscription made above
            consumer.subscribe(env.topic(), MessageSelector.bySql(c.expression()));
            Check.info(c.name() + ": " + c.expression() + " wants " + wanted.stream()
                    .map(Expect::index).toList());
            running.add(Consume.start(consumer, inbox, wanted));
        }
        for (Consume.Running r : running) {
            Consume.finishExactlyOnce(env, producer, r);
        }
        producer.shutdown();
        return cases.size() + " SQL92 selectors each got exactly their messages of " + COUNT
                + " (missing properties, int/double/string values, a type mismatch"
                + (fiveX() ? ", STARTSWITH, NOT CONTAINS" : "; no 5.x string operators on 4.9")
                + "); an invalid selector refused at start()";
    }

    /** A selector that does not compile fails the consumer's start() (CHECK_CLIENT_CONFIG). */
    static void refusesAnInvalidSelector(Env env) throws Exception {
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group() + "-invalid",
                "invalid", "*", new Inbox().listener("invalid"));
        consumer.subscribe(env.topic(), MessageSelector.bySql("n >"));
        try {
            consumer.start();
            Check.that(false, "start() with the selector 'n >' succeeded");
        } catch (MQClientException e) {
            Check.equal(SUBSCRIPTION_PARSE_FAILED, e.getResponseCode(),
                    "start() with the selector 'n >' refused (" + e.getErrorMessage() + "), code");
        } finally {
            consumer.shutdown();
        }
    }
}

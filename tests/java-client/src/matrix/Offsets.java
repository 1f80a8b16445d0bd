import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageExt;

/** Committed offsets survive a consumer restart and a broker restart. */
final class Offsets {
    /** Where offsets-broker-restart.1 leaves what it sent for phase 2, in MATRIX_STATE. */
    static final String STATE_FILE = "java-sent.bin";

    private Offsets() {
    }

    /**
     * offsets-consumer-restart: a consumer consumes N and commits (the broker has its offsets,
     * then it shuts down); N more are sent; a new consumer of the group, on a client instance
     * of its own (nothing shared with the first), gets exactly those N.
     */
    static String consumerRestart(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> first = Sends.sendSync(producer, env.topic(), "offsets-consumer-restart",
                env.count());
        Consume.exactlyOnce(env, producer, "consumer-1", "*", first);
        List<Expect> rest = sendMore(env, producer, "offsets-consumer-restart");
        Consume.exactlyOnce(env, producer, "consumer-2", "*", rest);
        producer.shutdown();
        return "after " + env.count() + " consumed and committed, a new consumer got exactly the"
                + " other " + env.count();
    }

    /**
     * offsets-broker-restart.1: sends 2N, consumes and commits the first N, keeps all 2N for
     * phase 2 in MATRIX_STATE.
     */
    static String brokerRestart1(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        ArrayList<Expect> sent = new ArrayList<>(Sends.sendSync(producer, env.topic(),
                "offsets-broker-restart", env.count()));
        Consume.exactlyOnce(env, producer, "consumer-1", "*", sent);
        sent.addAll(sendMore(env, producer, "offsets-broker-restart"));
        producer.shutdown();
        PhaseState.write(env, STATE_FILE, sent);
        return "sent " + sent.size() + ", consumed and committed the first " + env.count();
    }

    /**
     * offsets-broker-restart.2, after the broker restarted: the group gets exactly the N it
     * had not consumed, and every message of phase 1 is still found by its msgId.
     */
    static String brokerRestart2(Env env) throws Exception {
        List<Expect> sent = PhaseState.read(env, STATE_FILE);
        DefaultMQProducer producer = Clients.producer(env, "producer");
        Check.until("route of " + env.topic() + " has its " + Clients.QUEUES + " queues again",
                Clients.WAIT_MS,
                () -> Clients.writeQueues(producer, env.topic()).size() == Clients.QUEUES);
        Consume.exactlyOnce(env, producer, "consumer-2", "*",
                sent.subList(env.count(), sent.size()));
        List<String> lost = new ArrayList<>();
        for (Expect e : sent) {
            MessageExt found = producer.getDefaultMQProducerImpl()
                    .queryMessageByUniqKey(env.topic(), e.msgId());
            if (found == null) {
                lost.add(e + " not found");
            } else {
                e.mismatches(env.topic(), found).forEach(d -> lost.add(e + ": " + d));
            }
        }
        Check.equal(List.of(), lost, "phase 1's " + sent.size() + " messages found by msgId");
        producer.shutdown();
        return "after the restart the group got exactly the " + env.count() + " unconsumed;"
                + " all " + sent.size() + " found by msgId";
    }

    /** N more messages of `scenario`, indexes N..2N-1. */
    private static List<Expect> sendMore(Env env, DefaultMQProducer producer, String scenario)
            throws Exception {
        List<Expect> more = new ArrayList<>();
        for (int i = env.count(); i < 2 * env.count(); i++) {
            more.add(Sends.sendOk(producer, Expect.message(env.topic(), scenario, i)));
        }
        return more;
    }
}

import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * 5.x timer messages as a producer writes them (Message.setDelayTimeSec, setDelayTimeMs,
 * setDeliverTimeMs; the broker's timerPrecisionMs given by --precision-ms, default 1 s):
 * <ul>
 * <li>{@code timer}: 1 s (setDelayTimeSec), 5 s (setDelayTimeMs and setDeliverTimeMs) and
 * one hour ahead (setDeliverTimeMs): each near one reaches a waiting consumer once, intact
 * (the producer's msgId), never before its time and within the precision plus
 * {@link #SLACK_MS} after it; the far ones are in none of the topic's queues when the near
 * ones have arrived. The delivery error (arrival − asked time) is printed per kind.</li>
 * <li>{@code timer-restart-phase1} / {@code -phase2 [--crash]}: 20 s timers and a far one
 * pending over a broker stop (the caller stops and restarts it between the phases): after the
 * restart each 20 s one arrives once, intact, not before its time; the far one stays pending.
 * With {@code --crash} (the broker was killed) a timer may arrive more than once: Apache 5.3.3
 * re-delivers pending timers after a kill -9 (its timer checkpoint is behind).</li>
 * </ul>
 */
final class Timers {
    /** After the slot's end: the long poll's wake-up and the consumer's thread, loaded host. */
    static final long SLACK_MS = 1_500;
    /** Ahead of the far timers: never due while a test runs. */
    static final long FAR_MS = 3_600_000;
    /** Timers per kind. */
    static final int PER_KIND = 3;
    /** The restart phases' delay: long enough to be pending over the restart. */
    static final long RESTART_DELAY_MS = 20_000;
    /** Bound on a client converging (routes, rebalance) and on deliveries of due timers. */
    static final long WAIT_MS = Clients.WAIT_MS;
    /** The broker's timerPrecisionMs when --precision-ms does not say: Apache's default. */
    static final String DEFAULT_PRECISION_MS = "1000";

    private Timers() {
    }

    /** A timer sent: when it was asked for, between the earliest and latest possible. */
    record Timed(String kind, Sent sent, long earliestMs, long latestMs)
            implements Serializable {
    }

    /** What restart phase 1 hands to phase 2. */
    record State(ArrayList<Timed> due, ArrayList<Timed> far) implements Serializable {
    }

    /** A started push consumer of `group` on the scenario's topic, every tag, into `received`. */
    static DefaultMQPushConsumer consumer(RingmqCompat.Args a, String group, String instance,
            Received received) throws Exception {
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), group, instance, "*",
                received.listener(instance));
        consumer.start();
        return consumer;
    }

    /** A plain message the consumer must get first: the topic exists, the consumer holds it. */
    static Sent warmUp(DefaultMQProducer producer, RingmqCompat.Args a, Received received)
            throws Exception {
        Message msg = Sent.make(a.topic(), "warm-up", 0, "TagA", false);
        // a broker may register with the NameServer seconds after it booted (Apache 5.x):
        // until then the producer finds no route for the new topic
        long deadline = System.currentTimeMillis() + WAIT_MS;
        SendResult result = null;
        while (result == null) {
            try {
                result = producer.send(msg);
            } catch (MQClientException e) {
                if (System.currentTimeMillis() >= deadline) {
                    throw new Check.Abort("no route to send " + a.topic() + ": " + e);
                }
                Thread.sleep(Check.POLL_MS);
            }
        }
        Check.equal(SendStatus.SEND_OK, result.getSendStatus(), "send warm-up");
        Sent sent = Sent.of("warm-up", msg, result);
        received.awaitAll("a plain message first", List.of(sent), WAIT_MS);
        return sent;
    }

    static SendResult sendOk(DefaultMQProducer producer, Message msg) throws Exception {
        SendResult result = producer.send(msg);
        Check.equal(SendStatus.SEND_OK, result.getSendStatus(), "send " + msg.getUserProperty("how"));
        return result;
    }

    /**
     * Sends {@link #PER_KIND} timers of `kind`, `set` asking for `delayMs` ahead (relative
     * ones from the broker's receipt, so between the send's start and its answer).
     */
    static List<Timed> send(DefaultMQProducer producer, String topic, String kind, int count,
            long delayMs, boolean absolute, Consumer<Message> set) throws Exception {
        List<Timed> sent = new ArrayList<>();
        for (int seq = 0; seq < count; seq++) {
            Message msg = Sent.make(topic, kind, seq, "TagA", false);
            long start = System.currentTimeMillis();
            long at = start + delayMs;
            if (absolute) {
                msg.setDeliverTimeMs(at);
            } else {
                set.accept(msg);
            }
            SendResult result = sendOk(producer, msg);
            long returned = System.currentTimeMillis();
            // delivered as a new message: same id and content, its own queue and offset
            Sent s = Sent.of(kind, msg, result).retried();
            sent.add(new Timed(kind, s, at, absolute ? at : returned + delayMs));
        }
        return sent;
    }

    /** Each of `due` arrived once, intact, not early, not late; prints the delivery error. */
    static void checkTimes(String topic, Received received, List<Timed> due, long lateMs,
            boolean duplicatesAllowed) {
        received.checkIntact(topic, due.stream().map(Timed::sent).toList(), duplicatesAllowed);
        List<String> early = new ArrayList<>();
        List<String> late = new ArrayList<>();
        for (String kind : due.stream().map(Timed::kind).distinct().toList()) {
            long min = Long.MAX_VALUE;
            long max = Long.MIN_VALUE;
            long sum = 0;
            int n = 0;
            for (Timed t : due.stream().filter(t -> t.kind().equals(kind)).toList()) {
                long at = received.of(t.sent().msgId()).get(0).atMs();
                if (at < t.earliestMs()) {
                    early.add(t.sent() + " " + (t.earliestMs() - at) + " ms early");
                }
                if (at > t.latestMs() + lateMs) {
                    late.add(t.sent() + " " + (at - t.latestMs()) + " ms after its time");
                }
                long error = at - t.latestMs();
                min = Math.min(min, error);
                max = Math.max(max, error);
                sum += error;
                n++;
            }
            Check.info("delivery error " + kind + " (arrival - asked time, " + n
                    + " messages): min " + min + " ms, mean " + sum / n + " ms, max " + max
                    + " ms");
        }
        Check.equal(List.of(), early, "timers delivered before their time");
        Check.equal(List.of(), late, "timers delivered later than " + lateMs + " ms after");
    }

    /** The topic's queues hold `expected` messages: the far timers are in none of them. */
    static void checkQueuesHold(DefaultMQProducer producer, String topic, long expected)
            throws Exception {
        Check.equal(expected, queued(producer, topic),
                "messages in " + topic + "'s queues (no far timer)");
    }

    static long queued(DefaultMQProducer producer, String topic) throws Exception {
        long total = 0;
        for (MessageQueue mq : producer.fetchPublishMessageQueues(topic)) {
            total += producer.maxOffset(mq);
        }
        return total;
    }

    /** The broker's timerPrecisionMs (--precision-ms). */
    static long precisionMs(RingmqCompat.Args a) {
        return Long.parseLong(a.options().getOrDefault("--precision-ms", DEFAULT_PRECISION_MS));
    }

    /** `timer`. */
    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Received received = new Received();
        DefaultMQPushConsumer consumer = consumer(a, a.group(), "consumer", received);
        Sent first = warmUp(producer, a, received);
        List<Timed> due = new ArrayList<>();
        due.addAll(send(producer, a.topic(), "delay-sec-1", PER_KIND, 1_000, false,
                m -> m.setDelayTimeSec(1)));
        due.addAll(send(producer, a.topic(), "delay-ms-5000", PER_KIND, 5_000, false,
                m -> m.setDelayTimeMs(5_000)));
        due.addAll(send(producer, a.topic(), "deliver-at-5s", PER_KIND, 5_000, true, null));
        List<Timed> far = send(producer, a.topic(), "deliver-at-1h", PER_KIND, FAR_MS, true,
                null);
        received.awaitAll("1 s and 5 s timers", due.stream().map(Timed::sent).toList(), WAIT_MS);
        // a timer is due at the end of its precision slot
        checkTimes(a.topic(), received, due, precisionMs(a) + SLACK_MS, false);
        checkQueuesHold(producer, a.topic(), 1 + due.size());
        long farDelivered = far.stream()
                .filter(t -> !received.of(t.sent().msgId()).isEmpty()).count();
        Check.equal(0L, farDelivered, "timers an hour ahead delivered");
        received.checkIntact(a.topic(), List.of(first.retried()), false);
        consumer.shutdown();
        producer.shutdown();
    }

    /** `timer-restart-phase1 --state FILE`. */
    static void restartPhase1(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer-1");
        Received received = new Received();
        DefaultMQPushConsumer consumer = consumer(a, a.group(), "consumer-1", received);
        warmUp(producer, a, received);
        ArrayList<Timed> due = new ArrayList<>(send(producer, a.topic(), "delay-sec-20", PER_KIND,
                RESTART_DELAY_MS, false, m -> m.setDelayTimeSec(RESTART_DELAY_MS / 1000)));
        ArrayList<Timed> far = new ArrayList<>(send(producer, a.topic(), "deliver-at-1h", 1,
                FAR_MS, true, null));
        checkQueuesHold(producer, a.topic(), 1);
        try (ObjectOutputStream out =
                new ObjectOutputStream(Files.newOutputStream(Path.of(a.state())))) {
            out.writeObject(new State(due, far));
        }
        consumer.shutdown();
        producer.shutdown();
    }

    /** `timer-restart-phase2 --state FILE`, after the broker was stopped and restarted. */
    static void restartPhase2(RingmqCompat.Args a) throws Exception {
        State state;
        try (ObjectInputStream in =
                new ObjectInputStream(Files.newInputStream(Path.of(a.state())))) {
            state = (State) in.readObject();
        }
        DefaultMQProducer producer = Clients.producer(a, "producer-2");
        Received received = new Received();
        // a group of its own, from the first offset: every delivery since the queues began
        DefaultMQPushConsumer consumer = consumer(a, a.group() + "-after", "consumer-2",
                received);
        List<Sent> due = state.due().stream().map(Timed::sent).toList();
        received.awaitAll("20 s timers pending over the restart", due, WAIT_MS);
        // the restart itself may hold a due timer up: only "not early" is bounded tightly
        checkTimes(a.topic(), received, state.due(), WAIT_MS, a.crash());
        if (a.crash()) {
            // repeats are allowed; the far timer still in no queue: as many as were delivered
            long delivered = due.stream().mapToLong(s -> received.of(s.msgId()).size()).sum();
            Check.info("timers delivered again after the kill: " + (delivered - due.size()));
            checkQueuesHold(producer, a.topic(), 1 + delivered);
        } else {
            checkQueuesHold(producer, a.topic(), 1 + due.size());
        }
        long farDelivered = state.far().stream()
                .filter(t -> !received.of(t.sent().msgId()).isEmpty()).count();
        Check.equal(0L, farDelivered, "the timer an hour ahead delivered");
        consumer.shutdown();
        producer.shutdown();
    }
}

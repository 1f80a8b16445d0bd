import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;

/**
 * Delay levels as a producer uses them (Message.setDelayTimeLevel):
 * - delay-level: level 2 messages reach a waiting consumer 5 ± 1 s after their send returned,
 *   intact;
 * - delay-restart-phase1 / -phase2: level 4 (30 s) messages still pending when the broker is
 *   stopped (SIGTERM) and started again are delivered after the restart, once each, intact,
 *   and not before their delay.
 */
final class Delays {
    /** The level delay-level sends at: 5 s in the default messageDelayLevel. */
    static final int LEVEL = 2;
    static final long LEVEL_DELAY_MS = 5_000;
    /**
     * The bound: delivered 5 ± 1 s after the send, measured from the send's return to
     * the listener's call.
     */
    static final long LEVEL_SLACK_MS = 1_000;
    /** The level of the messages across the restart: 30 s outlasts a stop and a start. */
    static final int RESTART_LEVEL = 4;
    static final long RESTART_LEVEL_DELAY_MS = 30_000;
    /** Messages per run. */
    static final int MESSAGES = 8;

    private Delays() {
    }

    /** A sent message and when its send returned. */
    record Timed(Sent sent, long sentAtMs) implements java.io.Serializable {
    }

    static void level(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "consumer",
                ProduceConsume.SUBSCRIPTION, received.listener("consumer"));
        consumer.start();
        // The consumer's pulls wait at every queue before anything is sent, so a delivery's
        // time is the broker's, not the client's start-up.
        Check.until("consumer holds all " + Clients.QUEUES + " queues", Clients.WAIT_MS,
                () -> Clients.assigned(consumer, a.topic()).size() == Clients.QUEUES);
        List<Timed> sent = sendDelayed(producer, a.topic(), "delay-2", LEVEL);
        received.awaitAll("level " + LEVEL + " messages", sent.stream().map(Timed::sent).toList(),
                ProduceConsume.DELIVERY_WAIT_MS);
        checkDelivered(a.topic(), received, sent, LEVEL_DELAY_MS, LEVEL_DELAY_MS + LEVEL_SLACK_MS,
                LEVEL_SLACK_MS);
        consumer.shutdown();
        producer.shutdown();
    }

    static void restartPhase1(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer-1");
        Clients.createTopic(producer, a.topic());
        ArrayList<Timed> sent = new ArrayList<>(
                sendDelayed(producer, a.topic(), "delay-restart", RESTART_LEVEL));
        // Nothing has reached the topic's queues yet: the messages are pending in the schedule.
        Map<Integer, Long> max = Clients.maxOffsets(producer, a.topic());
        long stored = max.values().stream().mapToLong(Long::longValue).sum();
        Check.equal(0L, stored, "messages in the topic's queues before the restart " + max);
        producer.shutdown();
        try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(state(a)))) {
            out.writeObject(sent);
        }
    }

    @SuppressWarnings("unchecked")
    static void restartPhase2(RingmqCompat.Args a) throws Exception {
        ArrayList<Timed> sent;
        try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(state(a)))) {
            sent = (ArrayList<Timed>) in.readObject();
        }
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "consumer-2",
                ProduceConsume.SUBSCRIPTION, received.listener("consumer-2"));
        consumer.start();
        received.awaitAll("level " + RESTART_LEVEL + " messages sent before the restart",
                sent.stream().map(Timed::sent).toList(), ProduceConsume.DELIVERY_WAIT_MS);
        checkDelivered(a.topic(), received, sent, RESTART_LEVEL_DELAY_MS, Long.MAX_VALUE,
                LEVEL_SLACK_MS);
        consumer.shutdown();
    }

    /** `MESSAGES` sync sends at `level`, each with the time its send returned. */
    private static List<Timed> sendDelayed(DefaultMQProducer producer, String topic, String how,
            int level) throws Exception {
        List<Timed> sent = new ArrayList<>();
        for (int seq = 0; seq < MESSAGES; seq++) {
            Message msg = Sent.make(topic, how, seq, ProduceConsume.tag(seq), false);
            msg.setDelayTimeLevel(level);
            Sent s = Sent.of(how, msg, ProduceConsume.sendOk(producer, msg));
            sent.add(new Timed(s, System.currentTimeMillis()));
        }
        Check.info(MESSAGES + " level " + level + " sends answered SEND_OK");
        return sent;
    }

    /**
     * Each message delivered once, intact, between `earliestMs - slackMs` and `latestMs` after
     * its send returned (the slack covers the send's own round trip: the broker counts the
     * delay from its store time, before the answer reached the producer).
     */
    private static void checkDelivered(String topic, Received received, List<Timed> sent,
            long earliestMs, long latestMs, long slackMs) {
        List<String> diffs = new ArrayList<>();
        long soonest = Long.MAX_VALUE;
        long latest = 0;
        for (Timed t : sent) {
            List<Received.Delivery> got = received.of(t.sent().msgId());
            if (got.size() != 1) {
                diffs.add(t.sent() + ": delivered " + got.size() + " times");
            }
            t.sent().retried().mismatches(topic, got.get(0).msg())
                    .forEach(d -> diffs.add(t.sent() + ": " + d));
            long after = got.get(0).atMs() - t.sentAtMs();
            soonest = Math.min(soonest, after);
            latest = Math.max(latest, after);
        }
        Check.equal(List.of(), diffs, sent.size() + " delayed messages delivered once, intact");
        Check.that(soonest >= earliestMs - slackMs && latest <= latestMs, "delivered "
                + soonest + ".." + latest + " ms after the send returned, within "
                + (earliestMs - slackMs) + ".." + (latestMs == Long.MAX_VALUE ? "" : latestMs));
    }

    private static Path state(RingmqCompat.Args a) {
        if (a.state() == null) {
            throw new Check.Abort("delay-restart phases need --state FILE");
        }
        return Path.of(a.state());
    }
}

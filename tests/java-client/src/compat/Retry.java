import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A push consumer answering RECONSUME_LATER (leaving the delay to the broker) gets each message
 * again through its group's retry topic (CONSUMER_SEND_MSG_BACK; the broker picks delay level
 * 3 + reconsumeTimes = 3, 10 s): same msgId, body, keys, tags and user properties, the
 * original topic, reconsumeTimes 1; and not a third time once it succeeds.
 */
final class Retry {
    /** 0: the listener leaves the delay level to the broker (the context's default). */
    static final int DELAY_LEVEL = 0;
    /** Level 3's delay (the broker's choice for a first retry): no redelivery may come sooner. */
    static final long DELAY_MS = 10_000;
    /**
     * Level 4's delay: a redelivery later than this was scheduled at a later level than 3.
     * The 20 s between the two is the room a loaded host gets.
     */
    static final long NEXT_LEVEL_DELAY_MS = 30_000;
    /** Messages sent, each consumed twice. */
    static final int MESSAGES = 8;

    private Retry() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "consumer",
                ProduceConsume.SUBSCRIPTION,
                received.listenerRetryingOnce("consumer", DELAY_LEVEL));
        consumer.start();
        List<Sent> sent = ProduceConsume.sendSync(producer, a.topic(), "retry", MESSAGES);
        received.awaitDeliveries("messages asked for again", sent, 2,
                ProduceConsume.DELIVERY_WAIT_MS);
        int firstIntact = 0;
        int retryIntact = 0;
        long soonestMs = Long.MAX_VALUE;
        long latestMs = 0;
        for (Sent s : sent) {
            List<Received.Delivery> got = received.of(s.msgId());
            MessageExt first = got.get(0).msg();
            MessageExt again = got.get(1).msg();
            // The broker stores the retry copy once the delay has passed (Apache keeps it in
            // SCHEDULE_TOPIC_XXXX until then), so its store time says whether it waited.
            soonestMs = Math.min(soonestMs, again.getStoreTimestamp() - got.get(0).atMs());
            latestMs = Math.max(latestMs, got.get(1).atMs() - got.get(0).atMs());
            List<String> diffs = s.mismatches(a.topic(), first);
            if (diffs.isEmpty()) {
                firstIntact++;
            } else {
                Check.that(false, s + " first delivery: " + diffs);
            }
            List<String> retryDiffs = s.retried().mismatches(a.topic(), again);
            if (again.getReconsumeTimes() != 1) {
                retryDiffs.add("reconsumeTimes: expected 1, got " + again.getReconsumeTimes());
            }
            String retryTopic = again.getProperty(MessageConst.PROPERTY_RETRY_TOPIC);
            if (!a.topic().equals(retryTopic)) {
                // set by the broker's CONSUMER_SEND_MSG_BACK (or the client's fallback send);
                // absent when the client only re-ran the message locally
                retryDiffs.add("RETRY_TOPIC property: expected " + a.topic() + ", got "
                        + retryTopic);
            }
            if (retryDiffs.isEmpty()) {
                retryIntact++;
            } else {
                Check.that(false, s + " redelivery: " + retryDiffs);
            }
        }
        Check.equal(MESSAGES, firstIntact, "first deliveries intact");
        Check.equal(MESSAGES, retryIntact, "redeliveries intact, from the retry topic");
        Check.that(soonestMs >= DELAY_MS, "retry copies stored " + DELAY_MS + " ms (delay level"
                + " 3) or more after the first delivery; the soonest after " + soonestMs + " ms");
        Check.that(latestMs < NEXT_LEVEL_DELAY_MS, "retries delivered before level 4's "
                + NEXT_LEVEL_DELAY_MS + " ms; the latest after " + latestMs + " ms");
        Map<Integer, Long> max = Clients.maxOffsets(producer, a.topic());
        Check.until("consumer consumed to the end of every queue", Clients.WAIT_MS,
                () -> Clients.caughtUp(consumer, a.topic(), max),
                () -> "max " + max + ", consumer offsets " + Clients.offsets(consumer, a.topic()));
        long third = sent.stream().filter(s -> received.of(s.msgId()).size() > 2).count();
        Check.equal(0L, third, "messages delivered a third time after succeeding");
        consumer.shutdown();
        producer.shutdown();
    }
}

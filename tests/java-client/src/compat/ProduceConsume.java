import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Sync, async, oneway and batch sends, then one clustering push consumer subscribed to
 * "TagA || TagB" receives each of them exactly once, intact, and none of the TagC ones.
 */
final class ProduceConsume {
    /** Messages sent per send kind (sync, async, oneway, batch) in the scenarios. */
    static final int PER_KIND = 16;
    /** Messages with a tag the consumer does not subscribe to. */
    static final int FILTERED = 8;
    /** Bound on waiting for every message to be delivered. */
    static final long DELIVERY_WAIT_MS = 90_000;
    /** Messages looked up by id and key after consumption (the first is the large one). */
    static final int LOOKUPS = 4;
    /** At most this many messages per lookup answer; a key names one message here. */
    static final int LOOKUP_RESULTS_MAX = 32;
    /** The consumer's subscription; sends alternate between its two tags. */
    static final String SUBSCRIPTION = "TagA || TagB";

    private ProduceConsume() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer =
                Clients.push(a, a.topic(), a.group(), "consumer", SUBSCRIPTION,
                        received.listener("consumer"));
        consumer.start();

        List<Sent> expected = new ArrayList<>();
        expected.addAll(sendSync(producer, a.topic(), "sync", PER_KIND));
        expected.addAll(sendAsync(producer, a.topic(), PER_KIND));
        expected.addAll(sendOneway(producer, a.topic(), PER_KIND));
        expected.addAll(sendBatch(producer, a.topic(), PER_KIND));
        List<Sent> filtered = new ArrayList<>();
        for (int seq = 0; seq < FILTERED; seq++) {
            Message msg = Sent.make(a.topic(), "filtered", seq, "TagC", false);
            filtered.add(Sent.of("filtered", msg, sendOk(producer, msg)));
        }

        received.awaitAll("sync, async, oneway and batch messages", expected, DELIVERY_WAIT_MS);
        Check.until("consumer holds all " + Clients.QUEUES + " queues", Clients.WAIT_MS,
                () -> Clients.assigned(consumer, a.topic()).size() == Clients.QUEUES);
        Map<Integer, Long> max = Clients.maxOffsets(producer, a.topic());
        Check.equal((long) expected.size() + FILTERED,
                max.values().stream().mapToLong(Long::longValue).sum(),
                "messages stored in the topic's queues");
        // Once the consumer is past the end of every queue, any TagC delivery has happened.
        Check.until("consumer consumed to the end of every queue", Clients.WAIT_MS,
                () -> Clients.caughtUp(consumer, a.topic(), max),
                () -> "max " + max + ", consumer offsets " + Clients.offsets(consumer, a.topic()));
        received.checkIntact(a.topic(), expected, false);
        long filteredDelivered = filtered.stream()
                .filter(s -> !received.of(s.msgId()).isEmpty()).count();
        Check.equal(0L, filteredDelivered, "TagC messages delivered to a TagA || TagB consumer");
        Check.equal(expected.size(), received.all().size(), "distinct messages delivered");
        checkLookups(producer, a.topic(), expected.subList(0, LOOKUPS));

        consumer.shutdown();
        producer.shutdown();
    }

    /**
     * The client's lookups find each of `sent` intact: by offsetMsgId (VIEW_MESSAGE_BY_ID), by
     * key and by the client's msgId (QUERY_MESSAGE on the broker's index).
     */
    static void checkLookups(DefaultMQProducer producer, String topic, List<Sent> sent)
            throws Exception {
        List<String> diffs = new ArrayList<>();
        for (Sent s : sent) {
            Sent stored = s.lookedUp();
            // by offsetMsgId (4.9.8 also has a one-argument form, 5.x only this one)
            MessageExt viewed = producer.viewMessage(topic, s.offsetMsgId());
            stored.mismatches(topic, viewed)
                    .forEach(d -> diffs.add("view " + s.msgId() + ": " + d));
            String key = s.keys().split(" ")[0];
            List<MessageExt> byKey = producer.queryMessage(topic, key, LOOKUP_RESULTS_MAX, 0,
                    Long.MAX_VALUE).getMessageList();
            if (byKey.size() != 1) {
                diffs.add("query by key " + key + ": " + byKey.size() + " messages, expected 1");
            } else {
                stored.mismatches(topic, byKey.get(0))
                        .forEach(d -> diffs.add("key " + key + ": " + d));
            }
            MessageExt byId = producer.getDefaultMQProducerImpl()
                    .queryMessageByUniqKey(topic, s.msgId());
            if (byId == null) {
                diffs.add("query by msgId " + s.msgId() + ": not found");
            } else {
                stored.mismatches(topic, byId)
                        .forEach(d -> diffs.add("id " + s.msgId() + ": " + d));
            }
        }
        Check.equal(List.of(), diffs, sent.size() + " messages looked up by offsetMsgId, key and"
                + " msgId");
    }

    /** Sends and checks the answer is SEND_OK. */
    static SendResult sendOk(DefaultMQProducer producer, Message msg) throws Exception {
        SendResult result = producer.send(msg);
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            Check.that(false, "send answered " + result);
        }
        return result;
    }

    /** `count` sync sends alternating TagA and TagB; the first has a large (compressed) body. */
    static List<Sent> sendSync(DefaultMQProducer producer, String topic, String how, int count)
            throws Exception {
        List<Sent> sent = new ArrayList<>();
        for (int seq = 0; seq < count; seq++) {
            Message msg = Sent.make(topic, how, seq, tag(seq), seq == 0);
            sent.add(Sent.of(how, msg, sendOk(producer, msg)));
        }
        Check.info(count + " " + how + " sends answered SEND_OK");
        return sent;
    }

    static List<Sent> sendAsync(DefaultMQProducer producer, String topic, int count)
            throws Exception {
        List<Message> msgs = new ArrayList<>();
        for (int seq = 0; seq < count; seq++) {
            msgs.add(Sent.make(topic, "async", seq, tag(seq), false));
        }
        List<String> failures = new ArrayList<>();
        List<Sent> sent = new ArrayList<>();
        Clients.sendAsync(producer, msgs, result -> result.getSendStatus() == SendStatus.SEND_OK,
                failures, DELIVERY_WAIT_MS)
                .forEach(answer -> sent.add(Sent.of("async", answer.msg(), answer.result())));
        Check.equal(List.of(), failures, "async sends that failed");
        return sent;
    }

    static List<Sent> sendOneway(DefaultMQProducer producer, String topic, int count)
            throws Exception {
        List<Sent> sent = new ArrayList<>();
        for (int seq = 0; seq < count; seq++) {
            Message msg = Sent.make(topic, "oneway", seq, tag(seq), false);
            producer.sendOneway(msg);
            sent.add(Sent.oneway(msg));
        }
        return sent;
    }

    /** Two batches of `count / 2` messages each (a batch goes to one queue). */
    static List<Sent> sendBatch(DefaultMQProducer producer, String topic, int count)
            throws Exception {
        List<Sent> sent = new ArrayList<>();
        for (int batch = 0; batch < 2; batch++) {
            List<Message> msgs = new ArrayList<>();
            for (int i = 0; i < count / 2; i++) {
                int seq = batch * (count / 2) + i;
                msgs.add(Sent.make(topic, "batch", seq, tag(seq), false));
            }
            SendResult result = producer.send(msgs);
            Check.equal(SendStatus.SEND_OK, result.getSendStatus(), "batch " + batch + " status");
            sent.addAll(Sent.batch(msgs, result));
        }
        return sent;
    }

    static String tag(int seq) {
        return seq % 2 == 0 ? "TagA" : "TagB";
    }
}

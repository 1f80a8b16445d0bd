import java.text.SimpleDateFormat;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageDecoder;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A topic whose first commit-log segments retention removed, against a broker configured to
 * remove every sealed segment (fileReservedTime=0, small segments; ringmq removes them as they
 * expire, Apache at its deleteWhen hours, set to every hour): new groups with each
 * CONSUME_FROM_* and a group whose committed offset fell below the min offset.
 *
 * <ol>
 * <li>A group consumes the first 2 messages of each queue and stops (committed offset 2).</li>
 * <li>Messages A are sent until every commit log (one per ringmq shard, told apart by the high
 * bits of the offsetMsgId's physical offset) has sealed two or more segments and has just
 * begun a new one; the broker removes the sealed ones: each queue's min offset becomes that of
 * its first message in the active segment (waited for, and exactly that).</li>
 * <li>Messages B are sent a whole second later, then new groups start: FIRST, LAST, TIMESTAMP
 * (the second B began) and TIMESTAMP an hour ago (before anything retained), and the lagging
 * group again; once LAST has its start offsets, messages C are sent.</li>
 * </ol>
 * Then, as against Apache: FIRST gets the retained A, B and C (its pull at 0 is moved to the
 * min); LAST exactly C; TIMESTAMP exactly B and C; the old TIMESTAMP and the lagging group (moved
 * from 2 to the min: OFFSET_TOO_SMALL) the retained A, B and C; nobody anything removed.
 */
final class Retention {
    /** Sent to each queue of the lagging group before the removals. */
    static final int EARLY_PER_QUEUE = 2;
    /** Body size of the A messages, to fill segments with few sends. */
    static final int BODY_BYTES = 1000;
    /** Sends of A at most (~1.1 KB each): far more than 3 segments of 128 KiB on each of 2 logs. */
    static final int FILL_SENDS_MAX = 4000;
    /** Segments each log must have sealed before A stops. */
    static final int SEALED_MIN = 2;
    /** B and C messages each: together far below a quarter segment per log. */
    static final int LATER = 20;
    /** Bound on the removals after A (ringmq: about a second; Apache: cleanResourceInterval). */
    static final long REMOVAL_WAIT_MS = 90_000;

    private Retention() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        long segment = Long.parseLong(a.option("--segment-bytes"));
        Check.that(segment > 0, "--segment-bytes given: " + segment);
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        List<MessageQueue> queues = Clients.writeQueues(producer, a.topic());

        String lagging = a.group() + "_lagging";
        Received early = new Received();
        DefaultMQPushConsumer first = Clients.push(a, a.topic(), lagging, "lagging-1", "*",
                early.listener("lagging-1"));
        first.start();
        Check.until("the lagging group holds every queue", Clients.WAIT_MS,
                () -> Clients.assigned(first, a.topic()).size() == queues.size());
        List<Sent> earlySent = new ArrayList<>();
        for (MessageQueue mq : queues) {
            for (int i = 0; i < EARLY_PER_QUEUE; i++) {
                earlySent.add(send(producer, mq, "early", earlySent.size()));
            }
        }
        early.awaitAll("early messages to the lagging group", earlySent,
                ProduceConsume.DELIVERY_WAIT_MS);
        Map<Integer, Long> earlyMax = Clients.maxOffsets(producer, a.topic());
        Check.until("the lagging group committed " + EARLY_PER_QUEUE + " on every queue",
                Clients.WAIT_MS,
                () -> committed(producer, a.topic(), lagging).equals(earlyMax));
        first.shutdown();

        List<Sent> fill = fill(producer, a.topic(), segment);
        Map<Integer, Long> expectedMin = expectedMin(fill, segment);
        Check.info("expected min offsets after the removals " + expectedMin);
        Check.until("the broker removed every sealed segment: min offsets " + expectedMin,
                REMOVAL_WAIT_MS, () -> minOffsets(producer, queues).equals(expectedMin),
                () -> "(now " + minOffsets(producer, queues) + ")");
        for (MessageQueue mq : queues) {
            Check.that(expectedMin.get(mq.getQueueId()) > EARLY_PER_QUEUE,
                    mq.getQueueId() + ": the lagging group's offset fell below the min");
        }
        Map<Integer, Sent> firstRetained = firstRetained(fill, expectedMin);
        for (MessageQueue mq : queues) {
            Sent head = firstRetained.get(mq.getQueueId());
            MessageExt stored = producer.viewMessage(a.topic(), head.offsetMsgId());
            Check.equal(stored.getStoreTimestamp(), producer.earliestMsgStoreTime(mq),
                    mq.getQueueId() + " earliest store time is its first retained message's");
        }
        Check.info("searchOffset(0) " + queues.stream().map(mq -> {
            try {
                return mq.getQueueId() + "=" + producer.searchOffset(mq, 0);
            } catch (Exception e) {
                return mq.getQueueId() + "=" + e;
            }
        }).collect(Collectors.joining(" ")) + " (Apache may answer its first file's start)");

        // B from a whole second on (consumeTimestamp has a resolution of one second).
        long bSecond = (System.currentTimeMillis() / 1000 + 1) * 1000;
        Thread.sleep(Math.max(0, bSecond - System.currentTimeMillis()) + 1);
        List<Sent> b = sendLater(producer, queues, "b");
        String bTimestamp = new SimpleDateFormat("yyyyMMddHHmmss").format(new Date(bSecond));
        String hourAgo = new SimpleDateFormat("yyyyMMddHHmmss")
                .format(new Date(System.currentTimeMillis() - 3_600_000));

        Map<String, Received> got = new LinkedHashMap<>();
        Map<String, DefaultMQPushConsumer> consumers = new LinkedHashMap<>();
        for (String name : List.of("first", "last", "timestamp", "old-timestamp", "lagging")) {
            Received received = new Received();
            String group = name.equals("lagging") ? lagging : a.group() + "_" + name;
            DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), group, name, "*",
                    received.listener(name));
            switch (name) {
                case "first" -> consumer.setConsumeFromWhere(
                        ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
                case "last" -> consumer.setConsumeFromWhere(
                        ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
                case "timestamp", "old-timestamp" -> {
                    consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_TIMESTAMP);
                    consumer.setConsumeTimestamp(name.equals("timestamp") ? bTimestamp : hourAgo);
                }
                default -> {
                }
            }
            consumer.start();
            got.put(name, received);
            consumers.put(name, consumer);
        }
        // A consumer computes a queue's start offset (LAST: the max offset then) before it
        // holds the queue.
        DefaultMQPushConsumer last = consumers.get("last");
        Check.until("CONSUME_FROM_LAST_OFFSET holds every queue (its start offsets are set)",
                Clients.WAIT_MS, () -> Clients.assigned(last, a.topic()).size()
                        == queues.size());
        List<Sent> c = sendLater(producer, queues, "c");

        List<Sent> retainedA = fill.stream()
                .filter(s -> s.queueOffset() >= expectedMin.get(s.queueId()))
                .toList();
        Map<String, List<Sent>> expected = new LinkedHashMap<>();
        expected.put("first", concat(retainedA, b, c));
        expected.put("last", c);
        expected.put("timestamp", concat(b, c));
        expected.put("old-timestamp", concat(retainedA, b, c));
        expected.put("lagging", concat(retainedA, b, c));
        Map<Integer, Long> max = Clients.maxOffsets(producer, a.topic());
        for (Map.Entry<String, List<Sent>> e : expected.entrySet()) {
            String name = e.getKey();
            Received received = got.get(name);
            received.awaitAll(name + " group", e.getValue(), ProduceConsume.DELIVERY_WAIT_MS);
            Check.until(name + " group consumed to the end of every queue",
                    Clients.WAIT_MS,
                    () -> Clients.caughtUp(consumers.get(name), a.topic(), max),
                    () -> "consumer offsets " + Clients.offsets(consumers.get(name), a.topic()));
            received.checkIntact(a.topic(), e.getValue(), true);
            Set<String> want = e.getValue().stream().map(Sent::msgId)
                    .collect(Collectors.toCollection(TreeSet::new));
            Set<String> extra = new TreeSet<>(received.all().keySet());
            extra.removeAll(want);
            Check.equal(Set.of(), extra, name + " group got no message beyond " + want.size());
        }
        for (DefaultMQPushConsumer consumer : consumers.values()) {
            consumer.shutdown();
        }
        producer.shutdown();
    }

    /** One message of `how` number `seq` to queue `mq`, with a body of {@link #BODY_BYTES}. */
    private static Sent send(DefaultMQProducer producer, MessageQueue mq, String how, int seq)
            throws Exception {
        Message msg = Sent.make(mq.getTopic(), how, seq, "TagA", false);
        byte[] body = new byte[BODY_BYTES];
        for (int i = 0; i < body.length; i++) {
            body[i] = (byte) (i * 131 + seq * 7 + how.hashCode());
        }
        msg.setBody(body);
        SendResult result = producer.send(msg, mq);
        if (result.getSendStatus() != SendStatus.SEND_OK) {
            Check.that(false, "send answered " + result);
        }
        return Sent.of(how, msg, result);
    }

    /**
     * Messages A, over the queues in turn, until every log (by its high offset bits) has
     * sealed {@link #SEALED_MIN} segments, the whole last round over the queues lies in each
     * log's newest segment (so every queue keeps a message: its min offset is that message's,
     * not its end) and each log's last message lies in the first quarter of that segment (so
     * B and C fit in it and nothing more is removed).
     */
    private static List<Sent> fill(DefaultMQProducer producer, String topic, long segment)
            throws Exception {
        List<MessageQueue> queues = Clients.writeQueues(producer, topic);
        List<Sent> sent = new ArrayList<>();
        Map<Long, Long> lastLocal = new TreeMap<>();
        Map<Long, Long> roundFirstSegment = new TreeMap<>();
        for (int seq = 0; seq < FILL_SENDS_MAX; seq++) {
            if (seq % queues.size() == 0) {
                roundFirstSegment.clear();
            }
            Sent s = send(producer, queues.get(seq % queues.size()), "a", seq);
            sent.add(s);
            long physical = physical(s);
            long local = physical & ((1L << 48) - 1);
            lastLocal.put(physical >>> 48, local);
            roundFirstSegment.putIfAbsent(physical >>> 48, local / segment);
            boolean done = seq % queues.size() == queues.size() - 1 && lastLocal.entrySet()
                    .stream().allMatch(e -> {
                        long l = e.getValue();
                        return l / segment >= SEALED_MIN && l % segment < segment / 4
                                && roundFirstSegment.get(e.getKey()) == l / segment;
                    });
            if (done) {
                Check.info(sent.size() + " messages A; last local offset per log " + lastLocal);
                return sent;
            }
        }
        throw new Check.Abort("the logs did not reach a new segment in " + FILL_SENDS_MAX
                + " sends: " + lastLocal);
    }

    /** Per queue, the queue offset of its first message A in its log's last segment. */
    private static Map<Integer, Long> expectedMin(List<Sent> fill, long segment) {
        Map<Long, Long> activeStart = new HashMap<>();
        for (Sent s : fill) {
            long physical = physical(s);
            long local = physical & ((1L << 48) - 1);
            activeStart.merge(physical >>> 48, local - local % segment, Math::max);
        }
        Map<Integer, Long> min = new TreeMap<>();
        for (Sent s : fill) {
            long physical = physical(s);
            long local = physical & ((1L << 48) - 1);
            if (local >= activeStart.get(physical >>> 48)) {
                min.merge(s.queueId(), s.queueOffset(), Math::min);
            }
        }
        return min;
    }

    private static Map<Integer, Sent> firstRetained(List<Sent> fill, Map<Integer, Long> min) {
        Map<Integer, Sent> first = new TreeMap<>();
        for (Sent s : fill) {
            int key = s.queueId();
            if (s.queueOffset() == min.get(key)) {
                first.put(key, s);
            }
        }
        return first;
    }

    private static long physical(Sent s) {
        try {
            return MessageDecoder.decodeMessageId(s.offsetMsgId()).getOffset();
        } catch (Exception e) {
            throw new Check.Abort("offsetMsgId " + s.offsetMsgId() + " does not decode: " + e);
        }
    }

    private static List<Sent> sendLater(DefaultMQProducer producer, List<MessageQueue> queues,
            String how) throws Exception {
        List<Sent> sent = new ArrayList<>();
        for (int i = 0; i < LATER; i++) {
            sent.add(send(producer, queues.get(i % queues.size()), how, i));
        }
        Check.info(LATER + " messages " + how.toUpperCase() + " sent");
        return sent;
    }

    private static Map<Integer, Long> minOffsets(DefaultMQProducer producer,
            List<MessageQueue> queues) {
        Map<Integer, Long> min = new TreeMap<>();
        for (MessageQueue mq : queues) {
            try {
                min.put(mq.getQueueId(), producer.minOffset(mq));
            } catch (Exception e) {
                min.put(mq.getQueueId(), -1L);
            }
        }
        return min;
    }

    private static Map<Integer, Long> committed(DefaultMQProducer producer, String topic,
            String group) {
        try {
            return Clients.committed(producer, topic, group);
        } catch (Exception e) {
            return Map.of();
        }
    }

    @SafeVarargs
    private static List<Sent> concat(List<Sent>... lists) {
        List<Sent> all = new ArrayList<>();
        for (List<Sent> list : lists) {
            all.addAll(list);
        }
        return all;
    }
}

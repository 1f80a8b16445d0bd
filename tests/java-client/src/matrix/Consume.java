import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;

/** Push consumer scenarios: tag filter, broadcasting, consume-from, cross-client consume. */
final class Consume {
    /** Messages in the cross-client set (tests/matrix/README.md). */
    static final int CROSS_COUNT = 8;
    /** Subscription of push-tag; its messages cycle through these two tags and TagC. */
    static final String TAGS = "TagA || TagB";

    private Consume() {
    }

    /**
     * A push consumer of env's group (client instance `instance`) consumes env's topic for
     * `subscription` from the first offset: each of `expected` once, intact, and nothing else
     * (it waits until the consumer is past the end of every queue, so late or duplicate
     * deliveries would be seen), then shuts down and the broker has its committed offsets.
     * Returns what it received.
     */
    static Inbox exactlyOnce(Env env, DefaultMQProducer producer, String instance,
            String subscription, List<Expect> expected) throws Exception {
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group(), instance,
                subscription, inbox.listener(instance));
        finishExactlyOnce(env, producer, start(consumer, inbox, expected));
        return inbox;
    }

    /** A started consumer, what it records and what it must get. */
    record Running(DefaultMQPushConsumer consumer, Inbox inbox, List<Expect> expected) {
    }

    static Running start(DefaultMQPushConsumer consumer, Inbox inbox, List<Expect> expected)
            throws Exception {
        consumer.start();
        return new Running(consumer, inbox, expected);
    }

    /** The checks of {@link #exactlyOnce} on a started consumer of env's topic. */
    static void finishExactlyOnce(Env env, DefaultMQProducer producer, Running r)
            throws Exception {
        String instance = r.consumer().getInstanceName();
        r.inbox().awaitAll("messages consumed by " + instance, r.expected(), Clients.WAIT_MS);
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());
        Clients.awaitCaughtUp(r.consumer(), env.topic(), max, Clients.QUEUES);
        r.inbox().checkExactlyOnce("messages to " + instance, env.topic(), r.expected());
        // shutdown commits the offsets (the periodic commit starts only 10 s after start)
        r.consumer().shutdown();
        Clients.awaitCommitted(producer, env.topic(), r.consumer().getConsumerGroup(), max);
    }

    /** push-tag: a `TagA || TagB` consumer gets every TagA and TagB message once, no TagC. */
    static String pushTag(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> wanted = new ArrayList<>();
        String[] tags = {"TagA", "TagB", "TagC"};
        int tagC = 0;
        for (int i = 0; i < env.count(); i++) {
            Message msg = Expect.message(env.topic(), "push-tag", i);
            // The producer goes round the queues: no queue ends with a TagC message, which a
            // consumer moves its offset past only when a long poll there expires (15 s).
            boolean last = i >= env.count() - Clients.QUEUES;
            int tag = last ? i % 2 : i % tags.length;
            msg.setTags(tags[tag]);
            Expect sent = Sends.sendOk(producer, msg);
            if (tag < 2) {
                wanted.add(sent);
            } else {
                tagC++;
            }
        }
        exactlyOnce(env, producer, "consumer", TAGS, wanted);
        producer.shutdown();
        return wanted.size() + " TagA/TagB messages consumed once intact, none of " + tagC
                + " TagC";
    }

    /** broadcast: two BROADCASTING consumers of one group each get every message once. */
    static String broadcast(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> sent = Sends.sendSync(producer, env.topic(), "broadcast", env.count());
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());
        List<Inbox> inboxes = List.of(new Inbox(), new Inbox());
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (int c = 0; c < inboxes.size(); c++) {
            String name = "broadcast-" + c;
            DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group(), name, "*",
                    inboxes.get(c).listener(name));
            Clients.broadcasting(consumer);
            consumer.start();
            consumers.add(consumer);
        }
        for (int c = 0; c < inboxes.size(); c++) {
            String name = consumers.get(c).getInstanceName();
            inboxes.get(c).awaitAll("messages to " + name, sent, Clients.WAIT_MS);
            Clients.awaitCaughtUp(consumers.get(c), env.topic(), max, Clients.QUEUES);
            inboxes.get(c).checkExactlyOnce("messages to " + name, env.topic(), sent);
        }
        consumers.forEach(DefaultMQPushConsumer::shutdown);
        producer.shutdown();
        return "both broadcasting consumers got all " + env.count() + " once, intact";
    }

    /**
     * consume-from: three new groups, CONSUME_FROM_FIRST / LAST / TIMESTAMP (the timestamp
     * after every message already sent). As on Apache RocketMQ 4.9.7 and 5.3.3: a new group's
     * committed offset is answered as 0 while a queue still holds its message 0 (in memory),
     * and a consumer uses a committed offset whatever consume-from says, so all three start
     * at 0 and get the messages sent before they started as well as those sent after.
     */
    static String consumeFrom(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> before = Sends.sendSync(producer, env.topic(), "consume-from", env.count());
        String afterSends = UtilAll.timeMillisToHumanString3(System.currentTimeMillis() + 1000);
        Map<ConsumeFromWhere, String> groups = Map.of(
                ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, env.group(),
                ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, env.group2(),
                ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, env.group() + "-timestamp");
        Map<ConsumeFromWhere, Inbox> inboxes = Map.of(
                ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET, new Inbox(),
                ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET, new Inbox(),
                ConsumeFromWhere.CONSUME_FROM_TIMESTAMP, new Inbox());
        List<DefaultMQPushConsumer> consumers = new ArrayList<>();
        for (var entry : groups.entrySet()) {
            String name = entry.getKey().name();
            DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), entry.getValue(), name,
                    "*", inboxes.get(entry.getKey()).listener(name));
            consumer.setConsumeFromWhere(entry.getKey());
            consumer.setConsumeTimestamp(afterSends);
            consumer.start();
            consumers.add(consumer);
        }
        for (DefaultMQPushConsumer consumer : consumers) {
            Check.until(consumer.getInstanceName() + " holds all " + Clients.QUEUES + " queues",
                    Clients.WAIT_MS, () -> Clients.assigned(consumer, env.topic()).size()
                            == Clients.QUEUES);
        }
        List<Expect> all = new ArrayList<>(before);
        for (int i = env.count(); i < 2 * env.count(); i++) {
            all.add(Sends.sendOk(producer, Expect.message(env.topic(), "consume-from", i)));
        }
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());
        for (DefaultMQPushConsumer consumer : consumers) {
            ConsumeFromWhere from = consumer.getConsumeFromWhere();
            inboxes.get(from).awaitAll(from + " messages", all, Clients.WAIT_MS);
            Clients.awaitCaughtUp(consumer, env.topic(), max, Clients.QUEUES);
            inboxes.get(from).checkExactlyOnce(from + " messages", env.topic(), all);
        }
        consumers.forEach(DefaultMQPushConsumer::shutdown);
        producer.shutdown();
        return "new groups with FIRST, LAST and TIMESTAMP all start at offset 0 (as Apache"
                + " 4.9.7 and 5.3.3 do) and get " + env.count() + " earlier + " + env.count()
                + " later messages once";
    }

    /** The cross-client set: body cross-<i>, tag cross, key cross-key-<i>, matrix-index. */
    static List<Message> crossSet(String topic) {
        List<Message> msgs = new ArrayList<>();
        for (int i = 0; i < CROSS_COUNT; i++) {
            Message msg = new Message(topic, "cross", "cross-key-" + i,
                    ("cross-" + i).getBytes(StandardCharsets.UTF_8));
            msg.putUserProperty(Expect.INDEX, Integer.toString(i));
            msgs.add(msg);
        }
        return msgs;
    }

    /** cross-consume: exactly the peer's 8 cross messages, intact, from the first offset. */
    static String crossConsume(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> expected = crossSet(env.topic()).stream().map(Expect::peer).toList();
        exactlyOnce(env, producer, "consumer", "*", expected);
        producer.shutdown();
        return "the " + CROSS_COUNT + " messages " + env.peer() + " sent, each once intact";
    }
}

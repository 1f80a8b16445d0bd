import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.common.message.Message;

/**
 * Ordered consumption across rebalances: 1 000 messages over 10 order keys (each key on one
 * queue, chosen by a MessageQueueSelector) consumed by two orderly push consumers while a third
 * joins (taking queues over: the old holder must unlock them, UNLOCK_BATCH_MQ, before the new
 * one's LOCK_BATCH_MQ succeeds) and then leaves (unlocking them again). No message of a key may
 * be delivered before every earlier message of that key was; replays (a queue taken over
 * before its holder committed) are reported, as Apache allows them.
 */
final class OrderlyRebalance {
    static final int KEYS = 10;
    static final int MESSAGES = 1_000;
    /**
     * Time the listener takes per message, so consumption is still going on while consumers
     * join and leave (1 000 messages over 4 queues: about 2 s of listening in all).
     */
    static final long LISTEN_MS = 5;

    private OrderlyRebalance() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer first = orderly(a, received, "first");
        DefaultMQPushConsumer second = orderly(a, received, "second");
        first.start();
        second.start();
        Check.until("two consumers hold all " + Clients.QUEUES + " queues", Clients.WAIT_MS,
                () -> Clients.assigned(first, a.topic()).size()
                        + Clients.assigned(second, a.topic()).size() == Clients.QUEUES);

        List<Sent> sent = new ArrayList<>();
        Map<String, int[]> keyStepOf = new HashMap<>();
        int third = MESSAGES / 3;
        send(producer, a.topic(), 0, third, sent, keyStepOf);

        DefaultMQPushConsumer joining = orderly(a, received, "third");
        joining.start();
        Check.until("the third consumer is given queues", Clients.WAIT_MS,
                () -> !Clients.assigned(joining, a.topic()).isEmpty());
        send(producer, a.topic(), third, 2 * third, sent, keyStepOf);
        Check.until("the third consumer consumes", Clients.WAIT_MS,
                () -> received.inOrder().stream().anyMatch(d -> d.consumer().equals("third")));
        joining.shutdown();
        send(producer, a.topic(), 2 * third, MESSAGES, sent, keyStepOf);

        received.awaitAll("messages of every key", sent, ProduceConsume.DELIVERY_WAIT_MS);
        received.checkIntact(a.topic(), sent, true);
        checkKeyOrder(received, keyStepOf);
        Map<String, Integer> perConsumer = new HashMap<>();
        received.inOrder().forEach(d -> perConsumer.merge(d.consumer(), 1, Integer::sum));
        Check.info("deliveries per consumer " + perConsumer);
        first.shutdown();
        second.shutdown();
        producer.shutdown();
    }

    private static DefaultMQPushConsumer orderly(RingmqCompat.Args a, Received received,
            String name) throws Exception {
        MessageListenerOrderly listener = (msgs, context) -> {
            received.record(msgs, name);
            try {
                Thread.sleep(LISTEN_MS);
            } catch (InterruptedException e) {
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            }
            return ConsumeOrderlyStatus.SUCCESS;
        };
        return Clients.push(a, a.topic(), a.group(), name, ProduceConsume.SUBSCRIPTION,
                listener);
    }

    /** Messages `from` until `to`: message i is step i / KEYS of key i % KEYS. */
    private static void send(DefaultMQProducer producer, String topic, int from, int to,
            List<Sent> sent, Map<String, int[]> keyStepOf) throws Exception {
        MessageQueueSelector byKey = (queues, msg, key) -> queues.get((Integer) key
                % queues.size());
        for (int i = from; i < to; i++) {
            int key = i % KEYS;
            Message msg = Sent.make(topic, "ordered", i, ProduceConsume.tag(key), false);
            Sent s = Sent.of("ordered", msg, producer.send(msg, byKey, key));
            sent.add(s);
            keyStepOf.put(s.msgId(), new int[] {key, i / KEYS});
        }
    }

    /**
     * In listener-call order: each delivery of a key is its next step, or a replay of an
     * earlier one; never a step past one not yet delivered.
     */
    private static void checkKeyOrder(Received received, Map<String, int[]> keyStepOf) {
        int[] next = new int[KEYS];
        int replays = 0;
        List<String> skipped = new ArrayList<>();
        for (Received.Delivery d : received.inOrder()) {
            int[] keyStep = keyStepOf.get(d.msg().getMsgId());
            if (keyStep == null) {
                continue;
            }
            int key = keyStep[0];
            int step = keyStep[1];
            if (step < next[key]) {
                replays++;
            } else if (step == next[key]) {
                next[key]++;
            } else {
                skipped.add("key " + key + ": step " + step + " to " + d.consumer()
                        + " before step " + next[key]);
            }
        }
        Check.equal(List.of(), skipped, "steps of a key delivered before an earlier step");
        Check.info(replays + " deliveries replayed an already delivered step");
    }
}

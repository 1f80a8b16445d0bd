import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.common.message.Message;

/** Consumers sharing a group: rebalancing, and orderly consumption by key. */
final class Groups {
    /** Order keys of the orderly scenario, spread over the queues by a selector. */
    static final int ORDER_KEYS = 10;
    /** Messages per order key. */
    static final int ORDER_STEPS = 4;

    private Groups() {
    }

    /**
     * rebalance: two consumers of one group split the 4 queues two and two, each message goes
     * to its queue's holder only; when one leaves the other takes every queue and gets every
     * later message.
     */
    static String rebalance(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer first = Clients.push(env, env.topic(), env.group(), "first", "*",
                inbox.listener("first"));
        DefaultMQPushConsumer second = Clients.push(env, env.topic(), env.group(), "second", "*",
                inbox.listener("second"));
        first.start();
        second.start();
        Check.until("the two consumers split the " + Clients.QUEUES + " queues two and two",
                Clients.WAIT_MS, () -> split(Clients.assigned(first, env.topic()),
                        Clients.assigned(second, env.topic())),
                () -> "first " + Clients.assigned(first, env.topic()) + ", second "
                        + Clients.assigned(second, env.topic()));
        Map<Integer, String> holder = new HashMap<>();
        Clients.assigned(first, env.topic()).forEach(q -> holder.put(q, "first"));
        Clients.assigned(second, env.topic()).forEach(q -> holder.put(q, "second"));
        Check.info("assignment " + holder);

        List<Expect> before = Sends.sendSync(producer, env.topic(), "rebalance", env.count());
        inbox.awaitAll("messages to the two consumers", before, Clients.WAIT_MS);
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());
        Clients.awaitCaughtUp(first, env.topic(), max, Clients.QUEUES / 2);
        Clients.awaitCaughtUp(second, env.topic(), max, Clients.QUEUES / 2);
        inbox.checkExactlyOnce("messages while split", env.topic(), before);
        long misrouted = inbox.all().stream()
                .filter(d -> !d.consumer().equals(holder.get(d.msg().getQueueId()))).count();
        Check.equal(0L, misrouted, "messages delivered to the consumer not holding their queue");

        second.shutdown();
        Check.until("the first consumer holds all " + Clients.QUEUES + " queues after the"
                + " second left", Clients.WAIT_MS,
                () -> Clients.assigned(first, env.topic()).size() == Clients.QUEUES);
        List<Expect> all = new ArrayList<>(before);
        for (int i = env.count(); i < 2 * env.count(); i++) {
            all.add(Sends.sendOk(producer, Expect.message(env.topic(), "rebalance", i)));
        }
        inbox.awaitAll("messages after the second left", all, Clients.WAIT_MS);
        Clients.awaitCaughtUp(first, env.topic(), Clients.maxOffsets(producer, env.topic()),
                Clients.QUEUES);
        // the second committed its offsets as it left: nothing is consumed twice
        inbox.checkExactlyOnce("messages before and after the second left", env.topic(), all);
        long toSecond = all.subList(env.count(), all.size()).stream().filter(e -> inbox.of(e)
                .stream().anyMatch(d -> !d.consumer().equals("first"))).count();
        Check.equal(0L, toSecond, "later messages delivered to the consumer that left");
        first.shutdown();
        producer.shutdown();
        return "two consumers split 2+2, each message to its queue's holder once; after one"
                + " left the other got all " + env.count() + " later ones";
    }

    /** Disjoint, half the queues each, all queues covered. */
    private static boolean split(Set<Integer> one, Set<Integer> other) {
        Set<Integer> union = new TreeSet<>(one);
        union.addAll(other);
        return one.size() == Clients.QUEUES / 2 && other.size() == Clients.QUEUES / 2
                && union.size() == Clients.QUEUES;
    }

    /**
     * orderly: {@link #ORDER_KEYS} keys, a MessageQueueSelector putting each key on one queue,
     * sends interleaved across keys; an orderly consumer (it locks its queues on the broker,
     * LOCK_BATCH_MQ) sees each key's messages in send order, each once and intact.
     */
    static String orderly(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        MessageQueueSelector byKey = (queues, msg, key) -> queues.get((Integer) key
                % queues.size());
        List<Expect> sent = new ArrayList<>();
        for (int step = 0; step < ORDER_STEPS; step++) {
            for (int key = 0; key < ORDER_KEYS; key++) {
                Message msg = Expect.message(env.topic(), "orderly", sent.size());
                msg.putUserProperty("matrix-order-key", Integer.toString(key));
                Expect e = Expect.of(msg, producer.send(msg, byKey, key));
                Check.equal(key % Clients.QUEUES, e.queueId(), "queue of #" + e.index());
                sent.add(e);
            }
        }
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group(), "consumer",
                "*", inbox.orderlyListener("consumer"));
        consumer.start();
        inbox.awaitAll("ordered messages", sent, Clients.WAIT_MS);
        Clients.awaitCaughtUp(consumer, env.topic(), Clients.maxOffsets(producer, env.topic()),
                Clients.QUEUES);
        inbox.checkExactlyOnce("ordered messages", env.topic(), sent);
        // a key's messages were sent one after another: their indexes must arrive rising
        Map<String, Integer> last = new HashMap<>();
        List<String> outOfOrder = new ArrayList<>();
        for (Inbox.Delivery d : inbox.all()) {
            String key = d.msg().getUserProperty("matrix-order-key");
            int index = Expect.index(d.msg());
            if (index <= last.getOrDefault(key, -1)) {
                outOfOrder.add("key " + key + ": #" + index + " after #" + last.get(key));
            }
            last.put(key, index);
        }
        Check.equal(List.of(), outOfOrder, "messages of a key out of send order");
        consumer.shutdown();
        producer.shutdown();
        return ORDER_KEYS + " keys x " + ORDER_STEPS + " messages, each key's in send order";
    }
}

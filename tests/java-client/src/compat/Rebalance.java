import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * Two consumers of one group split the topic's queues between them, each message goes to the
 * one holding its queue; when one stops, the other takes over all queues and receives
 * everything sent after.
 */
final class Rebalance {
    private Rebalance() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer first = Clients.push(a, a.topic(), a.group(), "first",
                ProduceConsume.SUBSCRIPTION, received.listener("first"));
        DefaultMQPushConsumer second = Clients.push(a, a.topic(), a.group(), "second",
                ProduceConsume.SUBSCRIPTION, received.listener("second"));
        first.start();
        second.start();
        Check.until("the two consumers split the " + Clients.QUEUES + " queues two and two",
                Clients.WAIT_MS, () -> split(Clients.assigned(first, a.topic()),
                        Clients.assigned(second, a.topic())));
        Map<Integer, String> holder = new HashMap<>();
        Clients.assigned(first, a.topic()).forEach(q -> holder.put(q, "first"));
        Clients.assigned(second, a.topic()).forEach(q -> holder.put(q, "second"));
        Check.info("assignment " + holder);

        List<Sent> before = ProduceConsume.sendSync(producer, a.topic(), "split",
                2 * ProduceConsume.PER_KIND);
        received.awaitAll("messages to the two consumers", before, ProduceConsume.DELIVERY_WAIT_MS);
        received.checkIntact(a.topic(), before, false);
        long misrouted = before.stream().filter(s -> {
            int queue = s.queueId();
            return received.of(s.msgId()).stream()
                    .anyMatch(d -> !d.consumer().equals(holder.get(queue)));
        }).count();
        Check.equal(0L, misrouted, "messages delivered to the consumer not holding their queue");
        Map<Integer, Long> max = Clients.maxOffsets(producer, a.topic());
        Check.until("both consumers consumed to the end of their queues", Clients.WAIT_MS,
                () -> Clients.caughtUp(first, a.topic(), max)
                        && Clients.caughtUp(second, a.topic(), max));

        second.shutdown();
        Check.until("the first consumer holds all " + Clients.QUEUES + " queues after the second"
                + " stopped", Clients.WAIT_MS,
                () -> Clients.assigned(first, a.topic()).size() == Clients.QUEUES);
        List<Sent> after = ProduceConsume.sendSync(producer, a.topic(), "takeover",
                2 * ProduceConsume.PER_KIND);
        received.awaitAll("messages after the takeover", after, ProduceConsume.DELIVERY_WAIT_MS);
        received.checkIntact(a.topic(), after, false);
        long toSecond = after.stream().filter(s -> received.of(s.msgId()).stream()
                .anyMatch(d -> !d.consumer().equals("first"))).count();
        Check.equal(0L, toSecond, "messages after the takeover delivered to the stopped consumer");
        // the second consumer committed its offsets when it stopped: nothing is consumed twice
        Check.equal(before.size() + after.size(), received.all().size(),
                "distinct messages delivered");
        long twice = received.all().values().stream().filter(d -> d.size() > 1).count();
        Check.equal(0L, twice, "messages delivered twice across the takeover");
        first.shutdown();
        producer.shutdown();
    }

    /** Disjoint, two queues each, all queues covered. */
    private static boolean split(Set<Integer> one, Set<Integer> other) {
        Set<Integer> union = new TreeSet<>(one);
        union.addAll(other);
        return one.size() == Clients.QUEUES / 2 && other.size() == Clients.QUEUES / 2
                && union.size() == Clients.QUEUES;
    }
}

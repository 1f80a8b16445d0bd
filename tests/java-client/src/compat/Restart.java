import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * Messages and consumer offsets survive a broker restart. Phase 1 sends messages, consumes
 * them, checks the broker has the group's offsets, then sends more that nobody consumes and
 * saves all it knows to --state. The caller stops the broker (SIGTERM, or SIGKILL for
 * --crash) and starts it again on the same data. Phase 2 checks the broker has the same
 * queues, offsets and messages: the group resumes where it was (after a crash it may get
 * consumed messages again, never lose one), a new group reads everything, new sends continue
 * the queues' offsets.
 */
final class Restart {
    private Restart() {
    }

    /** What phase 1 hands to phase 2. */
    record State(ArrayList<Sent> consumed, ArrayList<Sent> pending,
            TreeMap<Integer, Long> committed, TreeMap<Integer, Long> max) implements Serializable {
    }

    static void phase1(RingmqCompat.Args a) throws Exception {
        Path statePath = statePath(a);
        DefaultMQProducer producer = Clients.producer(a, "producer-1");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "consumer-1",
                ProduceConsume.SUBSCRIPTION, received.listener("consumer-1"));
        consumer.start();
        ArrayList<Sent> consumed = new ArrayList<>(
                ProduceConsume.sendSync(producer, a.topic(), "consumed", ProduceConsume.PER_KIND));
        received.awaitAll("messages before the restart", consumed, ProduceConsume.DELIVERY_WAIT_MS);
        TreeMap<Integer, Long> committed = Clients.maxOffsets(producer, a.topic());
        Check.until("consumer holds all " + Clients.QUEUES + " queues", Clients.WAIT_MS,
                () -> Clients.assigned(consumer, a.topic()).size() == Clients.QUEUES);
        Check.until("consumer consumed to the end of every queue", Clients.WAIT_MS,
                () -> Clients.caughtUp(consumer, a.topic(), committed),
                () -> "max " + committed + ", consumer offsets "
                        + Clients.offsets(consumer, a.topic()));
        received.checkIntact(a.topic(), consumed, false);
        // shutdown commits the offsets (oneway UPDATE_CONSUMER_OFFSET) and unregisters
        consumer.shutdown();
        Check.until("broker has the group's offsets at the end of every queue "
                + committed, Clients.WAIT_MS, () -> committed.equals(
                        committedOrEmpty(producer, a.topic(), a.group())));

        ArrayList<Sent> pending = new ArrayList<>(
                ProduceConsume.sendSync(producer, a.topic(), "pending", ProduceConsume.PER_KIND));
        TreeMap<Integer, Long> max = Clients.maxOffsets(producer, a.topic());
        Check.info("max offsets before the restart " + max);
        producer.shutdown();
        try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(statePath))) {
            out.writeObject(new State(consumed, pending, committed, max));
        }
    }

    static void phase2(RingmqCompat.Args a) throws Exception {
        State state;
        try (ObjectInputStream in = new ObjectInputStream(Files.newInputStream(statePath(a)))) {
            state = (State) in.readObject();
        }
        DefaultMQProducer producer = Clients.producer(a, "producer-2");
        Check.until("route of " + a.topic() + " has its " + Clients.QUEUES + " queues again",
                Clients.WAIT_MS,
                () -> Clients.writeQueues(producer, a.topic()).size() == Clients.QUEUES);
        Check.equal(state.max(), Clients.maxOffsets(producer, a.topic()),
                "max offsets after the restart");
        TreeMap<Integer, Long> committed = Clients.committed(producer, a.topic(), a.group());
        if (a.crash()) {
            boolean noneAhead = committed.entrySet().stream()
                    .allMatch(e -> e.getValue() <= state.committed().getOrDefault(e.getKey(), 0L));
            Check.that(noneAhead, "committed offsets after the crash " + committed
                    + " are at most the ones before " + state.committed());
        } else {
            Check.equal(state.committed(), committed, "committed offsets after the restart");
        }

        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "consumer-2",
                ProduceConsume.SUBSCRIPTION, received.listener("consumer-2"));
        consumer.start();
        List<Sent> after = ProduceConsume.sendSync(producer, a.topic(), "after",
                ProduceConsume.PER_KIND);
        checkOffsetsContinue(state.max(), after);
        List<Sent> unconsumed = new ArrayList<>(state.pending());
        unconsumed.addAll(after);
        received.awaitAll("the group's unconsumed messages", unconsumed,
                ProduceConsume.DELIVERY_WAIT_MS);
        received.checkIntact(a.topic(), unconsumed, a.crash());
        long again = state.consumed().stream()
                .filter(s -> !received.of(s.msgId()).isEmpty()).count();
        if (a.crash()) {
            Check.info(again + " messages consumed before the crash delivered again");
        } else {
            Check.equal(0L, again, "messages consumed before the restart delivered again");
        }
        consumer.shutdown();

        Received everything = new Received();
        DefaultMQPushConsumer fresh = Clients.push(a, a.topic(), a.group() + "_NEW",
                "consumer-new", ProduceConsume.SUBSCRIPTION, everything.listener("consumer-new"));
        fresh.start();
        List<Sent> all = new ArrayList<>(state.consumed());
        all.addAll(unconsumed);
        everything.awaitAll("every message, to a new group", all, ProduceConsume.DELIVERY_WAIT_MS);
        everything.checkIntact(a.topic(), all, false);
        fresh.shutdown();
        producer.shutdown();
    }

    /** A send after the restart takes the next offset of its queue. */
    private static void checkOffsetsContinue(Map<Integer, Long> maxBefore, List<Sent> after) {
        Map<Integer, Long> next = new TreeMap<>(maxBefore);
        List<String> wrong = new ArrayList<>();
        for (Sent s : after) {
            int queue = s.queueId();
            long expected = next.getOrDefault(queue, 0L);
            if (s.queueOffset() != expected) {
                wrong.add(queue + " got offset " + s.queueOffset() + ", expected " + expected);
            }
            next.put(queue, s.queueOffset() + 1);
        }
        Check.equal(List.of(), wrong, "sends after the restart continue the queues' offsets");
    }

    private static TreeMap<Integer, Long> committedOrEmpty(DefaultMQProducer producer,
            String topic, String group) {
        try {
            return Clients.committed(producer, topic, group);
        } catch (Exception e) {
            return new TreeMap<>();
        }
    }

    private static Path statePath(RingmqCompat.Args a) {
        if (a.state() == null) {
            throw new Check.Abort("restart phases need --state FILE");
        }
        return Path.of(a.state());
    }
}

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/** Every delivery to the consumers of one phase, in arrival order; waits are on arrival. */
final class Inbox {
    /** One delivery: the message and the consumer (instance name) it went to. */
    record Delivery(MessageExt msg, String consumer) {
    }

    /** Deliveries matching no expected message shown when a wait runs out. */
    static final int UNMATCHED_SHOWN = 5;

    private final List<Delivery> deliveries = new ArrayList<>();

    /** The listener for consumer `name`: records each message, then acknowledges it. */
    MessageListenerConcurrently listener(String name) {
        return (msgs, context) -> {
            record(msgs, name);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    /** An orderly listener for consumer `name`: records each message, then acknowledges it. */
    MessageListenerOrderly orderlyListener(String name) {
        return (msgs, context) -> {
            record(msgs, name);
            return ConsumeOrderlyStatus.SUCCESS;
        };
    }

    synchronized void record(List<MessageExt> msgs, String consumer) {
        msgs.forEach(msg -> deliveries.add(new Delivery(msg, consumer)));
        notifyAll();
    }

    synchronized List<Delivery> all() {
        return List.copyOf(deliveries);
    }

    /** The deliveries of `e`: by the client's msgId, or by index when the id is unknown. */
    synchronized List<Delivery> of(Expect e) {
        return deliveries.stream().filter(d -> matches(e, d.msg())).toList();
    }

    private static boolean matches(Expect e, MessageExt msg) {
        return e.msgId() != null ? e.msgId().equals(MessageClientIDSetter.getUniqID(msg))
                : e.index() == Expect.index(msg);
    }

    /** Waits up to `timeoutMs` until each of `expected` was delivered, else aborts. */
    synchronized void awaitAll(String what, Collection<Expect> expected, long timeoutMs)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            List<Expect> missing = expected.stream().filter(e -> of(e).isEmpty()).toList();
            if (missing.isEmpty()) {
                Check.that(true, what + ": all " + expected.size() + " delivered");
                return;
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                missing.forEach(e -> System.out.println("     missing " + e));
                deliveries.stream().filter(d -> expected.stream().noneMatch(e -> matches(e,
                        d.msg()))).limit(UNMATCHED_SHOWN).forEach(d -> System.out.println(
                                "     delivered instead " + describe(d)));
                throw new Check.Abort(what + ": " + missing.size() + " of " + expected.size()
                        + " not delivered within " + timeoutMs + " ms");
            }
            wait(left);
        }
    }

    /**
     * Checks each of `expected` was delivered exactly once and intact, and that nothing else
     * was delivered (`what` names the set in the check lines).
     */
    void checkExactlyOnce(String what, String topic, Collection<Expect> expected) {
        List<String> wrong = new ArrayList<>();
        for (Expect e : expected) {
            List<Delivery> got = of(e);
            if (got.size() != 1) {
                wrong.add(e + " delivered " + got.size() + " times");
            }
            for (Delivery d : got) {
                e.mismatches(topic, d.msg()).forEach(diff -> wrong.add(e + ": " + diff));
            }
        }
        List<Delivery> others = all().stream()
                .filter(d -> expected.stream().noneMatch(e -> matches(e, d.msg()))).toList();
        others.forEach(d -> wrong.add("unexpected delivery " + describe(d)));
        wrong.stream().limit(10).forEach(w -> System.out.println("     " + w));
        Check.that(wrong.isEmpty(), what + ": " + expected.size() + " delivered exactly once intact"
                + (wrong.isEmpty() ? "" : " (" + wrong.size() + " problems, first: " + wrong.get(0)
                        + ")"));
    }

    private static String describe(Delivery d) {
        MessageExt msg = d.msg();
        return msg.getTopic() + " q" + msg.getQueueId() + "@" + msg.getQueueOffset() + " "
                + msg.getTags() + " #" + Expect.index(msg) + " msgId "
                + MessageClientIDSetter.getUniqID(msg) + " to " + d.consumer();
    }
}

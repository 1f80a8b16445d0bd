import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageExt;

/** Every delivery to the push consumers of one scenario, keyed by msgId; waits are on arrival. */
final class Received {
    /** One delivery: the message and the consumer (instance name) it went to. */
    record Delivery(MessageExt msg, String consumer) {
    }

    private final Map<String, List<Delivery>> byMsgId = new HashMap<>();

    /** The listener for consumer `name`: records each message, then acknowledges it. */
    MessageListenerConcurrently listener(String name) {
        return (msgs, context) -> {
            synchronized (this) {
                for (MessageExt msg : msgs) {
                    byMsgId.computeIfAbsent(msg.getMsgId(), id -> new ArrayList<>())
                            .add(new Delivery(msg, name));
                }
                notifyAll();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    /** Waits up to `timeoutMs` until each of `sent` was delivered at least once, else aborts. */
    synchronized void awaitAll(String what, Collection<Sent> sent, long timeoutMs)
            throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            long missing = sent.stream().filter(s -> !byMsgId.containsKey(s.msgId())).count();
            if (missing == 0) {
                System.out.println("ok   " + what + ": all " + sent.size() + " delivered");
                return;
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                sent.stream().filter(s -> !byMsgId.containsKey(s.msgId()))
                        .forEach(s -> System.out.println("     missing " + s));
                throw new Check.Abort(what + ": " + missing + " of " + sent.size()
                        + " not delivered within " + timeoutMs + " ms");
            }
            wait(left);
        }
    }

    synchronized List<Delivery> of(String msgId) {
        return List.copyOf(byMsgId.getOrDefault(msgId, List.of()));
    }

    synchronized Map<String, List<Delivery>> all() {
        Map<String, List<Delivery>> copy = new HashMap<>();
        byMsgId.forEach((id, list) -> copy.put(id, List.copyOf(list)));
        return copy;
    }

    /**
     * Checks each of `sent` arrived intact: identical body, keys, tags, user properties, the
     * msgId (and offsetMsgId, queue, offset) the producer was answered; exactly once unless
     * `duplicatesAllowed` (at-least-once after a crash or a queue handover).
     */
    void checkIntact(String topic, Collection<Sent> sent, boolean duplicatesAllowed) {
        int intact = 0;
        int duplicated = 0;
        for (Sent s : sent) {
            List<Delivery> got = of(s.msgId());
            if (got.size() > 1) {
                duplicated++;
            }
            boolean allSame = !got.isEmpty();
            for (Delivery d : got) {
                List<String> diffs = s.mismatches(topic, d.msg());
                if (!diffs.isEmpty()) {
                    allSame = false;
                    Check.that(false, s + " delivered to " + d.consumer() + " differs: " + diffs);
                }
            }
            if (allSame) {
                intact++;
            }
        }
        Check.equal(sent.size(), intact, "messages delivered intact");
        if (duplicatesAllowed) {
            Check.info(duplicated + " of " + sent.size() + " delivered more than once");
        } else {
            Check.equal(0, duplicated, "messages delivered more than once");
        }
    }
}

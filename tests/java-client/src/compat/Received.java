import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.common.message.MessageExt;

/** Every delivery to the push consumers of one scenario, keyed by msgId; waits are on arrival. */
final class Received {
    /** One delivery: the message, the consumer (instance name) it went to, when (ms). */
    record Delivery(MessageExt msg, String consumer, long atMs) {
    }

    private final Map<String, List<Delivery>> byMsgId = new HashMap<>();
    private final List<Delivery> ordered = new ArrayList<>();

    /** The listener for consumer `name`: records each message, then acknowledges it. */
    MessageListenerConcurrently listener(String name) {
        return (msgs, context) -> {
            record(msgs, name);
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    /**
     * The listener for consumer `name` that asks for each message again once: the first
     * delivery (reconsumeTimes 0) answers RECONSUME_LATER with `delayLevel`, later ones succeed.
     */
    MessageListenerConcurrently listenerRetryingOnce(String name, int delayLevel) {
        return (msgs, context) -> {
            record(msgs, name);
            if (msgs.stream().anyMatch(msg -> msg.getReconsumeTimes() == 0)) {
                context.setDelayLevelWhenNextConsume(delayLevel);
                return ConsumeConcurrentlyStatus.RECONSUME_LATER;
            }
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

    /** Every delivery so far, in the order the listeners were called. */
    synchronized List<Delivery> inOrder() {
        return List.copyOf(ordered);
    }

    /** Records `msgs` as delivered to `consumer` (listeners call it; a pull consumer too). */
    synchronized void record(List<MessageExt> msgs, String consumer) {
        for (MessageExt msg : msgs) {
            Delivery delivery = new Delivery(msg, consumer, System.currentTimeMillis());
            byMsgId.computeIfAbsent(msg.getMsgId(), id -> new ArrayList<>()).add(delivery);
            ordered.add(delivery);
        }
        notifyAll();
    }

    /** Waits up to `timeoutMs` until each of `sent` was delivered at least once, else aborts. */
    void awaitAll(String what, Collection<Sent> sent, long timeoutMs)
            throws InterruptedException {
        awaitDeliveries(what, sent, 1, timeoutMs);
    }

    /** Waits up to `timeoutMs` until each of `sent` was delivered `times` times, else aborts. */
    synchronized void awaitDeliveries(String what, Collection<Sent> sent, int times,
            long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            List<Sent> missing = sent.stream()
                    .filter(s -> byMsgId.getOrDefault(s.msgId(), List.of()).size() < times)
                    .toList();
            if (missing.isEmpty()) {
                System.out.println("ok   " + what + ": all " + sent.size() + " delivered"
                        + (times > 1 ? " " + times + " times" : ""));
                return;
            }
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                missing.forEach(s -> System.out.println("     missing " + s + " (delivered "
                        + byMsgId.getOrDefault(s.msgId(), List.of()).size() + " times)"));
                throw new Check.Abort(what + ": " + missing.size() + " of " + sent.size()
                        + " not delivered " + times + " times within " + timeoutMs + " ms");
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

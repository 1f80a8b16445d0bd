import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * A lite pull consumer assigned all queues with a tag expression polls every message intact
 * (none of the other tag), commits its offsets to the broker, and after a seek polls again
 * from exactly the message it sought.
 */
final class LitePull {
    /** How long one poll waits for messages. */
    static final long POLL_MS = 1000;

    private LitePull() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        List<Sent> sent = ProduceConsume.sendSync(producer, a.topic(), "lite",
                ProduceConsume.PER_KIND);
        List<Sent> filtered = new ArrayList<>();
        for (int seq = 0; seq < ProduceConsume.FILTERED; seq++) {
            Message msg = Sent.make(a.topic(), "filtered", seq, "TagC", false);
            filtered.add(Sent.of("filtered", msg, ProduceConsume.sendOk(producer, msg)));
        }

        Clients.LitePull lite =
                Clients.litePull(a, a.topic(), ProduceConsume.SUBSCRIPTION, POLL_MS);
        DefaultLitePullConsumer consumer = lite.consumer();
        Collection<MessageQueue> queues = lite.queues();

        Received received = new Received();
        pollUntil(consumer, received, sent);
        received.checkIntact(a.topic(), sent, false);
        long filteredPolled = filtered.stream()
                .filter(s -> !received.of(s.msgId()).isEmpty()).count();
        Check.equal(0L, filteredPolled, "TagC messages polled with " + ProduceConsume.SUBSCRIPTION);

        // The consumed offset of a queue is one past its last polled message (the TagC ones
        // after it are skipped by the broker's filter but not consumed).
        Map<Integer, Long> consumed = new TreeMap<>();
        sent.forEach(s -> consumed.merge(s.queueId(), s.queueOffset() + 1, Math::max));
        consumer.commitSync();
        Check.until("broker has the pull consumer's committed offsets " + consumed,
                Clients.WAIT_MS, () -> queues.stream().allMatch(mq -> consumed
                        .get(mq.getQueueId()).equals(Clients.committed(consumer, mq))));

        // Seek one queue back to its second message: the next poll starts exactly there.
        Sent target = sent.stream().filter(s -> s.queueId() == sent.get(0).queueId())
                .skip(1).findFirst().orElseThrow();
        MessageQueue targetQueue = queues.stream()
                .filter(mq -> mq.getQueueId() == target.queueId()).findFirst().orElseThrow();
        consumer.seek(targetQueue, target.queueOffset());
        Received again = new Received();
        pollUntil(consumer, again, List.of(target));
        List<Received.Delivery> first = again.inOrder();
        Check.equal(target.msgId(), first.isEmpty() ? null : first.get(0).msg().getMsgId(),
                "first message polled after seeking to offset " + target.queueOffset());
        consumer.shutdown();
        producer.shutdown();
    }

    /** Polls into `received` until each of `expected` was polled, or the delivery bound. */
    private static void pollUntil(DefaultLitePullConsumer consumer, Received received,
            List<Sent> expected) throws InterruptedException {
        Clients.pollUntil(consumer,
                () -> expected.stream().noneMatch(s -> received.of(s.msgId()).isEmpty()),
                msgs -> received.record(msgs, "lite"), ProduceConsume.DELIVERY_WAIT_MS);
        received.awaitAll("messages polled", expected, 0);
    }
}

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * lite-pull: a DefaultLitePullConsumer assigned every queue polls each message once, intact;
 * commitSync reaches the broker and committed() reads it back; after a seek the next message
 * polled from that queue is exactly the one at the sought offset. The 4.9 client pulls with
 * PULL_MESSAGE (11), the 5.x one with LITE_PULL_MESSAGE (361); both commit with
 * UPDATE_CONSUMER_OFFSET.
 */
final class Pull {
    /** How long one poll waits for messages. */
    static final long POLL_MS = 500;

    private Pull() {
    }

    static String litePull(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> sent = Sends.sendSync(producer, env.topic(), "lite-pull", env.count());
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());

        Clients.LitePull lite = Clients.litePull(env, env.topic(), null, POLL_MS);
        DefaultLitePullConsumer consumer = lite.consumer();
        Collection<MessageQueue> queues = lite.queues();
        Inbox inbox = new Inbox();
        pollUntil(consumer, inbox, sent);
        inbox.checkExactlyOnce("polled messages", env.topic(), sent);

        consumer.commitSync();
        Map<Integer, Long> committed = new TreeMap<>();
        Check.until("committed() reads back every queue's end " + max, Clients.WAIT_MS, () -> {
            committed.clear();
            queues.forEach(mq -> committed.put(mq.getQueueId(), Clients.committed(consumer, mq)));
            return committed.equals(max);
        }, () -> "committed " + committed);

        // Seek one queue back to its second message: the next poll of it starts exactly there.
        Expect target = sent.stream().filter(e -> e.queueId() == sent.get(0).queueId())
                .skip(1).findFirst().orElseThrow(() -> new Check.Abort("no queue got 2 messages"));
        MessageQueue targetQueue = queues.stream()
                .filter(mq -> mq.getQueueId() == target.queueId()).findFirst().orElseThrow();
        consumer.seek(targetQueue, target.queueOffset());
        Inbox again = new Inbox();
        pollUntil(consumer, again, List.of(target));
        List<String> firstFromQueue = again.all().stream()
                .filter(d -> d.msg().getQueueId() == target.queueId()).limit(1)
                .map(d -> d.msg().getQueueOffset() + " " + d.msg().getMsgId()).toList();
        Check.equal(List.of(target.queueOffset() + " " + target.msgId()), firstFromQueue,
                "first message polled from queue " + target.queueId() + " after the seek");
        consumer.shutdown();
        producer.shutdown();
        return "polled " + sent.size() + " once intact, commitSync read back by committed(),"
                + " seek to offset " + target.queueOffset() + " polled exactly from it";
    }

    /** Polls into `inbox` until each of `expected` was polled, within the wait bound. */
    private static void pollUntil(DefaultLitePullConsumer consumer, Inbox inbox,
            List<Expect> expected) throws InterruptedException {
        Clients.pollUntil(consumer, () -> expected.stream().noneMatch(e -> inbox.of(e).isEmpty()),
                msgs -> inbox.record(msgs, "lite"), Clients.WAIT_MS);
        inbox.awaitAll("messages polled", expected, 0);
    }
}

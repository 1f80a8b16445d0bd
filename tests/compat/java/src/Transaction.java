import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;

/**
 * Transactional messages: half messages are held until END_TRANSACTION; the committed ones
 * reach the consumer intact with the producer's msgId, the rolled-back ones never do. With
 * {@code --outcomes commit} every local transaction commits, with {@code rollback} every one
 * rolls back (and one last message commits, so that its arrival shows the queues were read
 * after the rollbacks); by default even sequence numbers commit and odd ones roll back.
 */
final class Transaction {
    /** Transactional messages sent. */
    static final int MESSAGES = 8;
    /** Sequence number of the message committed after the rollbacks. */
    static final int LAST = MESSAGES;

    private Transaction() {
    }

    /** The local transaction's outcome, decided by the message (also for a broker check). */
    private static LocalTransactionState outcome(String outcomes, Message msg) {
        int seq = Integer.parseInt(msg.getUserProperty("seq"));
        boolean commit = switch (outcomes) {
            case "commit" -> true;
            case "rollback" -> seq == LAST;
            default -> seq % 2 == 0;
        };
        return commit ? LocalTransactionState.COMMIT_MESSAGE
                : LocalTransactionState.ROLLBACK_MESSAGE;
    }

    static void run(RingmqCompat.Args a) throws Exception {
        String outcomes = a.options().getOrDefault("--outcomes", "mixed");
        TransactionMQProducer producer = TransactionCheck.producer(a, "producer",
                new TransactionCheck.Checks(), msg -> outcome(outcomes, msg),
                msg -> outcome(outcomes, msg));
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.consumer(a, a.group(), "consumer",
                ProduceConsume.SUBSCRIPTION, received);
        consumer.start();

        List<Sent> committed = new ArrayList<>();
        List<Sent> rolledBack = new ArrayList<>();
        int last = outcomes.equals("rollback") ? LAST : MESSAGES - 1;
        for (int seq = 0; seq <= last; seq++) {
            Message msg = Sent.make(a.topic(), "transaction", seq, ProduceConsume.tag(seq), false);
            TransactionSendResult result = producer.sendMessageInTransaction(msg, null);
            Check.equal(SendStatus.SEND_OK, result.getSendStatus(), "half message " + seq);
            Check.equal(outcome(outcomes, msg), result.getLocalTransactionState(),
                    "outcome of " + seq);
            // the stored message is a new one (moved out of the half topic): same id and
            // content, its own queue offset
            Sent s = Sent.of("transaction", msg, result).retried();
            boolean commit = outcome(outcomes, msg) == LocalTransactionState.COMMIT_MESSAGE;
            (commit ? committed : rolledBack).add(s);
        }
        received.awaitAll("committed messages", committed, ProduceConsume.DELIVERY_WAIT_MS);
        received.checkIntact(a.topic(), committed, false);
        Map<String, Long> max = Clients.maxOffsets(producer, a.topic());
        Check.equal((long) committed.size(),
                max.values().stream().mapToLong(Long::longValue).sum(),
                "messages in the topic's queues (committed ones only)");
        Check.until("consumer consumed to the end of every queue", Clients.STATE_WAIT_MS,
                () -> Clients.caughtUp(consumer, a.topic(), max),
                () -> "max " + max + ", " + Clients.offsets(consumer, a.topic()));
        long delivered = rolledBack.stream().filter(s -> !received.of(s.msgId()).isEmpty())
                .count();
        Check.equal(0L, delivered, "rolled-back messages delivered");
        consumer.shutdown();
        producer.shutdown();
    }
}

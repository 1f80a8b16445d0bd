import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Transactional messages: half messages are held until END_TRANSACTION; the committed ones
 * reach the consumer intact with the producer's msgId, the rolled-back ones never do.
 */
final class Transaction {
    /** Transactional messages sent; even sequence numbers commit, odd ones roll back. */
    static final int MESSAGES = 8;

    private Transaction() {
    }

    /** The local transaction's outcome, decided by the message (also for a broker check). */
    private static LocalTransactionState outcome(Message msg) {
        return Integer.parseInt(msg.getUserProperty("seq")) % 2 == 0
                ? LocalTransactionState.COMMIT_MESSAGE
                : LocalTransactionState.ROLLBACK_MESSAGE;
    }

    static void run(RingmqCompat.Args a) throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer("P_" + a.group());
        producer.setNamesrvAddr(a.namesrv());
        producer.setInstanceName("producer");
        producer.setVipChannelEnabled(a.vip());
        producer.setPollNameServerInterval(Clients.CLIENT_PERIOD_MS);
        producer.setHeartbeatBrokerInterval(Clients.CLIENT_PERIOD_MS);
        producer.setSendMsgTimeout(Clients.REQUEST_TIMEOUT_MS);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return outcome(msg);
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                return outcome(msg);
            }
        });
        producer.start();
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.consumer(a, a.group(), "consumer",
                ProduceConsume.SUBSCRIPTION, received);
        consumer.start();

        List<Sent> committed = new ArrayList<>();
        List<Sent> rolledBack = new ArrayList<>();
        for (int seq = 0; seq < MESSAGES; seq++) {
            Message msg = Sent.make(a.topic(), "transaction", seq, ProduceConsume.tag(seq), false);
            TransactionSendResult result = producer.sendMessageInTransaction(msg, null);
            Check.equal(SendStatus.SEND_OK, result.getSendStatus(), "half message " + seq);
            Check.equal(outcome(msg), result.getLocalTransactionState(), "outcome of " + seq);
            // the stored message is a new one (moved out of the half topic): same id and
            // content, its own queue offset
            Sent s = Sent.of("transaction", msg, result).retried();
            (outcome(msg) == LocalTransactionState.COMMIT_MESSAGE ? committed : rolledBack).add(s);
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

import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * Dead letters: a consumer with maxReconsumeTimes 1 fails every message; the first failure
 * brings it back through the retry topic (reconsumeTimes 1), the second sends it to the
 * group's dead-letter topic %DLQ%group, where a consumer of another group receives it intact
 * (once, with the original topic in RETRY_TOPIC) and the client's queryMessage finds it by key.
 */
final class DeadLetter {
    /** Retries before the dead-letter topic: one, so the second failure is the last. */
    static final int MAX_RECONSUME_TIMES = 1;
    /** Delay level of the one retry: level 1 (1 s), to keep the scenario short. */
    static final int RETRY_DELAY_LEVEL = 1;
    /** Messages sent, each failed twice. */
    static final int MESSAGES = 4;
    /** Most results of one query by key; a key names one message here. */
    static final int QUERY_RESULTS_MAX = 32;

    private DeadLetter() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received failed = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "failing",
                ProduceConsume.SUBSCRIPTION, alwaysFailing(failed, "failing"));
        consumer.setMaxReconsumeTimes(MAX_RECONSUME_TIMES);
        consumer.start();
        List<Sent> sent = ProduceConsume.sendSync(producer, a.topic(), "dead", MESSAGES);
        failed.awaitDeliveries("messages failed twice", sent, MAX_RECONSUME_TIMES + 1,
                ProduceConsume.DELIVERY_WAIT_MS);

        String dlq = MixAll.getDLQTopic(a.group());
        Received dead = new Received();
        DefaultMQPushConsumer reader = Clients.push(a, dlq, a.group() + "_DLQ_READER",
                "dlq-reader", "*", dead.listener("dlq-reader"));
        reader.start();
        dead.awaitAll("messages in " + dlq, sent, ProduceConsume.DELIVERY_WAIT_MS);
        List<String> diffs = new ArrayList<>();
        for (Sent s : sent) {
            List<Received.Delivery> got = dead.of(s.msgId());
            MessageExt msg = got.get(0).msg();
            s.retried().mismatches(dlq, msg).forEach(d -> diffs.add(s + ": " + d));
            if (!a.topic().equals(msg.getProperty(MessageConst.PROPERTY_RETRY_TOPIC))) {
                diffs.add(s + ": RETRY_TOPIC " + msg.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
            }
            if (msg.getReconsumeTimes() != MAX_RECONSUME_TIMES + 1) {
                diffs.add(s + ": reconsumeTimes " + msg.getReconsumeTimes());
            }
            if (got.size() != 1) {
                diffs.add(s + ": delivered " + got.size() + " times from the DLQ");
            }
            String key = s.keys().split(" ")[0];
            List<MessageExt> byKey = producer.queryMessage(dlq, key, QUERY_RESULTS_MAX, 0,
                    Long.MAX_VALUE).getMessageList();
            if (byKey.size() != 1) {
                diffs.add(s + ": query " + dlq + " by key " + key + " found " + byKey.size());
            } else {
                s.retried().mismatches(dlq, byKey.get(0)).forEach(d -> diffs.add(s + ": " + d));
            }
        }
        Check.equal(List.of(), diffs, MESSAGES + " dead letters consumed and queried intact, with"
                + " RETRY_TOPIC and reconsumeTimes " + (MAX_RECONSUME_TIMES + 1));
        long third = sent.stream().filter(s -> failed.of(s.msgId()).size() > 2).count();
        Check.equal(0L, third, "messages delivered a third time to the failing group");
        reader.shutdown();
        consumer.shutdown();
        producer.shutdown();
    }

    /** Records each message, then asks for it again at {@link #RETRY_DELAY_LEVEL}. */
    private static MessageListenerConcurrently alwaysFailing(Received received, String name) {
        return (msgs, context) -> {
            received.record(msgs, name);
            context.setDelayLevelWhenNextConsume(RETRY_DELAY_LEVEL);
            return ConsumeConcurrentlyStatus.RECONSUME_LATER;
        };
    }
}

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * SUSPEND_CURRENT_QUEUE_A_MOMENT, the orderly consumer's retry, which the client does itself:
 * the queue stops, the same message comes again (reconsumeTimes 1) and the ones after it wait;
 * past maxReconsumeTimes the client sends it to %RETRY%group with its reconsume count (not
 * CONSUMER_SEND_MSG_BACK), the broker puts it in %DLQ%group (Apache's handleRetryAndDLQ;
 * Apache keeps the client's DELAY, so it lands there after that level's delay), and the queue
 * moves on.
 */
final class OrderlySuspend {
    /** One client-side retry, then the dead-letter topic. */
    static final int MAX_RECONSUME_TIMES = 1;
    /** Steps of the one order; the middle one always fails. */
    static final int STEPS = 3;
    static final int FAILING_STEP = 1;
    /** How long the client suspends the queue after a failure (the client's default is 1 s). */
    static final long SUSPEND_MS = 500;

    private OrderlySuspend() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        // step/reconsumeTimes at each call: the client counts retries on the message object
        // itself, so the recorded messages show only the last count
        List<String> calls = Collections.synchronizedList(new ArrayList<>());
        MessageListenerOrderly listener = (msgs, context) -> {
            msgs.forEach(m -> calls.add(m.getUserProperty("seq") + "/" + m.getReconsumeTimes()));
            received.record(msgs, "orderly");
            if (msgs.stream().anyMatch(m -> m.getUserProperty("seq").equals("" + FAILING_STEP))) {
                context.setSuspendCurrentQueueTimeMillis(SUSPEND_MS);
                return ConsumeOrderlyStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT;
            }
            return ConsumeOrderlyStatus.SUCCESS;
        };
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "orderly",
                ProduceConsume.SUBSCRIPTION, listener);
        consumer.setMaxReconsumeTimes(MAX_RECONSUME_TIMES);
        consumer.start();
        MessageQueueSelector first = (queues, msg, arg) -> queues.get(0);
        List<Sent> sent = new ArrayList<>();
        for (int step = 0; step < STEPS; step++) {
            Message msg = Sent.make(a.topic(), "suspended", step, ProduceConsume.tag(step), false);
            sent.add(Sent.of("suspended", msg, producer.send(msg, first, null)));
        }
        received.awaitAll("every step", sent, ProduceConsume.DELIVERY_WAIT_MS);
        Sent failing = sent.get(FAILING_STEP);
        received.awaitDeliveries("the failing step twice", List.of(failing),
                MAX_RECONSUME_TIMES + 1, ProduceConsume.DELIVERY_WAIT_MS);

        // Step 0 once, step 1 twice (the client counts the retry), then step 2.
        Check.equal(List.of("0/0", "1/0", "1/1", "2/0"), List.copyOf(calls),
                "deliveries in order as step/reconsumeTimes");
        received.checkIntact(a.topic(), List.of(sent.get(0), sent.get(2)), false);
        for (Received.Delivery d : received.of(failing.msgId())) {
            Check.equal(List.of(), failing.mismatches(a.topic(), d.msg()),
                    "the suspended step delivered again intact, from its own queue");
        }

        String dlq = MixAll.getDLQTopic(a.group());
        Received dead = new Received();
        DefaultMQPushConsumer reader = Clients.push(a, dlq, a.group() + "_DLQ_READER",
                "dlq-reader", "*", dead.listener("dlq-reader"));
        reader.start();
        dead.awaitAll("the failing step in " + dlq, List.of(failing),
                ProduceConsume.DELIVERY_WAIT_MS);
        MessageExt letter = dead.of(failing.msgId()).get(0).msg();
        List<String> diffs = failing.retried().mismatches(dlq, letter);
        if (!a.topic().equals(letter.getProperty(MessageConst.PROPERTY_RETRY_TOPIC))) {
            diffs.add("RETRY_TOPIC " + letter.getProperty(MessageConst.PROPERTY_RETRY_TOPIC));
        }
        Check.equal(List.of(), diffs, "the failing step in " + dlq + ", intact");
        Check.equal(MAX_RECONSUME_TIMES + 1, received.of(failing.msgId()).size(),
                "deliveries of the failing step to the orderly consumer");
        reader.shutdown();
        consumer.shutdown();
        producer.shutdown();
    }
}

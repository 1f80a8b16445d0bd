import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.MessageQueueSelector;
import org.apache.rocketmq.common.message.Message;

/**
 * Ordered messages: the producer picks each order's queue with a MessageQueueSelector, an
 * orderly push consumer (which must lock its queues on the broker, LOCK_BATCH_MQ, before it
 * consumes) gets every order's steps in the order they were sent, each message intact.
 */
final class Orderly {
    /** Orders, spread over the topic's queues by order id. */
    static final int ORDERS = 8;
    /** Steps (messages) per order. */
    static final int STEPS = 5;

    private Orderly() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.push(a, a.topic(), a.group(), "consumer",
                ProduceConsume.SUBSCRIPTION, received.orderlyListener("consumer"));
        consumer.start();

        MessageQueueSelector byOrder = (queues, msg, order) -> queues.get((Integer) order
                % queues.size());
        List<Sent> sent = new ArrayList<>();
        Map<String, Integer> orderOf = new HashMap<>();
        for (int step = 0; step < STEPS; step++) {
            for (int order = 0; order < ORDERS; order++) {
                int seq = step * ORDERS + order;
                Message msg = Sent.make(a.topic(), "orderly", seq, ProduceConsume.tag(order),
                        false);
                Sent s = Sent.of("orderly", msg, producer.send(msg, byOrder, order));
                sent.add(s);
                orderOf.put(s.msgId(), order);
            }
        }
        received.awaitAll("ordered messages", sent, ProduceConsume.DELIVERY_WAIT_MS);
        received.checkIntact(a.topic(), sent, false);

        // Each order's messages were sent one after another to one queue: they must arrive in
        // that order (their queue offsets rise).
        Map<Integer, Long> lastOffset = new HashMap<>();
        List<String> outOfOrder = new ArrayList<>();
        for (Received.Delivery d : received.inOrder()) {
            Integer order = orderOf.get(d.msg().getMsgId());
            if (order == null) {
                continue;
            }
            long previous = lastOffset.getOrDefault(order, -1L);
            if (d.msg().getQueueOffset() <= previous) {
                outOfOrder.add("order " + order + ": offset " + d.msg().getQueueOffset()
                        + " after " + previous);
            }
            lastOffset.put(order, d.msg().getQueueOffset());
        }
        Check.equal(List.of(), outOfOrder, "steps of an order delivered out of order");
        consumer.shutdown();
        producer.shutdown();
    }
}

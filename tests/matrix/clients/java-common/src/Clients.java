import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.MessageListener;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Producers and push consumers set up to converge in about a second instead of the defaults'
 * 20-30 s, and the reads of client and broker state the scenarios wait on.
 */
final class Clients {
    /** Queues of every matrix topic (4 read, 4 write). */
    static final int QUEUES = 4;
    /** Route refresh and heartbeat period: the client's defaults are 30 s. */
    static final int CLIENT_PERIOD_MS = 1000;
    /** How often consumers commit offsets to the broker (default 5 s). */
    static final int PERSIST_OFFSET_MS = 500;
    /** Per-request timeout of sends and lookups; generous, the machine is shared. */
    static final int REQUEST_TIMEOUT_MS = 10_000;
    /** Bound on each wait for messages or client state (the contract's consume deadline). */
    static final long WAIT_MS = 60_000;

    private Clients() {
    }

    static DefaultMQProducer producer(Env env, String instance) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("P_" + env.group());
        producer.setNamesrvAddr(env.namesrv());
        producer.setInstanceName(instance);
        producer.setPollNameServerInterval(CLIENT_PERIOD_MS);
        producer.setHeartbeatBrokerInterval(CLIENT_PERIOD_MS);
        producer.setSendMsgTimeout(REQUEST_TIMEOUT_MS);
        // a failed send must show as a failure, not be hidden by a retry on another queue
        producer.setRetryTimesWhenSendFailed(0);
        producer.setRetryTimesWhenSendAsyncFailed(0);
        producer.start();
        return producer;
    }

    /**
     * A clustering push consumer of `group` on `topic` for `subscription`, consuming a new
     * group's queues from the first offset, with `listener` (concurrently or orderly); not
     * started, so a scenario can change its settings first.
     */
    static DefaultMQPushConsumer push(Env env, String topic, String group, String instance,
            String subscription, MessageListener listener) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(env.namesrv());
        consumer.setInstanceName(instance);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollNameServerInterval(CLIENT_PERIOD_MS);
        consumer.setHeartbeatBrokerInterval(CLIENT_PERIOD_MS);
        consumer.setPersistConsumerOffsetInterval(PERSIST_OFFSET_MS);
        consumer.subscribe(topic, subscription);
        if (listener instanceof MessageListenerOrderly orderly) {
            consumer.registerMessageListener(orderly);
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) listener);
        }
        return consumer;
    }

    /**
     * Makes `consumer` a BROADCASTING one. MessageModel moved from org.apache.rocketmq.common
     * .protocol (4.x) to org.apache.rocketmq.remoting.protocol (5.x): it is looked up from the
     * setter so one source compiles against both clients.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void broadcasting(DefaultMQPushConsumer consumer) throws Exception {
        for (var method : DefaultMQPushConsumer.class.getMethods()) {
            if (method.getName().equals("setMessageModel")) {
                Class model = method.getParameterTypes()[0];
                method.invoke(consumer, Enum.valueOf(model, "BROADCASTING"));
                return;
            }
        }
        throw new Check.Abort("this client has no DefaultMQPushConsumer.setMessageModel");
    }

    /** The topic's write queues as the producer's route has them (empty while unknown). */
    static List<MessageQueue> writeQueues(DefaultMQProducer producer, String topic) {
        try {
            return producer.fetchPublishMessageQueues(topic);
        } catch (Exception e) {
            return List.of();
        }
    }

    /** Each queue's max offset (one past its last message), from the broker, by queue id. */
    static TreeMap<Integer, Long> maxOffsets(DefaultMQProducer producer, String topic)
            throws Exception {
        TreeMap<Integer, Long> max = new TreeMap<>();
        for (MessageQueue mq : writeQueues(producer, topic)) {
            max.put(mq.getQueueId(), producer.maxOffset(mq));
        }
        return max;
    }

    /** The queues of `topic` rebalancing currently gives `consumer` (dropped ones excluded). */
    static Set<Integer> assigned(DefaultMQPushConsumer consumer, String topic) {
        Set<Integer> queues = new TreeSet<>();
        queues(consumer, topic).forEach((mq, pq) -> {
            if (!pq.isDropped()) {
                queues.add(mq.getQueueId());
            }
        });
        return queues;
    }

    /**
     * Waits until `consumer` has consumed up to `max` on every queue of `topic` it holds (the
     * client moves a queue's offset only past messages whose listener call returned), so every
     * delivery that will happen has happened; `holds` queues at least.
     */
    static void awaitCaughtUp(DefaultMQPushConsumer consumer, String topic, Map<Integer, Long> max,
            int holds) {
        Check.until("consumer " + consumer.getInstanceName() + " consumed to the end of its "
                + holds + "+ queues", WAIT_MS,
                () -> assigned(consumer, topic).size() >= holds && queues(consumer, topic)
                        .keySet().stream().allMatch(mq -> offset(consumer, mq) == max.getOrDefault(
                                mq.getQueueId(), 0L)),
                () -> "max " + max + ", consumer at " + offsets(consumer, topic));
    }

    /**
     * Waits until the broker has `group`'s committed offsets of `topic` at `max` on every queue
     * (a consumer commits every {@link #PERSIST_OFFSET_MS} and when it shuts down).
     */
    static void awaitCommitted(DefaultMQProducer producer, String topic, String group,
            Map<Integer, Long> max) {
        Check.until("broker has " + group + "'s committed offsets " + max, WAIT_MS,
                () -> max.equals(committed(producer, topic, group)),
                () -> "broker has " + committed(producer, topic, group));
    }

    /**
     * `group`'s committed offsets of `topic` at the broker (-1: none), by QUERY_CONSUMER_OFFSET
     * through an offset store of its own on the producer's client: reading a consumer's own
     * store from the broker would overwrite its in-memory offsets.
     */
    static TreeMap<Integer, Long> committed(DefaultMQProducer producer, String topic,
            String group) {
        RemoteBrokerOffsetStore store = new RemoteBrokerOffsetStore(
                producer.getDefaultMQProducerImpl().getmQClientFactory(), group);
        TreeMap<Integer, Long> committed = new TreeMap<>();
        for (MessageQueue mq : writeQueues(producer, topic)) {
            committed.put(mq.getQueueId(), store.readOffset(mq, ReadOffsetType.READ_FROM_STORE));
        }
        return committed;
    }

    /** The consumer's own (in-memory) offsets of its queues of `topic`. */
    static TreeMap<Integer, Long> offsets(DefaultMQPushConsumer consumer, String topic) {
        TreeMap<Integer, Long> offsets = new TreeMap<>();
        queues(consumer, topic).keySet()
                .forEach(mq -> offsets.put(mq.getQueueId(), offset(consumer, mq)));
        return offsets;
    }

    private static long offset(DefaultMQPushConsumer consumer, MessageQueue mq) {
        return consumer.getDefaultMQPushConsumerImpl().getOffsetStore().readOffset(mq,
                ReadOffsetType.READ_FROM_MEMORY);
    }

    private static Map<MessageQueue, ProcessQueue> queues(DefaultMQPushConsumer consumer,
            String topic) {
        Map<MessageQueue, ProcessQueue> mine = new TreeMap<>();
        consumer.getDefaultMQPushConsumerImpl().getRebalanceImpl().getProcessQueueTable()
                .forEach((mq, pq) -> {
                    if (mq.getTopic().equals(topic)) {
                        mine.put(mq, pq);
                    }
                });
        return mine;
    }
}

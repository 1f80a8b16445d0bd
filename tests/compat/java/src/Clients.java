import java.lang.reflect.InvocationTargetException;
import java.util.ArrayList;
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
import org.apache.rocketmq.client.exception.MQBrokerException;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Producers and push consumers set up to converge in about a second instead of the defaults'
 * 20-30 s, and the admin calls the scenarios check the broker with. Compiles against 4.9.8
 * and 5.3.3: the protocol classes that moved package between them
 * (org.apache.rocketmq.common.protocol to org.apache.rocketmq.remoting.protocol) are not named,
 * only inferred (`var`) or, where one must be made, found by {@link #protocolClass}.
 */
final class Clients {
    /** Queues per test topic: two per shard of a 2-shard broker, two per consumer in rebalance. */
    static final int QUEUES = 4;
    /** Route refresh and heartbeat period: the client's defaults are 30 s. */
    static final int CLIENT_PERIOD_MS = 1000;
    /** How often consumers commit offsets to the broker (default 5 s). */
    static final int PERSIST_OFFSET_MS = 500;
    /** Per-request timeout of sends and admin calls; generous, the machine is shared. */
    static final int REQUEST_TIMEOUT_MS = 10_000;
    /** Bound on each wait for client state (routes, queue assignment, offsets). */
    static final long STATE_WAIT_MS = 60_000;
    /** Read-write permission of a topic (PermName.PERM_READ | PermName.PERM_WRITE). */
    static final int PERM_READ_WRITE = 6;

    private Clients() {
    }

    static DefaultMQProducer producer(RingmqCompat.Args a, String instance) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("P_" + a.group());
        producer.setNamesrvAddr(a.namesrv());
        producer.setInstanceName(instance);
        producer.setVipChannelEnabled(a.vip());
        producer.setPollNameServerInterval(CLIENT_PERIOD_MS);
        producer.setHeartbeatBrokerInterval(CLIENT_PERIOD_MS);
        producer.setSendMsgTimeout(REQUEST_TIMEOUT_MS);
        // a failed send must show as a failure, not be hidden by a retry on another queue
        producer.setRetryTimesWhenSendFailed(0);
        producer.setRetryTimesWhenSendAsyncFailed(0);
        producer.start();
        return producer;
    }

    /** A clustering push consumer of `group` for `tags`, recording into `received`. */
    static DefaultMQPushConsumer consumer(RingmqCompat.Args a, String group, String instance,
            String tags, Received received) throws Exception {
        return consumer(a, group, instance, tags, received.listener(instance));
    }

    /**
     * A clustering push consumer of `group` for `tags` with `listener` (concurrently or
     * orderly), not yet started.
     */
    static DefaultMQPushConsumer consumer(RingmqCompat.Args a, String group, String instance,
            String tags, MessageListener listener) throws Exception {
        return consumerOf(a, a.topic(), group, instance, tags, listener);
    }

    /** As {@link #consumer}, subscribed to `topic` instead of the scenario's topic. */
    static DefaultMQPushConsumer consumerOf(RingmqCompat.Args a, String topic, String group,
            String instance, String tags, MessageListener listener) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(a.namesrv());
        consumer.setInstanceName(instance);
        consumer.setVipChannelEnabled(a.vip());
        setMessageModel(consumer, "CLUSTERING");
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.setPollNameServerInterval(CLIENT_PERIOD_MS);
        consumer.setHeartbeatBrokerInterval(CLIENT_PERIOD_MS);
        consumer.setPersistConsumerOffsetInterval(PERSIST_OFFSET_MS);
        consumer.subscribe(topic, tags);
        if (listener instanceof MessageListenerOrderly orderly) {
            consumer.registerMessageListener(orderly);
        } else {
            consumer.registerMessageListener((MessageListenerConcurrently) listener);
        }
        return consumer;
    }

    static MQClientAPIImpl api(DefaultMQProducer producer) {
        return producer.getDefaultMQProducerImpl().getmQClientFactory().getMQClientAPIImpl();
    }

    /**
     * The master brokers' addresses, from the NameServer's cluster info: waits (bounded) until
     * there is one, so a broker still registering or a NameServer slow to answer on a loaded
     * machine does not fail the scenario.
     */
    static List<String> masters(DefaultMQProducer producer) {
        List<String> masters = new ArrayList<>();
        Check.until("cluster info lists a master broker", STATE_WAIT_MS, () -> {
            masters.clear();
            try {
                var info = api(producer).getBrokerClusterInfo(REQUEST_TIMEOUT_MS);
                for (var broker : info.getBrokerAddrTable().values()) {
                    String addr = broker.getBrokerAddrs().get(MixAll.MASTER_ID);
                    if (addr != null) {
                        masters.add(addr);
                    }
                }
            } catch (Exception e) {
                Check.info("cluster info: " + e);
            }
            return !masters.isEmpty();
        });
        return masters;
    }

    /**
     * Creates `topic` with {@link #QUEUES} queues on every master (UPDATE_AND_CREATE_TOPIC, as
     * mqadmin updateTopic does), then waits until the producer's route has all of them.
     */
    static void createTopic(DefaultMQProducer producer, String topic) throws Exception {
        List<String> masters = masters(producer);
        for (String addr : masters) {
            TopicConfig config = new TopicConfig(topic, QUEUES, QUEUES, PERM_READ_WRITE);
            api(producer).createTopic(addr, "TBW102", config, REQUEST_TIMEOUT_MS);
        }
        Check.until("route of " + topic + " has " + QUEUES * masters.size() + " write queues",
                STATE_WAIT_MS,
                () -> writeQueues(producer, topic).size() == QUEUES * masters.size());
    }

    static List<MessageQueue> writeQueues(DefaultMQProducer producer, String topic) {
        try {
            return producer.fetchPublishMessageQueues(topic);
        } catch (Exception e) {
            return List.of();
        }
    }

    /** Each queue's max offset (one past its last message), from the broker. */
    static TreeMap<String, Long> maxOffsets(DefaultMQProducer producer, String topic)
            throws Exception {
        TreeMap<String, Long> max = new TreeMap<>();
        for (MessageQueue mq : writeQueues(producer, topic)) {
            max.put(key(mq), producer.maxOffset(mq));
        }
        return max;
    }

    /** The offsets `group` committed at the broker (-1: none), by QUERY_CONSUMER_OFFSET. */
    static TreeMap<String, Long> committedOffsets(DefaultMQProducer producer, String topic,
            String group) throws Exception {
        TreeMap<String, Long> committed = new TreeMap<>();
        for (MessageQueue mq : writeQueues(producer, topic)) {
            Class<?> headerClass = protocolClass("header.QueryConsumerOffsetRequestHeader");
            Object header = headerClass.getDeclaredConstructor().newInstance();
            headerClass.getMethod("setConsumerGroup", String.class).invoke(header, group);
            headerClass.getMethod("setTopic", String.class).invoke(header, topic);
            headerClass.getMethod("setQueueId", Integer.class).invoke(header, mq.getQueueId());
            String addr = producer.getDefaultMQProducerImpl().getmQClientFactory()
                    .findBrokerAddressInPublish(mq.getBrokerName());
            long offset;
            try {
                offset = (Long) MQClientAPIImpl.class
                        .getMethod("queryConsumerOffset", String.class, headerClass, long.class)
                        .invoke(api(producer), addr, header, (long) REQUEST_TIMEOUT_MS);
            } catch (InvocationTargetException e) {
                if (!(e.getCause() instanceof MQBrokerException)) {
                    throw e;
                }
                offset = -1; // QUERY_NOT_FOUND
            }
            committed.put(key(mq), offset);
        }
        return committed;
    }

    /**
     * The queues of `topic` currently assigned to `consumer` by rebalancing, dropped ones
     * excluded (a clustering consumer also holds its group's %RETRY% topic queue).
     */
    static Set<String> assigned(DefaultMQPushConsumer consumer, String topic) {
        Set<String> queues = new TreeSet<>();
        queues(consumer, topic).forEach((mq, pq) -> {
            if (!pq.isDropped()) {
                queues.add(key(mq));
            }
        });
        return queues;
    }

    /**
     * True once `consumer` has consumed up to `max` on every queue of `topic` it holds: its
     * listener has returned for every message stored there (the client moves a queue's offset
     * only past messages whose listener call finished).
     */
    static boolean caughtUp(DefaultMQPushConsumer consumer, String topic, Map<String, Long> max) {
        return queues(consumer, topic).keySet().stream().allMatch(
                mq -> ownOffset(consumer, mq) == max.getOrDefault(key(mq), 0L));
    }

    /** The consumer's own offsets (as {@link #caughtUp} reads them), for failure messages. */
    static String offsets(DefaultMQPushConsumer consumer, String topic) {
        Map<String, Long> offsets = new TreeMap<>();
        queues(consumer, topic).keySet()
                .forEach(mq -> offsets.put(key(mq), ownOffset(consumer, mq)));
        return "consumer offsets " + offsets;
    }

    private static long ownOffset(DefaultMQPushConsumer consumer, MessageQueue mq) {
        return consumer.getDefaultMQPushConsumerImpl().getOffsetStore()
                .readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
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

    /** The protocol class `name` (e.g. "header.X") in 4.x's package or in 5.x's. */
    static Class<?> protocolClass(String name) throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.rocketmq.common.protocol." + name);
        } catch (ClassNotFoundException moved) {
            return Class.forName("org.apache.rocketmq.remoting.protocol." + name);
        }
    }

    /** `consumer.setMessageModel(MessageModel.<model>)`, the enum being in either package. */
    static void setMessageModel(DefaultMQPushConsumer consumer, String model) throws Exception {
        Class<?> type = protocolClass("heartbeat.MessageModel");
        DefaultMQPushConsumer.class.getMethod("setMessageModel", type)
                .invoke(consumer, type.getField(model).get(null));
    }

    static String key(MessageQueue mq) {
        return mq.getBrokerName() + "/" + mq.getQueueId();
    }
}

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.MessageListener;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.consumer.store.RemoteBrokerOffsetStore;
import org.apache.rocketmq.client.impl.MQClientAPIImpl;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.MixAll;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Producers and push consumers set up to converge in about a second instead of the defaults'
 * 20-30 s, the reads of client and broker state the scenarios wait on, and the topic creation
 * of the compat scenarios (the matrix creates its topics with mqadmin). Queues are keyed by
 * queue id: every scenario runs against one broker. Compiles against 4.9.8 and 5.3.3: the
 * protocol classes that moved package between them (org.apache.rocketmq.common.protocol to
 * org.apache.rocketmq.remoting.protocol) are not named, only inferred (`var`) or looked up.
 */
final class Clients {
    /** Queues of every test topic: two per shard of a 2-shard ringmq, two per consumer. */
    static final int QUEUES = 4;
    /** Route refresh and heartbeat period: the client's defaults are 30 s. */
    static final int CLIENT_PERIOD_MS = 1000;
    /** How often consumers commit offsets to the broker (default 5 s). */
    static final int PERSIST_OFFSET_MS = 500;
    /** Per-request timeout of sends, lookups and admin calls; generous, the machine is shared. */
    static final int REQUEST_TIMEOUT_MS = 10_000;
    /** Bound on each wait for messages or client state (the matrix contract's consume deadline). */
    static final long WAIT_MS = 60_000;
    /** Read-write permission of a topic (PermName.PERM_READ | PermName.PERM_WRITE). */
    static final int PERM_READ_WRITE = 6;

    private Clients() {
    }

    static DefaultMQProducer producer(Target target, String instance) throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("P_" + target.group());
        producer.setNamesrvAddr(target.namesrv());
        producer.setInstanceName(instance);
        producer.setVipChannelEnabled(target.vip());
        producer.setPollNameServerInterval(CLIENT_PERIOD_MS);
        producer.setHeartbeatBrokerInterval(CLIENT_PERIOD_MS);
        producer.setSendMsgTimeout(REQUEST_TIMEOUT_MS);
        // a failed send must show as a failure, not be hidden by a retry on another queue
        producer.setRetryTimesWhenSendFailed(0);
        producer.setRetryTimesWhenSendAsyncFailed(0);
        producer.start();
        return producer;
    }

    /** An async send's message with the answer its callback got. */
    record Answered(Message msg, SendResult result) {
    }

    /**
     * Sends each of `msgs` asynchronously and waits (up to `waitMs`, else aborts) until every
     * callback was called: returns the answers `accepted` takes, in callback order; `failures`
     * gets the other answers and the exceptions, as text.
     */
    static List<Answered> sendAsync(DefaultMQProducer producer, List<Message> msgs,
            Predicate<SendResult> accepted, List<String> failures, long waitMs)
            throws Exception {
        List<Answered> answers = Collections.synchronizedList(new ArrayList<>());
        List<String> failed = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch answered = new CountDownLatch(msgs.size());
        for (Message msg : msgs) {
            producer.send(msg, new SendCallback() {
                @Override
                public void onSuccess(SendResult result) {
                    if (accepted.test(result)) {
                        answers.add(new Answered(msg, result));
                    } else {
                        failed.add(result.toString());
                    }
                    answered.countDown();
                }

                @Override
                public void onException(Throwable e) {
                    failed.add(e.toString());
                    answered.countDown();
                }
            });
        }
        if (!answered.await(waitMs, TimeUnit.MILLISECONDS)) {
            throw new Check.Abort("async sends not all answered within " + waitMs + " ms");
        }
        failures.addAll(failed);
        return List.copyOf(answers);
    }

    /**
     * A clustering push consumer of `group` on `topic` for `subscription`, consuming a new
     * group's queues from the first offset, with `listener` (concurrently or orderly); not
     * started, so a scenario can change its settings first.
     */
    static DefaultMQPushConsumer push(Target target, String topic, String group, String instance,
            String subscription, MessageListener listener) throws Exception {
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(target.namesrv());
        consumer.setInstanceName(instance);
        consumer.setVipChannelEnabled(target.vip());
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

    /** A lite pull consumer and the queues it was assigned. */
    record LitePull(DefaultLitePullConsumer consumer, Collection<MessageQueue> queues) {
    }

    /**
     * A started lite pull consumer of the target's group polling for up to `pollMs` at a time,
     * without auto-commit, assigned every queue of `topic` from its beginning; with
     * `subscription` (null: every tag) the expression its pulls carry.
     */
    static LitePull litePull(Target target, String topic, String subscription, long pollMs)
            throws Exception {
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(target.group());
        consumer.setNamesrvAddr(target.namesrv());
        consumer.setInstanceName("lite");
        consumer.setVipChannelEnabled(target.vip());
        consumer.setPollNameServerInterval(CLIENT_PERIOD_MS);
        consumer.setHeartbeatBrokerInterval(CLIENT_PERIOD_MS);
        consumer.setAutoCommit(false);
        consumer.setPollTimeoutMillis(pollMs);
        if (subscription != null) {
            consumer.setSubExpressionForAssign(topic, subscription);
        }
        consumer.start();
        Collection<MessageQueue> queues = consumer.fetchMessageQueues(topic);
        Check.equal(QUEUES, queues.size(), "queues the pull consumer sees");
        consumer.assign(queues);
        for (MessageQueue mq : queues) {
            consumer.seekToBegin(mq);
        }
        return new LitePull(consumer, queues);
    }

    /**
     * Polls `consumer` into `record` until `allPolled` holds or `waitMs` went by; the caller
     * then checks what arrived.
     */
    static void pollUntil(DefaultLitePullConsumer consumer, BooleanSupplier allPolled,
            Consumer<List<MessageExt>> record, long waitMs) {
        long deadline = System.currentTimeMillis() + waitMs;
        while (!allPolled.getAsBoolean() && System.currentTimeMillis() < deadline) {
            record.accept(consumer.poll());
        }
    }

    /** The lite pull consumer's committed offset of `mq` at the broker, null if unknown. */
    static Long committed(DefaultLitePullConsumer consumer, MessageQueue mq) {
        try {
            return consumer.committed(mq);
        } catch (Exception e) {
            return null;
        }
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
        Check.until("cluster info lists a master broker", WAIT_MS, () -> {
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
                WAIT_MS, () -> writeQueues(producer, topic).size() == QUEUES * masters.size());
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

    /**
     * The queues of `topic` rebalancing currently gives `consumer`, dropped ones excluded (a
     * clustering consumer also holds its group's %RETRY% topic queue, not counted here).
     */
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
     * True once `consumer` has consumed up to `max` on every queue of `topic` it holds: its
     * listener has returned for every message stored there (the client moves a queue's offset
     * only past messages whose listener call returned).
     */
    static boolean caughtUp(DefaultMQPushConsumer consumer, String topic, Map<Integer, Long> max) {
        return queues(consumer, topic).keySet().stream()
                .allMatch(mq -> offset(consumer, mq) == max.getOrDefault(mq.getQueueId(), 0L));
    }

    /**
     * Waits until `consumer` holds `holds` queues at least and is {@link #caughtUp}, so every
     * delivery that will happen has happened.
     */
    static void awaitCaughtUp(DefaultMQPushConsumer consumer, String topic, Map<Integer, Long> max,
            int holds) {
        Check.until("consumer " + consumer.getInstanceName() + " consumed to the end of its "
                + holds + "+ queues", WAIT_MS,
                () -> assigned(consumer, topic).size() >= holds && caughtUp(consumer, topic, max),
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
     * `group`'s committed offsets of `topic` at the broker (-1: none, -2: the query failed), by
     * QUERY_CONSUMER_OFFSET through an offset store of its own on the producer's client:
     * reading a consumer's own store from the broker would overwrite its in-memory offsets.
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

    /** The consumer's own (in-memory) offsets of its queues of `topic`, by queue id. */
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

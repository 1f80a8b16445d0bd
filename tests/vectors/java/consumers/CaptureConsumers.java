// Writes heartbeat, lock and consumer-connection bodies with the real Apache RocketMQ 5.3.3 Java
// client (see README.md beside this file). The heartbeat comes from the client's own
// MQClientInstance.prepareHeartbeatData, so it is exactly what a running client sends.
import java.lang.reflect.Method;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.protocol.LanguageCode;
import org.apache.rocketmq.remoting.protocol.body.*;
import org.apache.rocketmq.remoting.protocol.filter.FilterAPI;
import org.apache.rocketmq.remoting.protocol.header.GetConsumerListByGroupResponseBody;
import org.apache.rocketmq.remoting.protocol.heartbeat.*;
import org.apache.rocketmq.remoting.protocol.heartbeat.MessageModel;

public class CaptureConsumers {
    public static void main(String[] a) throws Exception {
        try {
            capture(a);
        } finally {
            System.exit(0);
        }
    }

    static void capture(String[] a) throws Exception {
        Path out = Paths.get(a.length > 0 ? a[0] : "out");
        Files.createDirectories(out);
        // Nothing listens on port 1: the clients start, find no route and send nothing.
        String namesrv = "127.0.0.1:1";
        // 5.x fails start() when the first route lookup fails; this test switch skips it.
        java.lang.reflect.Field skip = org.apache.rocketmq.client.impl.consumer.DefaultMQPushConsumerImpl.class
            .getDeclaredField("doNotUpdateTopicSubscribeInfoWhenSubscriptionChanged");
        skip.setAccessible(true);
        skip.set(null, true);
        DefaultMQPushConsumer push = new DefaultMQPushConsumer("G1");
        push.setNamesrvAddr(namesrv);
        push.setInstanceName("capture");
        push.setClientIP("10.0.0.5");
        push.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        push.subscribe("T", "TagA || TagB");
        push.registerMessageListener((MessageListenerConcurrently) (m, c) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        push.start();
        DefaultLitePullConsumer lite = new DefaultLitePullConsumer("G2");
        lite.setNamesrvAddr(namesrv);
        lite.setInstanceName("capture");
        lite.setClientIP("10.0.0.5");
        lite.setMessageModel(MessageModel.BROADCASTING);
        lite.start();
        try {
            lite.subscribe("T2", MessageSelector.bySql("a > 1"));
        } catch (org.apache.rocketmq.client.exception.MQClientException routeLookupFailed) {
            // Thrown by the route lookup after the subscription was recorded, which is all we need.
        }
        DefaultMQProducer producer = new DefaultMQProducer("PG1");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("capture");
        producer.setClientIP("10.0.0.5");
        producer.start();

        MQClientInstance client = push.getDefaultMQPushConsumerImpl().getmQClientFactory();
        Method prepare = MQClientInstance.class.getDeclaredMethod("prepareHeartbeatData", boolean.class);
        prepare.setAccessible(true);
        HeartbeatData full = (HeartbeatData) prepare.invoke(client, false);
        Files.write(out.resolve("heartbeat_5_3_3.json"), full.encode());
        // The lite consumer's client id differs from the push consumer's, so it has its own instance.
        MQClientInstance liteClient = org.apache.rocketmq.client.impl.MQClientManager.getInstance()
            .getOrCreateMQClientInstance(lite);
        System.out.println("push " + client.getClientId() + " lite " + liteClient.getClientId());
        Files.write(out.resolve("heartbeat_lite_5_3_3.json"), ((HeartbeatData) prepare.invoke(liteClient, false)).encode());
        // Heartbeat V2 (useHeartbeatV2): the fingerprint, then the same data without subscriptions.
        int fingerprint = full.computeHeartbeatFingerprint();
        full.setHeartbeatFingerprint(fingerprint);
        Files.write(out.resolve("heartbeat_v2_full_5_3_3.json"), full.encode());
        HeartbeatData bare = (HeartbeatData) prepare.invoke(client, true);
        bare.setHeartbeatFingerprint(fingerprint);
        Files.write(out.resolve("heartbeat_v2_without_sub_5_3_3.json"), bare.encode());

        MessageQueue mq = new MessageQueue("T", "broker-a", 3);
        LockBatchRequestBody lock = new LockBatchRequestBody();
        lock.setConsumerGroup("G1");
        lock.setClientId("10.0.0.5@capture");
        lock.setOnlyThisBroker(true);
        lock.setMqSet(new HashSet<>(List.of(mq)));
        Files.write(out.resolve("lock_batch_request.json"), lock.encode());
        LockBatchResponseBody locked = new LockBatchResponseBody();
        locked.setLockOKMQSet(new HashSet<>(List.of(mq)));
        Files.write(out.resolve("lock_batch_response.json"), locked.encode());
        UnlockBatchRequestBody unlock = new UnlockBatchRequestBody();
        unlock.setConsumerGroup("G1");
        unlock.setClientId("10.0.0.5@capture");
        unlock.setMqSet(new HashSet<>(List.of(mq)));
        Files.write(out.resolve("unlock_batch_request.json"), unlock.encode());

        GetConsumerListByGroupResponseBody ids = new GetConsumerListByGroupResponseBody();
        ids.setConsumerIdList(List.of("10.0.0.5@capture"));
        Files.write(out.resolve("consumer_list_by_group.json"), ids.encode());

        // What a Java broker answers to GET_CONSUMER_CONNECTION_LIST (AdminBrokerProcessor).
        ConsumerConnection conn = new ConsumerConnection();
        Connection c = new Connection();
        c.setClientId("10.0.0.5@capture");
        c.setClientAddr("10.0.0.5:53412");
        c.setLanguage(LanguageCode.JAVA);
        c.setVersion(479);
        conn.getConnectionSet().add(c);
        SubscriptionData sub = FilterAPI.buildSubscriptionData("T", "TagA");
        sub.setSubVersion(1700000000000L);
        conn.getSubscriptionTable().put("T", sub);
        conn.setConsumeType(ConsumeType.CONSUME_PASSIVELY);
        conn.setMessageModel(MessageModel.CLUSTERING);
        conn.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET);
        Files.write(out.resolve("consumer_connection.json"), conn.encode());
        ProducerConnection pconn = new ProducerConnection();
        pconn.getConnectionSet().add(c);
        Files.write(out.resolve("producer_connection.json"), pconn.encode());

        // FilterAPI on the expressions the tests parse.
        StringBuilder filters = new StringBuilder();
        for (String expr : new String[]{"*", "", "TagA", "TagA || TagB", " TagA ||  || TagB ", "a||b||a", "||", "hello world"}) {
            SubscriptionData d;
            try {
                d = FilterAPI.buildSubscriptionData("T", expr);
            } catch (Exception e) {
                filters.append(expr).append("\tERROR\n");
                continue;
            }
            filters.append(expr).append('\t').append(d.getSubString()).append('\t')
                .append(new TreeSet<>(d.getTagsSet())).append('\t').append(new TreeSet<>(d.getCodeSet())).append('\n');
        }
        Files.write(out.resolve("filter_api.tsv"), filters.toString().getBytes());
        producer.shutdown();
        lite.shutdown();
        push.shutdown();
    }
}

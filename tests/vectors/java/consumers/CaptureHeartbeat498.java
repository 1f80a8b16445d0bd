// Writes the heartbeat bodies a real Apache RocketMQ 4.9.8 Java client sends (see README.md
// beside this file): a push consumer with its inner producer and a producer in one client
// instance, and a broadcasting lite pull consumer with an SQL92 subscription in another.
import java.lang.reflect.Method;
import java.nio.file.*;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.impl.MQClientManager;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.protocol.heartbeat.HeartbeatData;
import org.apache.rocketmq.common.protocol.heartbeat.MessageModel;

public class CaptureHeartbeat498 {
    public static void main(String[] a) throws Exception {
        try {
            capture(Paths.get(a.length > 0 ? a[0] : "out"));
        } catch (Throwable t) {
            t.printStackTrace();
        } finally {
            System.exit(0);
        }
    }

    static void capture(Path out) throws Exception {
        Files.createDirectories(out);
        // Nothing listens on port 1: the clients start, find no route and send nothing.
        String namesrv = "127.0.0.1:1";
        DefaultMQPushConsumer push = new DefaultMQPushConsumer("G1");
        push.setNamesrvAddr(namesrv);
        push.setInstanceName("capture");
        push.setClientIP("10.0.0.5");
        push.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        push.subscribe("T", "TagA || TagB");
        push.registerMessageListener((MessageListenerConcurrently) (m, c) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
        try {
            push.start();
        } catch (IllegalStateException routeLookupFailed) {
            // Thrown by the route lookup after the consumer joined its client instance.
        }
        DefaultMQProducer producer = new DefaultMQProducer("PG1");
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("capture");
        producer.setClientIP("10.0.0.5");
        producer.start();
        DefaultLitePullConsumer lite = new DefaultLitePullConsumer("G2");
        lite.setNamesrvAddr(namesrv);
        lite.setInstanceName("capture-lite");
        lite.setClientIP("10.0.0.5");
        lite.setMessageModel(MessageModel.BROADCASTING);
        lite.start();
        try {
            lite.subscribe("T2", MessageSelector.bySql("a > 1"));
        } catch (Exception routeLookupFailed) {
            // Thrown by the route lookup after the subscription was recorded, which is all we need.
        }

        Method prepare = MQClientInstance.class.getDeclaredMethod("prepareHeartbeatData");
        prepare.setAccessible(true);
        MQClientInstance client = push.getDefaultMQPushConsumerImpl().getmQClientFactory();
        Files.write(out.resolve("heartbeat_4_9_8.json"), ((HeartbeatData) prepare.invoke(client)).encode());
        MQClientInstance liteClient = MQClientManager.getInstance().getOrCreateMQClientInstance(lite);
        Files.write(out.resolve("heartbeat_lite_4_9_8.json"), ((HeartbeatData) prepare.invoke(liteClient)).encode());
        producer.shutdown();
        lite.shutdown();
        push.shutdown();
    }
}

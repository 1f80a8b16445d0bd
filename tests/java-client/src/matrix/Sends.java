import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageQueue;

/** Route discovery and the producer's send kinds, each checked by a consumer afterwards. */
final class Sends {
    private Sends() {
    }

    /** route: producer (write) and consumer (read) routes list the topic's 4 queues. */
    static String route(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "route-producer");
        List<MessageQueue> write = producer.fetchPublishMessageQueues(env.topic());
        checkQueues(env, "write queues in the producer's route", write);
        DefaultLitePullConsumer consumer = new DefaultLitePullConsumer(env.group());
        consumer.setNamesrvAddr(env.namesrv());
        consumer.setInstanceName("route-consumer");
        consumer.start();
        checkQueues(env, "read queues in the consumer's route",
                consumer.fetchMessageQueues(env.topic()));
        consumer.shutdown();
        producer.shutdown();
        return "producer and consumer routes: " + Clients.QUEUES + " queues on "
                + env.brokerName();
    }

    private static void checkQueues(Env env, String what, Collection<MessageQueue> mqs) {
        Set<String> got = new TreeSet<>();
        mqs.forEach(mq -> got.add(mq.getBrokerName() + "/" + mq.getQueueId()));
        Set<String> expected = new TreeSet<>();
        for (int q = 0; q < Clients.QUEUES; q++) {
            expected.add(env.brokerName() + "/" + q);
        }
        Check.equal(expected, got, what);
    }

    /** send-sync: N sync sends, SEND_OK with msgId, queue and offset; consumed once, intact. */
    static String sync(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> sent = sendSync(producer, env.topic(), "send-sync", env.count());
        Consume.exactlyOnce(env, producer, "consumer", "*", sent);
        producer.shutdown();
        return env.count() + " sync sends SEND_OK, each consumed once intact";
    }

    /** send-async: N async sends, every callback a success; consumed once each, intact. */
    static String async(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Message> msgs = new ArrayList<>();
        for (int i = 0; i < env.count(); i++) {
            msgs.add(Expect.message(env.topic(), "send-async", i));
        }
        List<String> failures = new ArrayList<>();
        List<Expect> sent = new ArrayList<>();
        Clients.sendAsync(producer, msgs, Sends::answerOk, failures, Clients.WAIT_MS)
                .forEach(answer -> sent.add(Expect.of(answer.msg(), answer.result())));
        Check.equal(List.of(), failures, "async sends that failed");
        Consume.exactlyOnce(env, producer, "consumer", "*", sent);
        producer.shutdown();
        return env.count() + " async sends succeeded in their callbacks, each consumed once intact";
    }

    /** send-oneway: N oneway sends; a consumer gets all N. */
    static String oneway(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> sent = new ArrayList<>();
        for (int i = 0; i < env.count(); i++) {
            Message msg = Expect.message(env.topic(), "send-oneway", i);
            producer.sendOneway(msg);
            sent.add(Expect.unanswered(msg));
        }
        Consume.exactlyOnce(env, producer, "consumer", "*", sent);
        producer.shutdown();
        return env.count() + " oneway sends, each consumed once intact";
    }

    /** send-batch: one batch of N; one SEND_OK naming every msgId; consumed once, intact. */
    static String batch(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Message> msgs = new ArrayList<>();
        for (int i = 0; i < env.count(); i++) {
            msgs.add(Expect.message(env.topic(), "send-batch", i));
        }
        SendResult result = producer.send(msgs);
        Check.equal(SendStatus.SEND_OK, result.getSendStatus(), "batch send status");
        // The client sets each message's id before sending; the answer lists them comma-separated.
        List<Expect> sent = msgs.stream().map(Expect::unanswered).toList();
        Check.equal(sent.stream().map(Expect::msgId).toList(),
                List.of(result.getMsgId().split(",")), "msgIds of the batch answer");
        Consume.exactlyOnce(env, producer, "consumer", "*", sent);
        producer.shutdown();
        return "a batch of " + env.count() + " SEND_OK, each consumed once intact";
    }

    /** cross-produce: the cross-client set (tests/matrix/README.md). */
    static String crossProduce(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        for (Message msg : Consume.crossSet(env.topic())) {
            sendOk(producer, msg);
        }
        producer.shutdown();
        return Consume.CROSS_COUNT + " cross messages sent SEND_OK";
    }

    /** `count` contract messages of `scenario`, sent sync, each answered SEND_OK. */
    static List<Expect> sendSync(DefaultMQProducer producer, String topic, String scenario,
            int count) throws Exception {
        List<Expect> sent = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            sent.add(sendOk(producer, Expect.message(topic, scenario, i)));
        }
        return sent;
    }

    /** Sends `msg` sync; checks the answer is SEND_OK with a msgId, a queue and an offset. */
    static Expect sendOk(DefaultMQProducer producer, Message msg) throws Exception {
        SendResult result = producer.send(msg);
        Check.that(answerOk(result), "send of #" + Expect.index(msg) + " answered " + result);
        return Expect.of(msg, result);
    }

    private static boolean answerOk(SendResult result) {
        return result.getSendStatus() == SendStatus.SEND_OK && result.getMsgId() != null
                && result.getMessageQueue() != null && result.getQueueOffset() >= 0;
    }
}

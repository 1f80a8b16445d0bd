import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.rocketmq.client.common.ClientErrorCode;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.exception.RequestTimeoutException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.RequestCallback;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.utils.MessageUtil;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * request-reply (RocketMQ 4.6+): a responder (a push consumer answering each request with
 * {@code MessageUtil.createReplyMessage}, sent by a producer of its own) and a requester doing
 * N synchronous {@code request()} calls and N/2 asynchronous ones; each reply must match its
 * request (CORRELATION_ID, body, the cluster's reply topic) and be stored there once (the
 * broker's default storeReplyMessageEnable). A request nobody answers must fail with the
 * client's RequestTimeoutException after its timeout.
 *
 * <p>Clients 5.3.1 to 5.3.3 return from a synchronous {@code request()} as soon as the request
 * itself is sent (apache/rocketmq #8272 counted the reply latch down on the send's success;
 * #9608, after 5.3.3, removed it), so it throws RequestTimeoutException before any reply can
 * arrive, against every broker. With those clients the synchronous requests are made
 * asynchronously and the unanswered one too.
 */
final class Reply {
    /** Timeout of a request the responder answers: covers its pull on a loaded machine. */
    static final long ANSWERED_TIMEOUT_MS = 30_000;
    /** Timeout of the request nobody answers: the client gives up after it. */
    static final long UNANSWERED_TIMEOUT_MS = 3_000;
    /** `MessageConst.PROPERTY_CORRELATION_ID`, spelled out: the class moved packages in 5.x. */
    static final String CORRELATION_ID = "CORRELATION_ID";
    /** What the responder puts before a request's body to make its reply's body. */
    static final String REPLY_PREFIX = "reply-to-";
    /** The client versions whose synchronous request() does not wait for the reply. */
    static final List<String> SYNC_REQUEST_BROKEN = List.of("V5_3_1", "V5_3_2", "V5_3_3");

    private Reply() {
    }

    /** request-reply: see the class comment. */
    static String requestReply(Env env) throws Exception {
        List<String> responderFailures = Collections.synchronizedList(new ArrayList<>());
        DefaultMQProducer replier = Clients.producer(env, "responder-producer");
        DefaultMQPushConsumer responder = Clients.push(env, env.topic(), env.group(),
                "responder", "*", respond(replier, responderFailures));
        responder.start();
        Check.until("responder holds the topic's " + Clients.QUEUES + " queues", Clients.WAIT_MS,
                () -> Clients.assigned(responder, env.topic()).size() == Clients.QUEUES);
        DefaultMQProducer requester = Clients.producer(env, "requester");
        String replyTopic = System.getenv("MATRIX_CLUSTER") + "_REPLY_TOPIC";
        MessageQueue replyQueue = new MessageQueue(replyTopic, env.brokerName(), 0);
        long storedBefore = requester.maxOffset(replyQueue);

        String version = MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION);
        boolean syncWorks = !SYNC_REQUEST_BROKEN.contains(version);
        int sync = syncWorks ? env.count() : 0;
        for (int i = 0; i < sync; i++) {
            Message request = Expect.message(env.topic(), "request-sync", i);
            Message reply = requester.request(request, ANSWERED_TIMEOUT_MS);
            checkReply(request, reply, replyTopic, "sync request " + i);
        }
        if (!syncWorks) {
            Check.info("client " + version + ": its sync request() returns before the reply"
                    + " (apache/rocketmq #8272, undone by #9608): " + env.count()
                    + " more async requests instead");
        }
        int async = Math.max(1, env.count() / 2) + (syncWorks ? 0 : env.count());
        requestAsync(env, requester, async, replyTopic);
        Check.that(responderFailures.isEmpty(), "every reply sent SEND_OK " + responderFailures);
        long answered = sync + async;
        Check.until("the " + answered + " replies are stored in " + replyTopic, Clients.WAIT_MS,
                () -> stored(requester, replyQueue) - storedBefore == answered,
                () -> "stored " + (stored(requester, replyQueue) - storedBefore));

        if (syncWorks) {
            noResponder(env, requester);
        } else {
            noResponderAsync(env, requester);
        }
        requester.shutdown();
        responder.shutdown();
        replier.shutdown();
        return sync + " sync and " + async + " async requests each answered by their reply"
                + " (correlation, body), stored; an unanswered " + (syncWorks ? "sync" : "async")
                + " request timed out";
    }

    /** The responder's listener: a reply to each request, sent at once. */
    private static MessageListenerConcurrently respond(DefaultMQProducer replier,
            List<String> failures) {
        return (msgs, context) -> {
            for (MessageExt request : msgs) {
                try {
                    byte[] body = (REPLY_PREFIX + new String(request.getBody(),
                            StandardCharsets.UTF_8)).getBytes(StandardCharsets.UTF_8);
                    Message reply = MessageUtil.createReplyMessage(request, body);
                    SendResult sent = replier.send(reply);
                    if (sent.getSendStatus() != SendStatus.SEND_OK) {
                        failures.add(sent.toString());
                    }
                } catch (Exception e) {
                    failures.add(e.toString());
                }
            }
            // Answered or not, a request is not redelivered: a second reply would be unasked.
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        };
    }

    /**
     * `count` asynchronous requests, each called back with the reply matching its request.
     * Both clients first call onSuccess(null) when the request itself is sent (apache/rocketmq
     * #4313), then onSuccess(reply) when the reply arrives: the first non-null reply counts.
     */
    private static void requestAsync(Env env, DefaultMQProducer requester, int count,
            String replyTopic) throws Exception {
        Outcomes outcomes = new Outcomes(count);
        List<Message> requests = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message request = Expect.message(env.topic(), "request-async", i);
            requests.add(request);
            requester.request(request, outcomes.callback(i), ANSWERED_TIMEOUT_MS);
        }
        Check.that(outcomes.await(ANSWERED_TIMEOUT_MS + Clients.WAIT_MS),
                "every async request called back with its outcome");
        Check.that(outcomes.failures.isEmpty(), "no async request failed " + outcomes.failures);
        for (int i = 0; i < count; i++) {
            checkReply(requests.get(i), outcomes.replies.get(i), replyTopic, "async request " + i);
        }
    }

    /** The outcome of each of a number of async requests: its reply or its failure, once. */
    private static final class Outcomes {
        final Map<Integer, Message> replies = new ConcurrentHashMap<>();
        final Map<Integer, Throwable> failures = new ConcurrentHashMap<>();
        private final CountDownLatch decided;

        Outcomes(int count) {
            decided = new CountDownLatch(count);
        }

        RequestCallback callback(int index) {
            return new RequestCallback() {
                @Override
                public void onSuccess(Message reply) {
                    // null: the request was sent, its reply is still to come
                    if (reply != null && !failures.containsKey(index)
                            && replies.putIfAbsent(index, reply) == null) {
                        decided.countDown();
                    }
                }

                @Override
                public void onException(Throwable e) {
                    if (!replies.containsKey(index) && failures.putIfAbsent(index, e) == null) {
                        decided.countDown();
                    }
                }
            };
        }

        boolean await(long timeoutMs) throws InterruptedException {
            return decided.await(timeoutMs, TimeUnit.MILLISECONDS);
        }
    }

    /** The reply carries its request's correlation id and the responder's body for it. */
    private static void checkReply(Message request, Message reply, String replyTopic,
            String what) {
        if (!Check.that(reply != null, what + " has a reply")) {
            return;
        }
        String expected = REPLY_PREFIX + new String(request.getBody(), StandardCharsets.UTF_8);
        Check.equal(expected, new String(reply.getBody(), StandardCharsets.UTF_8),
                what + " reply body");
        String correlation = request.getProperty(CORRELATION_ID);
        Check.that(correlation != null && correlation.equals(reply.getProperty(CORRELATION_ID)),
                what + " reply correlation " + reply.getProperty(CORRELATION_ID) + " is the"
                        + " request's " + correlation);
        Check.equal(replyTopic, reply.getTopic(), what + " reply topic");
    }

    /** A request to a topic nobody consumes: RequestTimeoutException after its timeout. */
    private static void noResponder(Env env, DefaultMQProducer requester) throws Exception {
        Message request = Expect.message(env.topic2(), "request-unanswered", 0);
        long start = System.currentTimeMillis();
        try {
            Message reply = requester.request(request, UNANSWERED_TIMEOUT_MS);
            Check.that(false, "an unanswered request got a reply " + reply);
        } catch (RequestTimeoutException e) {
            Check.equal(ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION, e.getResponseCode(),
                    "unanswered request: RequestTimeoutException's code");
            Check.info("unanswered request gave up after " + (System.currentTimeMillis() - start)
                    + " ms: " + e.getMessage());
        }
    }

    /** As {@link #noResponder}, asynchronously: the callback's onException. */
    private static void noResponderAsync(Env env, DefaultMQProducer requester) throws Exception {
        Message request = Expect.message(env.topic2(), "request-unanswered", 0);
        Outcomes outcome = new Outcomes(1);
        requester.request(request, outcome.callback(0), UNANSWERED_TIMEOUT_MS);
        Check.that(outcome.await(UNANSWERED_TIMEOUT_MS + Clients.WAIT_MS),
                "the unanswered async request called back with its outcome");
        Check.that(outcome.replies.isEmpty(), "an unanswered async request got no reply "
                + outcome.replies);
        Throwable e = outcome.failures.get(0);
        Check.that(e instanceof RequestTimeoutException timeout
                && timeout.getResponseCode() == ClientErrorCode.REQUEST_TIMEOUT_EXCEPTION,
                "unanswered async request: RequestTimeoutException " + e);
    }

    /** The reply queue's max offset, -1 when the broker cannot tell. */
    private static long stored(DefaultMQProducer producer, MessageQueue queue) {
        try {
            return producer.maxOffset(queue);
        } catch (Exception e) {
            return -1;
        }
    }
}

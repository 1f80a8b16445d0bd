import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.rocketmq.client.consumer.DefaultMQPullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.PullResult;
import org.apache.rocketmq.client.consumer.PullStatus;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.client.producer.TransactionSendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The broker's transaction check-back, with the official client's TransactionMQProducer. The
 * producer leaves every local transaction UNKNOWN; the broker (transactionTimeOut and
 * transactionCheckInterval set short by the caller's broker.conf) asks it with
 * CHECK_TRANSACTION_STATE, and its checkLocalTransaction answers as the scenario says:
 * <ul>
 * <li>{@code transaction-check --answer commit}: each message arrives once, intact, after its
 * first check;</li>
 * <li>{@code --answer rollback}: each is checked, none ever arrives;</li>
 * <li>{@code --answer never --check-max N}: each is checked exactly N times (its
 * TRANSACTION_CHECK_TIMES 1..N), never arrives, and lands in TRANS_CHECK_MAX_TIME_TOPIC once;
 * </li>
 * <li>{@code transaction-crash-phase1} / {@code -phase2}: halves decided before a SIGKILL of
 * the broker (commit, rollback) and halves left undecided; after the restart the check-back
 * decides the undecided ones and every committed message arrives exactly once, no rolled-back
 * one ever.</li>
 * </ul>
 * "Never arrives" is shown by a witness: a transaction sent after the others' answers, which
 * the check-back commits; once it arrived and the consumer caught up with every queue, the
 * queues hold it and the committed messages only.
 */
final class TransactionCheck {
    /** Transactional messages per scenario. */
    static final int MESSAGES = 8;
    /** Bound on waiting for checks and deliveries: many check rounds on a loaded machine. */
    static final long CHECK_WAIT_MS = 90_000;
    /** Where the broker moves halves checked transactionCheckMax times. */
    static final String CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC";
    /** User property marking the witness, which the check-back commits. */
    static final String WITNESS = "witness";
    /** The tag of every message here, one the consumer subscribes to. */
    static final String TAG = "TagA";
    /** Most messages one pull of TRANS_CHECK_MAX_TIME_TOPIC asks for. */
    static final int PULL_BATCH = 32;

    private TransactionCheck() {
    }

    /** Every CHECK_TRANSACTION_STATE the producer got, by msgId; waits are on arrival. */
    static final class Checks {
        /** One check: the half's TRANSACTION_CHECK_TIMES and when it arrived (ms). */
        record Asked(int times, long atMs) {
        }

        private final Map<String, List<Asked>> byMsgId = new HashMap<>();

        synchronized void record(MessageExt msg) {
            String times = msg.getProperty(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES);
            Asked asked = new Asked(times == null ? 0 : Integer.parseInt(times),
                    System.currentTimeMillis());
            byMsgId.computeIfAbsent(msgId(msg), id -> new ArrayList<>()).add(asked);
            notifyAll();
        }

        synchronized List<Asked> of(String msgId) {
            return List.copyOf(byMsgId.getOrDefault(msgId, List.of()));
        }

        /** Waits up to {@link #CHECK_WAIT_MS} until `done` holds for each of `sent`'s checks. */
        synchronized void await(String what, Collection<Sent> sent, Predicate<List<Asked>> done)
                throws InterruptedException {
            long deadline = System.currentTimeMillis() + CHECK_WAIT_MS;
            while (true) {
                List<Sent> waiting = sent.stream()
                        .filter(s -> !done.test(byMsgId.getOrDefault(s.msgId(), List.of())))
                        .toList();
                if (waiting.isEmpty()) {
                    System.out.println("ok   " + what + " (" + sent.size() + " messages)");
                    return;
                }
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    waiting.forEach(s -> System.out.println("     waiting " + s + " checks "
                            + byMsgId.getOrDefault(s.msgId(), List.of())));
                    throw new Check.Abort(what + ": " + waiting.size() + " of " + sent.size()
                            + " not so within " + CHECK_WAIT_MS + " ms");
                }
                wait(left);
            }
        }
    }

    /** The client-made id of a checked message (its UNIQ_KEY; getMsgId is the offset id). */
    static String msgId(MessageExt msg) {
        return msg.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX);
    }

    /** A TransactionMQProducer of the scenario's group that records every check in `checks`. */
    static TransactionMQProducer producer(RingmqCompat.Args a, String instance, Checks checks,
            Function<Message, LocalTransactionState> onSend,
            Function<MessageExt, LocalTransactionState> onCheck) throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer("P_" + a.group());
        producer.setNamesrvAddr(a.namesrv());
        producer.setInstanceName(instance);
        producer.setVipChannelEnabled(a.vip());
        producer.setPollNameServerInterval(Clients.CLIENT_PERIOD_MS);
        producer.setHeartbeatBrokerInterval(Clients.CLIENT_PERIOD_MS);
        producer.setSendMsgTimeout(Clients.REQUEST_TIMEOUT_MS);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return onSend.apply(msg);
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                checks.record(msg);
                return onCheck.apply(msg);
            }
        });
        producer.start();
        return producer;
    }

    static int seq(Message msg) {
        return Integer.parseInt(msg.getUserProperty("seq"));
    }

    static boolean isWitness(Message msg) {
        return msg.getUserProperty(WITNESS) != null;
    }

    /** Sends `msg` in a transaction; the local outcome must be `expected`. */
    static Sent sendInTransaction(TransactionMQProducer producer, String how, Message msg,
            LocalTransactionState expected) throws Exception {
        TransactionSendResult result = producer.sendMessageInTransaction(msg, null);
        Check.equal(SendStatus.SEND_OK, result.getSendStatus(), how + " half " + seq(msg));
        Check.equal(expected, result.getLocalTransactionState(), how + " outcome " + seq(msg));
        // delivered as a new message: same id and content, its own queue and offset
        return Sent.of(how, msg, result).retried();
    }

    /** `transaction-check --answer commit|rollback|never [--check-max N]`. */
    static void run(RingmqCompat.Args a) throws Exception {
        String answer = a.option("--answer");
        LocalTransactionState answered = switch (answer) {
            case "commit" -> LocalTransactionState.COMMIT_MESSAGE;
            case "rollback" -> LocalTransactionState.ROLLBACK_MESSAGE;
            case "never" -> LocalTransactionState.UNKNOW;
            default -> throw new Check.Abort("--answer commit|rollback|never, not " + answer);
        };
        Checks checks = new Checks();
        TransactionMQProducer producer = producer(a, "producer", checks,
                msg -> LocalTransactionState.UNKNOW,
                msg -> isWitness(msg) ? LocalTransactionState.COMMIT_MESSAGE : answered);
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer = Clients.consumer(a, a.group(), "consumer", TAG, received);
        consumer.start();
        String how = "check-" + answer;
        List<Sent> sent = new ArrayList<>();
        for (int seq = 0; seq < MESSAGES; seq++) {
            Message msg = Sent.make(a.topic(), how, seq, TAG, false);
            sent.add(sendInTransaction(producer, how, msg, LocalTransactionState.UNKNOW));
        }
        List<Sent> committed = new ArrayList<>();
        switch (answer) {
            case "commit" -> {
                received.awaitAll("committed by the check-back", sent, CHECK_WAIT_MS);
                long early = sent.stream().filter(s -> {
                    List<Checks.Asked> asked = checks.of(s.msgId());
                    return asked.isEmpty() || received.of(s.msgId()).stream()
                            .anyMatch(d -> d.atMs() < asked.get(0).atMs());
                }).count();
                Check.equal(0L, early, "messages delivered before their first check");
                long miscounted = sent.stream()
                        .filter(s -> checks.of(s.msgId()).get(0).times() != 1).count();
                Check.equal(0L, miscounted, "first checks counted as check 1");
                committed.addAll(sent);
            }
            case "rollback" -> {
                checks.await("each message checked back", sent, asked -> !asked.isEmpty());
                committed.add(witness(producer, a, received));
            }
            default -> {
                int max = Integer.parseInt(a.option("--check-max"));
                checks.await("each message checked " + max + " times", sent,
                        asked -> asked.size() >= max);
                committed.add(witness(producer, a, received));
                long wrong = sent.stream().filter(s -> !checks.of(s.msgId()).stream()
                        .map(Checks.Asked::times).toList().equals(range(max))).count();
                Check.equal(0L, wrong, "messages checked other than exactly 1.." + max);
                checkDiscarded(a, sent);
            }
        }
        checkOnly(producer, consumer, a, received, committed, sent);
        consumer.shutdown();
        producer.shutdown();
    }

    private static List<Integer> range(int max) {
        List<Integer> times = new ArrayList<>();
        for (int i = 1; i <= max; i++) {
            times.add(i);
        }
        return times;
    }

    /**
     * A transaction sent now, which the check-back commits: once it arrived, rounds of the
     * check-back have gone by since the others were answered (or checked their last).
     */
    private static Sent witness(TransactionMQProducer producer, RingmqCompat.Args a,
            Received received) throws Exception {
        Message msg = Sent.make(a.topic(), "witness", MESSAGES, TAG, false);
        msg.putUserProperty(WITNESS, "true");
        Sent witness = sendInTransaction(producer, "witness", msg, LocalTransactionState.UNKNOW);
        received.awaitAll("the witness committed by the check-back", List.of(witness),
                CHECK_WAIT_MS);
        return witness;
    }

    /**
     * The topic's queues hold exactly `committed`, each delivered once and intact, and none of
     * `others` that is not among them was ever delivered.
     */
    private static void checkOnly(TransactionMQProducer producer, DefaultMQPushConsumer consumer,
            RingmqCompat.Args a, Received received, List<Sent> committed, List<Sent> others)
            throws Exception {
        Map<String, Long> max = Clients.maxOffsets(producer, a.topic());
        Check.equal((long) committed.size(), max.values().stream().mapToLong(Long::longValue)
                .sum(), "messages in the topic's queues (the committed ones only)");
        Check.until("consumer consumed to the end of every queue", Clients.STATE_WAIT_MS,
                () -> Clients.caughtUp(consumer, a.topic(), max),
                () -> "max " + max + ", " + Clients.offsets(consumer, a.topic()));
        received.checkIntact(a.topic(), committed, false);
        long stray = others.stream()
                .filter(s -> committed.stream().noneMatch(c -> c.msgId().equals(s.msgId())))
                .filter(s -> !received.of(s.msgId()).isEmpty()).count();
        Check.equal(0L, stray, "rolled-back or undecided messages delivered");
    }

    /** Each of `sent` is in TRANS_CHECK_MAX_TIME_TOPIC, once, with its body. */
    private static void checkDiscarded(RingmqCompat.Args a, List<Sent> sent) throws Exception {
        DefaultMQPullConsumer reader = new DefaultMQPullConsumer(a.group() + "-discards");
        reader.setNamesrvAddr(a.namesrv());
        reader.setInstanceName("discards");
        reader.setVipChannelEnabled(a.vip());
        reader.start();
        Map<String, Integer> found = new HashMap<>();
        Map<String, byte[]> bodies = new HashMap<>();
        for (MessageQueue mq : reader.fetchSubscribeMessageQueues(CHECK_MAX_TIME_TOPIC)) {
            long offset = 0;
            while (true) {
                PullResult pulled = reader.pull(mq, "*", offset, PULL_BATCH);
                if (pulled.getPullStatus() != PullStatus.FOUND) {
                    break;
                }
                for (MessageExt msg : pulled.getMsgFoundList()) {
                    found.merge(msgId(msg), 1, Integer::sum);
                    bodies.put(msgId(msg), msg.getBody());
                }
                offset = pulled.getNextBeginOffset();
            }
        }
        reader.shutdown();
        long once = sent.stream().filter(s -> found.getOrDefault(s.msgId(), 0) == 1
                && java.util.Arrays.equals(s.body(), bodies.get(s.msgId()))).count();
        Check.equal((long) sent.size(), once,
                "messages in " + CHECK_MAX_TIME_TOPIC + " once, intact");
    }

    /** What crash phase 1 hands to phase 2: every half sent, with its seq. */
    record State(ArrayList<Sent> sent) implements Serializable {
    }

    /** seq % 4: 0 committed and 1 rolled back before the kill, 2 and 3 left undecided. */
    static LocalTransactionState beforeKill(int seq) {
        return switch (seq % 4) {
            case 0 -> LocalTransactionState.COMMIT_MESSAGE;
            case 1 -> LocalTransactionState.ROLLBACK_MESSAGE;
            default -> LocalTransactionState.UNKNOW;
        };
    }

    /** The check-back's answer after the restart: 2 commits, 3 rolls back (0, 1 as before). */
    static LocalTransactionState afterRestart(int seq) {
        return seq % 2 == 0 ? LocalTransactionState.COMMIT_MESSAGE
                : LocalTransactionState.ROLLBACK_MESSAGE;
    }

    static boolean committedInTheEnd(Sent s) {
        return afterRestart(Integer.parseInt(s.props().get("seq")))
                == LocalTransactionState.COMMIT_MESSAGE;
    }

    static int seqOf(Sent s) {
        return Integer.parseInt(s.props().get("seq"));
    }

    /** `transaction-crash-phase1 --state FILE`. */
    static void crashPhase1(RingmqCompat.Args a) throws Exception {
        Checks checks = new Checks();
        TransactionMQProducer producer = producer(a, "producer-1", checks,
                msg -> beforeKill(seq(msg)), msg -> LocalTransactionState.UNKNOW);
        Clients.createTopic(producer, a.topic());
        Received received = new Received();
        DefaultMQPushConsumer consumer =
                Clients.consumer(a, a.group(), "consumer-1", TAG, received);
        consumer.start();
        ArrayList<Sent> sent = new ArrayList<>();
        for (int seq = 0; seq < MESSAGES; seq++) {
            Message msg = Sent.make(a.topic(), "crash", seq, TAG, false);
            sent.add(sendInTransaction(producer, "crash", msg, beforeKill(seq)));
        }
        // Their commits were applied (and, under SYNC_FLUSH, are durable) before the kill.
        List<Sent> committed = sent.stream().filter(s -> seqOf(s) % 4 == 0).toList();
        received.awaitAll("messages committed before the kill", committed, CHECK_WAIT_MS);
        try (ObjectOutputStream out =
                new ObjectOutputStream(Files.newOutputStream(Path.of(a.state())))) {
            out.writeObject(new State(sent));
        }
        consumer.shutdown();
        producer.shutdown();
    }

    /** `transaction-crash-phase2 --state FILE`, after the broker was killed and restarted. */
    static void crashPhase2(RingmqCompat.Args a) throws Exception {
        State state;
        try (ObjectInputStream in =
                new ObjectInputStream(Files.newInputStream(Path.of(a.state())))) {
            state = (State) in.readObject();
        }
        Checks checks = new Checks();
        TransactionMQProducer producer = producer(a, "producer-2", checks,
                msg -> LocalTransactionState.UNKNOW, msg -> afterRestart(seq(msg)));
        Check.until("route of " + a.topic() + " has its " + Clients.QUEUES + " queues again",
                Clients.STATE_WAIT_MS,
                () -> Clients.writeQueues(producer, a.topic()).size() == Clients.QUEUES);
        Received received = new Received();
        // a group of its own, from the first offset: every delivery since the queues began
        DefaultMQPushConsumer consumer =
                Clients.consumer(a, a.group() + "-after", "consumer-2", TAG, received);
        consumer.start();
        // A new transaction first, which the check-back commits: the producer publishes to the
        // topic, as the application's would. (rocketmq-client 5.3.3's producer that has not
        // sent gets no check from the broker, Apache's as ringmq's.)
        List<Sent> committed = new ArrayList<>(List.of(witness(producer, a, received)));
        committed.addAll(state.sent().stream().filter(TransactionCheck::committedInTheEnd)
                .toList());
        List<Sent> undecided = state.sent().stream().filter(s -> seqOf(s) % 4 >= 2).toList();
        checks.await("halves undecided at the kill checked back after the restart", undecided,
                asked -> !asked.isEmpty());
        received.awaitAll("committed messages, before and after the kill", committed,
                CHECK_WAIT_MS);
        long recheckedCommits = state.sent().stream()
                .filter(s -> seqOf(s) % 4 == 0 && !checks.of(s.msgId()).isEmpty()).count();
        Check.equal(0L, recheckedCommits, "halves committed before the kill checked again");
        checkOnly(producer, consumer, a, received, committed, state.sent());
        consumer.shutdown();
        producer.shutdown();
    }
}

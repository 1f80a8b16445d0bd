import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
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
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * Transactional messages (tests/matrix/README.md `transaction`, `transaction-crash`), with the
 * client's TransactionMQProducer, on a broker whose check-back runs every second after 1 s
 * and gives up after MATRIX_TRANSACTION_CHECK_MAX checks.
 */
final class Transactions {
    /** User property naming what the producer does with the message (its Kind). */
    static final String KIND = "matrix-txn";
    /** Messages of each kind in `transaction`. */
    static final int PER_KIND = 4;
    /** Halves sent before the kill in `transaction-crash` (two of each kind there). */
    static final int CRASH_MESSAGES = 8;
    /** Where the broker moves a half checked transactionCheckMax times. */
    static final String CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC";
    /** Most messages one pull of TRANS_CHECK_MAX_TIME_TOPIC asks for. */
    static final int PULL_BATCH = 32;
    /** Where transaction-crash.1 leaves what it sent, in MATRIX_STATE. */
    static final String STATE_FILE = "java-transactions.bin";

    private Transactions() {
    }

    /** What the producer answers: at the send (its local transaction) and at a check-back. */
    enum Kind {
        COMMIT(LocalTransactionState.COMMIT_MESSAGE, LocalTransactionState.COMMIT_MESSAGE),
        ROLLBACK(LocalTransactionState.ROLLBACK_MESSAGE, LocalTransactionState.ROLLBACK_MESSAGE),
        CHECK_COMMIT(LocalTransactionState.UNKNOW, LocalTransactionState.COMMIT_MESSAGE),
        CHECK_ROLLBACK(LocalTransactionState.UNKNOW, LocalTransactionState.ROLLBACK_MESSAGE),
        NEVER(LocalTransactionState.UNKNOW, LocalTransactionState.UNKNOW),
        /** Sent last, committed by the check-back: rounds went by since the others' answers. */
        WITNESS(LocalTransactionState.UNKNOW, LocalTransactionState.COMMIT_MESSAGE);

        final LocalTransactionState onSend;
        final LocalTransactionState onCheck;

        Kind(LocalTransactionState onSend, LocalTransactionState onCheck) {
            this.onSend = onSend;
            this.onCheck = onCheck;
        }

        boolean committed() {
            return onSend == LocalTransactionState.COMMIT_MESSAGE
                    || onCheck == LocalTransactionState.COMMIT_MESSAGE;
        }

        static Kind of(Message msg) {
            return valueOf(msg.getUserProperty(KIND));
        }

        static Kind of(Expect e) {
            return valueOf(e.props().get(KIND));
        }
    }

    /** Every CHECK_TRANSACTION_STATE the producer got, by msgId; waits are on arrival. */
    static final class Book {
        private final Map<String, List<Integer>> checkTimes = new HashMap<>();
        private final Map<String, Long> firstCheckMs = new HashMap<>();

        synchronized void checked(MessageExt msg) {
            String times = msg.getProperty(MessageConst.PROPERTY_TRANSACTION_CHECK_TIMES);
            String id = MessageClientIDSetter.getUniqID(msg);
            checkTimes.computeIfAbsent(id, k -> new ArrayList<>())
                    .add(times == null ? 0 : Integer.parseInt(times));
            firstCheckMs.putIfAbsent(id, System.currentTimeMillis());
            notifyAll();
        }

        synchronized List<Integer> checks(Expect e) {
            return List.copyOf(checkTimes.getOrDefault(e.msgId(), List.of()));
        }

        /** Messages delivered before the broker had asked about them: none may be. */
        synchronized long deliveredBeforeChecked(Collection<Expect> sent, Arrivals arrivals) {
            return sent.stream().filter(e -> !firstCheckMs.containsKey(e.msgId())
                    || arrivals.of(e.msgId()) < firstCheckMs.get(e.msgId())).count();
        }

        /** Waits up to {@link Clients#WAIT_MS} until `done` holds for each of `sent`'s checks. */
        synchronized void await(String what, Collection<Expect> sent,
                Predicate<List<Integer>> done) throws InterruptedException {
            long deadline = System.currentTimeMillis() + Clients.WAIT_MS;
            while (true) {
                List<Expect> waiting = sent.stream()
                        .filter(e -> !done.test(checkTimes.getOrDefault(e.msgId(), List.of())))
                        .toList();
                if (waiting.isEmpty()) {
                    Check.that(true, what + " (" + sent.size() + " messages)");
                    return;
                }
                long left = deadline - System.currentTimeMillis();
                if (left <= 0) {
                    waiting.forEach(e -> System.out.println("     waiting " + e + " checks "
                            + checkTimes.get(e.msgId())));
                    throw new Check.Abort(what + ": " + waiting.size() + " of " + sent.size()
                            + " not so within " + Clients.WAIT_MS + " ms");
                }
                wait(left);
            }
        }
    }

    /**
     * A TransactionMQProducer of the scenario's producer group answering each message as its
     * Kind says (at a check-back only once `answering`), every check noted in `book`.
     */
    static TransactionMQProducer producer(Env env, String instance, Book book, boolean answering)
            throws Exception {
        TransactionMQProducer producer = new TransactionMQProducer("P_" + env.group());
        producer.setNamesrvAddr(env.namesrv());
        producer.setInstanceName(instance);
        producer.setPollNameServerInterval(Clients.CLIENT_PERIOD_MS);
        producer.setHeartbeatBrokerInterval(Clients.CLIENT_PERIOD_MS);
        producer.setSendMsgTimeout(Clients.REQUEST_TIMEOUT_MS);
        producer.setTransactionListener(new TransactionListener() {
            @Override
            public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                return Kind.of(msg).onSend;
            }

            @Override
            public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                book.checked(msg);
                return answering ? Kind.of(msg).onCheck : LocalTransactionState.UNKNOW;
            }
        });
        producer.start();
        return producer;
    }

    /** Message `i` of `scenario`, of `kind`, sent in a transaction: what its delivery carries. */
    static Expect send(TransactionMQProducer producer, Env env, String scenario, int i, Kind kind)
            throws Exception {
        Message msg = Expect.message(env.topic(), scenario, i);
        msg.putUserProperty(KIND, kind.name());
        TransactionSendResult result = producer.sendMessageInTransaction(msg, null);
        Check.that(result.getSendStatus() == SendStatus.SEND_OK
                && result.getLocalTransactionState() == kind.onSend,
                "half #" + i + " " + kind + " answered " + result.getSendStatus() + ", local "
                        + result.getLocalTransactionState());
        Expect half = Expect.of(msg, result);
        // committed as a new message: the producer's msgId and content, its own queue offset
        return new Expect(half.index(), half.msgId(), null, Expect.UNKNOWN, Expect.UNKNOWN,
                half.tags(), half.keys(), half.body(), half.props());
    }

    static List<Expect> ofKind(Collection<Expect> sent, Kind... kinds) {
        List<Kind> wanted = Arrays.asList(kinds);
        return sent.stream().filter(e -> wanted.contains(Kind.of(e))).toList();
    }

    /**
     * transaction: PER_KIND of each kind; the committed ones (at the send or by the check-back)
     * consumed once, intact, none before its check; the rest never; the never-answered ones
     * checked exactly 1..max times, then in TRANS_CHECK_MAX_TIME_TOPIC once.
     */
    static String transaction(Env env) throws Exception {
        int checkMax = checkMax();
        Book book = new Book();
        TransactionMQProducer producer = producer(env, "producer", book, true);
        Inbox inbox = new Inbox();
        Arrivals arrivals = new Arrivals();
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group(), "consumer",
                "*", arrivals.listener(inbox, "consumer"));
        consumer.start();
        List<Kind> kinds = List.of(Kind.COMMIT, Kind.ROLLBACK, Kind.CHECK_COMMIT,
                Kind.CHECK_ROLLBACK, Kind.NEVER);
        List<Expect> sent = new ArrayList<>();
        for (int i = 0; i < PER_KIND * kinds.size(); i++) {
            sent.add(send(producer, env, "transaction", i, kinds.get(i % kinds.size())));
        }
        List<Expect> committed = new ArrayList<>(ofKind(sent, Kind.COMMIT, Kind.CHECK_COMMIT));
        inbox.awaitAll("committed at the send or by the check-back", committed, Clients.WAIT_MS);
        book.await("each check-rollback one checked", ofKind(sent, Kind.CHECK_ROLLBACK),
                asked -> !asked.isEmpty());
        List<Expect> never = ofKind(sent, Kind.NEVER);
        book.await("each never-answered one checked " + checkMax + " times", never,
                asked -> asked.size() >= checkMax);
        committed.add(witness(producer, env, inbox, "transaction", sent.size()));

        List<Expect> checkCommitted = ofKind(sent, Kind.CHECK_COMMIT);
        Check.equal(0L, book.deliveredBeforeChecked(checkCommitted, arrivals),
                "check-commit messages delivered before their first check");
        Check.equal(0L, checkCommitted.stream().filter(e -> book.checks(e).get(0) != 1).count(),
                "first checks not counted as TRANSACTION_CHECK_TIMES 1");
        Check.equal(0L, ofKind(sent, Kind.COMMIT, Kind.ROLLBACK).stream()
                .filter(e -> !book.checks(e).isEmpty()).count(),
                "halves decided at the send checked back");
        List<Integer> oneToMax = new ArrayList<>();
        for (int n = 1; n <= checkMax; n++) {
            oneToMax.add(n);
        }
        Check.equal(0L, never.stream().filter(e -> !book.checks(e).equals(oneToMax)).count(),
                "never-answered messages checked other than exactly 1.." + checkMax);
        awaitDiscarded(env, producer, never);
        onlyCommitted(env, producer, consumer, inbox, committed);
        consumer.shutdown();
        producer.shutdown();
        return "of " + PER_KIND + " each: commit, rollback, UNKNOWN then check-back commit and"
                + " rollback, never answered (checked 1.." + checkMax + ", then in "
                + CHECK_MAX_TIME_TOPIC + "): exactly the " + committed.size()
                + " committed consumed once intact, none before its check";
    }

    /** transaction-crash.1: halves committed, rolled back and left UNKNOWN, then the kill. */
    static String crash1(Env env) throws Exception {
        Book book = new Book();
        TransactionMQProducer producer = producer(env, "producer-1", book, false);
        Inbox inbox = new Inbox();
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group(), "consumer-1",
                "*", inbox.listener("consumer-1"));
        consumer.start();
        List<Kind> kinds = List.of(Kind.COMMIT, Kind.ROLLBACK, Kind.CHECK_COMMIT,
                Kind.CHECK_ROLLBACK);
        ArrayList<Expect> sent = new ArrayList<>();
        for (int i = 0; i < CRASH_MESSAGES; i++) {
            sent.add(send(producer, env, "transaction-crash", i, kinds.get(i % kinds.size())));
        }
        inbox.awaitAll("committed before the kill", ofKind(sent, Kind.COMMIT), Clients.WAIT_MS);
        PhaseState.write(env, STATE_FILE, sent);
        consumer.shutdown();
        producer.shutdown();
        return CRASH_MESSAGES + " halves: committed, rolled back, " + ofKind(sent,
                Kind.CHECK_COMMIT, Kind.CHECK_ROLLBACK).size() + " left UNKNOWN for the kill";
    }

    /**
     * transaction-crash.2, after the SIGKILL and restart: the check-back asks the new producer
     * about the undecided halves only; a new group gets each committed one once.
     */
    static String crash2(Env env) throws Exception {
        List<Expect> sent = PhaseState.read(env, STATE_FILE);
        Book book = new Book();
        TransactionMQProducer producer = producer(env, "producer-2", book, true);
        Check.until("route of " + env.topic() + " has its " + Clients.QUEUES + " queues again",
                Clients.WAIT_MS,
                () -> Clients.writeQueues(producer, env.topic()).size() == Clients.QUEUES);
        Inbox inbox = new Inbox();
        // a group of its own, from the first offset: every commit since the queues began
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group2(),
                "consumer-2", "*", inbox.listener("consumer-2"));
        consumer.start();
        // the producer sends first, as an application's would: a 5.x producer that has not
        // sent gets no check from the broker (Apache's as ringmq's)
        List<Expect> committed = new ArrayList<>(List.of(witness(producer, env, inbox,
                "transaction-crash", sent.size())));
        committed.addAll(sent.stream().filter(e -> Kind.of(e).committed()).toList());
        book.await("halves undecided at the kill checked back after the restart",
                ofKind(sent, Kind.CHECK_COMMIT, Kind.CHECK_ROLLBACK), asked -> !asked.isEmpty());
        inbox.awaitAll("committed before and after the kill", committed, Clients.WAIT_MS);
        Check.equal(0L, ofKind(sent, Kind.COMMIT, Kind.ROLLBACK).stream()
                .filter(e -> !book.checks(e).isEmpty()).count(),
                "halves decided before the kill checked again");
        onlyCommitted(env, producer, consumer, inbox, committed);
        consumer.shutdown();
        producer.shutdown();
        return "after the kill the undecided halves were checked back; exactly the "
                + committed.size() + " committed consumed once intact, no rolled-back one";
    }

    /** A transaction sent now, which the check-back commits; returned once it arrived. */
    private static Expect witness(TransactionMQProducer producer, Env env, Inbox inbox,
            String scenario, int i) throws Exception {
        Expect witness = send(producer, env, scenario, i, Kind.WITNESS);
        inbox.awaitAll("the witness, committed by the check-back", List.of(witness),
                Clients.WAIT_MS);
        return witness;
    }

    /** The topic's queues hold exactly `committed`, each consumed once intact, nothing else. */
    private static void onlyCommitted(Env env, TransactionMQProducer producer,
            DefaultMQPushConsumer consumer, Inbox inbox, List<Expect> committed)
            throws Exception {
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());
        Check.equal((long) committed.size(), max.values().stream().mapToLong(Long::longValue)
                .sum(), "messages in the topic's queues (the committed ones only)");
        Clients.awaitCaughtUp(consumer, env.topic(), max, Clients.QUEUES);
        inbox.checkExactlyOnce("committed transactions", env.topic(), committed);
    }

    /** Waits until each of `never` is in TRANS_CHECK_MAX_TIME_TOPIC, once, with its body. */
    private static void awaitDiscarded(Env env, TransactionMQProducer producer,
            List<Expect> never) throws Exception {
        DefaultMQPullConsumer reader = new DefaultMQPullConsumer(env.group() + "-discards");
        reader.setNamesrvAddr(env.namesrv());
        reader.setInstanceName("discards");
        reader.start();
        try {
            Check.until(never.size() + " never-answered messages in " + CHECK_MAX_TIME_TOPIC
                    + " once, intact", Clients.WAIT_MS, () -> discardedOnce(reader, never));
        } finally {
            reader.shutdown();
        }
    }

    private static boolean discardedOnce(DefaultMQPullConsumer reader, List<Expect> never) {
        Map<String, List<byte[]>> found = new HashMap<>();
        try {
            for (MessageQueue mq : reader.fetchSubscribeMessageQueues(CHECK_MAX_TIME_TOPIC)) {
                long offset = 0;
                while (true) {
                    PullResult pulled = reader.pull(mq, "*", offset, PULL_BATCH);
                    if (pulled.getPullStatus() != PullStatus.FOUND) {
                        break;
                    }
                    for (MessageExt msg : pulled.getMsgFoundList()) {
                        found.computeIfAbsent(MessageClientIDSetter.getUniqID(msg),
                                k -> new ArrayList<>()).add(msg.getBody());
                    }
                    offset = pulled.getNextBeginOffset();
                }
            }
        } catch (Exception e) {
            return false; // the topic is made when the first half is discarded
        }
        return never.stream().allMatch(e -> found.getOrDefault(e.msgId(), List.of()).size() == 1
                && Arrays.equals(e.body(), found.get(e.msgId()).get(0)));
    }

    /** The broker's transactionCheckMax, as the orchestrator configured it. */
    private static int checkMax() {
        String value = System.getenv("MATRIX_TRANSACTION_CHECK_MAX");
        if (value == null || value.isEmpty()) {
            throw new Check.Abort("environment variable MATRIX_TRANSACTION_CHECK_MAX is not set");
        }
        return Integer.parseInt(value);
    }
}

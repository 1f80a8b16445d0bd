import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.message.Message;

/**
 * 5.x timer messages (tests/matrix/README.md `timer`) as the 5.x client's Message setters
 * write them. The setters are looked up by name, so one source compiles against the 4.9.8
 * client too, which has none (its cell is n/a).
 */
final class TimerMessages {
    /** Timers per delay. */
    static final int PER_DELAY = 3;
    /** The far timer's delay: never due while the phase runs. */
    static final long FAR_MS = 3_600_000;
    /**
     * Latest arrival accepted after a timer's time: the broker's 1 s precision slot plus a
     * loaded host's long-poll wake-up and consumer thread; a timer held a slot round or a
     * wheel round too long is far later. The measured error is printed and on the RESULT line.
     */
    static final long LATE_MAX_MS = 10_000;

    private TimerMessages() {
    }

    /** One timer kind: the setter, the delay it asks for, whether its argument is a time. */
    record Delay(String setter, long delayMs, boolean absolute) {
        /** Sets this delay on `msg`, asked `sentMs`; false when the client has no setter. */
        boolean apply(Message msg, long sentMs) throws Exception {
            Method set = TimerMessages.setter(setter);
            if (set == null) {
                return false;
            }
            long arg = absolute ? sentMs + delayMs : setter.endsWith("Sec") ? delayMs / 1000
                    : delayMs;
            set.invoke(msg, arg);
            return true;
        }

        String label() {
            return setter + " " + delayMs / 1000 + " s";
        }
    }

    /** A timer sent: when it may arrive at the earliest, and its time by the send's answer. */
    record Timed(Delay delay, Expect sent, long earliestMs, long dueMs) {
    }

    static final List<Delay> DUE = List.of(new Delay("setDelayTimeSec", 1_000, false),
            new Delay("setDeliverTimeMs", 5_000, true), new Delay("setDelayTimeMs", 30_000, false));
    static final Delay FAR = new Delay("setDeliverTimeMs", FAR_MS, true);

    private static Method setter(String name) {
        for (Method method : Message.class.getMethods()) {
            if (method.getName().equals(name) && method.getParameterCount() == 1
                    && method.getParameterTypes()[0] == long.class) {
                return method;
            }
        }
        return null;
    }

    /** The RESULT NA reason when this client has no timer API, else null. */
    static String missingApi() {
        for (Delay d : DUE) {
            if (setter(d.setter()) == null) {
                return "this client has no timer API (Message." + d.setter() + "(long) is"
                        + " rocketmq-client 5.x's)";
            }
        }
        return null;
    }

    /**
     * timer: a plain message first (the consumer holds the queues), then timers at 1 s, 5 s and
     * 30 s and one an hour ahead; each near one consumed once, intact, never before its time,
     * within LATE_MAX_MS after it; the far one in none of the queues.
     */
    static String timer(Env env) throws Exception {
        String missing = missingApi();
        if (missing != null) {
            return Check.na(missing);
        }
        DefaultMQProducer producer = Clients.producer(env, "producer");
        Inbox inbox = new Inbox();
        Arrivals arrivals = new Arrivals();
        DefaultMQPushConsumer consumer = Clients.push(env, env.topic(), env.group(), "consumer",
                "*", arrivals.listener(inbox, "consumer"));
        consumer.start();
        Expect first = Sends.sendOk(producer, Expect.message(env.topic(), "timer", 0));
        inbox.awaitAll("a plain message first", List.of(first), Clients.WAIT_MS);
        List<Timed> due = new ArrayList<>();
        int i = 1;
        for (Delay delay : DUE) {
            for (int n = 0; n < PER_DELAY; n++) {
                due.add(send(producer, env, i++, delay));
            }
        }
        Timed far = send(producer, env, i, FAR);
        inbox.awaitAll("the 1 s, 5 s and 30 s timers", due.stream().map(Timed::sent).toList(),
                Clients.WAIT_MS);
        List<Long> errors = new ArrayList<>();
        List<String> early = new ArrayList<>();
        for (Timed t : due) {
            long at = arrivals.of(t.sent().msgId());
            if (at < t.earliestMs()) {
                early.add(t.sent() + " (" + t.delay().label() + ") " + (t.earliestMs() - at)
                        + " ms early");
            }
            errors.add(at - t.dueMs());
        }
        Check.equal(List.of(), early, "timers delivered before their time");
        String measured = errorSummary(errors);
        Check.info("delivery error (arrival - time asked, " + errors.size() + " timers): "
                + measured);
        Check.that(errors.stream().allMatch(e -> e <= LATE_MAX_MS),
                "every timer within " + LATE_MAX_MS + " ms after its time");
        Map<Integer, Long> max = Clients.maxOffsets(producer, env.topic());
        Check.equal(1L + due.size(), max.values().stream().mapToLong(Long::longValue).sum(),
                "messages in the topic's queues (the far timer in none)");
        Clients.awaitCaughtUp(consumer, env.topic(), max, Clients.QUEUES);
        List<Expect> all = new ArrayList<>(List.of(first));
        due.forEach(t -> all.add(t.sent()));
        inbox.checkExactlyOnce("the plain message and the due timers", env.topic(), all);
        Check.equal(Long.MAX_VALUE, arrivals.of(far.sent().msgId()),
                "arrival of the timer an hour ahead");
        consumer.shutdown();
        producer.shutdown();
        return due.size() + " timers at 1 s, 5 s, 30 s each once intact, none early, the one an"
                + " hour ahead held; delivery error " + measured;
    }

    private static Timed send(DefaultMQProducer producer, Env env, int i, Delay delay)
            throws Exception {
        Message msg = Expect.message(env.topic(), "timer", i);
        long start = System.currentTimeMillis();
        delay.apply(msg, start);
        SendResult result = producer.send(msg);
        long answered = System.currentTimeMillis();
        Check.that(result.getSendStatus() == SendStatus.SEND_OK,
                "send of timer #" + i + " (" + delay.label() + ") answered " + result);
        Expect e = Expect.of(msg, result);
        // delivered as a new message: the producer's msgId and content, its own queue offset
        Expect delivered = new Expect(e.index(), e.msgId(), null, Expect.UNKNOWN, Expect.UNKNOWN,
                e.tags(), e.keys(), e.body(), e.props());
        // a relative delay counts from the broker's receipt: between the send and its answer
        return new Timed(delay, delivered, start + delay.delayMs(),
                (delay.absolute() ? start : answered) + delay.delayMs());
    }

    /** Percentiles (nearest rank) and max of `errors`, in ms. */
    static String errorSummary(List<Long> errors) {
        List<Long> sorted = errors.stream().sorted().toList();
        return "p50 " + rank(sorted, 50) + " ms, p90 " + rank(sorted, 90) + " ms, max "
                + sorted.get(sorted.size() - 1) + " ms (min " + sorted.get(0) + " ms)";
    }

    private static long rank(List<Long> sorted, int percent) {
        int index = (int) Math.ceil(percent / 100.0 * sorted.size()) - 1;
        return sorted.get(Math.max(0, index));
    }
}

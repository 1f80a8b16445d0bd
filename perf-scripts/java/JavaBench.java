import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.atomic.LongAdder;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.MessageSelector;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.LocalTransactionState;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.client.producer.TransactionListener;
import org.apache.rocketmq.client.producer.TransactionMQProducer;
import org.apache.rocketmq.common.MQVersion;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

/**
 * The official Java client as a load generator for side-by-side.sh's java-* workloads, shaped
 * like Apache's own benchmark (example/.../benchmark/Producer and Consumer): N threads of
 * synchronous DefaultMQProducer.send, no keys, tags or compression; a DefaultMQPushConsumer with
 * a concurrent listener draining the topic from its first offset. The header encoding is the
 * JVM's (-Drocketmq.serialize.type=JSON|ROCKETMQ) and is reported as the client saw it.
 *
 *   produce --namesrv A --topic T --threads N --size B --seconds S --max-messages M
 *           [--warmup-seconds W] [--transactional 1] [--filter-props 1]
 *           [--broker-pid P] [--clk-tck HZ] --json FILE
 *   consume --namesrv A --topic T --group G --expect M --seconds S [--threads N] [--sql92 EXPR]
 *           [--check-below K]
 *           [--broker-pid P] [--clk-tck HZ] --json FILE
 *   timer   --namesrv A --topic T --group G --count N --lead-seconds L --spread-seconds S
 *           [--threads N] [--size B] [--broker-pid P] [--clk-tck HZ] --json FILE
 *
 * --transactional sends every message as a transaction (TransactionMQProducer, a local
 * transaction that commits at once: half, then END_TRANSACTION). --filter-props gives each
 * message the user property bench_n = its sequence number mod 100, for --sql92 consumers (e.g.
 * "bench_n < 50" selects half). timer sends --count 5.x timer messages (setDeliverTimeMs) due
 * evenly over --spread-seconds from --lead-seconds after the start, so all are pending at once
 * when the sends finish within the lead, and a push consumer records each delivery's error
 * (receipt time minus due time, from the message's bench_due property).
 *
 * Both are bounded in count and time. The CPU of this JVM and of the broker (utime + stime from
 * /proc) is read at the edges of the measured window, so both cover exactly the messages counted:
 * produce's window starts after the warm-up (to another topic) and ends when the last sender
 * returned; consume's starts at the first delivery and ends at the one that reached --expect (or
 * at the time bound).
 */
public final class JavaBench {
    /** Beyond this a run is a mistake, not a benchmark: 10 minutes, 20 M messages, 1 MiB. */
    static final int MAX_SECONDS = 600;
    static final long MAX_MESSAGES = 20_000_000L;
    static final int MAX_SIZE = 1 << 20;
    static final int MAX_THREADS = 1024;
    /**
     * --filter-props gives bench_n = sequence mod 100: "bench_n < 50" selects half, and a
     * --check-below consumer counts a delivery at or above its bound as a filter failure.
     */
    static final long FILTER_HALF = 50;
    /** After a failed send a thread pauses (Apache's benchmark sleeps 3 s; a 10 s run cannot). */
    static final long ERROR_PAUSE_MS = 100;

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            usage("no command");
        }
        Map<String, String> opts = new TreeMap<>();
        for (int i = 1; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                usage("bad argument " + args[i]);
            }
            opts.put(args[i].substring(2), args[i + 1]);
        }
        Options o = new Options(opts);
        String json;
        switch (args[0]) {
            case "produce" -> json = produce(o);
            case "consume" -> json = consume(o);
            case "timer" -> json = timer(o);
            default -> {
                usage("unknown command " + args[0]);
                return;
            }
        }
        Files.writeString(Path.of(o.str("json")), json + "\n");
        System.out.println(json);
        // The client's non-daemon threads (netty, scheduled services) must not keep a finished
        // run alive: shutdown() was called, the result is written.
        System.exit(0);
    }

    static void usage(String why) {
        System.err.println("JavaBench: " + why + " (see the comment at the top of JavaBench.java)");
        System.exit(2);
    }

    static String produce(Options o) throws Exception {
        String topic = o.str("topic");
        int threads = o.integer("threads", 64, 1, MAX_THREADS);
        int size = o.integer("size", 1024, 1, MAX_SIZE);
        int seconds = o.integer("seconds", 10, 1, MAX_SECONDS);
        int warmup = o.integer("warmup-seconds", 5, 0, MAX_SECONDS);
        long maxMessages = o.longer("max-messages", 2_000_000L, 1, MAX_MESSAGES);
        Cpu cpu = new Cpu(o);

        boolean transactional = o.integer("transactional", 0, 0, 1) == 1;
        boolean filterProps = o.integer("filter-props", 0, 0, 1) == 1;
        DefaultMQProducer producer = startProducer(o, transactional);
        AtomicLong sequence = new AtomicLong();
        byte[] body = new byte[size];
        java.util.Arrays.fill(body, (byte) 'a');

        // Phases: 0 warm-up (to topic-warmup, not counted), 1 measured, 2 stop.
        AtomicLong phase = new AtomicLong(warmup > 0 ? 0 : 1);
        AtomicLong tickets = new AtomicLong(maxMessages);
        LongAdder sent = new LongAdder();
        LongAdder sentBelowHalf = new LongAdder();
        Histogram latency = new Histogram();
        Map<String, LongAdder> errors = new ConcurrentHashMap<>();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread thread = new Thread(() -> {
                while (true) {
                    long p = phase.get();
                    if (p == 2 || (p == 1 && tickets.getAndDecrement() <= 0)) {
                        return;
                    }
                    Message msg = new Message(p == 0 ? topic + "-warmup" : topic, body);
                    long benchN = sequence.getAndIncrement() % 100;
                    if (filterProps) {
                        msg.putUserProperty("bench_n", Long.toString(benchN));
                    }
                    long begin = System.nanoTime();
                    try {
                        SendResult r = transactional
                            ? producer.sendMessageInTransaction(msg, null)
                            : producer.send(msg);
                        if (p == 1) {
                            if (r.getSendStatus() == SendStatus.SEND_OK) {
                                sent.increment();
                                if (benchN < FILTER_HALF) {
                                    sentBelowHalf.increment();
                                }
                                latency.record((System.nanoTime() - begin) / 1000);
                            } else {
                                errors.computeIfAbsent(r.getSendStatus().name(), k -> new LongAdder()).increment();
                            }
                        }
                    } catch (Exception e) {
                        if (p == 1) {
                            errors.computeIfAbsent(e.getClass().getSimpleName(), k -> new LongAdder()).increment();
                        }
                        try {
                            Thread.sleep(ERROR_PAUSE_MS);
                        } catch (InterruptedException ie) {
                            return;
                        }
                    }
                }
            }, "sender-" + t);
            senders.add(thread);
            thread.start();
        }
        Thread.sleep(warmup * 1000L);
        Cpu.Reading before = cpu.read();
        phase.set(1);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        for (Thread thread : senders) {
            long left = Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
            thread.join(left);
        }
        phase.set(2);
        for (Thread thread : senders) {
            // A send has its own 3 s timeout; twice that is the bound of the last one.
            thread.join(6000);
        }
        Cpu.Reading after = cpu.read();
        int queues = producer.fetchPublishMessageQueues(topic).size();
        producer.shutdown();

        long n = sent.sum();
        double wall = after.wallSeconds(before);
        return "{" + header(o, "produce") + ",\"threads\": " + threads + ",\"size\": " + size
            + ",\"transactional\": " + transactional
            + ",\"queues\": " + queues + ",\"max_messages\": " + maxMessages
            + ",\"produce\": {\"messages\": " + n + ",\"bench_n_below_half\": " + sentBelowHalf.sum()
            + ",\"seconds\": " + fmt(wall)
            + ",\"msg_per_s\": " + fmt(n / wall) + ",\"mib_per_s\": " + fmt(n * (double) size / wall / (1 << 20))
            + ",\"latency_us\": " + latency.json() + errorsJson(errors) + "}"
            + ",\"cpu\": " + cpu.json(before, after) + "}";
    }

    /**
     * A started producer; a transactional one's local transaction commits at once and its
     * check-back (never expected: every transaction is decided) answers commit too.
     */
    static DefaultMQProducer startProducer(Options o, boolean transactional) throws Exception {
        DefaultMQProducer producer;
        if (transactional) {
            TransactionMQProducer txn = new TransactionMQProducer("java_bench_txn_producer");
            txn.setTransactionListener(new TransactionListener() {
                @Override
                public LocalTransactionState executeLocalTransaction(Message msg, Object arg) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }

                @Override
                public LocalTransactionState checkLocalTransaction(MessageExt msg) {
                    return LocalTransactionState.COMMIT_MESSAGE;
                }
            });
            producer = txn;
        } else {
            producer = new DefaultMQProducer("java_bench_producer");
        }
        producer.setNamesrvAddr(o.str("namesrv"));
        producer.setInstanceName("java-bench-" + ProcessHandle.current().pid());
        producer.setCompressMsgBodyOverHowmuch(Integer.MAX_VALUE);
        producer.start();
        return producer;
    }

    static String consume(Options o) throws Exception {
        long expect = o.longer("expect", 0, 1, MAX_MESSAGES);
        int seconds = o.integer("seconds", 120, 1, MAX_SECONDS);
        // Apache's benchmark Consumer: 20 consume threads.
        int threads = o.integer("threads", 20, 1, MAX_THREADS);
        Cpu cpu = new Cpu(o);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(o.str("group"));
        consumer.setNamesrvAddr(o.str("namesrv"));
        consumer.setInstanceName("java-bench-" + ProcessHandle.current().pid());
        consumer.setConsumeThreadMin(threads);
        consumer.setConsumeThreadMax(threads);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        String sql92 = o.m.get("sql92");
        if (sql92 != null) {
            consumer.subscribe(o.str("topic"), MessageSelector.bySql(sql92));
        } else {
            consumer.subscribe(o.str("topic"), "*");
        }
        long checkBelow = o.longer("check-below", Long.MAX_VALUE, 0, Long.MAX_VALUE);
        LongAdder unfiltered = new LongAdder();
        AtomicLong received = new AtomicLong();
        LongAdder bytes = new LongAdder();
        // The readings at the first delivery and at the one that reached --expect (listener
        // threads write them, the main thread reads them after the latch or the time bound).
        AtomicReferenceArray<Cpu.Reading> edges = new AtomicReferenceArray<>(2);
        CountDownLatch done = new CountDownLatch(1);
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (var m : msgs) {
                bytes.add(m.getBody().length);
                String benchN = m.getUserProperty("bench_n");
                if (checkBelow != Long.MAX_VALUE && (benchN == null || Long.parseLong(benchN) >= checkBelow)) {
                    unfiltered.increment();
                }
                long k = received.incrementAndGet();
                if (k == 1) {
                    edges.compareAndSet(0, null, cpu.read());
                }
                if (k == expect) {
                    edges.set(1, cpu.read());
                    done.countDown();
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean complete = done.await(seconds, TimeUnit.SECONDS);
        Cpu.Reading after = complete ? edges.get(1) : cpu.read();
        Cpu.Reading before = edges.get(0) != null ? edges.get(0) : after;
        long n = Math.min(received.get(), expect);
        consumer.shutdown();

        double wall = after.wallSeconds(before);
        double rate = wall > 0 ? n / wall : 0;
        Map<String, LongAdder> errors = new TreeMap<>();
        if (!complete) {
            errors.computeIfAbsent("not delivered within " + seconds + " s", k -> new LongAdder()).add(expect - n);
        }
        if (unfiltered.sum() > 0) {
            errors.computeIfAbsent("delivered though bench_n >= " + checkBelow, k -> new LongAdder()).add(unfiltered.sum());
        }
        String errs = errors.isEmpty() ? "" : errorsJson(errors);
        return "{" + header(o, "consume") + ",\"threads\": " + threads + ",\"expect\": " + expect
            + ",\"sql92\": " + (sql92 == null ? "null" : "\"" + sql92.replace("\"", "\\\"") + "\"")
            + ",\"consume\": {\"messages\": " + n + ",\"deliveries\": " + received.get()
            + ",\"complete\": " + complete + ",\"seconds\": " + fmt(wall)
            + ",\"msg_per_s\": " + fmt(rate) + ",\"mib_per_s\": " + fmt(wall > 0 ? bytes.sum() / wall / (1 << 20) : 0)
            + errs + "}"
            + ",\"cpu\": " + cpu.json(before, after) + "}";
    }

    /** A timer run waits for its last due time plus this for the deliveries to arrive. */
    static final int TIMER_GRACE_SECONDS = 60;

    static String timer(Options o) throws Exception {
        String topic = o.str("topic");
        int count = o.integer("count", 100_000, 1, (int) MAX_MESSAGES);
        int lead = o.integer("lead-seconds", 30, 1, MAX_SECONDS);
        int spread = o.integer("spread-seconds", 10, 1, MAX_SECONDS);
        int threads = o.integer("threads", 64, 1, MAX_THREADS);
        int size = o.integer("size", 1024, 1, MAX_SIZE);
        Cpu cpu = new Cpu(o);
        TimerDeliveries deliveries = new TimerDeliveries(count, cpu);

        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(o.str("group"));
        consumer.setNamesrvAddr(o.str("namesrv"));
        consumer.setInstanceName("java-bench-" + ProcessHandle.current().pid());
        consumer.setConsumeThreadMin(20);
        consumer.setConsumeThreadMax(20);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (var m : msgs) {
                deliveries.record(m);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = startProducer(o, false);
        byte[] body = new byte[size];
        java.util.Arrays.fill(body, (byte) 't');
        long firstDue = System.currentTimeMillis() + lead * 1000L;
        AtomicLong tickets = new AtomicLong();
        Map<String, LongAdder> errors = new ConcurrentHashMap<>();
        List<Thread> senders = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread thread = new Thread(() -> {
                for (long i = tickets.getAndIncrement(); i < count; i = tickets.getAndIncrement()) {
                    long due = firstDue + i * spread * 1000L / count;
                    Message msg = new Message(topic, body);
                    msg.setDeliverTimeMs(due);
                    msg.putUserProperty("bench_due", Long.toString(due));
                    msg.putUserProperty("bench_seq", Long.toString(i));
                    try {
                        SendResult r = producer.send(msg);
                        if (r.getSendStatus() != SendStatus.SEND_OK) {
                            errors.computeIfAbsent(r.getSendStatus().name(), k -> new LongAdder()).increment();
                        }
                    } catch (Exception e) {
                        errors.computeIfAbsent(e.getClass().getSimpleName(), k -> new LongAdder()).increment();
                    }
                }
            }, "timer-sender-" + t);
            senders.add(thread);
            thread.start();
        }
        for (Thread thread : senders) {
            thread.join();
        }
        long sendsDone = System.currentTimeMillis();
        producer.shutdown();
        long lastDue = firstDue + spread * 1000L;
        long wait = lastDue + TIMER_GRACE_SECONDS * 1000L - System.currentTimeMillis();
        boolean complete = deliveries.done.await(Math.max(1, wait), TimeUnit.MILLISECONDS);
        consumer.shutdown();
        return "{" + header(o, "timer") + ",\"count\": " + count + ",\"threads\": " + threads
            + ",\"size\": " + size + ",\"lead_s\": " + lead + ",\"spread_s\": " + spread
            + ",\"timer\": {\"all_pending_before_first_due\": " + (sendsDone < firstDue)
            + ",\"sends_s\": " + fmt((sendsDone - (firstDue - lead * 1000L)) / 1e3)
            + ",\"complete\": " + complete + deliveries.json() + errorsJson(errors) + "}"
            + ",\"cpu\": " + deliveries.cpuJson() + "}";
    }

    /**
     * What a timer run's consumer saw: each sequence number's first delivery, its lateness
     * (receipt minus due time, ms; an early one is counted apart), and the CPU readings at the
     * first delivery and at the one that completed the set.
     */
    static final class TimerDeliveries {
        final int count;
        final Cpu cpu;
        final java.util.concurrent.atomic.AtomicIntegerArray seen;
        final AtomicLong distinct = new AtomicLong();
        final LongAdder duplicates = new LongAdder();
        final LongAdder early = new LongAdder();
        final AtomicLong earliestMs = new AtomicLong();
        final Histogram latenessMs = new Histogram();
        final AtomicReferenceArray<Cpu.Reading> edges = new AtomicReferenceArray<>(2);
        final CountDownLatch done = new CountDownLatch(1);

        TimerDeliveries(int count, Cpu cpu) {
            this.count = count;
            this.cpu = cpu;
            this.seen = new java.util.concurrent.atomic.AtomicIntegerArray(count);
        }

        void record(MessageExt m) {
            long now = System.currentTimeMillis();
            String due = m.getUserProperty("bench_due"), seq = m.getUserProperty("bench_seq");
            if (due == null || seq == null) {
                return; // not this run's
            }
            int i = Integer.parseInt(seq);
            if (i < 0 || i >= count || seen.getAndIncrement(i) > 0) {
                duplicates.increment();
                return;
            }
            long late = now - Long.parseLong(due);
            if (late < 0) {
                early.increment();
                earliestMs.accumulateAndGet(late, Math::min);
            } else {
                latenessMs.record(late);
            }
            long k = distinct.incrementAndGet();
            if (k == 1) {
                edges.compareAndSet(0, null, cpu.read());
            }
            if (k == count) {
                edges.set(1, cpu.read());
                done.countDown();
            }
        }

        String json() {
            Cpu.Reading first = edges.get(0), last = edges.get(1);
            double wall = first != null && last != null ? last.wallSeconds(first) : 0;
            return ",\"messages\": " + distinct.get() + ",\"duplicates\": " + duplicates.sum()
                + ",\"early\": " + early.sum() + ",\"earliest_ms\": " + earliestMs.get()
                + ",\"lateness_ms\": " + latenessMs.json() + ",\"delivery_seconds\": " + fmt(wall)
                + ",\"msg_per_s\": " + fmt(wall > 0 ? distinct.get() / wall : 0);
        }

        /** CPU over the delivery window (first to last delivery); the whole run if incomplete. */
        String cpuJson() {
            Cpu.Reading first = edges.get(0), last = edges.get(1);
            Cpu.Reading now = cpu.read();
            return cpu.json(first != null ? first : now, last != null ? last : now);
        }
    }

    static String header(Options o, String command) {
        return "\"tool\": \"JavaBench " + command + "\",\"client\": \"rocketmq-client "
            + MQVersion.getVersionDesc(MQVersion.CURRENT_VERSION) + "\",\"serialize_type\": \""
            + RemotingCommand.getSerializeTypeConfigInThisServer() + "\",\"topic\": \"" + o.str("topic") + "\"";
    }

    static String errorsJson(Map<String, LongAdder> errors) {
        long total = errors.values().stream().mapToLong(LongAdder::sum).sum();
        StringBuilder sb = new StringBuilder(",\"error_count\": " + total + ",\"errors\": {");
        String sep = "";
        for (var e : new TreeMap<>(errors).entrySet()) {
            sb.append(sep).append('"').append(e.getKey()).append("\": ").append(e.getValue().sum());
            sep = ",";
        }
        return sb.append('}').toString();
    }

    static String fmt(double v) {
        return String.format(java.util.Locale.ROOT, "%.3f", v);
    }

    /**
     * utime + stime of this JVM and of the broker, and the host's busy CPU time (every process,
     * from /proc/stat), with the wall clock: the host's figure tells a run bound by the two
     * processes from one whose CPUs other processes took.
     */
    static final class Cpu {
        final long brokerPid;
        final double hz;

        Cpu(Options o) {
            brokerPid = o.longer("broker-pid", 0, 0, Long.MAX_VALUE);
            hz = o.integer("clk-tck", 100, 1, 1_000_000);
        }

        record Reading(long nanos, double self, double broker, double host) {
            double wallSeconds(Reading before) {
                return (nanos - before.nanos) / 1e9;
            }
        }

        Reading read() {
            return new Reading(System.nanoTime(), seconds("self"),
                brokerPid > 0 ? seconds(Long.toString(brokerPid)) : Double.NaN, hostBusySeconds());
        }

        /** The first line of /proc/stat, all CPUs: every field but idle and iowait is busy time. */
        double hostBusySeconds() {
            try {
                String line = Files.readAllLines(Path.of("/proc/stat")).get(0);
                String[] f = line.trim().split("\\s+");
                long busy = 0;
                // cpu user nice system idle iowait irq softirq steal (guest time is in user).
                for (int i = 1; i <= 8 && i < f.length; i++) {
                    if (i != 4 && i != 5) {
                        busy += Long.parseLong(f[i]);
                    }
                }
                return busy / hz;
            } catch (IOException | RuntimeException e) {
                return Double.NaN;
            }
        }

        double seconds(String pid) {
            try {
                String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
                // Fields after the command name (which may hold spaces) start at state, field 3;
                // utime and stime are fields 14 and 15.
                String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split(" ");
                return (Long.parseLong(f[11]) + Long.parseLong(f[12])) / hz;
            } catch (IOException | RuntimeException e) {
                return Double.NaN;
            }
        }

        String json(Reading before, Reading after) {
            return "{\"wall_s\": " + fmt(after.wallSeconds(before)) + ",\"loadgen_s\": " + fmt(after.self - before.self)
                + ",\"broker_s\": " + (brokerPid > 0 ? fmt(after.broker - before.broker) : "null")
                + ",\"host_busy_s\": " + (Double.isNaN(after.host) ? "null" : fmt(after.host - before.host))
                + ",\"host_cores\": " + Runtime.getRuntime().availableProcessors()
                + ",\"broker_pid\": " + brokerPid + "}";
        }
    }

    /** Latencies in µs, log-bucketed: 16 buckets per power of two (about 4 % resolution). */
    static final class Histogram {
        static final int SUB = 16;
        final LongAdder[] counts = new LongAdder[64 * SUB];
        final AtomicLong max = new AtomicLong();

        Histogram() {
            for (int i = 0; i < counts.length; i++) {
                counts[i] = new LongAdder();
            }
        }

        static int bucket(long us) {
            if (us < SUB) {
                return (int) Math.max(0, us);
            }
            int exp = 63 - Long.numberOfLeadingZeros(us); // >= 4
            int sub = (int) ((us >> (exp - 4)) & (SUB - 1));
            return (exp - 3) * SUB + sub;
        }

        static long upper(int b) {
            if (b < SUB) {
                return b;
            }
            int exp = b / SUB + 3;
            long sub = b % SUB;
            return ((SUB + sub + 1) << (exp - 4)) - 1;
        }

        void record(long us) {
            counts[bucket(us)].increment();
            max.accumulateAndGet(us, Math::max);
        }

        long quantile(double q) {
            long total = 0;
            for (LongAdder c : counts) {
                total += c.sum();
            }
            long rank = (long) Math.ceil(q * total);
            long seen = 0;
            for (int b = 0; b < counts.length; b++) {
                seen += counts[b].sum();
                if (seen >= rank && seen > 0) {
                    return Math.min(upper(b), max.get());
                }
            }
            return 0;
        }

        String json() {
            return "{\"p50\": " + quantile(0.5) + ",\"p99\": " + quantile(0.99) + ",\"p999\": " + quantile(0.999)
                + ",\"max\": " + max.get() + "}";
        }
    }

    /** --name value pairs with bounds; a missing required one or one out of bounds ends the run. */
    static final class Options {
        final Map<String, String> m;

        Options(Map<String, String> m) {
            this.m = m;
        }

        String str(String k) {
            String v = m.get(k);
            if (v == null) {
                usage("--" + k + " is required");
            }
            return v;
        }

        long longer(String k, long def, long min, long max) {
            long v;
            try {
                v = m.containsKey(k) ? Long.parseLong(m.get(k)) : def;
            } catch (NumberFormatException e) {
                usage("--" + k + " is not a number");
                return def;
            }
            if (v < min || v > max) {
                usage("--" + k + " must be " + min + ".." + max);
            }
            return v;
        }

        int integer(String k, int def, int min, int max) {
            return (int) longer(k, def, min, max);
        }
    }
}

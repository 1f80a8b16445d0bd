import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.producer.DefaultMQProducer;

/**
 * Broadcasting: two consumers of one group each receive every message, intact (their offsets
 * are kept by the clients, not the broker).
 */
final class Broadcast {
    private Broadcast() {
    }

    static void run(RingmqCompat.Args a) throws Exception {
        // Broadcasting consumers keep offsets in files: a directory of this run's, not ~.
        Path offsets = Files.createTempDirectory("ringmq-compat-offsets");
        System.setProperty("rocketmq.client.localOffsetStoreDir", offsets.toString());
        DefaultMQProducer producer = Clients.producer(a, "producer");
        Clients.createTopic(producer, a.topic());
        Received first = new Received();
        Received second = new Received();
        DefaultMQPushConsumer one = Clients.push(a, a.topic(), a.group(), "first",
                ProduceConsume.SUBSCRIPTION, first.listener("first"));
        DefaultMQPushConsumer other = Clients.push(a, a.topic(), a.group(), "second",
                ProduceConsume.SUBSCRIPTION, second.listener("second"));
        Clients.broadcasting(one);
        Clients.broadcasting(other);
        one.start();
        other.start();
        List<Sent> sent = ProduceConsume.sendSync(producer, a.topic(), "broadcast",
                ProduceConsume.PER_KIND);
        first.awaitAll("messages to the first consumer", sent, ProduceConsume.DELIVERY_WAIT_MS);
        second.awaitAll("messages to the second consumer", sent,
                ProduceConsume.DELIVERY_WAIT_MS);
        first.checkIntact(a.topic(), sent, false);
        second.checkIntact(a.topic(), sent, false);
        one.shutdown();
        other.shutdown();
        producer.shutdown();
        try (Stream<Path> files = Files.walk(offsets)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
    }
}

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/** What a message carries (message-props) and finding it again (query). */
final class Content {
    /**
     * The client compresses bodies above this many bytes (compressMsgBodyOverHowmuch; 4 KiB is
     * also its default, set here so the scenario says what it relies on).
     */
    static final int COMPRESS_OVER_BYTES = 4 * 1024;
    /** Body sizes of message-props, one message each: small, 10 KiB and 1 MiB, small. */
    static final int[] BODY_BYTES = {64, 10 * 1024, 1024 * 1024, 200};
    /** At most this many messages per query-by-key answer; one key names one message here. */
    static final int KEY_RESULTS_MAX = 32;

    private Content() {
    }

    /**
     * message-props: two keys, a tag, 3 user properties (one non-ASCII), bodies of every byte
     * value up to 1 MiB; the bodies above {@link #COMPRESS_OVER_BYTES} travel compressed. All
     * consumed byte-identical with properties intact.
     */
    static String messageProps(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        producer.setCompressMsgBodyOverHowmuch(COMPRESS_OVER_BYTES);
        List<Expect> sent = new ArrayList<>();
        for (int i = 0; i < BODY_BYTES.length; i++) {
            Message msg = Expect.message(env.topic(), "message-props", i);
            msg.setTags(i % 2 == 0 ? "TagA" : "TagB");
            msg.setKeys(List.of("key-" + i, "alt-key-" + i));
            msg.setBody(body("matrix-message-props-" + i, BODY_BYTES[i]));
            msg.putUserProperty("matrix-kind", "props");
            msg.putUserProperty("matrix-text", "héllo wörld 世界 a=b;c,d:e");
            sent.add(Sends.sendOk(producer, msg));
        }
        Inbox inbox = Consume.exactlyOnce(env, producer, "consumer", "*", sent);
        // The 5.x client clears the compressed flag when it decompresses, so compression shows
        // in the stored record's size: bodies of a 256-byte period compress far below theirs.
        for (int i = 0; i < sent.size(); i++) {
            int bodyBytes = BODY_BYTES[i];
            boolean compressed = inbox.of(sent.get(i)).stream()
                    .allMatch(d -> d.msg().getStoreSize() < bodyBytes);
            Check.equal(BODY_BYTES[i] > COMPRESS_OVER_BYTES, compressed,
                    BODY_BYTES[i] + " B body stored compressed (record smaller than the body)");
        }
        producer.shutdown();
        return "two keys, tags, 3 properties, bodies up to 1 MiB (>4 KiB compressed) intact";
    }

    /** `prefix` then bytes of every value, `size` bytes in all. */
    private static byte[] body(String prefix, int size) {
        byte[] head = prefix.getBytes(StandardCharsets.UTF_8);
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            body[i] = i < head.length ? head[i] : (byte) (i * 31 + size);
        }
        return body;
    }

    /**
     * query: each sent message found intact by offsetMsgId (VIEW_MESSAGE_BY_ID), by the
     * client's msgId and by key (QUERY_MESSAGE on the broker's index).
     */
    static String query(Env env) throws Exception {
        DefaultMQProducer producer = Clients.producer(env, "producer");
        List<Expect> sent = Sends.sendSync(producer, env.topic(), "query", env.count());
        for (Expect e : sent) {
            lookup(env, e, "offsetMsgId " + e.offsetMsgId(),
                    () -> List.of(producer.viewMessage(env.topic(), e.offsetMsgId())));
            lookup(env, e, "msgId " + e.msgId(), () -> List.of(producer.getDefaultMQProducerImpl()
                    .queryMessageByUniqKey(env.topic(), e.msgId())));
            lookup(env, e, "key " + e.keys(), () -> producer.queryMessage(env.topic(), e.keys(),
                    KEY_RESULTS_MAX, 0, Long.MAX_VALUE).getMessageList());
        }
        producer.shutdown();
        return env.count() + " messages found intact by offsetMsgId, msgId and key";
    }

    /** A lookup the client can make; it may throw while the broker's index lags. */
    interface Lookup {
        List<MessageExt> find() throws Exception;
    }

    /**
     * Looks `e` up by `how` until it comes back as exactly one message (the index is built
     * after the send returns; bounded), then checks it is `e` intact.
     */
    private static void lookup(Env env, Expect e, String how, Lookup lookup) {
        List<List<MessageExt>> found = new ArrayList<>();
        Check.until("found by " + how, Clients.WAIT_MS, () -> {
            found.clear();
            try {
                found.add(lookup.find());
            } catch (Exception ex) {
                return false;
            }
            return found.get(0).size() == 1;
        }, () -> found.isEmpty() ? "(lookup failed)" : found.get(0).size() + " messages");
        Check.equal(List.of(), e.mismatches(env.topic(), found.get(0).get(0)),
                "differences of the message found by " + how);
    }
}

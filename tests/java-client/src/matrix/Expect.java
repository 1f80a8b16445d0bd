import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One message as it was sent and what the send was answered: what every delivery or lookup of
 * it must carry. Serializable so the first phase of a two-phase scenario can hand it on.
 */
record Expect(int index, String msgId, String offsetMsgId, int queueId, long queueOffset,
        String tags, String keys, byte[] body, TreeMap<String, String> props)
        implements Serializable {

    /** Unknown queue or offset (a oneway send gets no answer, a peer's send is not ours). */
    static final int UNKNOWN = -1;
    /** The user property that carries the message's index in every scenario. */
    static final String INDEX = "matrix-index";

    /** The contract's message `i` of `scenario`: body matrix-<scenario>-<i>, TagA, key-<i>. */
    static Message message(String topic, String scenario, int i) {
        Message msg = new Message(topic, "TagA", "key-" + i,
                ("matrix-" + scenario + "-" + i).getBytes(StandardCharsets.UTF_8));
        msg.putUserProperty(INDEX, Integer.toString(i));
        return msg;
    }

    /** What a sync or async send of one message was answered. */
    static Expect of(Message msg, SendResult result) {
        return new Expect(index(msg), result.getMsgId(), result.getOffsetMsgId(),
                result.getMessageQueue().getQueueId(), result.getQueueOffset(), msg.getTags(),
                msg.getKeys(), msg.getBody(), userProps(msg));
    }

    /** A message sent without an answer to compare (oneway, batch): the client's id only. */
    static Expect unanswered(Message msg) {
        return new Expect(index(msg), MessageClientIDSetter.getUniqID(msg), null, UNKNOWN,
                UNKNOWN, msg.getTags(), msg.getKeys(), msg.getBody(), userProps(msg));
    }

    /** A message another client sent: known by content, not by id or position. */
    static Expect peer(Message msg) {
        return new Expect(index(msg), null, null, UNKNOWN, UNKNOWN, msg.getTags(), msg.getKeys(),
                msg.getBody(), userProps(msg));
    }

    /** The index property's value of `msg`, -1 when it has none. */
    static int index(Message msg) {
        String value = msg.getUserProperty(INDEX);
        try {
            return value == null ? -1 : Integer.parseInt(value);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * The properties the application set. The client adds its own ones (UNIQ_KEY, KEYS, TAGS,
     * ...) in upper case; user properties here are lower case by construction.
     */
    private static TreeMap<String, String> userProps(Message msg) {
        TreeMap<String, String> props = new TreeMap<>();
        msg.getProperties().forEach((name, value) -> {
            if (!name.equals(name.toUpperCase())) {
                props.put(name, value);
            }
        });
        return props;
    }

    /**
     * Every way `got` differs from this message; empty when it is this message intact. The
     * client's msgId is read from the UNIQ_KEY property, which both a consumer's and a lookup's
     * decoding keep (a lookup's getMsgId is the broker's offsetMsgId).
     */
    List<String> mismatches(String topic, MessageExt got) {
        List<String> diffs = new ArrayList<>();
        Differences.of(diffs, "topic", topic, got.getTopic());
        if (msgId != null) {
            Differences.of(diffs, "msgId", msgId, MessageClientIDSetter.getUniqID(got));
        }
        if (queueId != UNKNOWN) {
            Differences.of(diffs, "queueId", queueId, got.getQueueId());
            Differences.of(diffs, "queueOffset", queueOffset, got.getQueueOffset());
        }
        Differences.ofContent(diffs, tags, keys, body, props, got);
        return diffs;
    }

    @Override
    public String toString() {
        return "#" + index + " " + msgId + " q" + queueId + "@" + queueOffset + " " + body.length
                + "B";
    }
}

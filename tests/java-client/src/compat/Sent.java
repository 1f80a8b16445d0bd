import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageClientIDSetter;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * One message as the producer sent it and what the broker answered: what every delivery of it
 * must carry. Serializable so restart-phase1 can hand it to restart-phase2.
 */
record Sent(String how, String msgId, String offsetMsgId, String brokerName, int queueId,
        long queueOffset, String tags, String keys, byte[] body, TreeMap<String, String> props)
        implements Serializable {

    /** Unknown queue or offset (a oneway send gets no answer). */
    static final int UNKNOWN = -1;
    /**
     * Size of the one large body per scenario: above the producer's compression threshold
     * (compressMsgBodyOverHowmuch, 4 KiB), so the broker stores and returns a compressed body.
     */
    static final int LARGE_BODY_BYTES = 10 * 1024;
    /** Upper bound (exclusive) of the other bodies' sizes. */
    static final int SMALL_BODY_BYTES_MAX = 300;

    /** A new message `seq` of kind `how` with tag `tag`: binary body, two keys, user properties. */
    static Message make(String topic, String how, int seq, String tag, boolean large) {
        int size = large ? LARGE_BODY_BYTES : 1 + (seq * 37 + how.length()) % SMALL_BODY_BYTES_MAX;
        byte[] body = new byte[size];
        for (int i = 0; i < size; i++) {
            // every byte value, zeros included: the body is opaque bytes, not text
            body[i] = (byte) (i * 31 + seq * 7 + how.hashCode());
        }
        Message msg = new Message(topic, tag, "key-" + how + "-" + seq + " order-" + seq, body);
        msg.putUserProperty("how", how);
        msg.putUserProperty("seq", Integer.toString(seq));
        msg.putUserProperty("unicode", "héllo wörld 世界 ✓");
        msg.putUserProperty("spaces_and_signs", "a b=c;d,e:f");
        return msg;
    }

    /** What a sync or async send (one message) was answered. */
    static Sent of(String how, Message msg, SendResult result) {
        return new Sent(how, result.getMsgId(), result.getOffsetMsgId(),
                result.getMessageQueue().getBrokerName(), result.getMessageQueue().getQueueId(),
                result.getQueueOffset(), msg.getTags(), msg.getKeys(), msg.getBody(),
                userProps(msg));
    }

    /** A oneway send: only the client-made message id is known. */
    static Sent oneway(Message msg) {
        return new Sent("oneway", MessageClientIDSetter.getUniqID(msg), null, null, UNKNOWN,
                UNKNOWN, msg.getTags(), msg.getKeys(), msg.getBody(), userProps(msg));
    }

    /**
     * A batch send: one answer for all; its msgId and offsetMsgId list the messages' ids comma
     * separated, and the messages take consecutive offsets from its queueOffset.
     */
    static List<Sent> batch(List<Message> msgs, SendResult result) {
        String[] ids = result.getMsgId().split(",");
        String[] offsetIds = result.getOffsetMsgId() == null ? new String[0]
                : result.getOffsetMsgId().split(",");
        Check.equal(msgs.size(), offsetIds.length,
                "batch answer lists one offsetMsgId per message");
        List<Sent> sent = new ArrayList<>();
        List<String> clientIds = new ArrayList<>();
        for (int i = 0; i < msgs.size(); i++) {
            Message msg = msgs.get(i);
            clientIds.add(MessageClientIDSetter.getUniqID(msg));
            sent.add(new Sent("batch", MessageClientIDSetter.getUniqID(msg),
                    i < offsetIds.length ? offsetIds[i] : null,
                    result.getMessageQueue().getBrokerName(),
                    result.getMessageQueue().getQueueId(), result.getQueueOffset() + i,
                    msg.getTags(), msg.getKeys(), msg.getBody(), userProps(msg)));
        }
        boolean same = clientIds.equals(List.of(ids));
        Check.that(same, "batch answer's msgIds are the " + msgs.size() + " ids the client set"
                + (same ? "" : ": answer " + List.of(ids) + ", client " + clientIds));
        return sent;
    }

    /**
     * This message as stored again by the broker (redelivered from the group's retry topic or
     * dead-letter topic, or delivered by the delay-level schedule): same id, content and
     * properties, but its queue, offset and offsetMsgId are the new copy's.
     */
    Sent retried() {
        return new Sent(how, msgId, null, null, UNKNOWN, UNKNOWN, tags, keys, body, props);
    }

    /** The properties the application set (not the client's or broker's system ones). */
    private static TreeMap<String, String> userProps(Message msg) {
        TreeMap<String, String> props = new TreeMap<>();
        for (String name : List.of("how", "seq", "unicode", "spaces_and_signs")) {
            props.put(name, msg.getUserProperty(name));
        }
        return props;
    }

    /**
     * Every way `got` differs from this message; empty when it is this message intact. `got`
     * is as a consumer or viewMessage decodes it (MessageClientExt: msgId is the client's id)
     * or as queryMessage does (MessageExt: msgId is the broker's offsetMsgId, the client's id
     * is the UNIQ_KEY property).
     */
    List<String> mismatches(String topic, MessageExt got) {
        List<String> diffs = new ArrayList<>();
        boolean clientDecoded = got instanceof MessageClientExt;
        Differences.of(diffs, "topic", topic, got.getTopic());
        Differences.of(diffs, "msgId", msgId, clientDecoded ? got.getMsgId()
                : got.getProperty(MessageConst.PROPERTY_UNIQ_CLIENT_MESSAGE_ID_KEYIDX));
        if (offsetMsgId != null) {
            Differences.of(diffs, "offsetMsgId", offsetMsgId,
                    clientDecoded ? ((MessageClientExt) got).getOffsetMsgId() : got.getMsgId());
        }
        if (brokerName != null) {
            Differences.of(diffs, "brokerName", brokerName, got.getBrokerName());
        }
        if (queueId != UNKNOWN) {
            Differences.of(diffs, "queueId", queueId, got.getQueueId());
            Differences.of(diffs, "queueOffset", queueOffset, got.getQueueOffset());
        }
        Differences.ofContent(diffs, tags, keys, body, props, got);
        return diffs;
    }

    /** This message as a lookup (view, query) returns it: no broker name is filled in. */
    Sent lookedUp() {
        return new Sent(how, msgId, offsetMsgId, null, queueId, queueOffset, tags, keys, body,
                props);
    }

    @Override
    public String toString() {
        return how + " " + msgId + " q" + queueId + "@" + queueOffset + " " + tags + " "
                + body.length + "B";
    }
}

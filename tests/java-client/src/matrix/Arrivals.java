import java.util.HashMap;
import java.util.Map;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.common.message.MessageClientIDSetter;

/** When each message (by the client's msgId) first reached a consumer of the phase. */
final class Arrivals {
    private final Map<String, Long> firstMs = new HashMap<>();

    /** `inbox`'s listener for consumer `name`, noting each message's first arrival first. */
    MessageListenerConcurrently listener(Inbox inbox, String name) {
        MessageListenerConcurrently recorded = inbox.listener(name);
        return (msgs, context) -> {
            long now = System.currentTimeMillis();
            synchronized (this) {
                msgs.forEach(m -> firstMs.putIfAbsent(MessageClientIDSetter.getUniqID(m), now));
            }
            return recorded.consumeMessage(msgs, context);
        };
    }

    /** The first arrival of `msgId` (ms since the epoch), Long.MAX_VALUE if none yet. */
    synchronized long of(String msgId) {
        return firstMs.getOrDefault(msgId, Long.MAX_VALUE);
    }
}

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * How a delivered or looked-up message is compared with the one sent, for both message models
 * (the compat scenarios' Sent, the matrix's Expect): each difference one line of text.
 */
final class Differences {
    private Differences() {
    }

    /** Adds "`what`: expected ..., got ..." to `diffs` unless the two are equal. */
    static void of(List<String> diffs, String what, Object expected, Object actual) {
        if (!Objects.equals(expected, actual)) {
            diffs.add(what + ": expected " + expected + ", got " + actual);
        }
    }

    /** `got`'s tags, keys, body and the user properties `props` names, against the sent ones. */
    static void ofContent(List<String> diffs, String tags, String keys, byte[] body,
            Map<String, String> props, MessageExt got) {
        of(diffs, "tags", tags, got.getTags());
        of(diffs, "keys", keys, got.getKeys());
        if (!Arrays.equals(body, got.getBody())) {
            diffs.add("body: expected " + body.length + " bytes, got "
                    + (got.getBody() == null ? "none" : got.getBody().length + " different bytes"));
        }
        for (Map.Entry<String, String> prop : props.entrySet()) {
            of(diffs, "property " + prop.getKey(), prop.getValue(),
                    got.getUserProperty(prop.getKey()));
        }
    }
}

// Reads our frames with the real Apache RocketMQ 5.3.3 Java decoder; see README.md.
import java.nio.ByteBuffer;
import java.nio.file.*;
import org.apache.rocketmq.remoting.protocol.*;
import org.apache.rocketmq.remoting.protocol.header.*;

/// Decodes frames written by our encoder with Apache RocketMQ's Java decoder and prints what Java
/// reads; the argument is the directory the `frames_for_the_java_decoder` test writes.
public class Decode {
    public static void main(String[] a) throws Exception {
        try (var files = Files.list(Paths.get(a[0]))) {
            for (Path p : files.sorted().toList()) {
                byte[] b = Files.readAllBytes(p);
                int len = ByteBuffer.wrap(b).getInt();
                if (len != b.length - 4) throw new RuntimeException(p + " length " + len);
                ByteBuffer frame = ByteBuffer.wrap(b, 4, b.length - 4).slice();
                RemotingCommand c = RemotingCommand.decode(frame);
                String extra = "";
                String n = p.getFileName().toString();
                if (n.startsWith("send_response")) {
                    SendMessageResponseHeader h = (SendMessageResponseHeader) c.decodeCommandCustomHeader(SendMessageResponseHeader.class);
                    extra = " msgId=" + h.getMsgId() + " queueId=" + h.getQueueId() + " queueOffset=" + h.getQueueOffset() + " tx=" + h.getTransactionId() + " region=" + c.getExtFields().get("MSG_REGION");
                } else if (n.startsWith("pull_response")) {
                    PullMessageResponseHeader h = (PullMessageResponseHeader) c.decodeCommandCustomHeader(PullMessageResponseHeader.class);
                    extra = " next=" + h.getNextBeginOffset() + " min=" + h.getMinOffset() + " max=" + h.getMaxOffset() + " suggest=" + h.getSuggestWhichBrokerId() + " body=" + new String(c.getBody());
                } else if (n.startsWith("notify")) {
                    NotifyConsumerIdsChangedRequestHeader h = (NotifyConsumerIdsChangedRequestHeader) c.decodeCommandCustomHeader(NotifyConsumerIdsChangedRequestHeader.class);
                    extra = " group=" + h.getConsumerGroup() + " oneway=" + c.isOnewayRPC();
                }
                System.out.println(n + ": code=" + c.getCode() + " opaque=" + c.getOpaque() + " flag=" + c.getFlag() + " response=" + c.isResponseType()
                    + " lang=" + c.getLanguage() + " version=" + c.getVersion() + " type=" + c.getSerializeTypeCurrentRPC()
                    + " remark=" + (c.getRemark() == null ? null : "[" + c.getRemark().replace("\u0001", "\\1").replace("\u0002", "\\2").replace("\n", "\\n") + "]") + extra);
            }
        }
    }
}

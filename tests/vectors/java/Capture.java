// Writes the frames and bodies of VECTORS.md with the real Apache RocketMQ 5.3.3 Java encoders
// (rocketmq-client from Maven Central); see README.md beside this file for how to run it.
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.*;
import java.util.*;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.*;
import org.apache.rocketmq.remoting.protocol.*;
import org.apache.rocketmq.remoting.protocol.header.*;

public class Capture {
    static Path out = Paths.get("out");
    static void frame(String name, RemotingCommand cmd) throws Exception {
        ByteBuf buf = Unpooled.buffer();
        cmd.fastEncodeHeader(buf);
        if (cmd.getBody() != null) buf.writeBytes(cmd.getBody());
        byte[] b = new byte[buf.readableBytes()];
        buf.readBytes(b);
        Files.write(out.resolve(name), b);
    }
    public static void main(String[] a) throws Exception {
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, "479");
        Files.createDirectories(out);
        // V1
        SendMessageRequestHeader h = new SendMessageRequestHeader();
        h.setProducerGroup("G"); h.setTopic("T"); h.setDefaultTopic("TBW102"); h.setDefaultTopicQueueNums(4);
        h.setQueueId(0); h.setSysFlag(0); h.setBornTimestamp(1700000000000L); h.setFlag(0);
        h.setProperties("TAGS\u0001A\u0002"); h.setReconsumeTimes(0); h.setUnitMode(false); h.setBatch(false);
        h.setBrokerName("b1");
        SendMessageRequestHeaderV2 v2 = SendMessageRequestHeaderV2.createSendMessageRequestHeaderV2(h);
        RemotingCommand req = RemotingCommand.createRequestCommand(RequestCode.SEND_MESSAGE_V2, v2);
        req.setOpaque(1);
        req.setBody("hi".getBytes());
        frame("v1_send_message_v2_request.bin", req);
        // V2: binary send response
        RemotingCommand resp = RemotingCommand.createResponseCommand(SendMessageResponseHeader.class);
        SendMessageResponseHeader rh = (SendMessageResponseHeader) resp.readCustomHeader();
        rh.setMsgId("7F00000100002A9F0000000000000000"); rh.setQueueId(0); rh.setQueueOffset(0L);
        resp.setCode(0); resp.setRemark(null); resp.setOpaque(1); resp.markResponseType();
        resp.setSerializeTypeCurrentRPC(SerializeType.ROCKETMQ);
        frame("v2_send_response_rocketmq.bin", resp);
        // V2b: JSON send response with the broker's extra fields
        RemotingCommand resp2 = RemotingCommand.createResponseCommand(SendMessageResponseHeader.class);
        resp2.addExtField("MSG_REGION", "DefaultRegion");
        resp2.addExtField("TRACE_ON", "true");
        SendMessageResponseHeader rh2 = (SendMessageResponseHeader) resp2.readCustomHeader();
        rh2.setMsgId("7F00000100002A9F0000000000000000"); rh2.setQueueId(0); rh2.setQueueOffset(0L);
        rh2.setTransactionId("C0A80002123400000000000000000001");
        resp2.setCode(0); resp2.setRemark(null); resp2.setOpaque(1); resp2.markResponseType();
        frame("v2b_send_response_json.bin", resp2);
        // V3
        RemotingCommand r3 = RemotingCommand.createResponseCommand(RemotingSysResponseCode.REQUEST_CODE_NOT_SUPPORTED, " request type 9999 not supported");
        r3.setOpaque(5); r3.markResponseType();
        frame("v3_unknown_code_response.bin", r3);
        // V8
        RemotingCommand r8 = RemotingCommand.createResponseCommand(PullMessageResponseHeader.class);
        PullMessageResponseHeader ph = (PullMessageResponseHeader) r8.readCustomHeader();
        ph.setSuggestWhichBrokerId(0L); ph.setNextBeginOffset(5L); ph.setMinOffset(0L); ph.setMaxOffset(5L);
        ph.setTopicSysFlag(0); ph.setGroupSysFlag(0);
        r8.setCode(ResponseCode.PULL_NOT_FOUND); r8.setRemark("OFFSET_OVERFLOW_ONE"); r8.setOpaque(42); r8.markResponseType();
        frame("v8_pull_not_found_json.bin", r8);
        // V4: a stored record as MessageDecoder.encode writes it
        MessageExt m = new MessageExt();
        m.setTopic("T"); m.setQueueId(0); m.setFlag(0); m.setSysFlag(0);
        m.setQueueOffset(0); m.setCommitLogOffset(0);
        m.setBornTimestamp(1700000000000L); m.setBornHost(new InetSocketAddress("127.0.0.1", 50000));
        m.setStoreTimestamp(1700000000123L); m.setStoreHost(new InetSocketAddress("127.0.0.1", 10911));
        m.setReconsumeTimes(0); m.setPreparedTransactionOffset(0);
        m.setBody("hello".getBytes()); m.setBodyCRC(UtilAll.crc32("hello".getBytes()));
        MessageAccessor.putProperty(m, "TAGS", "TagA");
        MessageAccessor.putProperty(m, "KEYS", "k1");
        Files.write(out.resolve("v4_stored_record.bin"), MessageDecoder.encode(m, false));
        Files.write(out.resolve("v4_offset_msg_id.txt"), MessageDecoder.createMessageId(ByteBuffer.allocate(16), m.getStoreHostBytes(), 0).getBytes());
        // V5
        List<Message> batch = new ArrayList<>();
        for (String[] e : new String[][]{{"a", "K1"}, {"bc", "K2"}}) {
            Message msg = new Message("T", e[0].getBytes());
            MessageAccessor.putProperty(msg, "UNIQ_KEY", e[1]);
            batch.add(msg);
        }
        Files.write(out.resolve("v5_batch_body.bin"), MessageDecoder.encodeMessages(batch));
        // JSON string escapes: every ASCII character, non-ASCII, U+2028/2029 and a non-BMP one
        StringBuilder all = new StringBuilder();
        for (int c = 0; c < 0x80; c++) all.append((char) c);
        all.append("\u00e9\u4e2d\u2028\u2029\ud83d\ude00");
        RemotingCommand esc = RemotingCommand.createResponseCommand(1, all.toString());
        esc.setOpaque(3); esc.markResponseType();
        esc.addExtField("k\u0001", all.toString());
        frame("escapes_response.bin", esc);
        // tag hashes
        StringBuilder sb = new StringBuilder();
        for (String t : new String[]{"A", "*", "TagA", "TagB", "hello world"}) sb.append(t).append('=').append(t.hashCode()).append('\n');
        Files.write(out.resolve("tag_hashes.txt"), sb.toString().getBytes());
    }
}

// Drives a NameServer with Apache RocketMQ's own Java classes (rocketmq-client 5.3.3):
// registers two brokers the way BrokerOuterAPI does (fastjson RegisterBrokerBody, masked
// CRC32, one in JSON and one in ROCKETMQ binary header serialization), then asks for routes
// and cluster info as DefaultMQProducer / MQClientAPIImpl do. Prints one line per check and
// exits non-zero on the first failure. Run by tests/namesrv_java_client.rs.

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.rocketmq.client.exception.MQClientException;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.TopicConfig;
import org.apache.rocketmq.common.UtilAll;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.netty.NettyClientConfig;
import org.apache.rocketmq.remoting.netty.NettyRemotingClient;
import org.apache.rocketmq.remoting.protocol.DataVersion;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;
import org.apache.rocketmq.remoting.protocol.RequestCode;
import org.apache.rocketmq.remoting.protocol.ResponseCode;
import org.apache.rocketmq.remoting.protocol.SerializeType;
import org.apache.rocketmq.remoting.protocol.body.ClusterInfo;
import org.apache.rocketmq.remoting.protocol.body.RegisterBrokerBody;
import org.apache.rocketmq.remoting.protocol.body.TopicConfigAndMappingSerializeWrapper;
import org.apache.rocketmq.remoting.protocol.header.namesrv.GetRouteInfoRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.namesrv.RegisterBrokerRequestHeader;
import org.apache.rocketmq.remoting.protocol.header.namesrv.RegisterBrokerResponseHeader;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;

public class NamesrvCompat {
    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok   " : "FAIL ") + what);
        if (!ok) {
            System.exit(1);
        }
    }

    static TopicConfig topic(String name, int queues, int perm) {
        TopicConfig config = new TopicConfig(name, queues, queues, perm);
        return config;
    }

    static RemotingCommand register(String name, long id, String addr, SerializeType type, TopicConfig... topics) {
        RegisterBrokerRequestHeader header = new RegisterBrokerRequestHeader();
        header.setBrokerName(name);
        header.setBrokerAddr(addr);
        header.setClusterName("DefaultCluster");
        header.setHaServerAddr(addr.replace(":10911", ":10912"));
        header.setBrokerId(id);
        header.setEnableActingMaster(false);
        header.setCompressed(false);
        TopicConfigAndMappingSerializeWrapper wrapper = new TopicConfigAndMappingSerializeWrapper();
        ConcurrentHashMap<String, TopicConfig> table = new ConcurrentHashMap<>();
        for (TopicConfig t : topics) {
            table.put(t.getTopicName(), t);
        }
        wrapper.setTopicConfigTable(table);
        wrapper.setDataVersion(new DataVersion());
        RegisterBrokerBody body = new RegisterBrokerBody();
        body.setTopicConfigSerializeWrapper(wrapper);
        body.setFilterServerList(new ArrayList<>());
        byte[] bytes = body.encode(false);
        header.setBodyCrc32(UtilAll.crc32(bytes));
        RemotingCommand request = RemotingCommand.createRequestCommand(RequestCode.REGISTER_BROKER, header);
        request.setSerializeTypeCurrentRPC(type);
        request.setBody(bytes);
        return request;
    }

    public static void main(String[] args) throws Exception {
        String ns = args[0];
        // What BrokerStartup / MQClientAPIImpl do before creating any command: without it every
        // command carries version 0, and a NameServer (Java's too) reads the register body as a
        // pre-3.0.11 broker's bare topic wrapper.
        System.setProperty(RemotingCommand.REMOTING_VERSION_KEY, "479");
        NettyRemotingClient remoting = new NettyRemotingClient(new NettyClientConfig());
        remoting.start();

        RemotingCommand a = remoting.invokeSync(ns, register("broker-a", 0, "127.0.0.1:10911", SerializeType.JSON,
            topic("T", 4, 6), topic("TBW102", 8, 7)), 5000);
        check(a.getCode() == ResponseCode.SUCCESS, "register broker-a (JSON header): " + a.getCode() + " " + a.getRemark());
        RemotingCommand b = remoting.invokeSync(ns, register("broker-b", 0, "127.0.0.2:10911", SerializeType.ROCKETMQ,
            topic("T", 2, 6), topic("B", 1, 6)), 5000);
        check(b.getCode() == ResponseCode.SUCCESS, "register broker-b (ROCKETMQ header): " + b.getCode() + " " + b.getRemark());
        RemotingCommand slave = remoting.invokeSync(ns, register("broker-a", 1, "127.0.0.3:10911", SerializeType.JSON,
            topic("T", 4, 6), topic("TBW102", 8, 7)), 5000);
        RegisterBrokerResponseHeader slaveHeader =
            (RegisterBrokerResponseHeader) slave.decodeCommandCustomHeader(RegisterBrokerResponseHeader.class);
        check("127.0.0.1:10911".equals(slaveHeader.getMasterAddr()), "slave told its master: " + slaveHeader.getMasterAddr());

        // A pre-4.9.4 client (version 317, like the Go client) gets the legacy body; fastjson reads it.
        GetRouteInfoRequestHeader routeHeader = new GetRouteInfoRequestHeader();
        routeHeader.setTopic("T");
        RemotingCommand legacy = RemotingCommand.createRequestCommand(RequestCode.GET_ROUTEINFO_BY_TOPIC, routeHeader);
        legacy.setVersion(317);
        RemotingCommand legacyResp = remoting.invokeSync(ns, legacy, 5000);
        check(legacyResp.getCode() == ResponseCode.SUCCESS,
            "route for version 317: " + legacyResp.getCode() + " " + legacyResp.getRemark());
        String legacyBody = new String(legacyResp.getBody(), "UTF-8");
        check(legacyBody.contains("{0:\"127.0.0.1:10911\""), "legacy route body for version 317: " + legacyBody);
        TopicRouteData legacyRoute = TopicRouteData.decode(legacyResp.getBody(), TopicRouteData.class);
        check(legacyRoute.getQueueDatas().size() == 2, "fastjson decodes the legacy route");

        DefaultMQProducer producer = new DefaultMQProducer("ringmq_compat_producer");
        producer.setNamesrvAddr(ns);
        producer.start();
        try {
            List<MessageQueue> queues = producer.fetchPublishMessageQueues("T");
            check(queues.size() == 6, "DefaultMQProducer sees 6 publish queues of T: " + queues);
            ClusterInfo info = producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl()
                .getBrokerClusterInfo(5000);
            check("127.0.0.3:10911".equals(info.getBrokerAddrTable().get("broker-a").getBrokerAddrs().get(1L)),
                "cluster info lists broker-a's slave: " + info.getBrokerAddrTable());
            check(info.getClusterAddrTable().get("DefaultCluster").size() == 2, "cluster info lists 2 broker names");
            try {
                producer.getDefaultMQProducerImpl().getMqClientFactory().getMQClientAPIImpl()
                    .getTopicRouteInfoFromNameServer("NoSuchTopic", 5000);
                check(false, "unknown topic must fail");
            } catch (MQClientException e) {
                check(e.getResponseCode() == ResponseCode.TOPIC_NOT_EXIST, "unknown topic: TOPIC_NOT_EXIST");
            }
        } finally {
            producer.shutdown();
            remoting.shutdown();
        }
        System.out.println("ALL CHECKS PASSED");
        System.exit(0);
    }
}
